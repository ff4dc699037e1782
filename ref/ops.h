// ref/ops.h: the numerics contract (design.md §3) as plain CPU operations, for the oracle.
//
// Activations are float arrays whose values are bf16-representable (rounded with bf16_round);
// logits are plain fp32. Weights are bf16 [out, in] row-major. Matrix products go through OpenBLAS
// (weights converted to fp32 one block of rows at a time, so bf16 weights stay bf16 in memory).
// Compiled with -ffp-contract=off: results do not depend on optimisation flags.
#ifndef SG_REF_OPS_H
#define SG_REF_OPS_H

#include "common/bf16.h"
#include "common/rope.h"

// y[M, N] = x[M, K] · w[N, K]ᵀ, fp32 accumulation; rounded to bf16 unless keep_fp32 (logits).
void ref_matmul(const float *x, int M, int K, const bf16 *w, int N, float *y, int keep_fp32);
// y[M, D] = bf16(bf16(x · rsqrt(mean(x²) + eps)) · w), statistics in fp32. y may alias x.
void ref_rmsnorm(const float *x, int M, int D, const bf16 *w, float eps, float *y);
// RMSNorm of each head of one row x[n_heads, head_dim] with w[head_dim], then rotate-half RoPE at
// position pos: out[d] = bf16(bf16(x[d]·cos) − bf16(x[d+hd/2]·sin)), out[d+hd/2] likewise. In place.
void ref_head_norm_rope(float *x, int n_heads, int head_dim, const bf16 *w, float eps,
                        const rope_table *rope, int pos);
// One query row q[nH*hd] over n_keys rows of k, v [n_keys, nKV*hd] (all visible; the caller
// passes the causal prefix). Scores scaled by 1/sqrt(hd), softmax and P·V in fp32, out rounded to
// bf16. Query head h reads KV head h / (nH / nKV).
void ref_attention_row(const float *q, const float *k, const float *v, int n_keys, int n_heads,
                       int n_kv_heads, int head_dim, float *out);
// out[i] = bf16(bf16(silu(gate[i])) · up[i]), silu in fp32.
void ref_swiglu(const float *gate, const float *up, int n, float *out);
// h[i] = bf16(h[i] + x[i]).
void ref_residual_add(float *h, const float *x, int n);

#endif
