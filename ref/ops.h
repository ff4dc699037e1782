// ref/ops.h: the numerics contract (design.md §3) as plain CPU operations, for the oracle.
//
// Activations are float arrays whose values are bf16-representable (rounded with bf16_round);
// logits are plain fp32. Weights are bf16 [out, in] row-major. Matrix products go through OpenBLAS
// sgemm (weights converted to fp32 256 rows at a time, so bf16 weights stay bf16 in memory).
// Every other loop accumulates in fp32 in ascending index order. Compiled with -ffp-contract=off:
// results do not depend on optimisation flags. sgemm's reduction order may depend on M, so results
// are not guaranteed bitwise equal between a prefill and one-row decodes (ref/ is the oracle,
// compared with tolerances; batch invariance is an engine property).
#ifndef SG_REF_OPS_H
#define SG_REF_OPS_H

#include "common/bf16.h"
#include "common/model.h"
#include "common/rope.h"

// y[M, N] = x[M, K] · w[N, K]ᵀ, fp32 accumulation; each output rounded to bf16 unless keep_fp32
// (logits). y must not alias x.
void ref_matmul(const float *x, int M, int K, const bf16 *w, int N, float *y, int keep_fp32);
// Per row of x[M, D]: ss = Σ x[i]² (fp32, ascending); r = 1.0f / sqrtf(ss / D + eps);
// y[i] = bf16(bf16(x[i] · r) · w[i]). y may alias x.
void ref_rmsnorm(const float *x, int M, int D, const bf16 *w, float eps, float *y);
// One row x[n_heads, head_dim], in place: each head RMSNorm'd as ref_rmsnorm with w[head_dim], then
// rotate-half (NeoX) RoPE at position pos with c = cos[pos][d], s = sin[pos][d], d < hd/2:
//   out[d]        = bf16(bf16(x[d]·c)        − bf16(x[d+hd/2]·s))
//   out[d + hd/2] = bf16(bf16(x[d+hd/2]·c) + bf16(x[d]·s))
// (x here is the normed head). pos < rope->max_pos.
void ref_head_norm_rope(float *x, int n_heads, int head_dim, const bf16 *w, float eps,
                        const rope_table *rope, int pos);
// One query row q[nH*hd] over n_keys rows of k, v [n_keys, nKV*hd] (all visible; the caller
// passes the causal prefix). Query head h reads KV head h / (nH / nKV). In fp32:
//   s[j] = (Σ_d q[d]·k[j][d]) · (1.0f / sqrtf(hd)); p = softmax(s) via expf(s[j] − max s) divided
//   by their sum (ascending j), not rounded; out[d] = bf16(Σ_j p[j]·v[j][d]) (ascending j).
void ref_attention_row(const float *q, const float *k, const float *v, int n_keys, int n_heads,
                       int n_kv_heads, int head_dim, float *out);
// out[i] = bf16(bf16(silu(gate[i])) · up[i]) with silu(g) = g / (1.0f + expf(−g)) in fp32.
// out may alias gate or up.
void ref_swiglu(const float *gate, const float *up, int n, float *out);
// h[i] = bf16(h[i] + x[i]).
void ref_residual_add(float *h, const float *x, int n);
// The MLP half of a Qwen3 layer, shared by the target and the drafter, for M rows in place:
// h += (silu(x·Wgᵀ) ⊙ (x·Wuᵀ))·Wdᵀ with x = RMSNorm(h, post_norm). Scratch: x [M, H],
// gate and up [M, inter].
void ref_mlp_block(float *h, int M, int H, int inter, const layer_weights *w, float eps, float *x,
                   float *gate, float *up);

#endif
