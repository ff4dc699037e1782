// tests/test_sampler.c: argmax/top-k order and ties, non-finite detection, sampler determinism
// and distribution.
// ctest-labels: cpu;unit
#include <math.h>

#include "common/sampler.h"
#include "testutil.h"

START_TEST(argmax_ties_go_to_lowest_id) {
    float x[] = {1.0f, 3.0f, -2.0f, 3.0f, 3.0f};
    ck_assert_int_eq(argmax_f32(x, 5), 1);
    float neg[] = {-5.0f, -1.0f, -1.0f};
    ck_assert_int_eq(argmax_f32(neg, 3), 1);
}
END_TEST

START_TEST(topk_orders_by_value_then_id) {
    float x[] = {0.5f, 2.0f, 2.0f, -1.0f, 7.0f, 2.0f, 0.5f};
    int ids[5];
    float vals[5];
    topk_f32(x, 7, 5, ids, vals);
    int want[] = {4, 1, 2, 5, 0};
    for (int i = 0; i < 5; i++) ck_assert_int_eq(ids[i], want[i]);
    ck_assert_float_eq(vals[0], 7.0f);
    ck_assert_float_eq(vals[4], 0.5f);
    // top-1 always equals argmax, on random rows with many ties
    uint64_t s = 7;
    for (int t = 0; t < 200; t++) {
        float row[64];
        for (int i = 0; i < 64; i++) row[i] = (float)(tu_next(&s) % 5);
        int top[2];
        topk_f32(row, 64, 2, top, NULL);
        ck_assert_int_eq(top[0], argmax_f32(row, 64));
        ck_assert(row[top[1]] < row[top[0]] || top[1] > top[0]);
    }
}
END_TEST

START_TEST(nonfinite_is_found) {
    float x[] = {1, 2, 3, 4};
    int at = -1;
    ck_assert_int_eq(first_nonfinite_f32(x, 4, &at), 0);
    x[2] = NAN;
    ck_assert_int_eq(first_nonfinite_f32(x, 4, &at), 1);
    ck_assert_int_eq(at, 2);
    x[2] = 0;
    x[3] = -INFINITY;
    ck_assert_int_eq(first_nonfinite_f32(x, 4, &at), 1);
    ck_assert_int_eq(at, 3);
}
END_TEST

START_TEST(sampler_is_deterministic_and_seeded) {
    double u = sampler_uniform(42, 17);
    ck_assert(u >= 0.0 && u < 1.0);
    ck_assert(u == sampler_uniform(42, 17));
    ck_assert(u != sampler_uniform(43, 17));
    ck_assert(u != sampler_uniform(42, 18));
    float logits[8] = {0, 1, 2, 3, 0, 1, 2, 3};
    int a = sampler_pick(logits, 8, 1.0, 5, 100);
    ck_assert_int_eq(a, sampler_pick(logits, 8, 1.0, 5, 100));
}
END_TEST

START_TEST(sampler_follows_softmax) {
    // Over many positions the empirical frequencies match softmax(logits / T).
    float logits[4] = {0.0f, 1.0f, 2.0f, -1.0f};
    double T = 1.5, p[4], z = 0;
    for (int i = 0; i < 4; i++) z += p[i] = exp(logits[i] / T);
    int count[4] = {0};
    int n = 40000;
    for (int pos = 0; pos < n; pos++) count[sampler_pick(logits, 4, T, 9, pos)]++;
    for (int i = 0; i < 4; i++) {
        double expected = n * p[i] / z, sd = sqrt(expected);
        ck_assert_msg(fabs(count[i] - expected) < 5 * sd, "token %d: %d vs %.0f", i, count[i], expected);
    }
    // A very low temperature is greedy.
    ck_assert_int_eq(sampler_pick(logits, 4, 1e-3, 1, 1), 2);
}
END_TEST

START_TEST(margin_is_distance_to_bucket_edges) {
    // Two equal logits: buckets [0, 0.5) and [0.5, 1).
    float logits[2] = {1.0f, 1.0f};
    for (int pos = 0; pos < 50; pos++) {
        double u = sampler_uniform(4, pos);
        int k = sampler_pick(logits, 2, 1.0, 4, pos);
        ck_assert_int_eq(k, u < 0.5 ? 0 : 1);
        double want = k == 0 ? fmin(u, 0.5 - u) : fmin(u - 0.5, 1.0 - u);
        ck_assert(fabs(sampler_margin(logits, 2, 1.0, 4, pos) - want) < 1e-12);
    }
    // Moving every logit by less than margin * T / 4 keeps the pick (the contract in sampler.h).
    float base[16], moved[16];
    uint64_t s = 11;
    for (int t = 0; t < 300; t++) {
        for (int i = 0; i < 16; i++) base[i] = (float)(3 * tu_normal(&s));
        double T = 0.5 + tu_uniform(&s), m = sampler_margin(base, 16, T, 9, t);
        double d = 0.99 * m * T / 4;
        for (int i = 0; i < 16; i++) moved[i] = base[i] + (float)(d * (2 * tu_uniform(&s) - 1));
        if (m > 1e-5) ck_assert_int_eq(sampler_pick(moved, 16, T, 9, t), sampler_pick(base, 16, T, 9, t));
    }
}
END_TEST

START_TEST(uniform_is_spread) {
    double sum = 0, lo = 1, hi = 0;
    for (int pos = 0; pos < 10000; pos++) {
        double u = sampler_uniform(3, pos);
        sum += u;
        lo = fmin(lo, u);
        hi = fmax(hi, u);
    }
    ck_assert(fabs(sum / 10000 - 0.5) < 0.02);
    ck_assert(lo < 0.001 && hi > 0.999);
}
END_TEST

int main(void) {
    Suite *s = suite_create("sampler");
    TCase *tc = tcase_create("sampler");
    tcase_add_test(tc, argmax_ties_go_to_lowest_id);
    tcase_add_test(tc, topk_orders_by_value_then_id);
    tcase_add_test(tc, nonfinite_is_found);
    tcase_add_test(tc, sampler_is_deterministic_and_seeded);
    tcase_add_test(tc, sampler_follows_softmax);
    tcase_add_test(tc, margin_is_distance_to_bucket_edges);
    tcase_add_test(tc, uniform_is_spread);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
