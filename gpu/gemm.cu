// gpu/gemm.cu: the batch-invariant GEMM family, y[M, N] = x[M, K] · w[N, K]ᵀ (backend.h gemm).
//
// Reduction order (the contract; device_numerics.h): every output element is the CPU twin's dot
// product: 8 fp32 lanes, lane l accumulating x[k]·w[k] for k ≡ l (mod 8) in ascending k (one
// rounding for the product, one for the sum), the lanes combined as
// ((l0+l1)+(l2+l3))+((l4+l5)+(l6+l7)). That order depends on K alone, so an element's bits do not
// depend on M, N, the element's place or the tile configuration: the configurations below (chosen
// by M for speed) all compute identical bits, and equal the CPU backend's.
//
// Kernel. A block computes a BM × BN tile of y with GM·GN groups of 8 threads; thread (group g,
// lane l) owns lane l of a TM × TN micro-tile (rows m0 + gm·TM + i, columns n0 + gn + GN·j), so
// the 8 lanes of an element sit in 8 consecutive threads and are combined with three shuffles at
// the end. K is walked in chunks of KC (64 to 256, KC/8 steps of the 8 lanes): the x and w tiles
// are copied from global memory in 16-byte pieces (one piece = one step of 8 lanes of one row) into
// shared memory as bf16, and the next chunk is fetched into registers while the current one is
// consumed. Rows past M or N and k past K are zero: a zero product added to a lane leaves it
// unchanged (a lane starts at +0 and never becomes -0), exactly as the CPU's zero padding to a
// multiple of 8. Shared memory banks: a warp holds 4 groups that share their x rows (broadcast
// reads) and read 4 consecutive w rows; the row stride KC + 8 (KC/2 + 4 words, 4 mod 32) puts them
// in 4 distinct sets of 4 banks, and keeps every piece 16-byte aligned for one vector store.
#include "cuda_internal.h"
#include "device_numerics.h"

namespace {

// 8 bf16 of row `row` (of R rows, length K) at k .. k+7, zero outside; vec: 16-byte loads allowed.
__device__ __forceinline__ uint4 load8(const uint16_t *__restrict__ a, int row, int R, int K, int k,
                                       int vec) {
    uint4 r = make_uint4(0u, 0u, 0u, 0u);
    if (row >= R || k >= K) return r;
    const uint16_t *p = a + (size_t)row * K + k;
    if (vec) return __ldg(reinterpret_cast<const uint4 *>(p));
    uint32_t h[8];
#pragma unroll
    for (int j = 0; j < 8; j++) h[j] = k + j < K ? p[j] : 0u;
    r.x = h[0] | (h[1] << 16);
    r.y = h[2] | (h[3] << 16);
    r.z = h[4] | (h[5] << 16);
    r.w = h[6] | (h[7] << 16);
    return r;
}

template <int TM, int TN, int GM, int GN, int KC>
__global__ void __launch_bounds__(GM *GN * 8)
    gemm_lanes(const uint16_t *__restrict__ x, int M, int K, const uint16_t *__restrict__ w, int N,
               void *__restrict__ y, int out_f32, int vec) {
    constexpr int T = GM * GN * 8;
    constexpr int BM = GM * TM, BN = GN * TN;
    constexpr int S = KC + 8; // row stride of both tiles (bf16 elements), see the bank note
    constexpr int STEPS = KC / 8;
    constexpr int PIECES = (BM + BN) * STEPS;
    constexpr int PER = (PIECES + T - 1) / T;
    static_assert(GN % 4 == 0, "a warp's 4 groups must share their x rows");
    static_assert(KC % 64 == 0, "row stride KC + 8 must stay 4 banks apart per row");
    __shared__ __align__(16) uint16_t xs[BM * S];
    __shared__ __align__(16) uint16_t ws[BN * S];

    const int t = threadIdx.x, l = t & 7, g = t >> 3;
    const int gn = g % GN, gm = g / GN;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;

    uint4 reg[PER];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int p = 0; p < PER; p++) {
            int idx = t + p * T;
            if (idx < PIECES) {
                int row = idx / STEPS, s = idx % STEPS;
                reg[p] = row < BM ? load8(x, m0 + row, M, K, k0 + s * 8, vec)
                                  : load8(w, n0 + row - BM, N, K, k0 + s * 8, vec);
            }
        }
    };
    auto stash = [&]() {
#pragma unroll
        for (int p = 0; p < PER; p++) {
            int idx = t + p * T;
            if (idx < PIECES) {
                int row = idx / STEPS, s = idx % STEPS;
                uint16_t *dst = row < BM ? xs + row * S + s * 8 : ws + (row - BM) * S + s * 8;
                *reinterpret_cast<uint4 *>(dst) = reg[p];
            }
        }
    };

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = 0.f;

    fetch(0);
    for (int k0 = 0; k0 < K; k0 += KC) {
        __syncthreads(); // the previous chunk is consumed
        stash();
        __syncthreads();
        if (k0 + KC < K) fetch(k0 + KC);
#pragma unroll
        for (int s = 0; s < STEPS; s++) {
            const int kk = s * 8 + l;
            float xv[TM], wv[TN];
#pragma unroll
            for (int i = 0; i < TM; i++) xv[i] = d_bf16_to_f32(xs[(gm * TM + i) * S + kk]);
#pragma unroll
            for (int j = 0; j < TN; j++) wv[j] = d_bf16_to_f32(ws[(gn + GN * j) * S + kk]);
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++) acc[i][j] = d_mac(acc[i][j], xv[i], wv[j]);
        }
    }

#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) {
            float v = d_combine8_shfl(acc[i][j]);
            // The 8 threads of the group share the writes.
            if (((i * TN + j) & 7) == l) {
                int m = m0 + gm * TM + i, n = n0 + gn + GN * j;
                if (m < M && n < N) {
                    size_t at = (size_t)m * N + n;
                    if (out_f32)
                        static_cast<float *>(y)[at] = v;
                    else
                        static_cast<uint16_t *>(y)[at] = d_f32_to_bf16(v);
                }
            }
        }
}

template <int TM, int TN, int GM, int GN, int KC>
void launch(cudaStream_t st, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
            int out_f32, int vec) {
    constexpr int BM = GM * TM, BN = GN * TN;
    dim3 grid((unsigned)((N + BN - 1) / BN), (unsigned)((M + BM - 1) / BM));
    gemm_lanes<TM, TN, GM, GN, KC><<<grid, GM * GN * 8, 0, st>>>(x, M, K, w, N, y, out_f32, vec);
    CUDA_CHECK_LAUNCH();
}

} // namespace

void cu_gemm(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y, int out_f32) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(M >= 1 && K >= 1 && N >= 1, "gemm shape M %d K %d N %d", M, K, N);
    SG_CHECK((M + 31) / 32 <= 65535, "gemm M %d beyond the grid", M);
    int vec = K % 8 == 0 && (uintptr_t)x % 16 == 0 && (uintptr_t)w % 16 == 0;
    cudaStream_t st = c->stream;
    // Every configuration computes identical bits (see the top of this file); the choice is speed.
    // Tiles measured on the H200 (Qwen3-4B q_proj, down_proj, lm_head; M 1 .. 512): few rows
    // stream w in long chunks with many small blocks; more rows share each w tile among more rows.
    if (M == 1)
        launch<1, 1, 1, 8, 256>(st, x, M, K, w, N, y, out_f32, vec);
    else if (M == 2)
        launch<1, 1, 2, 8, 256>(st, x, M, K, w, N, y, out_f32, vec);
    else if (M <= 4)
        launch<2, 1, 2, 8, 256>(st, x, M, K, w, N, y, out_f32, vec);
    else if (M <= 16)
        launch<4, 2, 2, 8, 128>(st, x, M, K, w, N, y, out_f32, vec);
    else if (M <= 32)
        launch<4, 2, 4, 8, 128>(st, x, M, K, w, N, y, out_f32, vec);
    else if (M <= 128)
        launch<8, 4, 2, 8, 64>(st, x, M, K, w, N, y, out_f32, vec);
    else
        launch<8, 4, 4, 16, 64>(st, x, M, K, w, N, y, out_f32, vec);
}
