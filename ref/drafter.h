// ref/drafter.h: the plain DSpark/DFlash drafter backbone (dspark-spec.md §2), for the oracle.
//
// Contract: a ref_drafter holds one request's drafter KV cache of CONTEXT rows only (per draft
// layer K and V [max_len, nKV*hd], bf16 values; K after k_norm and RoPE at the row's absolute
// position) and committed_len, the context positions ingested. ref_drafter_block ingests the
// pending tap rows (positions committed_len .. p-1) as C = RMSNorm(pending·fcᵀ, hidden_norm), then
// runs the block [anchor, mask × (B-1)] at positions p .. p+B-1 embedded with the TARGET's
// embedding. In every layer the context K/V come from C directly (no input norm) and are appended
// to the cache; the block's queries see every cached context position and all B block positions
// (non-causal). Output: final norm (the drafter's norm.weight), the TARGET's lm_head → base logits
// U [B, V] fp32, and the final-normed hidden rows [B, H]. Numerics: ref/ops.h.
#ifndef SG_REF_DRAFTER_H
#define SG_REF_DRAFTER_H

#include "common/model.h"
#include "common/rope.h"

typedef struct {
    const drafter_model *model;
    const target_model *target; // embedding and lm_head
    rope_table rope;
    int max_len;       // capacity in positions: every p + B must fit
    int committed_len; // context positions held
    // [n_layers, max_len, nKV*hd]: rows < committed_len are context; rows committed_len ..
    // committed_len + B - 1 hold the current block's K/V while it runs (scratch, never kept).
    float *k_cache;
    float *v_cache;
} ref_drafter;

// Checks the drafter against the target (hidden, vocab, mask id, taps) and allocates the cache.
// Returns SG_EXIT_INPUT with a message on a mismatch.
int ref_drafter_init(ref_drafter *d, const drafter_model *dm, const target_model *tm, int max_len);
void ref_drafter_free(ref_drafter *d);

// One draft block. pending [n_pending, n_taps*H] are the tap rows of positions committed_len ..
// committed_len + n_pending - 1 (n_pending >= 0); the anchor sits at p = committed_len + n_pending.
// Writes logits U [B, V] (fp32) and, when not NULL, hidden [B, H] (final-normed). Afterwards
// committed_len = p. A bad anchor id or p + B > max_len is SG_EXIT_USAGE; a NaN or Inf in U is
// SG_EXIT_FAIL naming the row and position.
int ref_drafter_block(ref_drafter *d, const float *pending, int n_pending, int anchor,
                      float *logits, float *hidden);

// The draft rows of a block of B rows: draft k (predicting position p + 1 + k) is output row
// *first_row + k. Returns the number of drafts: B (anchor-first, first row 0) or B - 1
// (anchor-drop, row 0 discarded).
int ref_draft_rows(block_layout layout, int block_size, int *first_row);

#endif
