// engine/backend.h: the backend boundary (design.md §2): a table of operations on device memory
// that the engine's forwards, KV cache and rounds are composed from. The CPU backend
// (engine/cpu_backend.c) implements it in plain C; the CUDA backend (gpu/) implements the same
// table with kernels. Every op has one meaning, fixed here, so the bring-up tool can compare two
// backends op by op.
//
// Memory. Device memory is addressed by plain C pointers that the host must NEVER dereference
// (on the CPU backend they are host memory; on CUDA, device addresses): pointer arithmetic on them
// is allowed (a row of a matrix, a layer of a stack), reading and writing goes through upload /
// download / copy. Every index array an op reads (`const int32_t *` arguments) is device memory
// too, so a round can chain ops without a host round trip; host sizes and scalars are passed by value.
// Ops are issued in order; download returns after every earlier op has finished, and upload may
// read its host buffer only until it returns (the caller reuses it at once). No callbacks.
//
// Types. Activations and weights are bf16 (uint16_t, common/bf16.h); logits, scores and Markov
// values are fp32; token ids, positions and page ids are int32_t.
//
// Numerics (design.md §3, normative). Each op states its rounding points. Batch invariance is a
// contract of every op: the value computed for one row never depends on how many rows are in the
// call, where the row sits, or what the other rows hold; in particular gemm reduces K in an order
// that does not depend on M, and attention reduces keys in ascending absolute position. Every op
// but gemm (and markov_step's bias, a gemm) fixes its order here, so two backends agree bit for
// bit; gemm's order is each backend's own (the CPU's 8 fp32 lanes, the CUDA tensor-core segments
// of gpu/gemm.cu), so across backends it agrees within a tolerance (the bring-up tool's bound).
// Shape errors are programming errors (SG_CHECK), not input errors: callers validate requests
// first.
#ifndef SG_ENGINE_BACKEND_H
#define SG_ENGINE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "common/bf16.h"

#define BE_GEMM_GROUP_MAX 3 // the most products one gemm_group call holds

// Paged attention geometry shared by qk_norm_rope_store and attention.
//   k_pages, v_pages: one layer's pool, [n_pages, page_size, n_kv_heads*head_dim] bf16;
//   page_tables [n_tables, table_stride]: page id of each page_size-run of positions of a sequence
//   (position t lives in page page_tables[s*table_stride + t/page_size], slot t % page_size).
typedef struct {
    int page_size;
    int n_kv_heads;
    int head_dim;
    const int32_t *page_tables; // device [n_tables, table_stride]
    int table_stride;
} be_paging;

typedef struct sg_backend sg_backend;

struct sg_backend {
    const char *name; // "cpu", "cuda"
    void *ctx;        // the backend's own state, passed to every op

    // ---- memory ----
    // Zero-filled device memory of `bytes` (> 0) bytes, or NULL when it cannot be had.
    void *(*alloc)(void *ctx, size_t bytes);
    void (*free)(void *ctx, void *p); // p may be NULL
    void (*upload)(void *ctx, void *dst_dev, const void *src_host, size_t bytes);
    void (*download)(void *ctx, void *dst_host, const void *src_dev, size_t bytes);
    void (*copy)(void *ctx, void *dst_dev, const void *src_dev, size_t bytes); // no overlap

    // ---- model ops ----
    // out[i, :] = table[ids[i], :] for i < rows.  table [V, H], ids [rows], out [rows, H].
    void (*embed)(void *ctx, const bf16 *table, int H, const int32_t *ids, int rows, bf16 *out);

    // y[M, N] = x[M, K] · w[N, K]ᵀ: bf16 products accumulated in fp32, one fixed reduction order
    // over K for every output element (independent of M, N and the element's place; the backend's
    // own: see the top of this file); the output
    // rounded to bf16 (y is bf16*) or kept fp32 (out_f32 != 0, y is float*; logits). No aliasing.
    void (*gemm)(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                 int out_f32);

    // y[p][M, N[p]] = x[M, K] · w[p][N[p], K]ᵀ for p < n (1 <= n <= BE_GEMM_GROUP_MAX), bf16
    // outputs: exactly the bits of n gemm calls, in one launch where the backend can (q/k/v and
    // gate/up share their input; a decode step's launches are a large share of its time). No
    // aliasing.
    void (*gemm_group)(void *ctx, const bf16 *x, int M, int K, int n, const bf16 *const *w,
                       const int *N, bf16 *const *y);

    // Per row of x [M, D]: ss = Σ x[i]² in fp32 in 32 lanes, lane l adding the x[i]² of the
    // 8-element groups i / 8 ≡ l (mod 32) in ascending i, then combined as s[l] += s[l ^ o] for
    // o = 16, 8, 4, 2, 1 (a warp's 16-byte loads and xor shuffles), ss = s[0];
    // r = 1.0f / sqrtf(ss / D + eps); y[i] = bf16(bf16(x[i]·r) · w[i]).  w [D]; y may alias x.
    void (*rmsnorm)(void *ctx, const bf16 *x, int M, int D, const bf16 *w, float eps, bf16 *y);

    // add then rmsnorm in one pass (a layer's residual add and the next norm): h += x as add
    // (h, x [M, D]), then y = rmsnorm(h) of the updated h: exactly the bits of the two calls.
    // y may alias x, not h.
    void (*add_rmsnorm)(void *ctx, bf16 *h, const bf16 *x, int M, int D, const bf16 *w, float eps,
                        bf16 *y);

    // A layer's attention inputs, in one op (a decode step's small launches are a large share of
    // its time). k, v [rows, n_kv_heads*head_dim] are the rows' keys and values; q [nq,
    // n_heads*head_dim] (0 <= nq <= rows) the queries of the last nq rows (q row j is row
    // rows - nq + j: a drafter's block rows follow its context rows). In place on q and k, every
    // head is RMSNorm'd as rmsnorm with its weights (q_norm, k_norm [head_dim]), then rotated by
    // rotate-half RoPE at its row's position pos[i] with c = cos[pos][d], s = sin[pos][d]
    // (d < head_dim/2; tables [max_pos, head_dim/2] bf16 from common/rope.h):
    //   out[d] = bf16(bf16(x[d]·c) − bf16(x[d+half]·s)),  out[d+half] = bf16(bf16(x[d+half]·c) +
    //   bf16(x[d]·s)).
    // Then row i's rotated k and its v go to position pos[i] (< max_pos) of sequence
    // row_table[i] in the pages. Run it before attention so the rows see each other.
    void (*qk_norm_rope_store)(void *ctx, const be_paging *pg, bf16 *k_pages, bf16 *v_pages,
                               const int32_t *row_table, const int32_t *pos, int rows, bf16 *q,
                               int nq, int n_heads, const bf16 *q_norm, bf16 *k, const bf16 *v,
                               const bf16 *k_norm, float eps, const bf16 *cos, const bf16 *sin);

    // Paged attention: query row i (q [rows, n_heads*head_dim]) of sequence row_table[i] sees the
    // keys at positions 0 .. n_keys[i]-1 of that sequence (causal target rows: n_keys = pos + 1;
    // non-causal draft block rows: n_keys = p + B, the block's own K/V stored at p .. p+B-1).
    // Query head h reads KV head h / (n_heads / n_kv_heads). Per head, in fp32 and ascending
    // position j: s[j] = (Σ_d q[d]·k[j][d], d ascending) · (1.0f / sqrtf(head_dim));
    // p[j] = expf(s[j] − max s) / Σ expf(s − max) (not rounded); out[d] = bf16(Σ_j p[j]·v[j][d]).
    void (*attention)(void *ctx, const be_paging *pg, const bf16 *k_pages, const bf16 *v_pages,
                      const int32_t *row_table, const int32_t *n_keys, const bf16 *q, int rows,
                      int n_heads, bf16 *out);

    // An MLP's gate and up products and their SwiGLU in one op: with g = x·w_gateᵀ and
    // u = x·w_upᵀ exactly as gemm_group gives them (bf16, [M, N]), out[M, N] =
    // bf16(bf16(silu(g)) · u), silu(g) = g / (1.0f + expf(−g)) in fp32. w_gate, w_up [N, K].
    // No aliasing. (A decode step's launches are a large share of its time: one instead of two.)
    void (*gemm_swiglu)(void *ctx, const bf16 *x, int M, int K, const bf16 *w_gate,
                        const bf16 *w_up, int N, bf16 *out);

    // h[i] = bf16(h[i] + x[i]).
    void (*add)(void *ctx, bf16 *h, const bf16 *x, size_t n);

    // ---- selection ----
    // Per row of x [rows, row_stride] (first n values): ids[i] = argmax, ties to the lowest id;
    // -1 when the row holds a NaN or Inf (the caller reports it, naming request and position).
    void (*argmax)(void *ctx, const float *x, int rows, int n, size_t row_stride, int32_t *ids);
    // As argmax (n >= 2), the exact top-2: ids [rows, 2], vals [rows, 2] (vals may be NULL);
    // order = value descending then id ascending, so ids[i*2] equals argmax bit for bit. -1 ids on NaN / Inf.
    void (*top2)(void *ctx, const float *x, int rows, int n, size_t row_stride, int32_t *ids,
                 float *vals);

    // One step of the batched Markov draft loop (dspark-spec.md §3, §5).
    // Chains are rows of tokens [n_chains, tok_stride] (column 0 = the anchor, column k+1 = draft
    // k). Row i of this call works on chain chain_row[i] at step k = start[i] + s, and is skipped
    // when k >= limit[i]:
    //   prev = tokens[c][k];  bias[v] = bf16(Σ_j w2[v][j]·w1[prev][j])  (this backend's gemm);
    //   score[v] = U[u_row[i] + k][v] + bias[v]  (fp32);  U [*, V] rows of base logits;
    //   top-2 of score → top_ids/top_vals [n_chains, tok_stride - 1, 2] at (c, k);
    //   tokens[c][k+1] = top-1 (-1 when the score row holds a NaN or Inf; a prev of -1 gives
    //   -1 ids without reading w1, so a chain marked by an earlier NaN stays marked).
    // r == 0 (no Markov head; w1, w2 NULL): score = U row itself.
    void (*markov_step)(void *ctx, const float *U, int V, const bf16 *w1, const bf16 *w2, int r,
                        int rows, const int32_t *chain_row, const int32_t *u_row,
                        const int32_t *start, const int32_t *limit, int s, int32_t *tokens,
                        int tok_stride, int32_t *top_ids, float *top_vals);

    // Ladder start (dspark-spec.md §5): for each i < rows, with c = chain_row[i], a = a_row[i],
    // P = branch[i]: tokens[c][0 .. P] = tokens[a][0 .. P] (anchor and A's prefix), then
    // tokens[c][P+1] = top_ids[a][P][1] (A's runner-up at P). Continue with markov_step from
    // start = P + 1.  top_ids as markov_step's.
    void (*ladder_force)(void *ctx, int32_t *tokens, int tok_stride, const int32_t *top_ids,
                         int rows, const int32_t *chain_row, const int32_t *a_row,
                         const int32_t *branch);

    // ---- data movement ----
    // For g < n_groups: page dst[i] := page src[i] (i < n), pages of page_bytes bytes at
    // base + g*group_stride + page*page_bytes (one call moves a page of every layer). src, dst
    // [n] device; a page never both read and written in one call.
    void (*page_copy)(void *ctx, void *base, int n_groups, size_t group_stride, size_t page_bytes,
                      const int32_t *src, const int32_t *dst, int n);
    // Row gather / scatter: for i < rows, copy row_bytes bytes from src + si*src_stride to
    // dst + di*dst_stride with si = src_idx ? src_idx[i] : i and di = dst_idx ? dst_idx[i] : i.
    void (*copy_rows)(void *ctx, void *dst, size_t dst_stride, const int32_t *dst_idx,
                      const void *src, size_t src_stride, const int32_t *src_idx, int rows,
                      size_t row_bytes);

    // digests [rows] (device uint64) of rows of `elem_bytes`-wide elements (4: fp32 logits, 2:
    // bf16 taps): digest[i] = be_digest(x + i*row_stride, n, elem_bytes), defined below.
    void (*digest)(void *ctx, const void *x, int rows, int n, int elem_bytes, size_t row_stride,
                   uint64_t *digests);

    void (*destroy)(sg_backend *be); // frees ctx and be itself

    // ---- graph capture (optional: NULL on a backend that has none, e.g. the CPU's) ----
    // Used by engine/op_graphs.c. Between capture_begin and capture_end only ops (no alloc, free,
    // upload or download) are issued; they are recorded into a graph, NOT run. capture_end
    // returns the executable graph (never NULL). graph_launch runs it after every op issued
    // before (in order, like an op); it reads the current device contents at the captured
    // addresses. graph_destroy frees a graph (it may still be running: it finishes first).
    // Each captured op should have run eagerly with the same arguments before (an op may size
    // scratch memory on first use, which a capture cannot do).
    void (*capture_begin)(void *ctx);
    void *(*capture_end)(void *ctx);
    void (*graph_launch)(void *ctx, void *graph);
    void (*graph_destroy)(void *ctx, void *graph);
};

// The digest of a row of n elements e_i (raw bits: fp32 as uint32, bf16 as uint16): a
// position-keyed sum, so a GPU can reduce it in any order and get the same bits:
//   h = Σ_i mix64(((uint64_t)i << 32) | e_i)  (mod 2^64),
//   digest = mix64(h ^ n·0x9e3779b97f4a7c15)
// with mix64 = the splitmix64 finaliser (a bijection: distinct (i, e_i) never collide term-wise).
// (FNV-1a was the alternative; it is sequential per row, which a GPU cannot reduce in parallel.)
uint64_t be_digest(const void *row, int n, int elem_bytes);

// alloc with an error: SG_EXIT_USAGE naming `what` and the size when the backend has no room.
int be_alloc(const sg_backend *be, size_t bytes, const char *what, void **out);
// Allocates and uploads `bytes` of host data (an immutable weight or table).
int be_alloc_upload(const sg_backend *be, const void *src, size_t bytes, const char *what,
                    void **out);

#endif
