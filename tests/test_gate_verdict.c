// tests/test_gate_verdict.c: gates/verdict.c: the verdicts of design.md §4 on synthetic logits rows
// (IDENTICAL; REJECTED where expected or not; MISMATCH at a wide margin, past a difference, on
// lengths; TIE below the tolerance with the teacher-forced check of every later token, and its
// failures; a TIE failing where the suite requires IDENTICAL (identical_only); the sampled TIE:
// the reference's sampling margin at the difference below 4 tol/T or not, and the sampled
// teacher-forced check of later tokens), |Δlogit| over the common prefix only, NaN handling, the
// top-5 order, and the teacher-forced reference rows on the tiny fixture.
// ctest-labels: cpu;unit
#include <math.h>
#include <string.h>

#include "common/sampler.h"
#include "engine_fixture.h"
#include "gates/verdict.h"

#define NV 8
#define NT 6

static float ref_rows[NT][NV], eng_rows[NT][NV], tf_rows[NT][NV];
static int ref_tok[NT], eng_tok[NT];

// Row with `top` at 10 and `second` at 10 - margin, the rest at 0..-7.
static void make_row(float *row, int top, int second, float margin) {
    for (int v = 0; v < NV; v++) row[v] = (float)-v;
    row[top] = 10.0f;
    row[second] = 10.0f - margin;
}

// The reference and the engine agree: tokens 3,1,4,1,5,2 with margins 5; tf rows = ref rows.
static void agree(void) {
    static const int toks[NT] = {3, 1, 4, 1, 5, 2};
    for (int i = 0; i < NT; i++) {
        ref_tok[i] = eng_tok[i] = toks[i];
        make_row(ref_rows[i], toks[i], (toks[i] + 1) % NV, 5.0f);
        memcpy(eng_rows[i], ref_rows[i], sizeof ref_rows[i]);
        memcpy(tf_rows[i], ref_rows[i], sizeof ref_rows[i]);
    }
}

static verdict_input input(void) {
    verdict_input in = {.V = NV, .tol = 0.02, .ref_tokens = ref_tok, .n_ref = NT,
                        .ref_rows = &ref_rows[0][0], .eng_tokens = eng_tok, .n_eng = NT,
                        .eng_rows = &eng_rows[0][0], .tf_rows = &tf_rows[0][0]};
    return in;
}

START_TEST(test_identical) {
    agree();
    eng_rows[4][0] += 0.004f; // a small numeric difference
    verdict_input in = input();
    verdict v;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_IDENTICAL);
    ck_assert(v.passed);
    ck_assert_int_eq(v.diff, -1);
    ck_assert_int_eq(v.dlogit_pos, 4);
    ck_assert_double_eq_tol(v.max_abs_dlogit, 0.004, 1e-6);
    ck_assert_str_eq(verdict_name(v.kind), "IDENTICAL");
}
END_TEST

START_TEST(test_rejected) {
    agree();
    verdict_input in = input();
    verdict v;
    in.rejected = 1;
    in.expect_rejected = 1;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_REJECTED);
    ck_assert(v.passed);
    in.expect_rejected = 0;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_REJECTED);
    ck_assert(!v.passed);
    ck_assert_ptr_nonnull(strstr(v.why, "expects it to run"));
    in.rejected = 0;
    in.expect_rejected = 1; // it ran although the workload expects a refusal
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert(!v.passed);
    ck_assert_int_eq(v.dlogit_pos, -1);
}
END_TEST

START_TEST(test_mismatch_wide_margin) {
    agree();
    eng_tok[2] = 7; // the reference's margin for its token over 7 is 10 - (-7) = 17 nat
    for (int i = 3; i < NT; i++) eng_rows[i][0] += 100.0f; // past the difference: not compared
    eng_rows[2][1] += 0.01f;
    verdict_input in = input();
    verdict v;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert(!v.passed);
    ck_assert_int_eq(v.diff, 2);
    ck_assert_int_eq(v.ref_token, 4);
    ck_assert_int_eq(v.eng_token, 7);
    ck_assert_int_eq(v.ref_top.ids[0], 4);
    ck_assert_int_eq(v.ref_top.ids[1], 5);
    ck_assert_double_eq_tol(v.ref_margin, 5.0, 1e-6);
    ck_assert_double_eq_tol(v.tie_margin, 17.0, 1e-6);
    ck_assert_int_eq(v.dlogit_pos, 2);
    ck_assert_double_eq_tol(v.max_abs_dlogit, 0.01, 1e-6);
}
END_TEST

// A tie: at token 2 the reference prefers 4 over 5 by 0.01 < tol; the engine took 5 and every
// later engine token is the argmax of the reference row along the engine's tokens.
static void make_tie(void) {
    agree();
    make_row(ref_rows[2], 4, 5, 0.01f);
    memcpy(eng_rows[2], ref_rows[2], sizeof ref_rows[2]);
    eng_tok[2] = 5;
    for (int i = 3; i < NT; i++) {
        eng_tok[i] = (i * 3) % NV;
        make_row(tf_rows[i], eng_tok[i], (eng_tok[i] + 2) % NV, 3.0f);
        memcpy(eng_rows[i], tf_rows[i], sizeof tf_rows[i]);
        ref_rows[i][0] += 50.0f; // the reference's own later rows no longer apply
    }
}

START_TEST(test_tie) {
    make_tie();
    eng_rows[5][6] += 0.005f;
    verdict_input in = input();
    verdict v;
    verdict_judge(&in, &v);
    ck_assert_msg(v.kind == VERDICT_TIE && v.passed, "%s: %s", verdict_name(v.kind), v.why);
    ck_assert_int_eq(v.diff, 2);
    ck_assert_double_eq_tol(v.tie_margin, 0.01, 1e-6);
    ck_assert_int_eq(v.tf_fail, -1);
    ck_assert_int_eq(v.dlogit_pos, 5); // the teacher-forced rows count after the difference
    ck_assert_double_eq_tol(v.max_abs_dlogit, 0.005, 1e-6);
    // The hedge suites require IDENTICAL: the same TIE is reported as TIE but fails, saying why.
    in.identical_only = 1;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_TIE);
    ck_assert(!v.passed);
    ck_assert_int_eq(v.diff, 2);
    ck_assert_msg(strstr(v.why, "requires every request IDENTICAL") && strstr(v.why, "0.01"),
                  "%s", v.why);
    // identical_only changes nothing else: IDENTICAL passes, a wide margin is still MISMATCH.
    agree();
    verdict_judge(&in, &v);
    ck_assert(v.kind == VERDICT_IDENTICAL && v.passed);
    eng_tok[2] = 6;
    verdict_judge(&in, &v);
    ck_assert(v.kind == VERDICT_MISMATCH && !v.passed);
}
END_TEST

START_TEST(test_tie_fails_teacher_forcing) {
    make_tie();
    tf_rows[4][(eng_tok[4] + 1) % NV] = 10.5f; // a later engine token trails by 0.5 nat
    verdict_input in = input();
    verdict v;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert_int_eq(v.tf_fail, 4);
    ck_assert_double_eq_tol(v.tf_gap, 0.5, 1e-6);
    // Exactly at the tolerance the later token passes (within), the first difference does not
    // (strictly below).
    make_tie();
    tf_rows[4][(eng_tok[4] + 1) % NV] = 10.0f + 0.015625f;
    in = input();
    in.tol = 0.015625;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_TIE);
    make_tie();
    in = input();
    in.tol = (double)ref_rows[2][4] - (double)ref_rows[2][5]; // exactly the margin at the diff
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert_int_eq(v.tf_fail, -1);
    // Without teacher-forced rows a tie cannot be confirmed.
    in = input();
    in.tf_rows = NULL;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert_ptr_nonnull(strstr(v.why, "teacher-forced"));
}
END_TEST

// ---- sampled requests: seed SEED_T, temperature ST, generated token i at position NP + i ----

#define NP 11
#define ST 0.5
static uint64_t seed_t;

// A seed whose uniforms at positions NP .. NP + NT - 1 all lie in [0.25, 0.75], so that any
// bucket margin up to 0.25 can be built around them.
static uint64_t central_seed(void) {
    for (uint64_t seed = 1; seed < 100000; seed++) {
        int ok = 1;
        for (int i = 0; i < NT && ok; i++) {
            double u = sampler_uniform(seed, NP + i);
            ok = u >= 0.25 && u <= 0.75;
        }
        if (ok) return seed;
    }
    ck_abort_msg("no seed with central uniforms");
    return 0;
}

// Row at generated token i: the sampler picks `pick` with margin m (<= 0.25), all the mass on
// `pick` and `other` (the rest at -100, negligible), logits T log p.
static void sampled_row(float *row, int i, int pick, int other, double m) {
    double u = sampler_uniform(seed_t, NP + i);
    // pick's bucket starts at 0 when it has the lower id, so it must end at u + m; else the
    // other's bucket ends at u - m, where pick's begins.
    double p_pick = pick < other ? u + m : 1.0 - (u - m);
    for (int v = 0; v < NV; v++) row[v] = -100.0f;
    row[pick] = (float)(ST * log(p_pick));
    row[other] = (float)(ST * log(1.0 - p_pick));
    ck_assert_int_eq(sampler_pick(row, NV, ST, seed_t, NP + i), pick);
    ck_assert_double_eq_tol(sampler_margin(row, NV, ST, seed_t, NP + i), m, 1e-5);
}

// Both sample 3,1,4,1,5,2 with margins 0.2 (not below 4 tol/T = 0.16); tf rows = ref rows.
static void sampled_agree(void) {
    static const int toks[NT] = {3, 1, 4, 1, 5, 2};
    seed_t = central_seed();
    for (int i = 0; i < NT; i++) {
        ref_tok[i] = eng_tok[i] = toks[i];
        sampled_row(ref_rows[i], i, toks[i], (toks[i] + 3) % NV, 0.2);
        memcpy(eng_rows[i], ref_rows[i], sizeof ref_rows[i]);
        memcpy(tf_rows[i], ref_rows[i], sizeof ref_rows[i]);
    }
}

static verdict_input sampled_input(void) {
    verdict_input in = input();
    in.temperature = ST;
    in.seed = seed_t;
    in.n_prompt = NP;
    return in;
}

// A sampled tie candidate: at token 2 the reference samples 4 with margin m; the engine took 0.
static void make_sampled_diff(double m) {
    sampled_agree();
    sampled_row(ref_rows[2], 2, 4, 0, m);
    memcpy(eng_rows[2], ref_rows[2], sizeof ref_rows[2]);
    eng_tok[2] = 0;
}

START_TEST(test_sampled_tie) {
    make_sampled_diff(0.05); // 0.05 < 4 * 0.02 / 0.5 = 0.16
    // Later token 4: the reference samples 6 along the engine's prefix, but only by 0.1 < 0.16.
    sampled_row(tf_rows[4], 4, 6, eng_tok[4], 0.1);
    verdict_input in = sampled_input();
    verdict v;
    verdict_judge(&in, &v);
    ck_assert_msg(v.kind == VERDICT_TIE && v.passed, "%s: %s", verdict_name(v.kind), v.why);
    ck_assert_int_eq(v.diff, 2);
    ck_assert_int_eq(v.ref_token, 4);
    ck_assert_int_eq(v.eng_token, 0);
    ck_assert_double_eq_tol(v.sample_margin, 0.05, 1e-5);
    ck_assert_double_eq_tol(v.bound, 0.16, 1e-12);
    ck_assert_int_eq(v.tf_fail, -1);
    ck_assert_msg(strstr(v.why, "sampling margin 0.05") && strstr(v.why, "4 tol/T 0.16"), "%s",
                  v.why);
    // The hedge suites still require IDENTICAL.
    in.identical_only = 1;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_TIE);
    ck_assert(!v.passed);
    ck_assert_ptr_nonnull(strstr(v.why, "requires every request IDENTICAL"));
    // The same rows greedy: the logit margin at the difference (about 100 nat) is no tie.
    in = sampled_input();
    in.temperature = 0.0;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert_double_eq(v.sample_margin, 0.0);
}
END_TEST

START_TEST(test_sampled_mismatch) {
    // A sampling margin beyond 4 tol/T at the first difference.
    make_sampled_diff(0.2);
    verdict_input in = sampled_input();
    verdict v;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert_int_eq(v.diff, 2);
    ck_assert_double_eq_tol(v.sample_margin, 0.2, 1e-5);
    ck_assert_int_eq(v.tf_fail, -1);
    ck_assert_msg(strstr(v.why, "sampling margin 0.2") && strstr(v.why, "not below 4 tol/T"),
                  "%s", v.why);
    // The bound is 4 tol/T: 0.1 ties at tol 0.02 (bound 0.16), not at tol 0.01 (bound 0.08).
    make_sampled_diff(0.1);
    in = sampled_input();
    verdict_judge(&in, &v);
    ck_assert_msg(v.kind == VERDICT_TIE, "%s", v.why);
    in.tol = 0.01;
    verdict_judge(&in, &v);
    ck_assert_double_eq_tol(v.bound, 0.08, 1e-12);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    // Without teacher-forced rows the tie cannot be confirmed.
    in = sampled_input();
    in.tf_rows = NULL;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert_ptr_nonnull(strstr(v.why, "teacher-forced"));
}
END_TEST

START_TEST(test_sampled_fails_teacher_forcing) {
    make_sampled_diff(0.05);
    // Later token 4: the reference samples 6 along the engine's prefix by 0.2, not below 0.16.
    sampled_row(tf_rows[4], 4, 6, eng_tok[4], 0.2);
    verdict_input in = sampled_input();
    verdict v;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert_int_eq(v.tf_fail, 4);
    ck_assert_double_eq_tol(v.tf_gap, 0.2, 1e-5);
    ck_assert_msg(strstr(v.why, "later token 4") && strstr(v.why, "samples another token"), "%s",
                  v.why);
    // The first failing position is reported, not a later one.
    sampled_row(tf_rows[5], 5, 7, eng_tok[5], 0.25);
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.tf_fail, 4);
}
END_TEST

START_TEST(test_lengths_and_nan) {
    agree();
    verdict_input in = input();
    in.n_eng = 4; // the engine stopped early on the same tokens
    verdict v;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.kind, VERDICT_MISMATCH);
    ck_assert_int_eq(v.diff, 4);
    ck_assert_int_eq(v.ref_token, 5);
    ck_assert_int_eq(v.eng_token, -1);
    ck_assert_ptr_nonnull(strstr(v.why, "engine's output ends"));
    in = input();
    in.n_ref = 5;
    verdict_judge(&in, &v);
    ck_assert_int_eq(v.ref_token, -1);
    ck_assert_int_eq(v.eng_token, 2);
    ck_assert_ptr_nonnull(strstr(v.why, "reference's output ends"));
    agree();
    eng_rows[1][3] = NAN;
    in = input();
    verdict_judge(&in, &v);
    ck_assert(isnan(v.max_abs_dlogit));
    ck_assert_int_eq(v.dlogit_pos, 1);
    ck_assert(isnan(verdict_row_dlogit(eng_rows[1], ref_rows[1], NV)));
}
END_TEST

START_TEST(test_row_top) {
    float row[NV] = {1, 3, 3, 0, 2, 3, -1, 2};
    verdict_top t;
    verdict_row_top(row, NV, &t);
    int want[5] = {1, 2, 5, 4, 7}; // value descending, ties to the lowest id
    for (int i = 0; i < 5; i++) ck_assert_int_eq(t.ids[i], want[i]);
    verdict_row_top(row, 3, &t);
    ck_assert_int_eq(t.ids[2], 0);
    ck_assert_int_eq(t.ids[3], -1);
}
END_TEST

START_TEST(test_teacher_rows) {
    ef_models m;
    ef_open_set(&m, "tiny");
    sg_workload w;
    ef_workload(&m, "sequential", &w);
    const sg_request *r = &w.requests[0];
    ref_gen_options g = {.max_new_tokens = 12, .keep_logits = 1, .ignore_eos = 1};
    ref_output o;
    ck_assert_int_eq(ref_generate(&m.target, r->prompt, r->n_prompt, &g, &o), SG_OK);
    int Vt = m.target.cfg.vocab_size, n = o.n_generated;
    float *tf = calloc((size_t)n * Vt, sizeof *tf);
    int *toks = o.tokens + o.n_prompt;
    // Along the reference's own tokens: its own rows, bit for bit (the same computation).
    ck_assert_int_eq(verdict_teacher_rows(&m.target, r->prompt, r->n_prompt, toks, n, tf), SG_OK);
    ck_assert(memcmp(tf, o.logits, (size_t)n * Vt * sizeof *tf) == 0);
    // A different token at 5: rows 0..5 unchanged, row 6 on differs.
    toks[5] = (toks[5] + 1) % Vt;
    ck_assert_int_eq(verdict_teacher_rows(&m.target, r->prompt, r->n_prompt, toks, n, tf), SG_OK);
    ck_assert(memcmp(tf, o.logits, (size_t)6 * Vt * sizeof *tf) == 0);
    ck_assert(memcmp(tf + 6 * Vt, o.logits + 6 * Vt, (size_t)Vt * sizeof *tf) != 0);
    // Requests that do not fit are usage errors.
    int big = m.target.cfg.max_position_embeddings;
    ck_assert_int_eq(verdict_teacher_rows(&m.target, r->prompt, r->n_prompt, toks, big, tf),
                     SG_EXIT_USAGE);
    toks[0] = Vt;
    ck_assert_int_eq(verdict_teacher_rows(&m.target, r->prompt, r->n_prompt, toks, n, tf),
                     SG_EXIT_USAGE);
    free(tf);
    ref_output_free(&o);
    workload_free(&w);
    ef_close(&m);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gate_verdict");
    TCase *tc = tcase_create("verdicts");
    tcase_add_test(tc, test_identical);
    tcase_add_test(tc, test_rejected);
    tcase_add_test(tc, test_mismatch_wide_margin);
    tcase_add_test(tc, test_tie);
    tcase_add_test(tc, test_tie_fails_teacher_forcing);
    tcase_add_test(tc, test_sampled_tie);
    tcase_add_test(tc, test_sampled_mismatch);
    tcase_add_test(tc, test_sampled_fails_teacher_forcing);
    tcase_add_test(tc, test_lengths_and_nan);
    tcase_add_test(tc, test_row_top);
    tcase_add_test(tc, test_teacher_rows);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
