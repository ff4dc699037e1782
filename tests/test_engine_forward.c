// tests/test_engine_forward.c: the engine's target and drafter forwards (engine/forward.c) on the
// CPU backend, with a small random model in memory (tests/ref_test_model.h: H 32, 2 layers, 4
// heads, 2 KV heads, head_dim 12 so heads·hd != H, I 48, V 64; plus a 2-layer drafter, B 4).
// Path invariance, bit for bit: every position's logits and taps are equal whether computed by one
// prefill, by prefill chunks, by one-row decodes, or as rows of verify spans batched with another
// request's rows, after a rejected span (rollback) and through a hedge chain's scratch pages and
// copy back; the drafter's U is equal alone, batched, and with its context ingested in pieces.
// Cross-implementation: logits and U agree with ref/ within stated tolerances.
// ctest-labels: cpu;unit
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/sampler.h"
#include "engine/cpu_backend.h"
#include "engine/forward.h"
#include "ref/drafter.h"
#include "ref/qwen3.h"
#include "ref_test_model.h"
#include "testutil.h"

enum { H = 32, V = 64, NT = 2, TH = NT * H, B = 4, PS = 4, N = 24, NB = 16, MAXR = 48 };
static const int tap_ids[NT] = {0, 1};

// ---- target harness ----

typedef struct {
    sg_backend *be;
    fwd_target t;
    kv_pages kp;
    kv_cache kc;
    fwd_work w;
    float *dlogits; // device [MAXR, V]
    bf16 *dtaps;    // device [MAXR, TH]
} eng;

static void eng_init(eng *e, const target_model *m) {
    e->be = cpu_backend_create();
    ck_assert_msg(fwd_target_load(&e->t, e->be, m, tap_ids, NT) == SG_OK, "%s", sg_error());
    kv_pages_config cfg = {.page_size = PS, .n_pages = 40, .max_seqs = 3, .max_positions = 64,
                           .n_chain_slots = 2, .block_size = B};
    ck_assert_int_eq(kv_pages_init(&e->kp, &cfg), SG_OK);
    const qwen3_config *c = &m->cfg;
    ck_assert_int_eq(kv_cache_init(&e->kc, e->be, &e->kp, c->num_hidden_layers,
                                   c->num_key_value_heads * c->head_dim),
                     SG_OK);
    ck_assert_int_eq(fwd_work_init(&e->w, e->be, c, MAXR), SG_OK);
    e->dlogits = e->be->alloc(e->be->ctx, (size_t)MAXR * V * sizeof(float));
    e->dtaps = e->be->alloc(e->be->ctx, (size_t)MAXR * TH * sizeof(bf16));
}

static void eng_free(eng *e) {
    e->be->free(e->be->ctx, e->dlogits);
    e->be->free(e->be->ctx, e->dtaps);
    fwd_work_free(&e->w);
    kv_cache_free(&e->kc);
    ck_assert_int_eq(kv_pages_check_whole(&e->kp), SG_OK);
    kv_pages_free(&e->kp);
    fwd_target_free(&e->t);
    e->be->destroy(e->be);
}

static int eng_seq(eng *e, int positions) {
    int s;
    ck_assert_int_eq(kv_pages_reserve(&e->kp, positions, &s), KV_RESERVED);
    kv_cache_upload_seq_table(&e->kc, &e->kp, s);
    return s;
}

// One forward over host rows; logits [rows, V] and taps [rows, TH] of every row (may be NULL).
static void eng_run(eng *e, int rows, const int32_t *tok, const int32_t *pos, const int32_t *tab,
                    float *logits, bf16 *taps) {
    fwd_batch b;
    fwd_stage_target(&e->w, rows, tok, pos, tab, rows, NULL, &b);
    fwd_target_forward(&e->t, &e->w, &e->kc, &b, e->dlogits, e->dtaps);
    if (logits) e->be->download(e->be->ctx, logits, e->dlogits, (size_t)rows * V * sizeof(float));
    if (taps) e->be->download(e->be->ctx, taps, e->dtaps, (size_t)rows * TH * sizeof(bf16));
}

// Rows [from, to) of sequence `seq` with tokens toks[pos].
static void span(int32_t *tok, int32_t *pos, int32_t *tab, int *n, const int *toks, int seq,
                 int from, int to) {
    for (int p = from; p < to; p++, (*n)++) {
        tok[*n] = toks[p];
        pos[*n] = p;
        tab[*n] = seq;
    }
}

static void tokens_of(int *toks, int n, uint64_t seed) {
    for (int i = 0; i < n; i++) toks[i] = (int)(tu_next(&seed) % (V - 1));
}

// The reference: all positions of toks[0 .. n) in one prefill.
static void one_prefill(const target_model *m, const int *toks, int n, float *logits, bf16 *taps) {
    eng e;
    eng_init(&e, m);
    int s = eng_seq(&e, n), r = 0;
    int32_t tok[MAXR], pos[MAXR], tab[MAXR];
    span(tok, pos, tab, &r, toks, s, 0, n);
    eng_run(&e, r, tok, pos, tab, logits, taps);
    kv_pages_release(&e.kp, s);
    eng_free(&e);
}

static void assert_rows_equal(const float *logits, const bf16 *taps, const float *ref_logits,
                              const bf16 *ref_taps, int p, const char *path) {
    ck_assert_msg(memcmp(logits, ref_logits + (size_t)p * V, V * sizeof(float)) == 0,
                  "%s: logits of position %d differ", path, p);
    ck_assert_msg(memcmp(taps, ref_taps + (size_t)p * TH, TH * sizeof(bf16)) == 0,
                  "%s: taps of position %d differ", path, p);
}

static float ref_logits[N * V], refb_logits[NB * V];
static bf16 ref_taps[N * TH], refb_taps[NB * TH];
static int toks[N], toksb[NB];
static rtm_model model;

static void target_setup(void) {
    rtm_build(&model, 0, 77);
    tokens_of(toks, N, 1);
    tokens_of(toksb, NB, 2);
    one_prefill(&model.m, toks, N, ref_logits, ref_taps);
    one_prefill(&model.m, toksb, NB, refb_logits, refb_taps);
}

static void target_teardown(void) { rtm_free(&model); }

// Chunks 5 + 7 + 12, and one-row decodes; the last-row-only logits of a prefill.
START_TEST(test_chunks_and_decodes) {
    float logits[N * V];
    bf16 taps[N * TH];
    const int cuts[][4] = {{0, 5, 12, N}, {0, 1, 2, N}};
    for (int c = 0; c < 2; c++) {
        eng e;
        eng_init(&e, &model.m);
        int s = eng_seq(&e, N);
        for (int k = 0; k < 3; k++) {
            int r = 0;
            int32_t tok[MAXR], pos[MAXR], tab[MAXR];
            span(tok, pos, tab, &r, toks, s, cuts[c][k], cuts[c][k + 1]);
            eng_run(&e, r, tok, pos, tab, logits, taps);
            for (int i = 0; i < r; i++)
                assert_rows_equal(logits + i * V, taps + i * TH, ref_logits, ref_taps, pos[i],
                                  "chunked prefill");
        }
        kv_pages_release(&e.kp, s);
        eng_free(&e);
    }
    eng e;
    eng_init(&e, &model.m);
    int s = eng_seq(&e, N);
    for (int p = 0; p < N; p++) {
        int r = 0;
        int32_t tok[1], pos[1], tab[1];
        span(tok, pos, tab, &r, toks, s, p, p + 1);
        eng_run(&e, 1, tok, pos, tab, logits, taps);
        assert_rows_equal(logits, taps, ref_logits, ref_taps, p, "one-row decode");
    }
    kv_pages_release(&e.kp, s);
    // A prefill that asks for the last row's logits only.
    s = eng_seq(&e, N);
    int r = 0;
    int32_t tok[N], pos[N], tab[N];
    span(tok, pos, tab, &r, toks, s, 0, N);
    fwd_batch b;
    fwd_stage_target(&e.w, r, tok, pos, tab, 1, NULL, &b);
    fwd_target_forward(&e.t, &e.w, &e.kc, &b, e.dlogits, NULL);
    e.be->download(e.be->ctx, logits, e.dlogits, V * sizeof(float));
    ck_assert_int_eq(memcmp(logits, ref_logits + (N - 1) * V, V * sizeof(float)), 0);
    kv_pages_release(&e.kp, s);
    eng_free(&e);
}
END_TEST

// Request A's positions through verify spans batched with request B's rows: a rejected span
// (wrong drafts, rolled back), a hedge chain over scratch pages (partly filled first page copied
// whole) that wins and is copied back, then decodes from A's own pages. Every valid row of A and of
// B equals its one-prefill value.
START_TEST(test_spans_rollback_chain) {
    eng e;
    eng_init(&e, &model.m);
    int a = eng_seq(&e, N + B), b = eng_seq(&e, NB + B);
    float logits[MAXR * V];
    bf16 taps[MAXR * TH];
    int32_t tok[MAXR], pos[MAXR], tab[MAXR];
    int r = 0;
    // Step 1: A 0..9 and B 0..5 prefill chunks in one batch (B first).
    span(tok, pos, tab, &r, toksb, b, 0, 6);
    span(tok, pos, tab, &r, toks, a, 0, 10);
    eng_run(&e, r, tok, pos, tab, logits, taps);
    for (int i = 0; i < 6; i++)
        assert_rows_equal(logits + i * V, taps + i * TH, refb_logits, refb_taps, i, "batch B");
    for (int i = 6; i < r; i++)
        assert_rows_equal(logits + i * V, taps + i * TH, ref_logits, ref_taps, pos[i], "batch A");
    kv_pages_commit(&e.kp, a, 10);
    kv_pages_commit(&e.kp, b, 6);
    // Step 2: A's verify span [anchor 10, wrong drafts 11..14] with B's decode row 6. Only row
    // 10 is valid; rows 11..14 are dead after the commit (rollback).
    r = 0;
    span(tok, pos, tab, &r, toks, a, 10, 15);
    for (int i = 1; i < 5; i++) tok[i] = (toks[10 + i] + 1 + i) % V;
    span(tok, pos, tab, &r, toksb, b, 6, 7);
    eng_run(&e, r, tok, pos, tab, logits, taps);
    assert_rows_equal(logits, taps, ref_logits, ref_taps, 10, "verify anchor row");
    assert_rows_equal(logits + 5 * V, taps + 5 * TH, refb_logits, refb_taps, 6, "decode B");
    kv_pages_commit(&e.kp, a, 11);
    kv_pages_commit(&e.kp, b, 7);
    // Step 3: A's span 11..14 again with wrong drafts (chain A loses) and a chain over slot 1 with
    // the right tokens; 11 % PS != 0, so page 2 (rows 8..10 committed) is copied first.
    int32_t ctab[64], src[4], dst[4];
    int nc = kv_pages_chain_table(&e.kp, a, 1, 11, 4, ctab, src, dst);
    ck_assert_int_eq(nc, 1);
    kv_cache_copy_pages(&e.kc, src, dst, nc);
    kv_cache_upload_chain_table(&e.kc, 1, ctab);
    r = 0;
    span(tok, pos, tab, &r, toks, a, 11, 15);
    for (int i = 0; i < 4; i++) tok[i] = (toks[11 + i] + 2) % V;
    span(tok, pos, tab, &r, toksb, b, 7, 9);
    span(tok, pos, tab, &r, toks, e.kp.cfg.max_seqs + 1, 11, 15);
    eng_run(&e, r, tok, pos, tab, logits, taps);
    for (int i = 0; i < 2; i++)
        assert_rows_equal(logits + (4 + i) * V, taps + (4 + i) * TH, refb_logits, refb_taps, 7 + i,
                          "B beside a chain");
    for (int i = 0; i < 4; i++)
        assert_rows_equal(logits + (6 + i) * V, taps + (6 + i) * TH, ref_logits, ref_taps, 11 + i,
                          "chain span");
    ck_assert(memcmp(logits, ref_logits + 11 * V, V * sizeof(float)) != 0); // A's wrong row 11
    nc = kv_pages_chain_copy_back(&e.kp, a, 1, 11, 4, src, dst);
    kv_cache_copy_pages(&e.kc, src, dst, nc);
    kv_pages_commit(&e.kp, a, 15);
    // Step 4: A decodes 15..23 from its own pages (one row each), beside B's decode rows.
    for (int p = 15; p < N; p++) {
        r = 0;
        span(tok, pos, tab, &r, toks, a, p, p + 1);
        if (p - 6 < NB) span(tok, pos, tab, &r, toksb, b, p - 6, p - 5);
        eng_run(&e, r, tok, pos, tab, logits, taps);
        assert_rows_equal(logits, taps, ref_logits, ref_taps, p, "decode after copy back");
        if (r == 2)
            assert_rows_equal(logits + V, taps + TH, refb_logits, refb_taps, p - 6, "decode B");
    }
    kv_pages_release(&e.kp, a);
    kv_pages_release(&e.kp, b);
    eng_free(&e);
}
END_TEST

// Engine vs ref/ (OpenBLAS summation order): max |Δlogit| < 0.05, taps within 2^-6 relative +
// 0.02, argmax equal on rows whose ref top-1/top-2 margin exceeds 0.1 (2 × the tolerance).
START_TEST(test_target_vs_ref) {
    ref_target rt;
    ref_target_init(&rt, &model.m, N);
    float rl[N * V], rtaps[N * TH];
    ref_target_forward(&rt, toks, N, tap_ids, NT, rl, rtaps);
    ref_target_free(&rt);
    double max_d = 0;
    int wide = 0;
    for (int p = 0; p < N; p++) {
        for (int v = 0; v < V; v++) {
            double d = fabs(rl[p * V + v] - ref_logits[p * V + v]);
            if (d > max_d) max_d = d;
        }
        int ids[2];
        float vals[2];
        topk_f32(rl + p * V, V, 2, ids, vals);
        if (vals[0] - vals[1] > 0.1f) {
            wide++;
            ck_assert_int_eq(argmax_f32(ref_logits + p * V, V), ids[0]);
        }
        for (int i = 0; i < TH; i++)
            ck_assert_double_le(fabs(bf16_to_f32(ref_taps[p * TH + i]) - rtaps[p * TH + i]),
                                0x1p-6 * fabs(rtaps[p * TH + i]) + 0.02);
    }
    ck_assert_double_lt(max_d, 0.05);
    ck_assert_int_ge(wide, 4); // the argmax check ran
}
END_TEST

// ---- drafter ----

typedef struct {
    drafter_model d;
    layer_weights layers[2];
    bf16 *bufs[32];
    int n;
    uint64_t seed;
} draft_fix;

static bf16 *drnd(draft_fix *f, size_t n, double scale, double center) {
    bf16 *w = f->bufs[f->n++] = tu_random_bf16(n, scale, f->seed++);
    for (size_t i = 0; center != 0 && i < n; i++)
        w[i] = f32_to_bf16((float)center + bf16_to_f32(w[i]));
    return w;
}

// 2 layers, B 4, mask V-1, taps {0, 1}, Markov rank 8; weights N(0, 1/fan-in), norms
// 1 + N(0, 0.1²) (hidden_norm 2.5 + N(0, 0.1²)).
static void draft_build(draft_fix *f, const target_model *t) {
    memset(f, 0, sizeof *f);
    f->seed = 500;
    drafter_config *c = &f->d.cfg;
    c->arch = t->cfg;
    c->arch.num_hidden_layers = 2;
    c->layout = LAYOUT_ANCHOR_FIRST;
    c->block_size = B;
    c->mask_token_id = V - 1;
    c->target_layer_ids[0] = 0;
    c->target_layer_ids[1] = 1;
    c->n_taps = NT;
    c->markov_rank = 8;
    int qd = 48, kvd = 24, I = 48;
    f->d.fc = drnd(f, (size_t)H * TH, 1.0 / sqrt(TH), 0);
    f->d.hidden_norm = drnd(f, H, 0.1, 2.5); // RMS 2.5: a wrong input norm on C shows
    f->d.final_norm = drnd(f, H, 0.1, 1.0);
    for (int l = 0; l < 2; l++) {
        layer_weights *w = &f->layers[l];
        w->input_norm = drnd(f, H, 0.1, 1.0);
        w->post_norm = drnd(f, H, 0.1, 1.0);
        w->wq = drnd(f, (size_t)qd * H, 1.0 / sqrt(H), 0);
        w->wk = drnd(f, (size_t)kvd * H, 1.0 / sqrt(H), 0);
        w->wv = drnd(f, (size_t)kvd * H, 1.0 / sqrt(H), 0);
        w->wo = drnd(f, (size_t)H * qd, 1.0 / sqrt(qd), 0);
        w->q_norm = drnd(f, 12, 0.1, 1.0);
        w->k_norm = drnd(f, 12, 0.1, 1.0);
        w->w_gate = drnd(f, (size_t)I * H, 1.0 / sqrt(H), 0);
        w->w_up = drnd(f, (size_t)I * H, 1.0 / sqrt(H), 0);
        w->w_down = drnd(f, (size_t)H * I, 1.0 / sqrt(I), 0);
    }
    f->d.layers = f->layers;
    f->d.markov_w1 = drnd(f, (size_t)V * 8, 1.0, 0);
    f->d.markov_w2 = drnd(f, (size_t)V * 8, 0.3, 0);
}

static void draft_free(draft_fix *f) {
    for (int i = 0; i < f->n; i++) free(f->bufs[i]);
}

typedef struct {
    sg_backend *be;
    fwd_target t;
    fwd_drafter d;
    kv_pages kp;
    kv_cache kc;
    fwd_work w;
    bf16 *dtaps; // device [MAXR, TH] context rows
    float *dU;   // device [MAXR, V]
    bf16 *dhid;  // device [MAXR, H]
} deng;

static void deng_init(deng *e, const target_model *t, const drafter_model *d) {
    e->be = cpu_backend_create();
    ck_assert_int_eq(fwd_target_load(&e->t, e->be, t, tap_ids, NT), SG_OK);
    ck_assert_msg(fwd_drafter_load(&e->d, e->be, d, &e->t) == SG_OK, "%s", sg_error());
    kv_pages_config cfg = {.page_size = PS, .n_pages = 40, .max_seqs = 3, .max_positions = 64,
                           .n_chain_slots = 0, .block_size = B};
    ck_assert_int_eq(kv_pages_init(&e->kp, &cfg), SG_OK);
    ck_assert_int_eq(kv_cache_init(&e->kc, e->be, &e->kp, 2, 24), SG_OK);
    ck_assert_int_eq(fwd_work_init(&e->w, e->be, &d->cfg.arch, MAXR), SG_OK);
    e->dtaps = e->be->alloc(e->be->ctx, (size_t)MAXR * TH * sizeof(bf16));
    e->dU = e->be->alloc(e->be->ctx, (size_t)MAXR * V * sizeof(float));
    e->dhid = e->be->alloc(e->be->ctx, (size_t)MAXR * H * sizeof(bf16));
}

static void deng_free(deng *e) {
    void *all[] = {e->dtaps, e->dU, e->dhid};
    for (int i = 0; i < 3; i++) e->be->free(e->be->ctx, all[i]);
    fwd_work_free(&e->w);
    kv_cache_free(&e->kc);
    kv_pages_free(&e->kp);
    fwd_drafter_free(&e->d);
    fwd_target_free(&e->t);
    e->be->destroy(e->be);
}

// One drafter call for n_req requests; ctx rows taken from each request's tap rows
// taps_of[i] + (p[i] - ctx[i]) * TH. U [n_req*B, V] (when with_block), hidden likewise.
static void deng_run(deng *e, int n_req, const int *seq, const bf16 *const *taps_of,
                     const int *ctx, const int *p, const int *anchor, int with_block, float *U,
                     bf16 *hid) {
    int rows = 0;
    for (int i = 0; i < n_req; i++) {
        e->be->upload(e->be->ctx, e->dtaps + (size_t)rows * TH,
                      taps_of[i] + (size_t)(p[i] - ctx[i]) * TH, (size_t)ctx[i] * TH * 2);
        rows += ctx[i];
    }
    fwd_draft_batch b;
    fwd_stage_draft(&e->w, &e->d, n_req, ctx, p, anchor, seq, with_block, e->dtaps, &b);
    fwd_drafter_forward(&e->d, &e->w, &e->kc, &b, e->dU, e->dhid);
    if (!with_block) return;
    e->be->download(e->be->ctx, U, e->dU, (size_t)n_req * B * V * sizeof(float));
    e->be->download(e->be->ctx, hid, e->dhid, (size_t)n_req * B * H * sizeof(bf16));
}

// U and hidden of request X (tap rows 0 .. 13, block at 14 after a first round at 10) are
// bitwise equal: (a) all context at once, (b) two rounds 0..9 then 10..13 (the first round's block
// rows at 10..13 overwritten), (c) a context-only call then the block, batched with request Y.
// Then vs ref_drafter_block: max |ΔU| < 0.05.
START_TEST(test_drafter_paths_and_ref) {
    draft_fix f;
    draft_build(&f, &model.m);
    const bf16 *tx = ref_taps, *ty = refb_taps; // real tap rows of two requests
    const bf16 *both[2] = {tx, ty};
    float Ua[B * V], Ub[B * V], Uc[2 * B * V], Ux[B * V];
    bf16 ha[B * H], hb[B * H], hc[2 * B * H], hx[B * H];
    int anchor = toks[14];
    {
        deng e;
        deng_init(&e, &model.m, &f.d);
        int s;
        ck_assert_int_eq(kv_pages_reserve(&e.kp, 14 + B, &s), KV_RESERVED);
        kv_cache_upload_seq_table(&e.kc, &e.kp, s);
        int ctx = 14, p = 14;
        deng_run(&e, 1, &s, &tx, &ctx, &p, &anchor, 1, Ua, ha);
        kv_pages_release(&e.kp, s);
        deng_free(&e);
    }
    {
        deng e;
        deng_init(&e, &model.m, &f.d);
        int s;
        ck_assert_int_eq(kv_pages_reserve(&e.kp, 14 + B, &s), KV_RESERVED);
        kv_cache_upload_seq_table(&e.kc, &e.kp, s);
        int ctx = 10, p = 10, a10 = toks[10];
        deng_run(&e, 1, &s, &tx, &ctx, &p, &a10, 1, Ub, hb);
        ctx = 4;
        p = 14;
        deng_run(&e, 1, &s, &tx, &ctx, &p, &anchor, 1, Ub, hb);
        kv_pages_release(&e.kp, s);
        deng_free(&e);
    }
    ck_assert_int_eq(memcmp(Ua, Ub, sizeof Ua), 0);
    ck_assert_int_eq(memcmp(ha, hb, sizeof ha), 0);
    {
        deng e;
        deng_init(&e, &model.m, &f.d);
        int s[2];
        ck_assert_int_eq(kv_pages_reserve(&e.kp, 12 + B, &s[1]), KV_RESERVED); // Y in slot 0
        ck_assert_int_eq(kv_pages_reserve(&e.kp, 14 + B, &s[0]), KV_RESERVED);
        kv_cache_upload_seq_table(&e.kc, &e.kp, s[0]);
        kv_cache_upload_seq_table(&e.kc, &e.kp, s[1]);
        int ctx[2] = {6, 5}, p[2] = {6, 5}, anchors[2] = {anchor, toksb[12]};
        deng_run(&e, 2, s, both, ctx, p, anchors, 0, NULL, NULL); // context only
        int ctx2[2] = {8, 7}, p2[2] = {14, 12};
        deng_run(&e, 2, s, both, ctx2, p2, anchors, 1, Uc, hc);
        kv_pages_release(&e.kp, s[0]);
        kv_pages_release(&e.kp, s[1]);
        deng_free(&e);
    }
    ck_assert_int_eq(memcmp(Ua, Uc, sizeof Ua), 0);
    ck_assert_int_eq(memcmp(ha, hc, sizeof ha), 0);
    {   // Y's block alone equals Y's rows of the batch.
        deng e;
        deng_init(&e, &model.m, &f.d);
        int s;
        ck_assert_int_eq(kv_pages_reserve(&e.kp, 12 + B, &s), KV_RESERVED);
        kv_cache_upload_seq_table(&e.kc, &e.kp, s);
        int ctx = 12, p = 12, ay = toksb[12];
        deng_run(&e, 1, &s, &ty, &ctx, &p, &ay, 1, Ux, hx);
        ck_assert_int_eq(memcmp(Ux, Uc + B * V, sizeof Ux), 0);
        ck_assert_int_eq(memcmp(hx, hc + B * H, sizeof hx), 0);
        kv_pages_release(&e.kp, s);
        deng_free(&e);
    }
    // ref/: the same tap rows as floats (bf16 values, exact).
    ref_drafter rd;
    ck_assert_int_eq(ref_drafter_init(&rd, &f.d, &model.m, 32), SG_OK);
    float pend[14 * TH], rU[B * V], rh[B * H];
    for (int i = 0; i < 14 * TH; i++) pend[i] = bf16_to_f32(tx[i]);
    ck_assert_int_eq(ref_drafter_block(&rd, pend, 14, anchor, rU, rh), SG_OK);
    ref_drafter_free(&rd);
    double max_d = 0;
    for (int i = 0; i < B * V; i++) max_d = fmax(max_d, fabs(rU[i] - Ua[i]));
    ck_assert_double_lt(max_d, 0.05);
    for (int i = 0; i < B * H; i++)
        ck_assert_double_le(fabs(bf16_to_f32(ha[i]) - rh[i]), 0x1p-6 * fabs(rh[i]) + 0.02);
    draft_free(&f);
}
END_TEST

// A backend whose allocations fail after `budget` successes.
static sg_backend *real;
static int budget;
static void *limited_alloc(void *ctx, size_t bytes) {
    return budget-- > 0 ? real->alloc(ctx, bytes) : NULL;
}

// Device out of memory at every allocation of the weight upload and the work buffers: a clean
// SG_EXIT_USAGE and nothing leaked (the sanitizer build checks); bad tap ids are SG_EXIT_INPUT.
START_TEST(test_load_errors) {
    real = cpu_backend_create();
    sg_backend limited = *real;
    limited.alloc = limited_alloc;
    fwd_target t;
    fwd_work w;
    int ok_at = -1;
    for (int b = 0; b < 64 && ok_at < 0; b++) {
        budget = b;
        int st = fwd_target_load(&t, &limited, &model.m, tap_ids, NT);
        if (st == SG_OK) ok_at = b;
        else ck_assert_int_eq(st, SG_EXIT_USAGE);
    }
    ck_assert_int_eq(ok_at, 3 + 2 * 11 + 2); // embed, norm, lm_head, 11 per layer, 2 RoPE tables
    fwd_target_free(&t);
    for (int b = 0; b < 12; b++) { // 12 work buffers
        budget = b;
        ck_assert_int_eq(fwd_work_init(&w, &limited, &model.m.cfg, 4), SG_EXIT_USAGE);
    }
    budget = 12;
    ck_assert_int_eq(fwd_work_init(&w, &limited, &model.m.cfg, 4), SG_OK);
    fwd_work_free(&w);
    const int bad[2] = {1, 0};
    ck_assert_int_eq(fwd_target_load(&t, real, &model.m, bad, 2), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "strictly increasing"));
    real->destroy(real);
}
END_TEST

int main(void) {
    Suite *s = suite_create("engine_forward");
    TCase *tc = tcase_create("forward");
    tcase_add_unchecked_fixture(tc, target_setup, target_teardown);
    tcase_add_test(tc, test_chunks_and_decodes);
    tcase_add_test(tc, test_spans_rollback_chain);
    tcase_add_test(tc, test_target_vs_ref);
    tcase_add_test(tc, test_drafter_paths_and_ref);
    tcase_add_test(tc, test_load_errors);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
