// tests/test_counters.c: round booking (design.md §5) and every invariant's failure.
// ctest-labels: cpu;unit
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/counters.h"
#include "common/error.h"
#include "testutil.h"

START_TEST(booking_follows_the_definitions) {
    spec_counters c = {0};
    counters_book_round(&c, 3, 4, 7); // 3 accepted + bonus
    counters_book_round(&c, 0, 1, 7); // zero accept
    counters_book_round(&c, 7, 8, 7); // full accept + bonus
    counters_book_round(&c, 5, 2, 7); // stop after 2 tokens: 2 accepted, no bonus
    counters_book_round(&c, 0, 1, 0); // a one-row span (sampled or clamped): neither zero nor full
    ck_assert_int_eq(c.rounds, 5);
    ck_assert_int_eq(c.accepted, 3 + 0 + 7 + 2 + 0);
    ck_assert_int_eq(c.bonus, 1 + 1 + 1 + 0 + 1);
    ck_assert_int_eq(c.emitted, 4 + 1 + 8 + 2 + 1);
    ck_assert_int_eq(c.drafted, 28);
    ck_assert_int_eq(c.zero_accept, 1);
    ck_assert_int_eq(c.full_accept, 1);
    ck_assert_int_eq(c.hist[0], 2);
    ck_assert_int_eq(c.hist[2], 1);
    ck_assert_int_eq(c.hist[3], 1);
    ck_assert_int_eq(c.hist[7], 1);
    ck_assert_int_eq(counters_check(&c, 1 + c.emitted), SG_OK);
    ck_assert_int_eq(counters_check(&c, -1), SG_OK);
    ck_assert_int_eq(counters_check(&c, c.emitted), SG_EXIT_FAIL);
    ck_assert(strstr(sg_error(), "output_len") != NULL);
}
END_TEST

static void broken(spec_counters c, const char *needle) {
    ck_assert_int_eq(counters_check(&c, -1), SG_EXIT_FAIL);
    ck_assert_msg(strstr(sg_error(), needle) != NULL, "\"%s\" lacks \"%s\"", sg_error(), needle);
}

START_TEST(each_invariant_fails) {
    spec_counters good = {0};
    counters_book_round(&good, 2, 3, 7);
    good.hedged_rounds = good.loss_rounds = 1;
    good.chain_spans = good.chains_built = 2;
    ck_assert_int_eq(counters_check(&good, 4), SG_OK);
    spec_counters c = good;
    c.bonus++;
    broken(c, "emitted == c->accepted + c->bonus");
    c = good;
    c.hist[5]++;
    broken(c, "hist_sum == c->rounds");
    c = good;
    c.accepted = c.drafted + 1;
    c.emitted = c.accepted + c.bonus;
    broken(c, "accepted <= c->drafted");
    c = good;
    c.chain_wins++;
    broken(c, "hedged_rounds == c->chain_wins + c->loss_rounds");
    c = good;
    c.chain_spans = 0;
    c.chains_built = 0;
    broken(c, "chain_spans >= c->hedged_rounds");
    c = good;
    c.chains_deduped = 1;
    broken(c, "chains_built == c->chain_spans + c->chains_deduped");
    c = good;
    c.chains_dropped_capacity = 1;
    broken(c, "chains_dropped_capacity == 0");
}
END_TEST

START_TEST(add_equal_and_json) {
    spec_counters a = {0}, b = {0}, sum = {0};
    counters_book_round(&a, 1, 2, 4);
    counters_book_round(&b, 4, 5, 4);
    b.chain_wins = b.hedged_rounds = 1;
    counters_add(&sum, &a);
    counters_add(&sum, &b);
    ck_assert_int_eq(sum.rounds, 2);
    ck_assert_int_eq(sum.emitted, 7);
    ck_assert_int_eq(sum.chain_wins, 1);
    ck_assert(!counters_equal(&a, &b));
    spec_counters a2 = a;
    ck_assert(counters_equal(&a, &a2));
    cJSON *j = counters_to_json(&sum);
    char *text = cJSON_PrintUnformatted(j);
    ck_assert_msg(strstr(text, "\"emitted\":7") != NULL, "%s", text);
    ck_assert_msg(strstr(text, "\"hist\":[0,1,0,0,1]") != NULL, "%s", text);
    char line[256];
    counters_format(&sum, line, sizeof line);
    ck_assert_msg(strstr(line, "rounds 2") != NULL && strstr(line, "wins 1") != NULL, "%s", line);
    free(text);
    cJSON_Delete(j);
}
END_TEST

int main(void) {
    Suite *s = suite_create("counters");
    TCase *tc = tcase_create("counters");
    tcase_add_test(tc, booking_follows_the_definitions);
    tcase_add_test(tc, each_invariant_fails);
    tcase_add_test(tc, add_equal_and_json);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
