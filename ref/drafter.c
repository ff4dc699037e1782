// ref/drafter.c: the plain DSpark/DFlash drafter backbone (see drafter.h for the contract).
//
// Per layer, the block's K/V rows are written into the cache rows right after the context, so one
// contiguous run of rows [0, p + B) feeds the attention of every block query (non-causal); the
// next call overwrites those scratch rows with the next context.
#include "drafter.h"

#include <stdlib.h>

#include "common/error.h"
#include "common/sampler.h"
#include "ops.h"

int ref_draft_rows(block_layout layout, int block_size, int *first_row) {
    *first_row = layout == LAYOUT_ANCHOR_DROP ? 1 : 0;
    return block_size - *first_row;
}

int ref_drafter_init(ref_drafter *d, const drafter_model *dm, const target_model *tm, int max_len) {
    const qwen3_config *a = &dm->cfg.arch, *t = &tm->cfg;
    if (a->hidden_size != t->hidden_size || a->vocab_size != t->vocab_size)
        return sg_fail(SG_EXIT_INPUT,
                       "drafter hidden_size %d / vocab_size %d differ from the target's %d / %d: "
                       "use the drafter trained for this target",
                       a->hidden_size, a->vocab_size, t->hidden_size, t->vocab_size);
    if (dm->cfg.mask_token_id < 0 || dm->cfg.mask_token_id >= a->vocab_size)
        return sg_fail(SG_EXIT_INPUT, "drafter mask_token_id %d is outside the vocabulary [0, %d)",
                       dm->cfg.mask_token_id, a->vocab_size);
    if (dm->cfg.n_taps < 1 || dm->cfg.n_taps > SG_MAX_TAPS)
        return sg_fail(SG_EXIT_INPUT,
                       "drafter has %d target_layer_ids (needs 1..%d): run config_check_pair first",
                       dm->cfg.n_taps, SG_MAX_TAPS);
    if (dm->cfg.block_size < 1 || dm->cfg.block_size > SG_MAX_BLOCK)
        return sg_fail(SG_EXIT_INPUT, "drafter block_size %d is outside 1..%d",
                       dm->cfg.block_size, SG_MAX_BLOCK);
    if (max_len < dm->cfg.block_size)
        return sg_fail(SG_EXIT_USAGE, "drafter cache of %d positions cannot hold one block of %d",
                       max_len, dm->cfg.block_size);
    d->model = dm;
    d->target = tm;
    d->max_len = max_len;
    d->committed_len = 0;
    rope_table_build(&d->rope, a->rope_theta, a->head_dim, max_len);
    size_t n = (size_t)a->num_hidden_layers * max_len * a->num_key_value_heads * a->head_dim;
    d->k_cache = sg_calloc(n, sizeof(float));
    d->v_cache = sg_calloc(n, sizeof(float));
    return SG_OK;
}

void ref_drafter_free(ref_drafter *d) {
    rope_table_free(&d->rope);
    free(d->k_cache);
    free(d->v_cache);
    d->k_cache = d->v_cache = NULL;
}

// K/V of `rows` input rows x [rows, H] at positions pos0 .. pos0+rows-1, written into the layer's
// cache rows pos0 .. (k_norm + RoPE on K).
static void kv_rows(const ref_drafter *d, const layer_weights *lw, const float *x, int rows,
                    int pos0, float *kc, float *vc) {
    const qwen3_config *a = &d->model->cfg.arch;
    int H = a->hidden_size, kvd = a->num_key_value_heads * a->head_dim;
    float *k = kc + (size_t)pos0 * kvd, *v = vc + (size_t)pos0 * kvd;
    ref_matmul(x, rows, H, lw->wk, kvd, k, 0);
    ref_matmul(x, rows, H, lw->wv, kvd, v, 0);
    for (int i = 0; i < rows; i++)
        ref_head_norm_rope(k + (size_t)i * kvd, a->num_key_value_heads, a->head_dim, lw->k_norm,
                           a->rms_norm_eps, &d->rope, pos0 + i);
}

int ref_drafter_block(ref_drafter *d, const float *pending, int n_pending, int anchor,
                      float *logits, float *hidden) {
    const drafter_model *dm = d->model;
    const qwen3_config *a = &dm->cfg.arch;
    int H = a->hidden_size, V = a->vocab_size, B = dm->cfg.block_size, I = a->intermediate_size;
    int nH = a->num_attention_heads, nKV = a->num_key_value_heads, hd = a->head_dim;
    int qd = nH * hd, kvd = nKV * hd, ctx = n_pending, c0 = d->committed_len, p = c0 + ctx;
    float eps = a->rms_norm_eps;
    if (anchor < 0 || anchor >= V)
        return sg_fail(SG_EXIT_USAGE, "drafter anchor token %d is outside the vocabulary [0, %d)",
                       anchor, V);
    if (n_pending < 0 || p + B > d->max_len)
        return sg_fail(SG_EXIT_USAGE,
                       "drafter block at position %d (%d pending rows) does not fit its cache of "
                       "%d positions: size the cache for prompt + max_new_tokens + B",
                       p, n_pending, d->max_len);

    // Context rows C [ctx, H] = RMSNorm(pending · fcᵀ, hidden_norm).
    float *C = NULL;
    if (ctx > 0) {
        C = sg_calloc((size_t)ctx * H, sizeof *C);
        ref_matmul(pending, ctx, dm->cfg.n_taps * H, dm->fc, H, C, 0);
        ref_rmsnorm(C, ctx, H, dm->hidden_norm, eps, C);
    }
    // Block input [anchor, mask × (B-1)] with the target's embedding.
    float *x = sg_calloc((size_t)B * H, sizeof *x); // [B, H] residual stream
    for (int i = 0; i < B; i++) {
        const bf16 *e = d->target->embed + (size_t)(i == 0 ? anchor : dm->cfg.mask_token_id) * H;
        for (int j = 0; j < H; j++) x[(size_t)i * H + j] = bf16_to_f32(e[j]);
    }
    float *n = sg_calloc((size_t)B * H, sizeof *n);     // [B, H] normed rows
    float *q = sg_calloc((size_t)B * qd, sizeof *q);    // [B, nH*hd]
    float *att = sg_calloc((size_t)B * qd, sizeof *att); // [B, nH*hd]
    float *o = sg_calloc((size_t)B * H, sizeof *o);     // [B, H]
    float *g = sg_calloc((size_t)B * I, sizeof *g);     // [B, I]
    float *u = sg_calloc((size_t)B * I, sizeof *u);     // [B, I]

    for (int l = 0; l < a->num_hidden_layers; l++) {
        const layer_weights *lw = &dm->layers[l];
        float *kc = d->k_cache + (size_t)l * d->max_len * kvd;
        float *vc = d->v_cache + (size_t)l * d->max_len * kvd;
        ref_rmsnorm(x, B, H, lw->input_norm, eps, n);
        ref_matmul(n, B, H, lw->wq, qd, q, 0);
        for (int i = 0; i < B; i++)
            ref_head_norm_rope(q + (size_t)i * qd, nH, hd, lw->q_norm, eps, &d->rope, p + i);
        if (ctx > 0) kv_rows(d, lw, C, ctx, c0, kc, vc); // context: C without the input norm
        kv_rows(d, lw, n, B, p, kc, vc);                  // block: scratch rows p .. p+B-1
        for (int i = 0; i < B; i++) // non-causal: every query sees rows 0 .. p+B-1
            ref_attention_row(q + (size_t)i * qd, kc, vc, p + B, nH, nKV, hd,
                              att + (size_t)i * qd);
        ref_matmul(att, B, qd, lw->wo, H, o, 0);
        ref_residual_add(x, o, B * H);
        ref_mlp_block(x, B, H, I, lw, eps, n, g, u);
    }
    d->committed_len = p;
    ref_rmsnorm(x, B, H, dm->final_norm, eps, n);
    ref_matmul(n, B, H, d->target->lm_head, V, logits, 1);
    if (hidden)
        for (size_t i = 0; i < (size_t)B * H; i++) hidden[i] = n[i];
    free(C);
    free(x);
    free(n);
    free(q);
    free(att);
    free(o);
    free(g);
    free(u);
    for (int i = 0; i < B; i++) {
        int bad;
        if (first_nonfinite_f32(logits + (size_t)i * V, V, &bad))
            return sg_fail(SG_EXIT_FAIL,
                           "drafter logits row %d (position %d) holds a NaN or Inf at token %d",
                           i, p + i, bad);
    }
    return SG_OK;
}
