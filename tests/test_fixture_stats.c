// tests/test_fixture_stats.c: the default fixture set meets its bands (foundation issue, design.md
// §6), measured with the reference decoder; and the band check fails when a band is missed.
// ctest-labels: cpu;unit
#include <math.h>
#include <string.h>

#include "common/error.h"
#include "fixtures/stats.h"
#include "testutil.h"

static fixture_stats measured;

static void measure_default(void) {
    fixture_info fx;
    ck_assert_msg(fixture_open(NULL, &fx) == SG_OK, "%s", sg_error());
    ck_assert_msg(fixture_stats_measure(&fx, NULL, &measured) == SG_OK, "%s", sg_error());
}

START_TEST(default_set_meets_its_bands) {
    measure_default();
    fixture_stats_print(&measured, stdout);
    ck_assert_msg(fixture_stats_check(&measured) == SG_OK, "%s", sg_error());
    // The bands, spelled out: DSpark with branch positions 0,1,2.
    const spec_counters *h = &measured.hedged;
    double mean = (double)h->accepted / (double)h->rounds;
    double zero = (double)h->zero_accept / (double)h->rounds;
    ck_assert(mean >= 1.5 && mean <= 4.5);
    ck_assert(zero >= 0.15 && zero <= 0.45);
    ck_assert((double)measured.runner_up_right >= 0.2 * (double)measured.breaks);
    ck_assert(measured.hedged_seq.chain_wins > 0 && measured.hedged_seq.loss_rounds > 0);
    ck_assert(measured.hedged_conc.chain_wins > 0 && measured.hedged_conc.loss_rounds > 0);
    ck_assert_int_eq(counters_check(&measured.hedged, -1), SG_OK);
    ck_assert_int_eq(counters_check(&measured.plain, -1), SG_OK);
}
END_TEST

START_TEST(check_reports_each_missed_band) {
    measure_default();
    fixture_stats s = measured;
    s.min_target_margin = 0.01;
    s.history_delta[2] = 0;
    s.sampled_differ = 0;
    ck_assert_int_eq(fixture_stats_check(&s), SG_EXIT_FAIL);
    ck_assert_msg(strstr(sg_error(), "target margin") != NULL, "%s", sg_error());
    ck_assert_msg(strstr(sg_error(), "16 back") != NULL, "%s", sg_error());
    ck_assert_msg(strstr(sg_error(), "sampled") != NULL, "%s", sg_error());
    s = measured;
    s.hedged_conc.chain_wins = 0;
    s.runner_up_right = 0;
    ck_assert_int_eq(fixture_stats_check(&s), SG_EXIT_FAIL);
    ck_assert_msg(strstr(sg_error(), "concurrent") != NULL, "%s", sg_error());
    ck_assert_msg(strstr(sg_error(), "runner-up") != NULL, "%s", sg_error());
    s = measured;
    s.context_requests_changed = 0;
    ck_assert_int_eq(fixture_stats_check(&s), SG_EXIT_FAIL);
    ck_assert_msg(strstr(sg_error(), "drafter context") != NULL, "%s", sg_error());
}
END_TEST

int main(void) {
    Suite *s = suite_create("fixture_stats");
    TCase *tc = tcase_create("fixture_stats");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, default_set_meets_its_bands);
    tcase_add_test(tc, check_reports_each_missed_band);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
