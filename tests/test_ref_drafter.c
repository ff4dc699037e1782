// tests/test_ref_drafter.c: the reference drafter backbone (ref/drafter.c) against an independent
// fp64 recomputation: non-causal block attention, context rows without the input norm, context
// ingested over several rounds, block layouts, context dependence, and bad input.
// ctest-labels: cpu;unit
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ref/drafter.h"
#include "testutil.h"

// Geometry: H 32, 2 draft layers, 4 heads, 2 KV heads, head_dim 12, I 48, V 64, 2 taps, B 4.
enum { H = 32, NL = 2, NH = 4, NKV = 2, HD = 12, QD = NH * HD, KVD = NKV * HD, I = 48, V = 64,
       NT = 2, B = 4, MAXLEN = 32, MAXBUF = 64 };

typedef struct {
    target_model t;
    drafter_model d;
    layer_weights layers[NL];
    bf16 *bufs[MAXBUF];
    int n_bufs;
    uint64_t seed;
} fixture;

// N(0, scale²) weights; scale 1/sqrt(fan-in) keeps every activation of order one, so attention
// and the context matter for U.
static bf16 *rnd(fixture *f, size_t n, double scale) {
    ck_assert_int_lt(f->n_bufs, MAXBUF);
    return f->bufs[f->n_bufs++] = tu_random_bf16(n, scale, f->seed++);
}

// center + N(0, 0.1²)
static bf16 *norm_w(fixture *f, size_t n, float center) {
    bf16 *w = rnd(f, n, 0.1);
    for (size_t i = 0; i < n; i++) w[i] = f32_to_bf16(center + bf16_to_f32(w[i]));
    return w;
}

static void fixture_build(fixture *f, uint64_t seed) {
    memset(f, 0, sizeof *f);
    f->seed = seed;
    qwen3_config c = {.hidden_size = H, .num_hidden_layers = 4, .num_attention_heads = NH,
                      .num_key_value_heads = NKV, .head_dim = HD, .intermediate_size = I,
                      .vocab_size = V, .max_position_embeddings = 256, .rms_norm_eps = 1e-6f,
                      .rope_theta = 10000.0};
    f->t.cfg = c;
    f->t.embed = rnd(f, (size_t)V * H, 1.0);
    f->t.lm_head = rnd(f, (size_t)V * H, 1.0 / sqrt(H));
    drafter_config *dc = &f->d.cfg;
    dc->arch = c;
    dc->arch.num_hidden_layers = NL;
    dc->layout = LAYOUT_ANCHOR_FIRST;
    dc->block_size = B;
    dc->mask_token_id = V - 1;
    dc->target_layer_ids[0] = 1;
    dc->target_layer_ids[1] = 3;
    dc->n_taps = NT;
    f->d.fc = rnd(f, (size_t)H * NT * H, 1.0 / sqrt(NT * H));
    // Context rows of RMS ~2.5: a (wrong) extra input norm on them would shrink their V rows.
    f->d.hidden_norm = norm_w(f, H, 2.5f);
    f->d.final_norm = norm_w(f, H, 1.0f);
    for (int l = 0; l < NL; l++) {
        layer_weights *w = &f->layers[l];
        w->input_norm = norm_w(f, H, 1.0f);
        w->post_norm = norm_w(f, H, 1.0f);
        w->wq = rnd(f, (size_t)QD * H, 1.0 / sqrt(H));
        w->wk = rnd(f, (size_t)KVD * H, 1.0 / sqrt(H));
        w->wv = rnd(f, (size_t)KVD * H, 1.0 / sqrt(H));
        w->wo = rnd(f, (size_t)H * QD, 1.0 / sqrt(QD));
        w->q_norm = norm_w(f, HD, 1.0f);
        w->k_norm = norm_w(f, HD, 1.0f);
        w->w_gate = rnd(f, (size_t)I * H, 1.0 / sqrt(H));
        w->w_up = rnd(f, (size_t)I * H, 1.0 / sqrt(H));
        w->w_down = rnd(f, (size_t)H * I, 1.0 / sqrt(I));
    }
    f->d.layers = f->layers;
}

static void fixture_free(fixture *f) {
    for (int i = 0; i < f->n_bufs; i++) free(f->bufs[i]);
}

static float *random_taps(int rows, uint64_t seed) {
    float *x = sg_calloc((size_t)rows * NT * H, sizeof *x);
    for (int i = 0; i < rows * NT * H; i++) x[i] = bf16_round((float)tu_normal(&seed));
    return x;
}

// ---- independent fp64 recomputation (no bf16 roundings), with two deliberate variants ----

static double wd(const bf16 *w, size_t i) { return (double)bf16_to_f32(w[i]); }

// y[N] = x[K] · w[N, K]ᵀ
static void mv(const double *x, int K, const bf16 *w, int N, double *y) {
    for (int n = 0; n < N; n++) {
        double s = 0;
        for (int k = 0; k < K; k++) s += x[k] * wd(w, (size_t)n * K + k);
        y[n] = s;
    }
}

static void rms(const double *x, int D, const bf16 *w, double *y) {
    double ss = 0;
    for (int i = 0; i < D; i++) ss += x[i] * x[i];
    double r = 1.0 / sqrt(ss / D + 1e-6);
    for (int i = 0; i < D; i++) y[i] = x[i] * r * wd(w, (size_t)i);
}

static void norm_rope(double *x, int heads, const bf16 *w, int pos) {
    for (int h = 0; h < heads; h++) {
        double *xh = x + h * HD;
        rms(xh, HD, w, xh);
        for (int i = 0; i < HD / 2; i++) {
            double ang = pos * pow(10000.0, -2.0 * i / HD), a = xh[i], b = xh[i + HD / 2];
            xh[i] = a * cos(ang) - b * sin(ang);
            xh[i + HD / 2] = b * cos(ang) + a * sin(ang);
        }
    }
}

// U [B, V] of one block after ctx context rows (positions 0 .. ctx-1), anchor at p = ctx.
// causal: block row i sees block rows <= i only (wrong); ctx_norm: context rows get the layer's
// input norm (wrong).
static void block_f64(const fixture *f, const float *taps, int ctx, int anchor, int causal,
                      int ctx_norm, double *U) {
    int p = ctx, T = ctx + B;
    double *C = calloc((size_t)(ctx + 1) * H, sizeof *C), *x = calloc(B * H, sizeof *x);
    double *k = calloc((size_t)T * KVD, sizeof *k), *v = calloc((size_t)T * KVD, sizeof *v);
    double *tmp = calloc(NT * H, sizeof *tmp), n[B][H], q[B][QD], att[QD], o[H], g[I], u[I];
    for (int j = 0; j < ctx; j++) {
        for (int i = 0; i < NT * H; i++) tmp[i] = taps[(size_t)j * NT * H + i];
        double y[H];
        mv(tmp, NT * H, f->d.fc, H, y);
        rms(y, H, f->d.hidden_norm, C + (size_t)j * H);
    }
    for (int r = 0; r < B; r++)
        for (int i = 0; i < H; i++)
            x[r * H + i] = wd(f->t.embed, (size_t)(r == 0 ? anchor : V - 1) * H + i);
    for (int l = 0; l < NL; l++) {
        const layer_weights *w = &f->layers[l];
        for (int r = 0; r < B; r++) {
            rms(x + r * H, H, w->input_norm, n[r]);
            mv(n[r], H, w->wq, QD, q[r]);
            norm_rope(q[r], NH, w->q_norm, p + r);
        }
        for (int j = 0; j < T; j++) {
            double in[H];
            const double *src = j < ctx ? C + (size_t)j * H : n[j - ctx];
            if (j < ctx && ctx_norm)
                rms(src, H, w->input_norm, in);
            else
                memcpy(in, src, sizeof in);
            mv(in, H, w->wk, KVD, k + (size_t)j * KVD);
            mv(in, H, w->wv, KVD, v + (size_t)j * KVD);
            norm_rope(k + (size_t)j * KVD, NKV, w->k_norm, j);
        }
        for (int r = 0; r < B; r++) {
            int keys = causal ? ctx + r + 1 : T;
            for (int h = 0; h < NH; h++) {
                int off = (h / (NH / NKV)) * HD;
                double s[MAXLEN], mx = -INFINITY, sum = 0;
                for (int j = 0; j < keys; j++) {
                    s[j] = 0;
                    for (int d = 0; d < HD; d++)
                        s[j] += q[r][h * HD + d] * k[(size_t)j * KVD + off + d];
                    s[j] /= sqrt(HD);
                    if (s[j] > mx) mx = s[j];
                }
                for (int j = 0; j < keys; j++) sum += s[j] = exp(s[j] - mx);
                for (int d = 0; d < HD; d++) {
                    double acc = 0;
                    for (int j = 0; j < keys; j++) acc += s[j] / sum * v[(size_t)j * KVD + off + d];
                    att[h * HD + d] = acc;
                }
            }
            mv(att, QD, w->wo, H, o);
            for (int i = 0; i < H; i++) x[r * H + i] += o[i];
            rms(x + r * H, H, w->post_norm, n[r]);
            mv(n[r], H, w->w_gate, I, g);
            mv(n[r], H, w->w_up, I, u);
            for (int i = 0; i < I; i++) g[i] = g[i] / (1 + exp(-g[i])) * u[i];
            mv(g, I, w->w_down, H, o);
            for (int i = 0; i < H; i++) x[r * H + i] += o[i];
        }
    }
    for (int r = 0; r < B; r++) {
        rms(x + r * H, H, f->d.final_norm, n[r]);
        mv(n[r], H, f->t.lm_head, V, U + (size_t)r * V);
    }
    free(C);
    free(x);
    free(k);
    free(v);
    free(tmp);
}

static double max_diff(const float *a, const double *b, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

static double max_abs(const double *a, int n) {
    double m = 0;
    for (int i = 0; i < n; i++) m = fmax(m, fabs(a[i]));
    return m;
}

// bf16 roundings against exact arithmetic: U is of order 3 here; 0.05 is about 1.5% of it.
#define TOL 0.05

static void check_against_f64(int ctx) {
    fixture f;
    fixture_build(&f, 11 + (uint64_t)ctx);
    float *taps = random_taps(ctx > 0 ? ctx : 1, 99);
    ref_drafter d;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_OK);
    float U[B * V], hidden[B * H];
    ck_assert_int_eq(ref_drafter_block(&d, taps, ctx, 7, U, hidden), SG_OK);
    ck_assert_int_eq(d.committed_len, ctx);
    double good[B * V], causal[B * V], normed[B * V];
    block_f64(&f, taps, ctx, 7, 0, 0, good);
    block_f64(&f, taps, ctx, 7, 1, 0, causal);
    block_f64(&f, taps, ctx, 7, 0, 1, normed);
    ck_assert(max_abs(good, B * V) > 1.0); // U is not degenerate
    double e_good = max_diff(U, good, B * V);
    ck_assert_msg(e_good < TOL, "ctx %d: max |U - fp64| = %g", ctx, e_good);
    // Either deliberate mistake is far outside the tolerance, so the check above can fail.
    ck_assert_msg(max_diff(U, causal, B * V) > 4 * TOL, "causal variant too close: %g",
                  max_diff(U, causal, B * V));
    if (ctx > 0)
        ck_assert_msg(max_diff(U, normed, B * V) > 4 * TOL, "input-normed context too close: %g",
                      max_diff(U, normed, B * V));
    // hidden rows are bf16 values (the final-normed rows the confidence head reads)
    for (int i = 0; i < B * H; i++) ck_assert_float_eq(hidden[i], bf16_round(hidden[i]));
    ref_drafter_free(&d);
    free(taps);
    fixture_free(&f);
}

START_TEST(block_matches_fp64_noncausal_context_without_input_norm) {
    check_against_f64(6);
    check_against_f64(0); // first block of a request with no context yet
}
END_TEST

// Row 0 (the anchor's row) depends on the rows after it: changing the mask token changes it.
START_TEST(anchor_row_sees_later_block_rows) {
    fixture f;
    fixture_build(&f, 5);
    float *taps = random_taps(3, 1);
    float U1[B * V], U2[B * V];
    ref_drafter d;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_OK);
    ck_assert_int_eq(ref_drafter_block(&d, taps, 3, 9, U1, NULL), SG_OK);
    ref_drafter_free(&d);
    f.d.cfg.mask_token_id = 17;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_OK);
    ck_assert_int_eq(ref_drafter_block(&d, taps, 3, 9, U2, NULL), SG_OK);
    double m = 0;
    for (int v = 0; v < V; v++) m = fmax(m, fabs(U1[v] - U2[v]));
    ck_assert_msg(m > 0.05, "row 0 moved by only %g", m);
    ref_drafter_free(&d);
    free(taps);
    fixture_free(&f);
}
END_TEST

static double max_diff_f(const float *a, const float *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    return m;
}

// Context ingested over two rounds gives the same cache and U as all at once. ref_matmul's sgemm
// may order its sums differently for another row count (ref/ops.h), so the check allows bf16
// rounding flips (TOL); a lost, repeated or misplaced context row moves U far more (see
// corrupting_one_context_row_changes_U).
START_TEST(context_over_rounds_equals_all_at_once) {
    fixture f;
    fixture_build(&f, 21);
    float *taps = random_taps(8, 3);
    ref_drafter once, twice;
    float U1[B * V], U2[B * V], H1[B * H], H2[B * H];
    ck_assert_int_eq(ref_drafter_init(&once, &f.d, &f.t, MAXLEN), SG_OK);
    ck_assert_int_eq(ref_drafter_init(&twice, &f.d, &f.t, MAXLEN), SG_OK);
    ck_assert_int_eq(ref_drafter_block(&once, taps, 8, 30, U1, H1), SG_OK);
    ck_assert_int_eq(ref_drafter_block(&twice, taps, 3, 12, U2, NULL), SG_OK);
    ck_assert_int_eq(twice.committed_len, 3);
    ck_assert_int_eq(ref_drafter_block(&twice, taps + 3 * NT * H, 5, 30, U2, H2), SG_OK);
    ck_assert_int_eq(twice.committed_len, 8);
    ck_assert_double_lt(max_diff_f(U1, U2, B * V), TOL);
    ck_assert_double_lt(max_diff_f(H1, H2, B * H), TOL);
    size_t layer = (size_t)MAXLEN * KVD, ctx = (size_t)8 * KVD;
    for (int l = 0; l < NL; l++) {
        size_t at = l * layer;
        ck_assert_double_lt(max_diff_f(once.k_cache + at, twice.k_cache + at, ctx), TOL);
        ck_assert_double_lt(max_diff_f(once.v_cache + at, twice.v_cache + at, ctx), TOL);
    }
    ref_drafter_free(&once);
    ref_drafter_free(&twice);
    free(taps);
    fixture_free(&f);
}
END_TEST

START_TEST(corrupting_one_context_row_changes_U) {
    fixture f;
    fixture_build(&f, 8);
    float *taps = random_taps(6, 4);
    float U1[B * V], U2[B * V];
    for (int round = 0; round < 2; round++) {
        ref_drafter d;
        ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_OK);
        ck_assert_int_eq(ref_drafter_block(&d, taps, 6, 2, round ? U2 : U1, NULL), SG_OK);
        ref_drafter_free(&d);
        for (int i = 0; i < NT * H; i++) taps[2 * NT * H + i] = -taps[2 * NT * H + i];
    }
    double m = 0;
    for (int i = 0; i < B * V; i++) m = fmax(m, fabs(U1[i] - U2[i]));
    ck_assert_msg(m > 0.05, "context row 2 moved U by only %g", m);
    free(taps);
    fixture_free(&f);
}
END_TEST

START_TEST(layout_draft_rows) {
    int first;
    ck_assert_int_eq(ref_draft_rows(LAYOUT_ANCHOR_FIRST, 7, &first), 7);
    ck_assert_int_eq(first, 0);
    ck_assert_int_eq(ref_draft_rows(LAYOUT_ANCHOR_DROP, 16, &first), 15);
    ck_assert_int_eq(first, 1);
}
END_TEST

START_TEST(bad_input_is_reported) {
    fixture f;
    fixture_build(&f, 2);
    ref_drafter d;
    float U[B * V];
    float *taps = random_taps(4, 4);
    f.t.cfg.vocab_size = V + 1;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "vocab_size"));
    f.t.cfg.vocab_size = V;
    f.d.cfg.mask_token_id = V;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "mask_token_id"));
    f.d.cfg.mask_token_id = V - 1;
    f.d.cfg.n_taps = 0;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "target_layer_ids"));
    f.d.cfg.n_taps = NT;
    f.d.cfg.block_size = 0;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "block_size"));
    f.d.cfg.block_size = B;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, B - 1), SG_EXIT_USAGE);

    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, 6), SG_OK);
    ck_assert_int_eq(ref_drafter_block(&d, taps, 1, V, U, NULL), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "anchor"));
    ck_assert_int_eq(ref_drafter_block(&d, taps, 3, 1, U, NULL), SG_EXIT_USAGE); // 3 + 4 > 6
    ck_assert_ptr_nonnull(strstr(sg_error(), "does not fit"));
    ck_assert_int_eq(d.committed_len, 0);
    ck_assert_int_eq(ref_drafter_block(&d, taps, 2, 1, U, NULL), SG_OK);
    ref_drafter_free(&d);

    // a NaN in the head reaches U: a hard error naming the row and position
    bf16 *head = (bf16 *)f.t.lm_head;
    head[5 * H] = 0x7fc0;
    ck_assert_int_eq(ref_drafter_init(&d, &f.d, &f.t, MAXLEN), SG_OK);
    ck_assert_int_eq(ref_drafter_block(&d, taps, 2, 1, U, NULL), SG_EXIT_FAIL);
    ck_assert_ptr_nonnull(strstr(sg_error(), "row 0 (position 2)"));
    ref_drafter_free(&d);
    free(taps);
    fixture_free(&f);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ref_drafter");
    TCase *tc = tcase_create("drafter");
    tcase_add_test(tc, block_matches_fp64_noncausal_context_without_input_norm);
    tcase_add_test(tc, anchor_row_sees_later_block_rows);
    tcase_add_test(tc, context_over_rounds_equals_all_at_once);
    tcase_add_test(tc, corrupting_one_context_row_changes_U);
    tcase_add_test(tc, layout_draft_rows);
    tcase_add_test(tc, bad_input_is_reported);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
