// gpu/attention.cu: paged attention (backend.h), with the CPU twin's order.
//
// Attention: one block per (query row, head). Per head, in fp32, exactly cpu_backend.c's sequence:
//   s[j] = (Σ_d q[d]·k[j][d], d ascending, one thread per key) · scale,
//   mx = max_j s[j] (exact in any order),
//   sum = Σ_j expf(s[j] − mx), j ascending, in one thread,
//   p[j] = expf(s[j] − mx) / sum (IEEE division),
//   out[d] = bf16(Σ_j p[j]·v[j][d]), j ascending, one thread per d.
// Keys (and in pass 3 values) are visited in tiles of ATT_TILE positions staged in shared memory
// by asynchronous copies (all of a tile's in flight at once), so no thread waits on a global load
// per key; past one tile the scores are not stored between passes but recomputed (the same
// arithmetic gives the same bits), so no scratch sized by the context length is needed (within
// one tile each thread keeps its own score and exponential in registers). Every number depends
// only on the row's own query, its sequence's K/V at positions 0 .. n_keys-1 and the head
// geometry: the same for a row alone, in a prefill chunk, a decode, a verify span or a chain span
// (path invariance, design.md §3). expf is glibc's (device_numerics.h d_expf), so the output
// equals the CPU twin's bit for bit. A missing page traps.
// Unlike the other kernels before a GEMM it does not let its dependent (the o projection, pdl.h)
// start early: the GEMM's blocks would take SM slots and memory bandwidth from the latency-bound
// attention while they wait for it (measured on the H200: plain decode 303.6 -> 309.6 tok/s with
// the o projection launched the ordinary way).
#include "async_copy.h"
#include "cuda_internal.h"
#include "device_numerics.h"
#include "kv_paging.h"

namespace {

constexpr int ATT_THREADS = 128;
constexpr int ATT_TILE = 128; // keys per tile: one per thread in the score passes
constexpr int ATT_MAX_HD = 256;

// Elements per staged key row: head_dim and a pad that spreads the rows over the banks (thread j
// reads row j). A head_dim of whole 16-byte pieces is staged and read 16 bytes at a time (row
// stride 16 bytes past the row: the 8 threads of a 128-bit access phase hit distinct banks);
// another even head_dim 4 bytes at a time (row stride 4 bytes past the row: an odd word count).
__host__ __device__ __forceinline__ int att_stride(int hd) {
    return hd % 8 == 0 ? hd + 8 : hd + 2;
}

// The keys (and values when vs) of positions [j0, j0 + cnt) of the row's KV head into ks
// [ATT_TILE][att_stride(hd)] and vs [ATT_TILE][hd]. The rows' pool offsets are looked up once
// (rowoff); then every (row, piece) is an asynchronous copy (async_copy.h) of 16 bytes
// (head_dim % 8 == 0 and 16-byte aligned pools) or 4 bytes (head_dim is even), all of a
// thread's in flight at once (a tile is one round trip to memory), waited for before returning.
// Callers synchronise before (the tiles are being read) and after.
template <int E> // elements per piece: 8 (16 bytes) or 2 (4 bytes)
__device__ __forceinline__ void copy_pieces(const be_paging &pg, const uint16_t *k_pages,
                                            const uint16_t *v_pages, int cnt, uint16_t *ks,
                                            uint16_t *vs, const size_t *rowoff) {
    const int hd = pg.head_dim, stride = att_stride(hd), pieces = hd / E, n = cnt * pieces;
    for (int e = threadIdx.x; e < n; e += blockDim.x) {
        const int r = e / pieces, d = E * (e % pieces);
        if (E == 8) {
            cp_async16(ks + r * stride + d, k_pages + rowoff[r] + d, 16);
            if (vs) cp_async16(vs + r * hd + d, v_pages + rowoff[r] + d, 16);
        } else {
            cp_async4(ks + r * stride + d, k_pages + rowoff[r] + d);
            if (vs) cp_async4(vs + r * hd + d, v_pages + rowoff[r] + d);
        }
    }
    cp_async_commit();
    cp_async_wait<0>();
}
__device__ __forceinline__ void load_tile(const be_paging &pg, const uint16_t *k_pages,
                                          const uint16_t *v_pages, int s, size_t off, int j0,
                                          int cnt, uint16_t *ks, uint16_t *vs, size_t *rowoff) {
    for (int r = threadIdx.x; r < cnt; r += blockDim.x) rowoff[r] = kv_row(pg, s, j0 + r) + off;
    __syncthreads();
    if (pg.head_dim % 8 == 0 && ((uintptr_t)k_pages | (uintptr_t)v_pages) % 16 == 0)
        copy_pieces<8>(pg, k_pages, v_pages, cnt, ks, vs, rowoff);
    else
        copy_pieces<2>(pg, k_pages, v_pages, cnt, ks, vs, rowoff);
}

// Score of key row kr of the staged tile: (q · k) · scale, d ascending (16-byte reads when
// head_dim % 8 == 0).
__device__ __forceinline__ float score(const float *qs, const uint16_t *kr, int hd, float scale) {
    float dot = 0.f;
    if (hd % 8 == 0) {
#pragma unroll 2 // the shared-memory reads of 16 steps in flight ahead of the chain
        for (int d = 0; d < hd; d += 8) {
            const uint4 p = *reinterpret_cast<const uint4 *>(kr + d);
            const uint32_t w4[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
            for (int j = 0; j < 8; j++)
                dot = d_mac(dot, qs[d + j], d_bf16_to_f32((uint16_t)(w4[j / 2] >> (16 * (j % 2)))));
        }
    } else {
#pragma unroll 8 // the shared-memory reads of 8 steps in flight ahead of the chain
        for (int d = 0; d < hd; d++) dot = d_mac(dot, qs[d], d_bf16_to_f32(kr[d]));
    }
    return __fmul_rn(dot, scale);
}

__global__ void __launch_bounds__(ATT_THREADS)
    attention_k(be_paging pg, const uint16_t *__restrict__ k_pages,
                const uint16_t *__restrict__ v_pages, const int32_t *__restrict__ row_table,
                const int32_t *__restrict__ n_keys, const uint16_t *__restrict__ q, int n_heads,
                float scale, uint16_t *__restrict__ out) {
    extern __shared__ __align__(16) unsigned char att_smem[];
    const int hd = pg.head_dim, stride = att_stride(hd);
    uint16_t *ks = reinterpret_cast<uint16_t *>(att_smem); // [ATT_TILE][stride]
    float *qs = reinterpret_cast<float *>(att_smem + (size_t)ATT_TILE * stride * 2); // [hd]
    float *ps = qs + hd;                                                             // [ATT_TILE]
    uint16_t *vs = reinterpret_cast<uint16_t *>(ps + ATT_TILE);                     // [ATT_TILE][hd]
    __shared__ float red[ATT_THREADS / 32];
    __shared__ size_t rowoff[ATT_TILE];
    __shared__ float bcast;

    const int h = blockIdx.x, i = blockIdx.y, t = threadIdx.x;
    const int group = n_heads / pg.n_kv_heads;
    const size_t off = (size_t)(h / group) * hd;
    const size_t qd = (size_t)n_heads * hd;
    const int s = row_table[i], nk = n_keys[i];
    if (nk < 1) __trap();
    // The query's loads are issued first and land while the tile is looked up and copied.
    static_assert(2 * ATT_THREADS >= ATT_MAX_HD, "two query elements per thread");
    const uint16_t *qh = q + (size_t)i * qd + (size_t)h * hd;
    const uint16_t q0 = t < hd ? qh[t] : 0, q1 = t + ATT_THREADS < hd ? qh[t + ATT_THREADS] : 0;

    // A context of one tile is staged once for all three passes (keys and values); a longer one
    // tile by tile in each pass (keys; values in pass 3).
    const bool one_tile = nk <= ATT_TILE;
    if (one_tile) load_tile(pg, k_pages, v_pages, s, off, 0, nk, ks, vs, rowoff);
    if (t < hd) qs[t] = d_bf16_to_f32(q0);
    if (t + ATT_THREADS < hd) qs[t + ATT_THREADS] = d_bf16_to_f32(q1);
    __syncthreads();

    // Pass 1: the maximum score (one tile: thread t keeps its key's score for the later passes,
    // the same bits as recomputing it).
    float mx = -INFINITY, own = 0.f;
    for (int j0 = 0; j0 < nk; j0 += ATT_TILE) {
        int cnt = nk - j0 < ATT_TILE ? nk - j0 : ATT_TILE;
        if (!one_tile) {
            __syncthreads();
            load_tile(pg, k_pages, v_pages, s, off, j0, cnt, ks, NULL, rowoff);
            __syncthreads();
        }
        if (t < cnt) {
            float sc = score(qs, ks + t * stride, hd, scale);
            if (sc > mx) mx = sc;
            own = sc;
        }
    }
    for (int m = 16; m >= 1; m >>= 1) {
        float o = __shfl_xor_sync(0xffffffffu, mx, m);
        if (o > mx) mx = o;
    }
    if ((t & 31) == 0) red[t >> 5] = mx;
    __syncthreads();
    if (t == 0) {
        float m = red[0];
        for (int w = 1; w < ATT_THREADS / 32; w++)
            if (red[w] > m) m = red[w];
        bcast = m;
    }
    __syncthreads();
    mx = bcast;

    // Pass 2: the sum of the exponentials, ascending position, in thread 0 (one tile: thread t
    // keeps its key's exponential for pass 3, the same bits as recomputing it).
    float sum = 0.f, own_e = 0.f;
    for (int j0 = 0; j0 < nk; j0 += ATT_TILE) {
        int cnt = nk - j0 < ATT_TILE ? nk - j0 : ATT_TILE;
        __syncthreads();
        if (!one_tile) load_tile(pg, k_pages, v_pages, s, off, j0, cnt, ks, NULL, rowoff);
        __syncthreads();
        if (t < cnt) {
            own_e = d_expf(__fsub_rn(one_tile ? own : score(qs, ks + t * stride, hd, scale), mx));
            ps[t] = own_e;
        }
        __syncthreads();
        if (t == 0)
            for (int j = 0; j < cnt; j++) sum = __fadd_rn(sum, ps[j]);
    }
    __syncthreads();
    if (t == 0) bcast = sum;
    __syncthreads();
    sum = bcast;

    // Pass 3: probabilities and P·V, ascending position, one thread per output dimension.
    float acc0 = 0.f, acc1 = 0.f; // d = t and d = t + ATT_THREADS
    const int d0 = t, d1 = t + ATT_THREADS;
    for (int j0 = 0; j0 < nk; j0 += ATT_TILE) {
        int cnt = nk - j0 < ATT_TILE ? nk - j0 : ATT_TILE;
        __syncthreads();
        if (!one_tile) load_tile(pg, k_pages, v_pages, s, off, j0, cnt, ks, vs, rowoff);
        __syncthreads();
        if (t < cnt) {
            const float e = one_tile ? own_e
                                     : d_expf(__fsub_rn(score(qs, ks + t * stride, hd, scale), mx));
            ps[t] = __fdiv_rn(e, sum);
        }
        __syncthreads();
#pragma unroll 4
        for (int j = 0; j < cnt; j++) {
            const uint16_t *vr = vs + j * hd;
            float p = ps[j];
            if (d0 < hd) acc0 = d_mac(acc0, p, d_bf16_to_f32(vr[d0]));
            if (d1 < hd) acc1 = d_mac(acc1, p, d_bf16_to_f32(vr[d1]));
        }
    }
    uint16_t *o = out + (size_t)i * qd + (size_t)h * hd;
    if (d0 < hd) o[d0] = d_f32_to_bf16(acc0);
    if (d1 < hd) o[d1] = d_f32_to_bf16(acc1);
}

// ks, qs, ps, vs.
size_t attention_smem(int hd) {
    return (size_t)ATT_TILE * att_stride(hd) * 2 + (size_t)(hd + ATT_TILE) * sizeof(float) +
           (size_t)ATT_TILE * hd * 2;
}

} // namespace

void cu_attention(void *ctx, const be_paging *pg, const bf16 *k_pages, const bf16 *v_pages,
                  const int32_t *row_table, const int32_t *n_keys, const bf16 *q, int rows,
                  int n_heads, bf16 *out) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(pg->n_kv_heads >= 1 && n_heads % pg->n_kv_heads == 0, "attention heads %d kv heads %d",
             n_heads, pg->n_kv_heads);
    SG_CHECK(pg->head_dim >= 2 && pg->head_dim % 2 == 0 && pg->head_dim <= ATT_MAX_HD,
             "attention head_dim %d (even, at most %d on CUDA)", pg->head_dim, ATT_MAX_HD);
    SG_CHECK(rows <= 65535, "attention rows %d beyond the grid", rows);
    if (rows <= 0) return;
    static_assert(2 * ATT_THREADS >= ATT_MAX_HD, "two output dimensions per thread");
    float scale = 1.0f / sqrtf((float)pg->head_dim); // the CPU twin's expression, on the host
    size_t smem = attention_smem(pg->head_dim);
    dim3 grid((unsigned)n_heads, (unsigned)rows);
    attention_k<<<grid, ATT_THREADS, smem, c->stream>>>(*pg, k_pages, v_pages, row_table, n_keys, q,
                                                        n_heads, scale, out);
    CUDA_CHECK_LAUNCH();
}

// The dynamic shared memory the largest head needs (set once when the backend is made).
void cu_attention_init(void) {
    CUDA_CHECK(cudaFuncSetAttribute(attention_k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    (int)attention_smem(ATT_MAX_HD)));
}
