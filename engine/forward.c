// engine/forward.c: the target and drafter forwards from backend ops, weight upload, work buffers
// and batch staging (see forward.h for the contracts, backend.h for each op's numerics).
#include "forward.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rope.h"

// ---- weights ----

static int up(const sg_backend *be, const bf16 *src, size_t n, const char *what, bf16 **out) {
    void *p = NULL;
    int st = be_alloc_upload(be, src, n * sizeof(bf16), what, &p);
    *out = p;
    return st;
}

static int upload_layer(const sg_backend *be, const layer_weights *lw, const qwen3_config *c,
                        fwd_layer *out) {
    size_t H = (size_t)c->hidden_size, qd = (size_t)c->num_attention_heads * c->head_dim;
    size_t kvd = (size_t)c->num_key_value_heads * c->head_dim, I = (size_t)c->intermediate_size;
    size_t hd = (size_t)c->head_dim;
    SG_TRY(up(be, lw->input_norm, H, "input_layernorm", &out->input_norm));
    SG_TRY(up(be, lw->post_norm, H, "post_attention_layernorm", &out->post_norm));
    SG_TRY(up(be, lw->wq, qd * H, "q_proj", &out->wq));
    SG_TRY(up(be, lw->wk, kvd * H, "k_proj", &out->wk));
    SG_TRY(up(be, lw->wv, kvd * H, "v_proj", &out->wv));
    SG_TRY(up(be, lw->wo, H * qd, "o_proj", &out->wo));
    SG_TRY(up(be, lw->q_norm, hd, "q_norm", &out->q_norm));
    SG_TRY(up(be, lw->k_norm, hd, "k_norm", &out->k_norm));
    SG_TRY(up(be, lw->w_gate, I * H, "gate_proj", &out->w_gate));
    SG_TRY(up(be, lw->w_up, I * H, "up_proj", &out->w_up));
    SG_TRY(up(be, lw->w_down, H * I, "down_proj", &out->w_down));
    return SG_OK;
}

static void free_layer(const sg_backend *be, fwd_layer *l) {
    bf16 *all[] = {l->input_norm, l->post_norm, l->wq, l->wk, l->wv, l->wo,
                   l->q_norm, l->k_norm, l->w_gate, l->w_up, l->w_down};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) be->free(be->ctx, all[i]);
}

static int upload_rope(const sg_backend *be, const qwen3_config *c, bf16 **cos, bf16 **sin) {
    rope_table rt;
    rope_table_build(&rt, c->rope_theta, c->head_dim, c->max_position_embeddings);
    size_t n = (size_t)c->max_position_embeddings * (c->head_dim / 2);
    int st = up(be, rt.cos, n, "RoPE cos table", cos);
    if (st == SG_OK) st = up(be, rt.sin, n, "RoPE sin table", sin);
    rope_table_free(&rt);
    return st;
}

static int target_load(fwd_target *t, const target_model *m) {
    const qwen3_config *c = &t->cfg;
    size_t V = (size_t)c->vocab_size, H = (size_t)c->hidden_size;
    SG_TRY(up(t->be, m->embed, V * H, "embed_tokens", &t->embed));
    SG_TRY(up(t->be, m->final_norm, H, "model.norm", &t->final_norm));
    if (m->lm_head == m->embed) t->lm_head = t->embed;
    else SG_TRY(up(t->be, m->lm_head, V * H, "lm_head", &t->lm_head));
    for (int l = 0; l < c->num_hidden_layers; l++)
        SG_TRY(upload_layer(t->be, &m->layers[l], c, &t->layers[l]));
    return upload_rope(t->be, c, &t->rope_cos, &t->rope_sin);
}

int fwd_target_load(fwd_target *t, const sg_backend *be, const target_model *m,
                    const int *tap_ids, int n_taps) {
    memset(t, 0, sizeof *t);
    const qwen3_config *c = &m->cfg;
    if (n_taps < 0 || n_taps > SG_MAX_TAPS)
        return sg_fail(SG_EXIT_INPUT, "%d tap layers requested (at most %d)", n_taps, SG_MAX_TAPS);
    for (int j = 0; j < n_taps; j++)
        if (tap_ids[j] < 0 || tap_ids[j] >= c->num_hidden_layers ||
            (j > 0 && tap_ids[j] <= tap_ids[j - 1]))
            return sg_fail(SG_EXIT_INPUT,
                           "tap layer id %d (entry %d) must be strictly increasing and below the "
                           "target's %d layers: fix the drafter's target_layer_ids",
                           tap_ids[j], j, c->num_hidden_layers);
    t->be = be;
    t->cfg = *c;
    t->max_pos = c->max_position_embeddings;
    t->n_taps = n_taps;
    for (int j = 0; j < n_taps; j++) t->tap_ids[j] = tap_ids[j];
    t->layers = sg_calloc((size_t)c->num_hidden_layers, sizeof *t->layers);
    int st = target_load(t, m);
    if (st != SG_OK) fwd_target_free(t);
    return st;
}

void fwd_target_free(fwd_target *t) {
    const sg_backend *be = t->be;
    if (!be) return;
    if (t->lm_head != t->embed) be->free(be->ctx, t->lm_head);
    be->free(be->ctx, t->embed);
    be->free(be->ctx, t->final_norm);
    for (int l = 0; t->layers && l < t->cfg.num_hidden_layers; l++) free_layer(be, &t->layers[l]);
    free(t->layers);
    be->free(be->ctx, t->rope_cos);
    be->free(be->ctx, t->rope_sin);
    memset(t, 0, sizeof *t);
}

static int drafter_load(fwd_drafter *d, const drafter_model *m) {
    const qwen3_config *a = &d->cfg.arch;
    size_t H = (size_t)a->hidden_size, V = (size_t)a->vocab_size, r = (size_t)d->cfg.markov_rank;
    SG_TRY(up(d->be, m->fc, H * d->cfg.n_taps * H, "fc", &d->fc));
    SG_TRY(up(d->be, m->hidden_norm, H, "hidden_norm", &d->hidden_norm));
    SG_TRY(up(d->be, m->final_norm, H, "norm", &d->final_norm));
    for (int l = 0; l < a->num_hidden_layers; l++)
        SG_TRY(upload_layer(d->be, &m->layers[l], a, &d->layers[l]));
    if (r > 0) {
        SG_TRY(up(d->be, m->markov_w1, V * r, "markov_w1", &d->markov_w1));
        SG_TRY(up(d->be, m->markov_w2, V * r, "markov_w2", &d->markov_w2));
    }
    return upload_rope(d->be, a, &d->rope_cos, &d->rope_sin);
}

int fwd_drafter_load(fwd_drafter *d, const sg_backend *be, const drafter_model *m,
                     const fwd_target *t) {
    memset(d, 0, sizeof *d);
    const qwen3_config *a = &m->cfg.arch;
    if (a->hidden_size != t->cfg.hidden_size || a->vocab_size != t->cfg.vocab_size ||
        m->cfg.n_taps != t->n_taps)
        return sg_fail(SG_EXIT_INPUT,
                       "drafter (hidden %d, vocab %d, %d taps) does not match the target "
                       "(hidden %d, vocab %d, %d taps): load the target with the drafter's "
                       "target_layer_ids",
                       a->hidden_size, a->vocab_size, m->cfg.n_taps, t->cfg.hidden_size,
                       t->cfg.vocab_size, t->n_taps);
    for (int j = 0; j < t->n_taps; j++)
        if (m->cfg.target_layer_ids[j] != t->tap_ids[j])
            return sg_fail(SG_EXIT_INPUT,
                           "drafter tap %d reads target layer %d but the target was loaded with "
                           "layer %d: load the target with the drafter's target_layer_ids",
                           j, m->cfg.target_layer_ids[j], t->tap_ids[j]);
    if (m->cfg.markov_rank > 0 && (!m->markov_w1 || !m->markov_w2))
        return sg_fail(SG_EXIT_INPUT, "drafter declares markov_rank %d but has no Markov weights",
                       m->cfg.markov_rank);
    d->be = be;
    d->cfg = m->cfg;
    d->target = t;
    d->max_pos = a->max_position_embeddings;
    d->layers = sg_calloc((size_t)a->num_hidden_layers, sizeof *d->layers);
    int st = drafter_load(d, m);
    if (st != SG_OK) fwd_drafter_free(d);
    return st;
}

void fwd_drafter_free(fwd_drafter *d) {
    const sg_backend *be = d->be;
    if (!be) return;
    bf16 *all[] = {d->fc, d->hidden_norm, d->final_norm, d->markov_w1, d->markov_w2,
                   d->rope_cos, d->rope_sin};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) be->free(be->ctx, all[i]);
    for (int l = 0; d->layers && l < d->cfg.arch.num_hidden_layers; l++)
        free_layer(be, &d->layers[l]);
    free(d->layers);
    memset(d, 0, sizeof *d);
}

// ---- work buffers and staging ----

int fwd_work_init(fwd_work *w, const sg_backend *be, const qwen3_config *c, int max_rows) {
    memset(w, 0, sizeof *w);
    SG_CHECK(max_rows >= 1, "fwd_work of %d rows", max_rows);
    w->be = be;
    w->max_rows = max_rows;
    w->H = c->hidden_size;
    w->q_dim = c->num_attention_heads * c->head_dim;
    w->kv_dim = c->num_key_value_heads * c->head_dim;
    w->I = c->intermediate_size;
    size_t R = (size_t)max_rows, b = sizeof(bf16), i4 = sizeof(int32_t);
    struct {
        void **p;
        size_t bytes;
    } bufs[] = {
        {(void **)&w->h, R * w->H * b},          {(void **)&w->x, R * w->H * b},
        {(void **)&w->q, R * w->q_dim * b},      {(void **)&w->k, R * w->kv_dim * b},
        {(void **)&w->v, R * w->kv_dim * b},     {(void **)&w->att, R * w->q_dim * b},
        {(void **)&w->mlp, R * w->I * b},        {(void **)&w->tokens, R * i4},
        {(void **)&w->pos, R * i4},              {(void **)&w->row_table, R * i4},
        {(void **)&w->n_keys, R * i4},           {(void **)&w->logit_rows, R * i4},
    };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) {
        int st = be_alloc(be, bufs[i].bytes, "forward work buffers", bufs[i].p);
        if (st != SG_OK) {
            fwd_work_free(w);
            return st;
        }
    }
    return SG_OK;
}

void fwd_work_free(fwd_work *w) {
    if (!w->be) return;
    void *all[] = {w->h, w->x, w->q, w->k, w->v, w->att, w->mlp,
                   w->tokens, w->pos, w->row_table, w->n_keys, w->logit_rows};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) w->be->free(w->be->ctx, all[i]);
    memset(w, 0, sizeof *w);
}

static void put(const fwd_work *w, int32_t *dst, const int32_t *src, int n) {
    if (n > 0) w->be->upload(w->be->ctx, dst, src, (size_t)n * sizeof(int32_t));
}

void fwd_stage_target(fwd_work *w, int rows, const int32_t *tokens, const int32_t *pos,
                      const int32_t *row_table, int n_logits, const int32_t *logit_rows,
                      fwd_batch *b) {
    SG_CHECK(rows >= 1 && rows <= w->max_rows && n_logits >= 0 && n_logits <= rows,
             "target batch of %d rows (%d logits) for work of %d rows", rows, n_logits,
             w->max_rows);
    int32_t *host = sg_calloc((size_t)rows, sizeof *host);
    for (int i = 0; i < rows; i++) host[i] = pos[i] + 1;
    put(w, w->n_keys, host, rows);
    for (int i = 0; i < n_logits; i++) host[i] = logit_rows ? logit_rows[i] : rows - n_logits + i;
    put(w, w->logit_rows, host, n_logits);
    free(host);
    put(w, w->tokens, tokens, rows);
    put(w, w->pos, pos, rows);
    put(w, w->row_table, row_table, rows);
    *b = (fwd_batch){.rows = rows,
                     .tokens = w->tokens,
                     .pos = w->pos,
                     .row_table = w->row_table,
                     .n_keys = w->n_keys,
                     .n_logits = n_logits,
                     .logit_rows = w->logit_rows};
}

void fwd_stage_draft(fwd_work *w, const fwd_drafter *d, int n_req, const int *ctx_len,
                     const int *p, const int *anchor, const int *table, int with_block,
                     const bf16 *ctx_taps, fwd_draft_batch *b) {
    int B = d->cfg.block_size, n_ctx = 0;
    for (int i = 0; i < n_req; i++) n_ctx += ctx_len[i];
    int n_blk = with_block ? n_req * B : 0, rows = n_ctx + n_blk;
    SG_CHECK(rows >= 1 && rows <= w->max_rows, "drafter batch of %d rows for work of %d rows",
             rows, w->max_rows);
    int32_t *pos = sg_calloc((size_t)rows, sizeof *pos);
    int32_t *tab = sg_calloc((size_t)rows, sizeof *tab);
    int32_t *tok = sg_calloc((size_t)n_blk + 1, sizeof *tok);
    int32_t *nk = sg_calloc((size_t)n_blk + 1, sizeof *nk);
    int r = 0;
    for (int i = 0; i < n_req; i++)
        for (int j = 0; j < ctx_len[i]; j++, r++) {
            pos[r] = p[i] - ctx_len[i] + j;
            tab[r] = table[i];
        }
    for (int i = 0; i < n_req && with_block; i++)
        for (int j = 0; j < B; j++, r++) {
            pos[r] = p[i] + j;
            tab[r] = table[i];
            tok[r - n_ctx] = j == 0 ? anchor[i] : d->cfg.mask_token_id;
            nk[r - n_ctx] = p[i] + B;
        }
    put(w, w->pos, pos, rows);
    put(w, w->row_table, tab, rows);
    put(w, w->tokens, tok, n_blk);
    put(w, w->n_keys, nk, n_blk);
    free(pos);
    free(tab);
    free(tok);
    free(nk);
    *b = (fwd_draft_batch){.n_ctx = n_ctx,
                           .n_blk = n_blk,
                           .ctx_taps = ctx_taps,
                           .blk_tokens = w->tokens,
                           .pos = w->pos,
                           .row_table = w->row_table,
                           .n_keys = w->n_keys};
}

// ---- forwards ----

// The MLP half of a layer on rows of the residual stream h [rows, H]; x holds the attention
// half's output on entry: h += x, then x = down(swiglu(gate(n), up(n))) with n = RMSNorm(h,
// post_norm). The caller adds x to h (end_layer).
static void mlp_block(const sg_backend *be, const fwd_layer *lw, const qwen3_config *c,
                      fwd_work *w, bf16 *h, bf16 *x, int rows) {
    void *ctx = be->ctx;
    int H = c->hidden_size, I = c->intermediate_size;
    be->add_rmsnorm(ctx, h, x, rows, H, lw->post_norm, c->rms_norm_eps, x);
    be->gemm_swiglu(ctx, x, rows, H, lw->w_gate, lw->w_up, I, w->mlp);
    be->gemm(ctx, w->mlp, rows, I, lw->w_down, H, x, 0);
}

// A layer's last residual add, h += x, fused with the norm that reads h next when there is one
// (next_norm: x = RMSNorm(h, next_norm)).
static void end_layer(const sg_backend *be, bf16 *h, bf16 *x, int rows, int H,
                      const bf16 *next_norm, float eps) {
    if (next_norm)
        be->add_rmsnorm(be->ctx, h, x, rows, H, next_norm, eps, x);
    else
        be->add(be->ctx, h, x, (size_t)rows * H);
}

void fwd_target_forward(const fwd_target *t, fwd_work *w, kv_cache *kc, const fwd_batch *b,
                        float *logits, bf16 *taps) {
    const sg_backend *be = t->be;
    void *ctx = be->ctx;
    const qwen3_config *c = &t->cfg;
    int rows = b->rows, H = c->hidden_size, nH = c->num_attention_heads;
    int nKV = c->num_key_value_heads, hd = c->head_dim, V = c->vocab_size;
    int qd = nH * hd, kvd = nKV * hd;
    float eps = c->rms_norm_eps;
    SG_CHECK(rows >= 1 && rows <= w->max_rows && w->H == H && w->I == c->intermediate_size,
             "target forward of %d rows on work of %d rows", rows, w->max_rows);
    SG_CHECK(kc->n_layers == c->num_hidden_layers && kc->kv_dim == kvd,
             "KV cache of %d layers x %d for a target of %d x %d", kc->n_layers, kc->kv_dim,
             c->num_hidden_layers, kvd);
    be_paging pg = kv_cache_paging(kc, nKV, hd);
    size_t tap_stride = (size_t)t->n_taps * H * sizeof(bf16);

    int L = c->num_hidden_layers;
    be->embed(ctx, t->embed, H, b->tokens, rows, w->h);
    be->rmsnorm(ctx, w->h, rows, H, t->layers[0].input_norm, eps, w->x);
    for (int l = 0; l < L; l++) {
        const fwd_layer *lw = &t->layers[l];
        bf16 *Kl = kv_cache_k(kc, l), *Vl = kv_cache_v(kc, l);
        // x = RMSNorm(h, input_norm) here (before the loop, or by the last layer's end_layer)
        const bf16 *wqkv[] = {lw->wq, lw->wk, lw->wv};
        const int nqkv[] = {qd, kvd, kvd};
        bf16 *const yqkv[] = {w->q, w->k, w->v};
        be->gemm_group(ctx, w->x, rows, H, 3, wqkv, nqkv, yqkv);
        be->qk_norm_rope_store(ctx, &pg, Kl, Vl, b->row_table, b->pos, rows, w->q, rows, nH,
                               lw->q_norm, w->k, w->v, lw->k_norm, eps, t->rope_cos, t->rope_sin);
        be->attention(ctx, &pg, Kl, Vl, b->row_table, b->n_keys, w->q, rows, nH, w->att);
        be->gemm(ctx, w->att, rows, qd, lw->wo, H, w->x, 0);
        mlp_block(be, lw, c, w, w->h, w->x, rows);
        end_layer(be, w->h, w->x, rows, H, l + 1 < L ? t->layers[l + 1].input_norm : NULL, eps);
        for (int j = 0; taps && j < t->n_taps; j++)
            if (t->tap_ids[j] == l)
                be->copy_rows(ctx, taps + (size_t)j * H, tap_stride, NULL, w->h,
                              (size_t)H * sizeof(bf16), NULL, rows, (size_t)H * sizeof(bf16));
    }
    if (b->n_logits > 0) {
        // Gather the selected rows, then final norm and the head in fp32.
        be->copy_rows(ctx, w->x, (size_t)H * sizeof(bf16), NULL, w->h, (size_t)H * sizeof(bf16),
                      b->logit_rows, b->n_logits, (size_t)H * sizeof(bf16));
        be->rmsnorm(ctx, w->x, b->n_logits, H, t->final_norm, eps, w->x);
        be->gemm(ctx, w->x, b->n_logits, H, t->lm_head, V, logits, 1);
    }
}

void fwd_drafter_forward(const fwd_drafter *d, fwd_work *w, kv_cache *kc,
                         const fwd_draft_batch *b, float *U, bf16 *hidden) {
    const sg_backend *be = d->be;
    void *ctx = be->ctx;
    const qwen3_config *a = &d->cfg.arch;
    int H = a->hidden_size, nH = a->num_attention_heads, nKV = a->num_key_value_heads;
    int hd = a->head_dim, V = a->vocab_size, qd = nH * hd, kvd = nKV * hd;
    int nc = b->n_ctx, nb = b->n_blk, rows = nc + nb;
    float eps = a->rms_norm_eps;
    SG_CHECK(rows >= 1 && rows <= w->max_rows && w->H == H && w->I == a->intermediate_size,
             "drafter forward of %d rows on work of %d rows", rows, w->max_rows);
    SG_CHECK(kc->n_layers == a->num_hidden_layers && kc->kv_dim == kvd,
             "drafter KV cache of %d layers x %d for %d x %d", kc->n_layers, kc->kv_dim,
             a->num_hidden_layers, kvd);
    be_paging pg = kv_cache_paging(kc, nKV, hd);
    bf16 *xb = w->x + (size_t)nc * H; // block part of x; x[0 .. nc) holds C for every layer
    const int32_t *blk_table = b->row_table + nc;

    if (nc > 0) {
        be->gemm(ctx, b->ctx_taps, nc, d->cfg.n_taps * H, d->fc, H, w->x, 0);
        be->rmsnorm(ctx, w->x, nc, H, d->hidden_norm, eps, w->x);
    }
    int L = a->num_hidden_layers;
    if (nb > 0) {
        be->embed(ctx, d->target->embed, H, b->blk_tokens, nb, w->h);
        be->rmsnorm(ctx, w->h, nb, H, d->layers[0].input_norm, eps, xb);
    }
    for (int l = 0; l < L; l++) {
        const fwd_layer *lw = &d->layers[l];
        bf16 *Kl = kv_cache_k(kc, l), *Vl = kv_cache_v(kc, l);
        // xb = RMSNorm(h, input_norm) here (before the loop or by end_layer)
        if (nb > 0) be->gemm(ctx, xb, nb, H, lw->wq, qd, w->q, 0);
        // K/V of [C ; normed block rows]: context rows without the input norm.
        const bf16 *wkv[] = {lw->wk, lw->wv};
        const int nkv[] = {kvd, kvd};
        bf16 *const ykv[] = {w->k, w->v};
        be->gemm_group(ctx, w->x, rows, H, 2, wkv, nkv, ykv);
        be->qk_norm_rope_store(ctx, &pg, Kl, Vl, b->row_table, b->pos, rows, w->q, nb, nH,
                               lw->q_norm, w->k, w->v, lw->k_norm, eps, d->rope_cos, d->rope_sin);
        if (nb == 0) continue;
        be->attention(ctx, &pg, Kl, Vl, blk_table, b->n_keys, w->q, nb, nH, w->att);
        be->gemm(ctx, w->att, nb, qd, lw->wo, H, xb, 0);
        mlp_block(be, lw, a, w, w->h, xb, nb);
        // the next layer's input norm, or the final norm after the last layer
        end_layer(be, w->h, xb, nb, H, l + 1 < L ? d->layers[l + 1].input_norm : d->final_norm,
                  eps);
    }
    if (nb == 0) return;
    if (hidden) be->copy(ctx, hidden, xb, (size_t)nb * H * sizeof(bf16));
    be->gemm(ctx, xb, nb, H, d->target->lm_head, V, U, 1);
}
