// engine/forward.h: the target and drafter forwards, composed once from backend ops (backend.h),
// so the CPU and CUDA backends run the same sequence of ops.
//
// Target forward (dspark-spec.md §1): a batch of rows, each a token at an absolute position of one
// sequence (a page-table row of the KV cache). Every row's K/V is stored into its page first, then
// row i attends to positions 0 .. pos[i] of its sequence, so the rows of one span are causal
// within the span and see the sequence's committed KV. A prefill is one span per prompt (any
// chunking), a decode one row, a verify batch many spans, a hedge chain a span over a chain table:
// the same code. Outputs: fp32 logits of the selected rows [n_logits, V] and tap rows [rows,
// n_taps*H] (bf16, the residual stream after each tap layer's MLP add, in tap order).
//
// Drafter forward (dspark-spec.md §2), batched over requests: the pending tap rows of every request
// (context rows, concatenated in request order) become C = RMSNorm(taps·fcᵀ, hidden_norm); every
// request's block [anchor, mask × (B-1)] at p .. p+B-1 is embedded with the TARGET's embedding. In
// every layer K/V are computed for [C ; normed block rows] (context rows WITHOUT the input norm),
// all stored into the drafter's paged cache (the block rows at p .. p+B-1 are overwritten by the
// next round's context), and each block query attends to its request's positions 0 .. p+B-1
// (non-causal). Outputs: the final-normed block rows [n_blk, H] (confidence head input) and the
// base logits U = rows · lm_headᵀ [n_blk, V] fp32 with the TARGET's head. n_blk may be 0: a
// context-only call that just ingests rows (a long prompt in chunks).
//
// Invariance. Each op is batch invariant (backend.h) and every row's computation reads only its own
// row, its own sequence's K/V and the weights; a position's K/V, logits and taps therefore do not
// depend on the batch or on how earlier positions were computed (tested bit for bit).
//
// All buffers named "device" are backend memory; the batch description is device memory too so a
// round can feed drafted tokens without a host round trip (fwd_stage_* upload host arrays).
#ifndef SG_ENGINE_FORWARD_H
#define SG_ENGINE_FORWARD_H

#include <stdint.h>

#include "backend.h"
#include "common/model.h"
#include "kv_pages.h"

typedef struct {
    bf16 *input_norm, *post_norm;  // [H]
    bf16 *wq, *wk, *wv, *wo;       // [nH*hd, H], [nKV*hd, H], [nKV*hd, H], [H, nH*hd]
    bf16 *q_norm, *k_norm;         // [hd]
    bf16 *w_gate, *w_up, *w_down;  // [I, H], [I, H], [H, I]
} fwd_layer;                       // device copies of one layer's weights

typedef struct {
    const sg_backend *be;
    qwen3_config cfg;
    bf16 *embed;      // device [V, H]
    bf16 *final_norm; // device [H]
    bf16 *lm_head;    // device [V, H]; == embed when tied (uploaded once)
    fwd_layer *layers; // [L]
    bf16 *rope_cos, *rope_sin; // device [max_pos, hd/2] (common/rope.h)
    int max_pos;               // cfg.max_position_embeddings
    int tap_ids[SG_MAX_TAPS];
    int n_taps; // 0: no taps
} fwd_target;

typedef struct {
    const sg_backend *be;
    drafter_config cfg;
    const fwd_target *target; // embedding and head
    bf16 *fc;                 // device [H, n_taps*H]
    bf16 *hidden_norm, *final_norm; // device [H]
    fwd_layer *layers;        // [cfg.arch.num_hidden_layers]
    bf16 *markov_w1, *markov_w2; // device [V, r], or NULL without a Markov head
    bf16 *rope_cos, *rope_sin;   // device [max_pos, hd/2]
    int max_pos;
} fwd_drafter;

// Device scratch of one forward for up to max_rows rows (target: rows of the batch; drafter:
// context rows + block rows), and device staging for the batch description.
typedef struct {
    const sg_backend *be;
    int max_rows;
    int H, q_dim, kv_dim, I;
    bf16 *h;    // [max_rows, H] residual stream
    bf16 *x;    // [max_rows, H] normed rows (drafter: [C ; block rows])
    bf16 *q;    // [max_rows, nH*hd]
    bf16 *k, *v; // [max_rows, nKV*hd]
    bf16 *att;  // [max_rows, nH*hd]
    bf16 *mlp;  // [max_rows, I] swiglu(gate, up)
    int32_t *tokens, *pos, *row_table, *n_keys, *logit_rows; // staging [max_rows] each
} fwd_work;

// Target batch (device arrays).
typedef struct {
    int rows;
    const int32_t *tokens;     // [rows]
    const int32_t *pos;        // [rows] absolute positions
    const int32_t *row_table;  // [rows] page-table row (sequence s: s; chain slot j: max_seqs+j)
    const int32_t *n_keys;     // [rows] = pos + 1 (causal)
    int n_logits;              // rows whose logits are produced (0: none)
    const int32_t *logit_rows; // [n_logits] row indices
} fwd_batch;

// Drafter batch (device arrays). Rows 0 .. n_ctx-1 are context rows, rows n_ctx .. are block rows
// (B per request, request order), in pos and row_table.
typedef struct {
    int n_ctx;
    int n_blk;
    const bf16 *ctx_taps;      // [n_ctx, n_taps*H] pending tap rows
    const int32_t *blk_tokens; // [n_blk] per request: anchor, mask × (B-1)
    const int32_t *pos;        // [n_ctx + n_blk]
    const int32_t *row_table;  // [n_ctx + n_blk] drafter page-table row of each row
    const int32_t *n_keys;     // [n_blk] = p + B of the row's request
} fwd_draft_batch;

// Upload the weights (bf16 as stored), RoPE tables for max_position_embeddings positions, and the
// tap layer ids (n_taps 0 for a target without a drafter). SG_EXIT_INPUT on bad tap ids,
// SG_EXIT_USAGE when the backend runs out of memory.
int fwd_target_load(fwd_target *t, const sg_backend *be, const target_model *m,
                    const int *tap_ids, int n_taps);
void fwd_target_free(fwd_target *t);
// The drafter shares `t`'s embedding and head (t must outlive d).
int fwd_drafter_load(fwd_drafter *d, const sg_backend *be, const drafter_model *m,
                     const fwd_target *t);
void fwd_drafter_free(fwd_drafter *d);

int fwd_work_init(fwd_work *w, const sg_backend *be, const qwen3_config *cfg, int max_rows);
void fwd_work_free(fwd_work *w);

// Uploads a host batch into w's staging and describes it in *b (n_keys = pos + 1). logit_rows
// NULL with n_logits > 0 means the last n_logits rows.
void fwd_stage_target(fwd_work *w, int rows, const int32_t *tokens, const int32_t *pos,
                      const int32_t *row_table, int n_logits, const int32_t *logit_rows,
                      fwd_batch *b);
// Uploads a drafter batch for n_req requests: request i has ctx_len[i] context rows (positions
// p[i]-ctx_len[i] .. p[i]-1; its tap rows are the next ctx_len[i] rows of ctx_taps) and, when
// with_block, a block of B rows at p[i] .. p[i]+B-1 starting with anchor[i]; table[i] is its
// drafter page-table row.
void fwd_stage_draft(fwd_work *w, const fwd_drafter *d, int n_req, const int *ctx_len,
                     const int *p, const int *anchor, const int *table, int with_block,
                     const bf16 *ctx_taps, fwd_draft_batch *b);

// logits: device fp32 [n_logits, V] (may be NULL when n_logits is 0); taps: device bf16
// [rows, n_taps*H] or NULL. kc: the target's KV cache (tables uploaded).
void fwd_target_forward(const fwd_target *t, fwd_work *w, kv_cache *kc, const fwd_batch *b,
                        float *logits, bf16 *taps);
// U: device fp32 [n_blk, V]; hidden: device bf16 [n_blk, H] or NULL. kc: the drafter's cache.
void fwd_drafter_forward(const fwd_drafter *d, fwd_work *w, kv_cache *kc,
                         const fwd_draft_batch *b, float *U, bf16 *hidden);

#endif
