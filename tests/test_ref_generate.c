// tests/test_ref_generate.c: ref_generate on a small random target built in memory
// (tests/ref_test_model.h): the greedy argmax chain, stop ids, EOS, ignore_eos, max_new_tokens,
// one-token prompts, seeded sampling, taps and kept logits, NaN as a hard error, usage errors.
// ctest-labels: cpu;unit
//
// TOL: the tolerance between a one-row decode and a full prefill (see test_ref_qwen3.c: OpenBLAS
// may sum in another order for another M). Where two paths are compared by argmax, the comparison
// is made only where the recomputed margin exceeds 2·TOL, so a legitimate near-tie cannot fail it.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/sampler.h"
#include "ref/generate.h"
#include "ref/qwen3.h"
#include "ref_test_model.h"
#include "testutil.h"

#define TOL 1e-2
#define V 64
#define H 32
#define NP 3
#define MAX_NEW 8

static const int prompt[NP] = {5, 17, 42};
static const int tap_ids[2] = {1, 0};

static ref_gen_options greedy_options(int max_new) {
    ref_gen_options o;
    memset(&o, 0, sizeof o);
    o.max_new_tokens = max_new;
    o.tap_ids = tap_ids;
    o.n_taps = 2;
    o.keep_logits = 1;
    return o;
}

static void generate_ok(const target_model *m, const int *p, int n, const ref_gen_options *o,
                        ref_output *out) {
    int rc = ref_generate(m, p, n, o, out);
    ck_assert_msg(rc == SG_OK, "ref_generate: %d %s", rc, sg_error());
}

// One prefill of tokens[0..n): last row's logits [V] and every row's taps [n, 2H].
static void full_forward(const target_model *m, const int *tokens, int n, float *logits,
                         float *taps) {
    ref_target t;
    ref_target_init(&t, m, n);
    ref_target_forward_tail(&t, tokens, n, tap_ids, 2, 1, logits, taps);
    ref_target_free(&t);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

START_TEST(test_greedy_is_argmax_chain) {
    rtm_model tm;
    rtm_build(&tm, 0, 1);
    ref_gen_options o = greedy_options(MAX_NEW);
    ref_output out;
    generate_ok(&tm.m, prompt, NP, &o, &out);
    ck_assert_int_eq(out.n_prompt, NP);
    ck_assert_int_eq(out.n_generated, MAX_NEW);
    ck_assert_int_eq(out.reason, STOP_MAX_NEW);
    ck_assert_int_eq(out.n_tap_cols, 2 * H);
    ck_assert(memcmp(out.tokens, prompt, sizeof prompt) == 0);
    int checked = 0;
    float row[V], taps[(NP + MAX_NEW) * 2 * H];
    for (int i = 0; i < MAX_NEW; i++) {
        const float *kept = out.logits + i * V;
        int ids[2];
        float vals[2];
        topk_f32(kept, V, 2, ids, vals);
        ck_assert(out.margins[i] == vals[0] - vals[1]);
        ck_assert_int_eq(out.tokens[NP + i], ids[0]);
        // Independent recomputation: one full prefill of everything before the chosen token.
        full_forward(&tm.m, out.tokens, NP + i, row, taps);
        ck_assert_double_lt(max_abs_diff(row, kept, V), TOL);
        topk_f32(row, V, 2, ids, vals);
        if (vals[0] - vals[1] > 2 * TOL) {
            ck_assert_int_eq(out.tokens[NP + i], ids[0]);
            checked++;
        }
    }
    ck_assert_int_ge(checked, MAX_NEW / 2);
    // Taps: every fed position (the last token is never fed), rows as a full prefill gives them.
    ck_assert_double_lt(max_abs_diff(out.taps, taps, (NP + MAX_NEW - 1) * 2 * H), TOL);
    ref_output_free(&out);
    ck_assert_ptr_null(out.tokens);
    rtm_free(&tm);
}
END_TEST

// max_new_tokens 1 and 2 are prefixes of the longer run; a one-token run's taps are the prompt's,
// bitwise as a prefill of the prompt alone gives them (the same forward).
START_TEST(test_max_new_tokens) {
    rtm_model tm;
    rtm_build(&tm, 0, 2);
    ref_gen_options o = greedy_options(MAX_NEW);
    ref_output base, out;
    generate_ok(&tm.m, prompt, NP, &o, &base);
    for (int max_new = 1; max_new <= 2; max_new++) {
        o.max_new_tokens = max_new;
        generate_ok(&tm.m, prompt, NP, &o, &out);
        ck_assert_int_eq(out.n_generated, max_new);
        ck_assert_int_eq(out.reason, STOP_MAX_NEW);
        ck_assert(memcmp(out.tokens, base.tokens, (NP + max_new) * sizeof(int)) == 0);
        ck_assert(memcmp(out.logits, base.logits, V * sizeof(float)) == 0);
        if (max_new == 1) {
            float row[V], taps[NP * 2 * H];
            full_forward(&tm.m, prompt, NP, row, taps);
            ck_assert(memcmp(out.taps, taps, sizeof taps) == 0);
            ck_assert(memcmp(out.logits, row, sizeof row) == 0);
        }
        ref_output_free(&out);
    }
    ref_output_free(&base);
    rtm_free(&tm);
}
END_TEST

// The first position k whose token does not occur earlier in the generated tokens, k >= from.
static int first_fresh(const ref_output *out, int from) {
    for (int k = from; k < out->n_generated; k++) {
        int fresh = 1;
        for (int j = 0; j < k; j++) fresh &= out->tokens[NP + j] != out->tokens[NP + k];
        if (fresh) return k;
    }
    return -1;
}

START_TEST(test_stop_and_eos) {
    rtm_model tm;
    rtm_build(&tm, 0, 3);
    ref_gen_options o = greedy_options(MAX_NEW);
    ref_output base, out;
    generate_ok(&tm.m, prompt, NP, &o, &base);
    int k = first_fresh(&base, 2);
    ck_assert_int_ge(k, 2); // the run has a new token at some step >= 2
    int tok = base.tokens[NP + k];

    o.stop = &tok; // stop id: kept, generation ends there
    o.n_stop = 1;
    generate_ok(&tm.m, prompt, NP, &o, &out);
    ck_assert_int_eq(out.reason, STOP_ID);
    ck_assert_int_eq(out.n_generated, k + 1);
    ck_assert(memcmp(out.tokens, base.tokens, (NP + k + 1) * sizeof(int)) == 0);
    ref_output_free(&out);

    tm.m.cfg.eos_ids[0] = 63; // an EOS id that never comes, then the real one
    tm.m.cfg.eos_ids[1] = tok;
    tm.m.cfg.n_eos = 2;
    generate_ok(&tm.m, prompt, NP, &o, &out); // both a stop id and EOS: the stop id is reported
    ck_assert_int_eq(out.reason, STOP_ID);
    ref_output_free(&out);
    o.n_stop = 0;
    generate_ok(&tm.m, prompt, NP, &o, &out);
    ck_assert_int_eq(out.reason, STOP_EOS);
    ck_assert_int_eq(out.n_generated, k + 1);
    ck_assert(memcmp(out.tokens, base.tokens, (NP + k + 1) * sizeof(int)) == 0);
    ref_output_free(&out);

    o.ignore_eos = 1;
    generate_ok(&tm.m, prompt, NP, &o, &out);
    ck_assert_int_eq(out.reason, STOP_MAX_NEW);
    ck_assert_int_eq(out.n_generated, MAX_NEW);
    ck_assert(memcmp(out.tokens, base.tokens, (NP + MAX_NEW) * sizeof(int)) == 0);
    ref_output_free(&out);
    ref_output_free(&base);
    rtm_free(&tm);
}
END_TEST

START_TEST(test_prompt_of_one) {
    rtm_model tm;
    rtm_build(&tm, 1, 4);
    ref_gen_options o = greedy_options(4);
    ref_output out;
    generate_ok(&tm.m, prompt, 1, &o, &out);
    ck_assert_int_eq(out.n_prompt, 1);
    ck_assert_int_eq(out.n_generated, 4);
    float row[V], taps[2 * H];
    full_forward(&tm.m, prompt, 1, row, taps);
    ck_assert(memcmp(out.logits, row, sizeof row) == 0);
    ck_assert(memcmp(out.taps, taps, sizeof taps) == 0);
    ck_assert_int_eq(out.tokens[1], argmax_f32(row, V));
    ref_output_free(&out);
    rtm_free(&tm);
}
END_TEST

START_TEST(test_sampling) {
    rtm_model tm;
    rtm_build(&tm, 0, 5);
    ref_gen_options o = greedy_options(MAX_NEW);
    ref_output greedy, a, b;
    generate_ok(&tm.m, prompt, NP, &o, &greedy);
    o.temperature = 1.0;
    o.seed = 7;
    generate_ok(&tm.m, prompt, NP, &o, &a);
    generate_ok(&tm.m, prompt, NP, &o, &b);
    ck_assert_int_eq(a.n_generated, MAX_NEW);
    ck_assert(memcmp(a.tokens, b.tokens, (NP + MAX_NEW) * sizeof(int)) == 0); // deterministic
    for (int i = 0; i < MAX_NEW; i++) // the sampler at the chosen token's absolute position
        ck_assert_int_eq(a.tokens[NP + i],
                         sampler_pick(a.logits + i * V, V, 1.0, 7, (int64_t)NP + i));
    ref_output_free(&b);
    int differs = 0; // some other seed gives another sequence (fixed data: deterministic)
    for (uint64_t seed = 8; seed < 12; seed++) {
        o.seed = seed;
        generate_ok(&tm.m, prompt, NP, &o, &b);
        differs |= memcmp(a.tokens, b.tokens, (NP + MAX_NEW) * sizeof(int)) != 0;
        ref_output_free(&b);
    }
    ck_assert(differs);
    // At T = 1e-9 every non-argmax weight exp(−margin/T) underflows to 0 in double once the
    // margin exceeds ~7.5e-7, so sampling must reproduce greedy exactly.
    for (int i = 0; i < MAX_NEW; i++) ck_assert_float_gt(greedy.margins[i], 1e-6f);
    o.temperature = 1e-9;
    generate_ok(&tm.m, prompt, NP, &o, &b);
    ck_assert(memcmp(greedy.tokens, b.tokens, (NP + MAX_NEW) * sizeof(int)) == 0);
    ref_output_free(&b);
    ref_output_free(&a);
    ref_output_free(&greedy);
    rtm_free(&tm);
}
END_TEST

static void expect_failure(const target_model *m, const int *p, int n, const ref_gen_options *o,
                           int status, const char *needle) {
    ref_output out;
    int rc = ref_generate(m, p, n, o, &out);
    ck_assert_msg(rc == status, "status %d, wanted %d (%s)", rc, status, sg_error());
    ck_assert_msg(strstr(sg_error(), needle) != NULL, "message '%s' lacks '%s'", sg_error(),
                  needle);
    ck_assert_ptr_null(out.tokens);
    ck_assert_ptr_null(out.taps);
    ck_assert_ptr_null(out.logits);
    ck_assert_int_eq(out.n_generated, 0);
}

// A NaN in lm_head row 17 poisons logit 17 of the first choosing row (position NP); a NaN in the
// embedding row of a generated token poisons everything from the row that feeds it.
START_TEST(test_nan_is_a_hard_error) {
    rtm_model tm;
    rtm_build(&tm, 0, 6);
    ref_gen_options o = greedy_options(MAX_NEW);
    ref_output base;
    generate_ok(&tm.m, prompt, NP, &o, &base);

    bf16 *head = (bf16 *)tm.m.lm_head, saved = head[17 * H];
    head[17 * H] = f32_to_bf16(NAN);
    const char *first = "non-finite logit at position 3 (token id 17 ";
    expect_failure(&tm.m, prompt, NP, &o, SG_EXIT_FAIL, first);
    o.temperature = 0.5; // sampling never sees a NaN row either
    expect_failure(&tm.m, prompt, NP, &o, SG_EXIT_FAIL, first);
    o.temperature = 0.0;
    head[17 * H] = saved;

    // A generated token at step k >= 1 that is new (not in the prompt, not generated before) is
    // first fed at position NP + k; the row there chooses position NP + k + 1.
    int k = -1;
    for (int j = first_fresh(&base, 1); j >= 1 && j < MAX_NEW - 1; j = first_fresh(&base, j + 1)) {
        int tok = base.tokens[NP + j];
        if (tok != prompt[0] && tok != prompt[1] && tok != prompt[2]) {
            k = j;
            break;
        }
    }
    ck_assert_int_ge(k, 1);
    bf16 *emb = (bf16 *)tm.m.embed + (size_t)base.tokens[NP + k] * H;
    emb[5] = f32_to_bf16(NAN);
    char needle[64];
    snprintf(needle, sizeof needle, "non-finite logit at position %d ", NP + k + 1);
    expect_failure(&tm.m, prompt, NP, &o, SG_EXIT_FAIL, needle);
    ref_output_free(&base);
    rtm_free(&tm);
}
END_TEST

START_TEST(test_usage_errors) {
    rtm_model tm;
    rtm_build(&tm, 0, 7);
    ref_gen_options o = greedy_options(4);
    const int bad_low[2] = {3, -1}, bad_high[2] = {3, V}, long_prompt[61] = {0};
    expect_failure(&tm.m, prompt, 0, &o, SG_EXIT_USAGE, "prompt is empty");
    expect_failure(&tm.m, bad_low, 2, &o, SG_EXIT_USAGE, "prompt token -1 (index 1)");
    expect_failure(&tm.m, bad_high, 2, &o, SG_EXIT_USAGE, "prompt token 64 (index 1)");
    expect_failure(&tm.m, long_prompt, 61, &o, SG_EXIT_USAGE, "max_position_embeddings 64");
    o.max_new_tokens = 0;
    expect_failure(&tm.m, prompt, NP, &o, SG_EXIT_USAGE, "max_new_tokens is 0");
    o.max_new_tokens = 4;
    o.temperature = -1.0;
    expect_failure(&tm.m, prompt, NP, &o, SG_EXIT_USAGE, "temperature");
    o.temperature = NAN;
    expect_failure(&tm.m, prompt, NP, &o, SG_EXIT_USAGE, "temperature");
    o.temperature = 0.0;
    const int bad_taps[2] = {0, 2};
    o.tap_ids = bad_taps;
    expect_failure(&tm.m, prompt, NP, &o, SG_EXIT_USAGE, "tap layer 2");
    // The limit itself is fine: 60 + 4 = 64 positions.
    o.tap_ids = tap_ids;
    ref_output out;
    generate_ok(&tm.m, long_prompt, 60, &o, &out);
    ck_assert_int_eq(out.n_generated, 4);
    ref_output_free(&out);
    rtm_free(&tm);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ref_generate");
    TCase *tc = tcase_create("generate");
    tcase_add_test(tc, test_greedy_is_argmax_chain);
    tcase_add_test(tc, test_max_new_tokens);
    tcase_add_test(tc, test_stop_and_eos);
    tcase_add_test(tc, test_prompt_of_one);
    tcase_add_test(tc, test_sampling);
    tcase_add_test(tc, test_nan_is_a_hard_error);
    tcase_add_test(tc, test_usage_errors);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
