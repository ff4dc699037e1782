// tests/test_auto_controller.c: the hedge auto controller (engine/auto_controller.c) with a fake
// clock: flat rates settle at C = 0; a clearly better C (+10%) is committed, a marginally better
// one (+2%) is not; a gap longer than 0.5 s clears the window in progress and is not booked; a
// round run with another C restarts the window; exploration restarts at C = 0 with 32-round
// windows when a commitment expires.
// ctest-labels: cpu;unit
#include <math.h>

#include "engine/auto_controller.h"
#include "testutil.h"

static double now_s;
static double fake_clock(void *ctx) {
    (void)ctx;
    return now_s;
}

// One round with chain count c taking `secs` and committing `tokens`; returns the C it was told.
static int round_with(auto_controller *a, double secs, int tokens, int force_c) {
    int c = ac_begin(a);
    if (force_c >= 0) c = force_c;
    now_s += secs;
    ac_end(a, c, tokens);
    return c;
}

// Rounds of 10 tokens whose duration gives C its rate (tokens/s) until the controller commits.
static int explore(auto_controller *a, const double *rate) {
    for (int i = 0; i < 100000 && a->exploring; i++) {
        int c = a->c;
        round_with(a, 10.0 / rate[c], 10, -1);
    }
    ck_assert(!a->exploring);
    return a->c;
}

START_TEST(test_flat_settles_at_zero) {
    now_s = 0;
    auto_controller a;
    ac_init(&a, 3, fake_clock, NULL);
    const double rate[4] = {1000, 1000, 1000, 1000};
    int rounds = 0;
    for (; a.exploring; rounds++) round_with(&a, 10.0 / rate[a.c], 10, -1);
    ck_assert_int_eq(rounds, AC_CYCLES * 4 * AC_FIRST_WINDOW); // 3 cycles of 4 windows of 64
    ck_assert_int_eq(a.c, 0);
    for (int c = 0; c < 4; c++) {
        ck_assert_int_eq(a.hist[c].n, AC_CYCLES);
        ck_assert_double_eq_tol(ac_median(&a, c), 1000.0, 1e-6);
    }
}
END_TEST

START_TEST(test_better_and_marginal) {
    now_s = 0;
    auto_controller a;
    ac_init(&a, 3, fake_clock, NULL);
    const double better[4] = {1000, 1050, 1100, 1080}; // 2 beats 1 (which beat 0) by > 3%
    ck_assert_int_eq(explore(&a, better), 2);
    ac_init(&a, 3, fake_clock, NULL);
    const double marginal[4] = {1000, 1020, 1025, 1010}; // none beats 0 by more than 3%
    ck_assert_int_eq(explore(&a, marginal), 0);
    ac_init(&a, 2, fake_clock, NULL);
    const double chained[3] = {1000, 1040, 1060}; // 1 beats 0; 2 beats 0 but not 1 by 3%
    ck_assert_int_eq(explore(&a, chained), 1);
}
END_TEST

START_TEST(test_gap_clears_window) {
    now_s = 0;
    auto_controller a;
    ac_init(&a, 1, fake_clock, NULL);
    for (int i = 0; i < 10; i++) round_with(&a, 0.01, 10, -1);
    ck_assert_int_eq(a.win_rounds, 10);
    now_s += 0.6; // a gap between rounds: the 10 rounds are dropped, the gap never booked
    for (int i = 0; i < AC_FIRST_WINDOW - 1; i++) round_with(&a, 0.02, 10, -1);
    ck_assert_int_eq(a.hist[0].n, 0); // 63 rounds since the gap: not a full window yet
    round_with(&a, 0.02, 10, -1);
    ck_assert_int_eq(a.hist[0].n, 1);
    ck_assert_double_eq_tol(a.hist[0].rates[0], 500.0, 1e-6); // 10 tokens / 0.02 s, no gap in it
    ck_assert_int_eq(a.c, 1);
    // A short pause (0.4 s) does not clear the window and is not counted either.
    for (int i = 0; i < 5; i++) round_with(&a, 0.01, 10, -1);
    now_s += 0.4;
    for (int i = 0; i < AC_FIRST_WINDOW - 5; i++) round_with(&a, 0.01, 10, -1);
    ck_assert_int_eq(a.hist[1].n, 1);
    ck_assert_double_eq_tol(a.hist[1].rates[0], 1000.0, 1e-6);
}
END_TEST

START_TEST(test_other_c_restarts_window) {
    now_s = 0;
    auto_controller a;
    ac_init(&a, 2, fake_clock, NULL);
    for (int i = 0; i < 20; i++) round_with(&a, 0.01, 10, -1);
    round_with(&a, 0.01, 10, 2); // ran with C = 2 while the window is C = 0's
    ck_assert_int_eq(a.win_rounds, 1);
    ck_assert_int_eq(a.win_c, 2);
    for (int i = 0; i < AC_FIRST_WINDOW; i++) round_with(&a, 0.01, 10, -1);
    ck_assert_int_eq(a.hist[0].n, 1); // C = 0's window restarted and completed
    ck_assert_int_eq(a.hist[2].n, 0);
}
END_TEST

START_TEST(test_commitment_expires) {
    now_s = 0;
    auto_controller a;
    ac_init(&a, 2, fake_clock, NULL);
    const double rate[3] = {1000, 2000, 1000};
    ck_assert_int_eq(explore(&a, rate), 1);
    for (int i = 0; i < AC_COMMIT_ROUNDS - 1; i++) ck_assert_int_eq(round_with(&a, 0.005, 10, -1), 1);
    ck_assert(!a.exploring);
    round_with(&a, 0.005, 10, -1);
    ck_assert(a.exploring);
    ck_assert_int_eq(a.c, 0);
    ck_assert_int_eq(a.window_rounds, AC_LATER_WINDOW);
    // The new exploration books 32-round windows and keeps at most 12 per C.
    const double later[3] = {3000, 1000, 1000};
    ck_assert_int_eq(explore(&a, later), 0);
    ck_assert_int_eq(a.hist[0].n, 2 * AC_CYCLES);
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < AC_COMMIT_ROUNDS; k++) round_with(&a, 0.005, 10, -1);
        explore(&a, later);
    }
    ck_assert_int_eq(a.hist[0].n, AC_KEEP);
    ck_assert_double_eq_tol(ac_median(&a, 0), 3000.0, 1e-6);
}
END_TEST

START_TEST(test_monotonic_clock) {
    double t0 = ac_monotonic_clock(NULL), t1 = ac_monotonic_clock(NULL);
    ck_assert(t1 >= t0 && t0 > 0 && isfinite(t1));
}
END_TEST

int main(void) {
    Suite *s = suite_create("auto_controller");
    TCase *tc = tcase_create("controller");
    tcase_add_test(tc, test_flat_settles_at_zero);
    tcase_add_test(tc, test_better_and_marginal);
    tcase_add_test(tc, test_gap_clears_window);
    tcase_add_test(tc, test_other_c_restarts_window);
    tcase_add_test(tc, test_commitment_expires);
    tcase_add_test(tc, test_monotonic_clock);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
