// gpu/markov.cu: one step of the batched Markov draft loop and the ladder start (backend.h
// markov_step, ladder_force; dspark-spec.md §3, §5), entirely on the device: the drafted tokens,
// the runner-ups (top_ids / top_vals) and the chains stay in device memory between steps.
//
// markov_step is the strided two-stage selection of gpu/top2.cu with the score formed on the fly:
// stage 1 (grid: P partitions × groups of MR chain rows) stages the rows' w1[prev] in shared
// memory; each thread takes a strided set of vocabulary ids v, reads the w2 row of v once for the
// MR rows, and forms bias[v] = bf16(Σ_j w1[prev][j]·w2[v][j]) with gemm's 8-lane order
// (device_numerics.h: bit for bit the CPU twin's gemm of one row), score = U + bias in fp32, and
// keeps a top-2 candidate per row; stage 2 merges a row's partials in one warp and writes the
// top-2 at (chain, k) and the drafted token at column k+1. The top-2 is exact, so the result does
// not depend on P, MR or the grid. Skipped rows (k >= limit) are untouched; a chain marked by an
// earlier NaN (prev = -1) stays marked. Out-of-range indices trap (SG_CHECKs on the CPU).
#include "cuda_internal.h"
#include "device_numerics.h"
#include "top2.h"

namespace {

constexpr int MK_THREADS = 256;
constexpr int MR = 4;             // chain rows per stage-1 block (w2 read once for all of them)
constexpr int MK_MAX_RANK = 2048; // MR·r fp32 of w1 rows in shared memory

struct mk_args {
    const float *U;
    int V;
    const uint16_t *w1, *w2;
    int r;
    int rows;
    const int32_t *chain_row, *u_row, *start, *limit;
    int s;
    int32_t *tokens;
    int tok_stride;
    int32_t *top_ids;
    float *top_vals;
    int vec;
};

__global__ void __launch_bounds__(MK_THREADS) markov_stage1(mk_args a, d_cand2 *partials) {
    extern __shared__ float w1s[]; // [MR][r]
    const int p = blockIdx.x, P = gridDim.x;
    const int i0 = blockIdx.y * MR;
    int k[MR];
    bool on[MR];
    const float *u[MR];
#pragma unroll
    for (int q = 0; q < MR; q++) {
        int i = i0 + q;
        on[q] = false;
        u[q] = NULL;
        k[q] = 0;
        if (i < a.rows) {
            k[q] = a.start[i] + a.s;
            if (k[q] < a.limit[i]) {
                if (k[q] + 1 >= a.tok_stride) __trap();
                int prev = a.tokens[(size_t)a.chain_row[i] * a.tok_stride + k[q]];
                if (prev >= a.V) __trap();
                on[q] = prev >= 0;
                u[q] = a.U + (size_t)(a.u_row[i] + k[q]) * a.V;
                if (on[q] && a.r > 0)
                    for (int j = threadIdx.x; j < a.r; j += blockDim.x)
                        w1s[q * a.r + j] = d_bf16_to_f32(a.w1[(size_t)prev * a.r + j]);
            }
        }
    }
    __syncthreads();

    d_cand2 c[MR];
#pragma unroll
    for (int q = 0; q < MR; q++) c[q] = d_cand2_empty();
    for (int v = p * MK_THREADS + threadIdx.x; v < a.V; v += P * MK_THREADS) {
        float bias[MR];
#pragma unroll
        for (int q = 0; q < MR; q++) bias[q] = 0.f;
        if (a.r > 0) {
            float l[MR][8];
#pragma unroll
            for (int q = 0; q < MR; q++)
#pragma unroll
                for (int j = 0; j < 8; j++) l[q][j] = 0.f;
            const uint16_t *w2v = a.w2 + (size_t)v * a.r;
            for (int kk = 0; kk < a.r; kk += 8) {
                uint16_t e[8];
                if (a.vec) {
                    uint4 pc = __ldg(reinterpret_cast<const uint4 *>(w2v + kk));
                    e[0] = (uint16_t)pc.x;
                    e[1] = (uint16_t)(pc.x >> 16);
                    e[2] = (uint16_t)pc.y;
                    e[3] = (uint16_t)(pc.y >> 16);
                    e[4] = (uint16_t)pc.z;
                    e[5] = (uint16_t)(pc.z >> 16);
                    e[6] = (uint16_t)pc.w;
                    e[7] = (uint16_t)(pc.w >> 16);
                } else {
#pragma unroll
                    for (int j = 0; j < 8; j++) e[j] = kk + j < a.r ? w2v[kk + j] : 0;
                }
#pragma unroll
                for (int q = 0; q < MR; q++) {
                    if (!on[q]) continue;
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        if (kk + j < a.r)
                            l[q][j] = d_mac(l[q][j], w1s[q * a.r + kk + j], d_bf16_to_f32(e[j]));
                }
            }
#pragma unroll
            for (int q = 0; q < MR; q++) bias[q] = d_bf16_round(d_combine8(l[q]));
        }
#pragma unroll
        for (int q = 0; q < MR; q++)
            if (on[q]) d_cand2_push(c[q], a.r > 0 ? __fadd_rn(u[q][v], bias[q]) : u[q][v], v);
    }
#pragma unroll
    for (int q = 0; q < MR; q++) {
        d_cand2 b = d_cand2_block(c[q]); // every thread takes part
        if (threadIdx.x == 0 && i0 + q < a.rows) partials[(size_t)(i0 + q) * P + p] = b;
    }
}

__global__ void markov_stage2(mk_args a, const d_cand2 *__restrict__ partials, int P) {
    const int i = blockIdx.x;
    const int k = a.start[i] + a.s;
    if (k >= a.limit[i]) return;
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

} // namespace

void cu_markov_step(void *ctx, const float *U, int V, const bf16 *w1, const bf16 *w2, int r,
                    int rows, const int32_t *chain_row, const int32_t *u_row, const int32_t *start,
                    const int32_t *limit, int s, int32_t *tokens, int tok_stride, int32_t *top_ids,
                    float *top_vals) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(V >= 2, "markov step over %d values", V);
    SG_CHECK(r >= 0 && r <= MK_MAX_RANK, "markov rank %d (at most %d on CUDA)", r, MK_MAX_RANK);
    SG_CHECK(rows <= 65535, "markov step rows %d beyond the grid", rows);
    if (rows <= 0) return;
    mk_args a = {U,          V,       w1,        w2,
                 r,          rows,    chain_row, u_row,
                 start,      limit,   s,         tokens,
                 tok_stride, top_ids, top_vals,  r > 0 && r % 8 == 0 && (uintptr_t)w2 % 16 == 0};
    int groups = (rows + MR - 1) / MR;
    int P = d_top2_partitions(V, groups, MK_THREADS, c->sm_count);
    d_cand2 *partials = static_cast<d_cand2 *>(cuda_scratch(c, (size_t)rows * P * sizeof(d_cand2)));
    size_t smem = (size_t)MR * (size_t)r * sizeof(float);
    markov_stage1<<<dim3((unsigned)P, (unsigned)groups), MK_THREADS, smem, c->stream>>>(a,
                                                                                        partials);
    CUDA_CHECK_LAUNCH();
    markov_stage2<<<(unsigned)rows, 32, 0, c->stream>>>(a, partials, P);
    CUDA_CHECK_LAUNCH();
}

void cu_ladder_force(void *ctx, int32_t *tokens, int tok_stride, const int32_t *top_ids, int rows,
                     const int32_t *chain_row, const int32_t *a_row, const int32_t *branch) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (rows <= 0) return;
    ladder_force_k<<<cu_blocks((size_t)rows, 128, 65535), 128, 0, c->stream>>>(
        tokens, tok_stride, top_ids, rows, chain_row, a_row, branch);
    CUDA_CHECK_LAUNCH();
}
