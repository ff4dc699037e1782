// gpu/markov.cu: one step of the batched Markov draft loop and the ladder start (backend.h
// markov_step, ladder_force; dspark-spec.md §3, §5), entirely on the device: the drafted tokens,
// the runner-ups (top_ids / top_vals) and the chains stay in device memory between steps.
//
// markov_step in four launches: (1) each row's w1[prev] is gathered into x [rows, r] (zero for a
// skipped or marked row); (2) bias [rows, V] = bf16(x · w2ᵀ) is the backend's GEMM (gemm.cu), so
// the bias has gemm's reduction order and is batch invariant by the same argument; (3) the strided
// two-stage selection of gpu/top2.cu scores U + bias in fp32 on the fly, one partial top-2 per
// (partition, row); (4) one warp per row merges them and writes the top-2 at (chain, k) and the
// drafted token at column k+1. The top-2 is exact, so the result does not depend on the grid.
// Consecutive steps read w2 in opposite orders (cu_gemm_from_end; the context flips the order at
// every step, also from one loop's last step to the next loop's first), so each finds in L2 what
// the step before read last; the bits do not depend on the order. Measured on the H200
// (bench/README.md, twelfth 2026-12-01 session): the bias GEMM 23.2 -> 22.1 us a step (kernel
// timeline), the Markov loop at 1 request 0.216-0.225 -> 0.207-0.218 ms a round, the ladder
// (hedge1) 0.209-0.216 -> 0.195-0.201; an L2 persisting window or evict_last hints on part of w2
// did not help (the persisting window slowed every other phase by taking L2 from them).
// With a head (r > 0) the four are a chain of programmatic dependents (pdl.h): the gather releases
// the GEMM only after its wait for the kernel before the step, so every kernel before the step has
// completed when (3) starts, and (3) reads its row's previous token and prefetches its U row into
// L2 before its wait; without a head (3) is an ordinary launch, for the same reason.
// Skipped rows (k >= limit) are untouched; a chain marked by an earlier NaN (prev = -1) stays
// marked. Out-of-range indices trap (SG_CHECKs on the CPU).
#include "cuda_internal.h"
#include "device_numerics.h"
#include "pdl.h"
#include "top2.h"

namespace {

constexpr int MK_THREADS = 256;

struct mk_args {
    const float *U;
    int V;
    const uint16_t *w1;
    int r;
    int rows;
    const int32_t *chain_row, *u_row, *start, *limit;
    int s;
    int32_t *tokens;
    int tok_stride;
    int32_t *top_ids;
    float *top_vals;
};

// Row i's Markov step k, or -1 when the row is skipped (k >= limit).
__device__ __forceinline__ int mk_step(const mk_args &a, int i) {
    const int k = a.start[i] + a.s;
    return k < a.limit[i] ? k : -1;
}

// The previous token of row i at step k (-1: the chain is marked).
__device__ __forceinline__ int mk_prev(const mk_args &a, int i, int k) {
    if (k + 1 >= a.tok_stride) __trap();
    const int prev = a.tokens[(size_t)a.chain_row[i] * a.tok_stride + k];
    if (prev >= a.V) __trap();
    return prev;
}

// x[i, :] = w1[prev of row i, :], zero for a skipped or marked row. Grid: rows. Releases the GEMM
// only after its wait (see the top).
__global__ void markov_gather(mk_args a, uint16_t *__restrict__ x) {
    pdl_wait_primary();
    pdl_allow_dependents();
    const int i = blockIdx.x, k = mk_step(a, i);
    const int prev = k >= 0 ? mk_prev(a, i, k) : -1;
    for (int j = threadIdx.x; j < a.r; j += blockDim.x)
        x[(size_t)i * a.r + j] = prev >= 0 ? a.w1[(size_t)prev * a.r + j] : (uint16_t)0;
}

// Grid: P partitions × rows. bias NULL: no Markov head (score = U). Before its wait it reads
// only what the kernels before the step wrote (see the top): the previous token, and the U values
// it will scan, prefetched into L2 (the bias GEMM streams 78 MB of w2 past them meanwhile).
__global__ void __launch_bounds__(MK_THREADS)
    markov_stage1(mk_args a, const uint16_t *__restrict__ bias, d_cand2 *partials) {
    pdl_allow_dependents();
    const int p = blockIdx.x, P = gridDim.x, i = blockIdx.y;
    const int k = mk_step(a, i);
    const bool live = k >= 0 && mk_prev(a, i, k) >= 0;
    const float *u = live ? a.U + (size_t)(a.u_row[i] + k) * a.V : NULL;
    if (live)
        for (int v = p * (int)blockDim.x + (int)threadIdx.x; v < a.V; v += P * (int)blockDim.x)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(u + v));
    pdl_wait_primary();
    d_cand2 c = d_cand2_empty();
    if (live) {
        const uint16_t *b = bias ? bias + (size_t)i * a.V : NULL;
        d_top2_scan(c, a.V, p, P,
                    [u, b](int v) { return b ? __fadd_rn(u[v], d_bf16_to_f32(b[v])) : u[v]; });
    }
    c = d_cand2_block(c); // every thread takes part
    if (threadIdx.x == 0) partials[(size_t)i * P + p] = c;
}

__global__ void markov_stage2(mk_args a, const d_cand2 *__restrict__ partials, int P) {
    pdl_allow_dependents(); // the next step's gather waits for this kernel anyway
    pdl_wait_primary();
    const int i = blockIdx.x;
    const int k = mk_step(a, i);
    if (k < 0) return;
    const int ch = a.chain_row[i];
    int32_t *tok = a.tokens + (size_t)ch * a.tok_stride;
    const size_t at = ((size_t)ch * (a.tok_stride - 1) + k) * 2;
    d_cand2 c = d_cand2_empty();
    const bool marked = tok[k] < 0;
    if (!marked) c = d_top2_merge_partials(partials + (size_t)i * P, P);
    if (threadIdx.x != 0) return;
    const bool ok = !marked && !c.bad && c.i0 >= 0;
    a.top_ids[at] = ok ? c.i0 : -1;
    a.top_ids[at + 1] = ok ? c.i1 : -1;
    if (a.top_vals) {
        a.top_vals[at] = ok ? c.v0 : NAN;
        a.top_vals[at + 1] = ok ? (c.i1 >= 0 ? c.v1 : -INFINITY) : NAN;
    }
    tok[k + 1] = ok ? c.i0 : -1;
}

// One thread per ladder row: copy A's anchor and prefix, then force A's runner-up at the branch.
__global__ void ladder_force_k(int32_t *tokens, int tok_stride, const int32_t *__restrict__ top_ids,
                               int rows, const int32_t *__restrict__ chain_row,
                               const int32_t *__restrict__ a_row,
                               const int32_t *__restrict__ branch) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows) return;
    int P = branch[i];
    if (P < 0 || P + 1 >= tok_stride) __trap();
    int32_t *dst = tokens + (size_t)chain_row[i] * tok_stride;
    const int32_t *src = tokens + (size_t)a_row[i] * tok_stride;
    for (int j = 0; j <= P; j++) dst[j] = src[j];
    dst[P + 1] = top_ids[((size_t)a_row[i] * (tok_stride - 1) + P) * 2 + 1];
}

// Bytes rounded up to 256 (the scratch is carved into aligned pieces).
size_t mk_align(size_t b) { return (b + 255) & ~(size_t)255; }

} // namespace

void cu_markov_step(void *ctx, const float *U, int V, const bf16 *w1, const bf16 *w2, int r,
                    int rows, const int32_t *chain_row, const int32_t *u_row, const int32_t *start,
                    const int32_t *limit, int s, int32_t *tokens, int tok_stride, int32_t *top_ids,
                    float *top_vals) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(V >= 2, "markov step over %d values", V);
    SG_CHECK(r >= 0, "markov rank %d", r);
    SG_CHECK(rows <= 65535, "markov step rows %d beyond the grid", rows);
    if (rows <= 0) return;
    mk_args a = {U, V, w1, r, rows, chain_row, u_row, start, limit, s, tokens, tok_stride,
                 top_ids, top_vals};
    const int P = d_top2_partitions(V, rows, MK_THREADS, c->sm_count);
    const size_t part_b = mk_align((size_t)rows * P * sizeof(d_cand2));
    const size_t x_b = r > 0 ? mk_align((size_t)rows * r * sizeof(bf16)) : 0;
    const size_t bias_b = r > 0 ? mk_align((size_t)rows * V * sizeof(bf16)) : 0;
    char *scratch = static_cast<char *>(cuda_scratch(c, part_b + x_b + bias_b));
    d_cand2 *partials = reinterpret_cast<d_cand2 *>(scratch);
    bf16 *x = r > 0 ? reinterpret_cast<bf16 *>(scratch + part_b) : NULL;
    bf16 *bias = r > 0 ? reinterpret_cast<bf16 *>(scratch + part_b + x_b) : NULL;
    const dim3 stage1_grid((unsigned)P, (unsigned)rows);
    if (r > 0) {
        launch_dependent(c, markov_gather, dim3((unsigned)rows), 128, 0, a, (uint16_t *)x);
        cu_gemm_from_end(c, x, rows, r, w2, V, bias, 0, c->w2_from_end);
        c->w2_from_end = !c->w2_from_end;
        launch_dependent(c, markov_stage1, stage1_grid, MK_THREADS, 0, a, (const uint16_t *)bias,
                         partials);
    } else {
        markov_stage1<<<stage1_grid, MK_THREADS, 0, c->stream>>>(a, NULL, partials);
        CUDA_CHECK_LAUNCH();
    }
    launch_dependent(c, markov_stage2, dim3((unsigned)rows), 32, 0, a, (const d_cand2 *)partials,
                     P);
}

void cu_ladder_force(void *ctx, int32_t *tokens, int tok_stride, const int32_t *top_ids, int rows,
                     const int32_t *chain_row, const int32_t *a_row, const int32_t *branch) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (rows <= 0) return;
    ladder_force_k<<<cu_blocks((size_t)rows, 128, 65535), 128, 0, c->stream>>>(
        tokens, tok_stride, top_ids, rows, chain_row, a_row, branch);
    CUDA_CHECK_LAUNCH();
}
