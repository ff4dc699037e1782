// tests/test_ref_qwen3.c: the reference Qwen3 forward on a small random target built in memory
// (tests/ref_test_model.h: nH·hd = 48 ≠ H = 32, GQA 4/2): KV-cache decode and chunked prefill
// against one full prefill, causality, history dependence, tap contents, tied heads.
// ctest-labels: cpu;unit
//
// Tolerance: ref_matmul uses OpenBLAS sgemm, whose reduction order may differ between M = 1 and
// M = n (kernel choice depends on the CPU and the shape), so a decode and a prefill may differ in
// fp32 summation order; a changed fp32 sum can flip a bf16 rounding (2⁻⁸ relative) that then
// propagates. The logits here are O(0.3), so TOL = 1e-2 allows a few such flips, while a wrong
// position, cache row or mask moves the logits by more than 10·TOL (asserted below: one token 9
// positions back moves the last row by ~0.2). On the development machine the difference is 0.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ref/ops.h"
#include "ref/qwen3.h"
#include "ref_test_model.h"
#include "testutil.h"

#define TOL 1e-2
#define SEQ 10
#define V 64
#define H 32

static const int seq[SEQ] = {5, 17, 42, 3, 63, 0, 17, 29, 8, 51};

static double max_abs_diff(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

// One prefill of tokens[0..n) from an empty cache: logits [n, V], taps [n, n_taps*H] (may be NULL).
static void full_forward(const target_model *m, const int *tokens, int n, const int *tap_ids,
                         int n_taps, float *logits, float *taps) {
    ref_target t;
    ref_target_init(&t, m, n);
    ref_target_forward(&t, tokens, n, tap_ids, n_taps, logits, taps);
    ck_assert_int_eq(t.len, n);
    ref_target_free(&t);
}

// Prefill of `chunks[0]` rows, then the given chunk sizes, into one logits/taps array.
static void chunked_forward(const target_model *m, const int *chunks, int n_chunks,
                            const int *tap_ids, int n_taps, float *logits, float *taps) {
    ref_target t;
    ref_target_init(&t, m, SEQ + 3); // spare capacity: the cache need not be exactly full
    int done = 0;
    for (int c = 0; c < n_chunks; c++) {
        ref_target_forward(&t, seq + done, chunks[c], tap_ids, n_taps, logits + (size_t)done * V,
                           taps ? taps + (size_t)done * n_taps * H : NULL);
        done += chunks[c];
        ck_assert_int_eq(t.len, done);
    }
    ck_assert_int_eq(done, SEQ);
    ref_target_free(&t);
}

// The forward's wiring, spelled out independently from the ops one row at a time (M = 1, as the
// forward runs a one-token decode, so the results are bitwise equal): embedding, input norm, q/k/v,
// q/k norm + RoPE at the absolute position, GQA attention over the cache, o_proj, residual,
// post-attention norm, SwiGLU MLP, residual, final norm, lm_head.
START_TEST(test_forward_wiring) {
    rtm_model tm;
    rtm_build(&tm, 0, 7);
    const target_model *m = &tm.m;
    const int L = 2, nH = 4, nKV = 2, hd = 12, I = 48, n = 4;
    const float eps = m->cfg.rms_norm_eps;
    rope_table rope;
    rope_table_build(&rope, m->cfg.rope_theta, hd, n);
    float kc[2][4][24], vc[2][4][24]; // [layer][pos][nKV*hd]
    ref_target t;
    ref_target_init(&t, m, n);
    for (int pos = 0; pos < n; pos++) {
        float h[H], x[H], q[48], att[48], o[H], g[48], u[48], want[V], got[V];
        for (int j = 0; j < H; j++) h[j] = bf16_to_f32(m->embed[seq[pos] * H + j]);
        for (int l = 0; l < L; l++) {
            const layer_weights *w = &m->layers[l];
            ref_rmsnorm(h, 1, H, w->input_norm, eps, x);
            ref_matmul(x, 1, H, w->wq, nH * hd, q, 0);
            ref_matmul(x, 1, H, w->wk, nKV * hd, kc[l][pos], 0);
            ref_matmul(x, 1, H, w->wv, nKV * hd, vc[l][pos], 0);
            ref_head_norm_rope(q, nH, hd, w->q_norm, eps, &rope, pos);
            ref_head_norm_rope(kc[l][pos], nKV, hd, w->k_norm, eps, &rope, pos);
            ref_attention_row(q, kc[l][0], vc[l][0], pos + 1, nH, nKV, hd, att);
            ref_matmul(att, 1, nH * hd, w->wo, H, o, 0);
            ref_residual_add(h, o, H);
            ref_rmsnorm(h, 1, H, w->post_norm, eps, x);
            ref_matmul(x, 1, H, w->w_gate, I, g, 0);
            ref_matmul(x, 1, H, w->w_up, I, u, 0);
            ref_swiglu(g, u, I, g);
            ref_matmul(g, 1, I, w->w_down, H, o, 0);
            ref_residual_add(h, o, H);
        }
        ref_rmsnorm(h, 1, H, m->final_norm, eps, x);
        ref_matmul(x, 1, H, m->lm_head, V, want, 1);
        ref_target_forward(&t, seq + pos, 1, NULL, 0, got, NULL);
        ck_assert_msg(memcmp(got, want, sizeof got) == 0, "position %d", pos);
        for (int l = 0; l < L; l++) // the cache holds K after k_norm and RoPE, and V
            ck_assert(memcmp(t.k_cache + (l * n + pos) * 24, kc[l][pos], sizeof kc[l][pos]) == 0 &&
                      memcmp(t.v_cache + (l * n + pos) * 24, vc[l][pos], sizeof vc[l][pos]) == 0);
    }
    ref_target_free(&t);
    rope_table_free(&rope);
    rtm_free(&tm);
}
END_TEST

START_TEST(test_decode_matches_full_prefill) {
    rtm_model tm;
    rtm_build(&tm, 0, 1);
    const int taps_ids[2] = {1, 0};
    float full[SEQ * V], step[SEQ * V], full_taps[SEQ * 2 * H], step_taps[SEQ * 2 * H];
    full_forward(&tm.m, seq, SEQ, taps_ids, 2, full, full_taps);
    const int chunks[7] = {4, 1, 1, 1, 1, 1, 1}; // prefill 4, then one-token decodes
    chunked_forward(&tm.m, chunks, 7, taps_ids, 2, step, step_taps);
    ck_assert_double_lt(max_abs_diff(full, step, SEQ * V), TOL);
    ck_assert_double_lt(max_abs_diff(full_taps, step_taps, SEQ * 2 * H), TOL);
    rtm_free(&tm);
}
END_TEST

START_TEST(test_chunked_prefill) {
    rtm_model tm;
    rtm_build(&tm, 1, 2);
    float full[SEQ * V], chunked[SEQ * V];
    full_forward(&tm.m, seq, SEQ, NULL, 0, full, NULL);
    const int chunks[3] = {3, 4, 3};
    chunked_forward(&tm.m, chunks, 3, NULL, 0, chunked, NULL);
    ck_assert_double_lt(max_abs_diff(full, chunked, SEQ * V), TOL);
    rtm_free(&tm);
}
END_TEST

// Row i of a prefill does not see later tokens: changing the last token leaves rows 0..n-2
// bitwise unchanged (same M, same per-element sgemm order), and changes the last row.
START_TEST(test_causal) {
    rtm_model tm;
    rtm_build(&tm, 0, 3);
    int other[SEQ];
    memcpy(other, seq, sizeof other);
    other[SEQ - 1] = 2;
    float a[SEQ * V], b[SEQ * V];
    full_forward(&tm.m, seq, SEQ, NULL, 0, a, NULL);
    full_forward(&tm.m, other, SEQ, NULL, 0, b, NULL);
    ck_assert(memcmp(a, b, (SEQ - 1) * V * sizeof *a) == 0);
    ck_assert_double_gt(max_abs_diff(a + (SEQ - 1) * V, b + (SEQ - 1) * V, V), 10 * TOL);
    rtm_free(&tm);
}
END_TEST

// The cache carries history: changing token 0 moves the last row's logits well beyond TOL, both in
// a prefill and through one-token decodes.
START_TEST(test_history_matters) {
    rtm_model tm;
    rtm_build(&tm, 0, 4);
    int other[SEQ];
    memcpy(other, seq, sizeof other);
    other[0] = 60;
    float a[SEQ * V], b[SEQ * V];
    full_forward(&tm.m, seq, SEQ, NULL, 0, a, NULL);
    full_forward(&tm.m, other, SEQ, NULL, 0, b, NULL);
    ck_assert_double_gt(max_abs_diff(a + (SEQ - 1) * V, b + (SEQ - 1) * V, V), 10 * TOL);
    ref_target t;
    ref_target_init(&t, &tm.m, SEQ);
    for (int i = 0; i < SEQ; i++) ref_target_forward(&t, other + i, 1, NULL, 0, a + i * V, NULL);
    ck_assert_double_lt(max_abs_diff(a + (SEQ - 1) * V, b + (SEQ - 1) * V, V), TOL);
    ref_target_free(&t);
    rtm_free(&tm);
}
END_TEST

// Taps: tap of the last layer, final-normed and multiplied by the head, is exactly the logits (same
// ops, same M); taps come in the order asked; a one-layer model built from layer 0's weights
// produces the two-layer model's layer-0 tap exactly; a tied model's head is the embedding.
static void check_taps(int tied) {
    rtm_model tm;
    rtm_build(&tm, tied, 5);
    const int ids[2] = {1, 0};
    float logits[SEQ * V], taps[SEQ * 2 * H], last[SEQ * H], normed[SEQ * H], relogits[SEQ * V];
    full_forward(&tm.m, seq, SEQ, ids, 2, logits, taps);
    for (int i = 0; i < SEQ; i++) memcpy(last + i * H, taps + i * 2 * H, H * sizeof *taps);
    ref_rmsnorm(last, SEQ, H, tm.m.final_norm, tm.m.cfg.rms_norm_eps, normed);
    ref_matmul(normed, SEQ, H, tied ? tm.m.embed : tm.m.lm_head, V, relogits, 1);
    ck_assert(memcmp(logits, relogits, sizeof logits) == 0);

    target_model one = tm.m;
    one.cfg.num_hidden_layers = 1;
    const int id0 = 0;
    float taps0[SEQ * H];
    full_forward(&one, seq, SEQ, &id0, 1, NULL, taps0);
    for (int i = 0; i < SEQ; i++) {
        ck_assert(memcmp(taps + (i * 2 + 1) * H, taps0 + i * H, H * sizeof *taps) == 0);
        // The residual stream after layer 0 is not the embedding nor the last layer's output.
        ck_assert(memcmp(taps + (i * 2 + 1) * H, taps + i * 2 * H, H * sizeof *taps) != 0);
    }
    for (int i = 0; i < SEQ * 2 * H; i++) ck_assert(taps[i] == bf16_round(taps[i]));
    rtm_free(&tm);
}

START_TEST(test_taps_untied) { check_taps(0); }
END_TEST

START_TEST(test_taps_tied) { check_taps(1); }
END_TEST

// forward_tail: logits of the last rows only, equal to the full call's (same M, same rows).
START_TEST(test_forward_tail) {
    rtm_model tm;
    rtm_build(&tm, 0, 6);
    float all[SEQ * V], tail[2 * V];
    full_forward(&tm.m, seq, SEQ, NULL, 0, all, NULL);
    ref_target t;
    ref_target_init(&t, &tm.m, SEQ);
    ref_target_forward_tail(&t, seq, SEQ, NULL, 0, 2, tail, NULL);
    ck_assert_int_eq(t.len, SEQ);
    ref_target_free(&t);
    // The final norm and head run with M = 2 here, M = SEQ above: same tolerance argument.
    ck_assert_double_lt(max_abs_diff(all + (SEQ - 2) * V, tail, 2 * V), TOL);
    rtm_free(&tm);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ref_qwen3");
    TCase *tc = tcase_create("forward");
    tcase_add_test(tc, test_forward_wiring);
    tcase_add_test(tc, test_decode_matches_full_prefill);
    tcase_add_test(tc, test_chunked_prefill);
    tcase_add_test(tc, test_causal);
    tcase_add_test(tc, test_history_matters);
    tcase_add_test(tc, test_taps_untied);
    tcase_add_test(tc, test_taps_tied);
    tcase_add_test(tc, test_forward_tail);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
