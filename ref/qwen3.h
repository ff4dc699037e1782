// ref/qwen3.h: the plain Qwen3 target forward with a contiguous KV cache, and tap capture.
//
// Contract: ref_target_forward runs n tokens at positions len .. len+n-1 (a prefill chunk or a
// one-token decode: the same code), attending causally to the cache and to the earlier rows of the
// same call, appends their K/V, and writes the fp32 logits of every row and, when asked, the tap
// rows (the residual stream after layer tap_ids[j]'s MLP add, before the final norm, concatenated
// in order: [n, n_taps*H], bf16 values). Numerics: ref/ops.h. Sizes from the config (head_dim is
// never derived; nH*hd may differ from H). Memory: the cache, plus per-call scratch for n rows.
#ifndef SG_REF_QWEN3_H
#define SG_REF_QWEN3_H

#include "common/model.h"
#include "common/rope.h"

typedef struct {
    const target_model *model;
    rope_table rope; // rows 0 .. max_len-1
    int max_len;     // capacity of the cache in positions
    int len;         // positions held
    float *k_cache;  // [L, max_len, nKV*hd] (bf16 values, after k_norm and RoPE)
    float *v_cache;  // [L, max_len, nKV*hd]
} ref_target;

// An empty cache of max_len >= 1 positions for model m (which must outlive t).
void ref_target_init(ref_target *t, const target_model *m, int max_len);
void ref_target_free(ref_target *t);
// logits [n, V] and taps [n, n_taps*H] may be NULL. n >= 1, len + n <= max_len, token ids in
// [0, V) and tap ids in [0, L): internal invariants (SG_CHECK), callers validate requests first.
void ref_target_forward(ref_target *t, const int *tokens, int n, const int *tap_ids, int n_taps,
                        float *logits, float *taps);
// As ref_target_forward, but logits [n_logits, V] of the last n_logits rows only (0 <= n_logits
// <= n): a long prefill that needs only its last row's logits does not allocate [n, V].
void ref_target_forward_tail(ref_target *t, const int *tokens, int n, const int *tap_ids,
                             int n_taps, int n_logits, float *logits, float *taps);

#endif
