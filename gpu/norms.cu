// gpu/norms.cu: rmsnorm, add_rmsnorm and qk_norm_rope_store (the per-head norm + rotate-half RoPE
// of a layer's queries and keys, and the keys' and values' store into their pages; backend.h),
// bit for bit the CPU twin's: the sum of squares in backend.h's 32-lane order (lane l of one
// warp adds x[i]² for the 8-element groups i / 8 ≡ l mod 32 in ascending i, read in 16-byte loads
// when the row allows, then the xor-shuffle butterfly 16, 8, 4, 2, 1), then
// r = 1.0f / sqrtf(ss / D + eps) with IEEE division and square root, and each element rounded at
// the contract's points; add_rmsnorm first rounds h + x as add does. One block per row (rmsnorm,
// add_rmsnorm) or one warp per head: nothing depends on the number of rows. y may alias x (every
// read of x precedes the barrier before the first write of y). Indices that would be SG_CHECK
// failures on the CPU (a negative position, a missing page) trap.
#include "cuda_internal.h"
#include "device_numerics.h"
#include "kv_paging.h"
#include "pdl.h"

namespace {

constexpr int NORM_THREADS = 256;

// 1 / sqrt(mean of squares + eps) of xr [D] in the 32-lane order; every lane of the warp returns it.
__device__ __forceinline__ float inv_rms_warp(const uint16_t *xr, int D, float eps) {
    const int lane = threadIdx.x & 31;
    float ss = 0.f;
    if (D % 8 == 0 && (uintptr_t)xr % 16 == 0) { // every group whole: one 16-byte load each
        // A lane's loads of up to SS_BATCH groups (a row of 4096 in one go) are all issued before
        // its first add. (An `unroll 16` loop instead ran a 10-group row, D = 2560, as its
        // remainder: one load per group, each waited for.)
        constexpr int SS_BATCH = 16;
        for (int base = 8 * lane; base < D; base += 256 * SS_BATCH) {
            uint4 p[SS_BATCH];
#pragma unroll
            for (int t = 0; t < SS_BATCH; t++)
                if (base + 256 * t < D) p[t] = *reinterpret_cast<const uint4 *>(xr + base + 256 * t);
#pragma unroll
            for (int t = 0; t < SS_BATCH; t++) {
                if (base + 256 * t >= D) break;
                const uint32_t w4[4] = {p[t].x, p[t].y, p[t].z, p[t].w};
#pragma unroll
                for (int j = 0; j < 8; j++) {
                    const float v = d_bf16_to_f32((uint16_t)(w4[j / 2] >> (16 * (j % 2))));
                    ss = __fadd_rn(ss, __fmul_rn(v, v));
                }
            }
        }
    } else {
        for (int i = 8 * lane; i < D; i += 256)
            for (int j = i; j < i + 8 && j < D; j++) {
                const float v = d_bf16_to_f32(xr[j]);
                ss = __fadd_rn(ss, __fmul_rn(v, v));
            }
    }
    for (int o = 16; o >= 1; o >>= 1) ss = __fadd_rn(ss, __shfl_xor_sync(0xffffffffu, ss, o));
    return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(ss, (float)D), eps)));
}

// A row of at most 8·NORM_THREADS·NORM_VEC elements whose pieces are whole 16-byte loads is read
// in one go: every thread loads its pieces of x and w before anything is written (y may alias x).
constexpr int NORM_VEC = 4;
constexpr size_t ADD_NORM_MAX_SMEM = 48 << 10; // add_rmsnorm's staged row without an opt-in

__device__ __forceinline__ uint32_t norm_pair(uint32_t x2, uint32_t w2, float r) {
    uint32_t out = 0;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const float v = d_bf16_round(__fmul_rn(d_bf16_to_f32((uint16_t)(x2 >> (16 * h))), r));
        out |= (uint32_t)d_f32_to_bf16(__fmul_rn(v, d_bf16_to_f32((uint16_t)(w2 >> (16 * h)))))
               << (16 * h);
    }
    return out;
}

// 8 bf16 sums h + x, each rounded as the add op.
__device__ __forceinline__ uint4 add8(uint4 h, uint4 x) {
    const uint32_t hw[4] = {h.x, h.y, h.z, h.w}, xw[4] = {x.x, x.y, x.z, x.w};
    uint32_t o[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        o[j] = 0;
#pragma unroll
        for (int k = 0; k < 2; k++)
            o[j] |= (uint32_t)d_f32_to_bf16(
                        __fadd_rn(d_bf16_to_f32((uint16_t)(hw[j] >> (16 * k))),
                                  d_bf16_to_f32((uint16_t)(xw[j] >> (16 * k)))))
                    << (16 * k);
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

// Block per row. ADD (add_rmsnorm): the row is h + x (add's rounding), written back to h and
// staged in shared memory (row_sh [D]) for the sum of squares; otherwise the row is x (h unused).
// y may alias x: every read of x comes before the barrier that precedes the first write of y.
template <bool ADD>
__global__ void __launch_bounds__(NORM_THREADS)
    rmsnorm_k(uint16_t *h, const uint16_t *x, int D, const uint16_t *__restrict__ w, float eps,
              uint16_t *y) {
    pdl_allow_dependents();
    extern __shared__ __align__(16) uint16_t row_sh[];
    __shared__ float r_sh;
    const size_t off = (size_t)blockIdx.x * D;
    const uint16_t *xr = x + off;
    uint16_t *yr = y + off, *hr = ADD ? h + off : nullptr;
    const bool vec = D % 8 == 0 && D <= 8 * NORM_THREADS * NORM_VEC && (uintptr_t)xr % 16 == 0 &&
                     (uintptr_t)yr % 16 == 0 && (uintptr_t)w % 16 == 0 &&
                     (!ADD || (uintptr_t)hr % 16 == 0);
    uint4 xv[NORM_VEC], wv[NORM_VEC], hv[NORM_VEC];
    if (vec) {
        // Every load before the first store: the compiler may not move a load above a store to
        // h (nothing here is __restrict__, as y may alias x).
#pragma unroll
        for (int j = 0; j < NORM_VEC; j++) {
            const int i = 8 * (threadIdx.x + j * NORM_THREADS);
            if (i < D) {
                xv[j] = *reinterpret_cast<const uint4 *>(xr + i);
                wv[j] = __ldg(reinterpret_cast<const uint4 *>(w + i));
                if (ADD) hv[j] = *reinterpret_cast<const uint4 *>(hr + i);
            }
        }
#pragma unroll
        for (int j = 0; j < NORM_VEC; j++) {
            const int i = 8 * (threadIdx.x + j * NORM_THREADS);
            if (ADD && i < D) {
                xv[j] = add8(hv[j], xv[j]);
                *reinterpret_cast<uint4 *>(hr + i) = xv[j];
                *reinterpret_cast<uint4 *>(row_sh + i) = xv[j];
            }
        }
    } else if (ADD) {
        for (int i = threadIdx.x; i < D; i += blockDim.x) {
            const uint16_t v =
                d_f32_to_bf16(__fadd_rn(d_bf16_to_f32(hr[i]), d_bf16_to_f32(xr[i])));
            hr[i] = v;
            row_sh[i] = v;
        }
    }
    if (ADD) __syncthreads();
    const uint16_t *row = ADD ? row_sh : xr;
    if (threadIdx.x < 32) {
        const float r = inv_rms_warp(row, D, eps);
        if (threadIdx.x == 0) r_sh = r;
    }
    __syncthreads();
    const float r = r_sh;
    if (vec) {
#pragma unroll
        for (int j = 0; j < NORM_VEC; j++) {
            const int i = 8 * (threadIdx.x + j * NORM_THREADS);
            if (i < D)
                *reinterpret_cast<uint4 *>(yr + i) =
                    make_uint4(norm_pair(xv[j].x, wv[j].x, r), norm_pair(xv[j].y, wv[j].y, r),
                               norm_pair(xv[j].z, wv[j].z, r), norm_pair(xv[j].w, wv[j].w, r));
        }
        return;
    }
    for (int i = threadIdx.x; i < D; i += blockDim.x) {
        float v = d_bf16_round(__fmul_rn(d_bf16_to_f32(row[i]), r));
        yr[i] = d_f32_to_bf16(__fmul_rn(v, d_bf16_to_f32(w[i])));
    }
}

constexpr int ROPE_WARPS = 8;
constexpr int ROPE_MAX_HD = 512;

// Blocks (row, head group), a warp per head (the grid covers every head): heads 0 .. n_heads - 1
// are the row's query heads (rows with a query only), heads n_heads .. n_heads + kv_heads - 1 its
// key heads, each also storing its rotated key and the matching value head into the row's page
// slot. Launched as a programmatic dependent of the GEMM that writes q, k and v (pdl.h): before
// pdl_wait_primary a warp reads only host uploads (pos, row_table, the page tables) and weights
// (its norm, the cos / sin rows), so their round trips overlap the GEMM. Its dependent (attention,
// a programmatic dependent too) may start at once. Measured on the H200 (bench/README.md, seventh
// 2026-12-01 session), against the ordinary launch: plain decode at 1 request 341.9 / 342.2 ->
// 350.8 / 351.4 tok/s, spec 782.8 / 787.1 -> 811.4 / 811.5.
constexpr int ROPE_PER_LANE = ROPE_MAX_HD / 32; // a lane's elements of a head (d = lane + 32j)
__global__ void __launch_bounds__(ROPE_WARPS * 32)
    qk_norm_rope_store_k(be_paging pg, uint16_t *k_pages, uint16_t *v_pages,
                         const int32_t *__restrict__ row_table, const int32_t *__restrict__ pos,
                         int rows, uint16_t *q, int nq, int n_heads,
                         const uint16_t *__restrict__ q_norm, uint16_t *k,
                         const uint16_t *__restrict__ v, const uint16_t *__restrict__ k_norm,
                         float eps, const uint16_t *__restrict__ cos,
                         const uint16_t *__restrict__ sin) {
    pdl_allow_dependents();
    __shared__ float buf[ROPE_WARPS][ROPE_MAX_HD];
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int row = blockIdx.x, q_row = row - (rows - nq), hd = pg.head_dim, half = hd / 2;
    const int kv_heads = pg.n_kv_heads, kvd = kv_heads * hd;
    const int h = blockIdx.y * ROPE_WARPS + warp;
    const bool is_q = h < n_heads;
    if (h >= n_heads + kv_heads || (is_q && q_row < 0)) { // no head, or a row without a query
        pdl_wait_primary(); // all the same: no block of this kernel ends before the GEMM
        return;
    }
    const int p = pos[row];
    if (p < 0) __trap();
    const uint16_t *w = is_q ? q_norm : k_norm;
    const uint16_t *cs = cos + (size_t)p * half, *sn = sin + (size_t)p * half;
    uint16_t wr[ROPE_PER_LANE], cr[ROPE_PER_LANE / 2], sr[ROPE_PER_LANE / 2];
#pragma unroll
    for (int j = 0; j < ROPE_PER_LANE; j++) {
        const int d = lane + 32 * j;
        wr[j] = d < hd ? w[d] : 0;
        if (j < ROPE_PER_LANE / 2) {
            cr[j] = d < half ? cs[d] : 0;
            sr[j] = d < half ? sn[d] : 0;
        }
    }
    uint16_t *kp = NULL, *vp = NULL;
    if (!is_q) { // the row's page slot
        const size_t at = kv_row(pg, row_table[row], p) + (size_t)(h - n_heads) * hd;
        kp = k_pages + at;
        vp = v_pages + at;
    }
    pdl_wait_primary();
    uint16_t *xh = is_q ? q + ((size_t)q_row * n_heads + h) * hd
                        : k + (size_t)row * kvd + (size_t)(h - n_heads) * hd;
    if (vp) {
        const uint16_t *vh = v + (size_t)row * kvd + (size_t)(h - n_heads) * hd;
        for (int d = lane; d < hd; d += 32) vp[d] = vh[d];
    }
    float *b = buf[warp];
    const float r = inv_rms_warp(xh, hd, eps); // the shuffles order the reads before the writes
#pragma unroll
    for (int j = 0; j < ROPE_PER_LANE; j++) {
        const int d = lane + 32 * j;
        if (d >= hd) break;
        const float n = d_bf16_round(__fmul_rn(d_bf16_to_f32(xh[d]), r));
        b[d] = d_bf16_round(__fmul_rn(n, d_bf16_to_f32(wr[j])));
    }
    __syncwarp();
#pragma unroll
    for (int j = 0; j < ROPE_PER_LANE / 2; j++) {
        const int d = lane + 32 * j;
        if (d >= half) break;
        float cv = d_bf16_to_f32(cr[j]), sv = d_bf16_to_f32(sr[j]);
        float a = b[d], bb = b[d + half];
        const uint16_t lo = d_f32_to_bf16(
            __fsub_rn(d_bf16_round(__fmul_rn(a, cv)), d_bf16_round(__fmul_rn(bb, sv))));
        const uint16_t hi = d_f32_to_bf16(
            __fadd_rn(d_bf16_round(__fmul_rn(bb, cv)), d_bf16_round(__fmul_rn(a, sv))));
        xh[d] = lo;
        xh[d + half] = hi;
        if (kp) {
            kp[d] = lo;
            kp[d + half] = hi;
        }
    }
}

} // namespace

void cu_rmsnorm(void *ctx, const bf16 *x, int M, int D, const bf16 *w, float eps, bf16 *y) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(M >= 1 && D >= 1, "rmsnorm shape M %d D %d", M, D);
    rmsnorm_k<false><<<(unsigned)M, NORM_THREADS, 0, c->stream>>>(NULL, x, D, w, eps, y);
    CUDA_CHECK_LAUNCH();
}

void cu_add_rmsnorm(void *ctx, bf16 *h, const bf16 *x, int M, int D, const bf16 *w, float eps,
                    bf16 *y) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(M >= 1 && D >= 1, "add_rmsnorm shape M %d D %d", M, D);
    const size_t smem = (size_t)D * sizeof(bf16);
    if (smem > ADD_NORM_MAX_SMEM) { // a row too long to stage: the two ops (the same bits)
        cu_add(ctx, h, x, (size_t)M * D);
        cu_rmsnorm(ctx, h, M, D, w, eps, y);
        return;
    }
    rmsnorm_k<true><<<(unsigned)M, NORM_THREADS, smem, c->stream>>>(h, x, D, w, eps, y);
    CUDA_CHECK_LAUNCH();
}

void cu_qk_norm_rope_store(void *ctx, const be_paging *pg, bf16 *k_pages, bf16 *v_pages,
                           const int32_t *row_table, const int32_t *pos, int rows, bf16 *q, int nq,
                           int n_heads, const bf16 *q_norm, bf16 *k, const bf16 *v,
                           const bf16 *k_norm, float eps, const bf16 *cos, const bf16 *sin) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(rows >= 1 && nq >= 0 && nq <= rows && n_heads >= 1 && pg->n_kv_heads >= 1,
             "qk_norm_rope_store rows %d query rows %d heads %d kv heads %d", rows, nq, n_heads,
             pg->n_kv_heads);
    SG_CHECK(pg->head_dim >= 2 && pg->head_dim % 2 == 0 && pg->head_dim <= ROPE_MAX_HD,
             "qk_norm_rope_store head_dim %d (even, at most %d on CUDA)", pg->head_dim,
             ROPE_MAX_HD);
    const int heads = n_heads + pg->n_kv_heads;
    const unsigned groups = (unsigned)((heads + ROPE_WARPS - 1) / ROPE_WARPS);
    SG_CHECK(groups <= 65535, "qk_norm_rope_store heads %d beyond the grid", heads);
    launch_dependent(c, qk_norm_rope_store_k, dim3((unsigned)rows, groups), ROPE_WARPS * 32, 0, *pg,
                     k_pages, v_pages, row_table, pos, rows, q, nq, n_heads, q_norm, k, v, k_norm,
                     eps, cos, sin);
    CUDA_CHECK_LAUNCH();
}
