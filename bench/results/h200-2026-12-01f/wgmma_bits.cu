// wgmma_bits.cu (an experiment's record, not built by CMake): do wgmma (sm_90a) and mma.sync with
// swapped operands give the bits of gemm.cu's mma.sync chain, k-step by k-step in the contract's
// k order? One block per trial: x [64][256] and w [8][256] random bf16 (exponents spread over
// 2^±spread, argument 2),
// one segment (8 chunks, 16 k-steps) from +0:
//   ref:  mma.sync m16n8k16, A = x rows, B = w rows (gemm.cu's fragments and order)
//   rs:   wgmma m64n8k16, A = the same registers, B = w from shared memory, k permuted per step
//   ss:   wgmma m64n8k16, A and B from shared memory, both k-permuted
//   swap: mma.sync with A = w (8 rows + 8 zero rows), B = x rows (y transposed)
//   (ss with argument 5 = 1..3: the same products at other k positions within each step)
// nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 wgmma_bits.cu -o wgmma_bits
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        cudaError_t e = (x);                                                                       \
        if (e != cudaSuccess) {                                                                    \
            fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e));              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

constexpr int MR = 64, NC = 8, K = 256, STEPS = K / 16;

__device__ __forceinline__ void mma_step(float d[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// Actual k (within the segment) at logical position p (0..15) of k-step t.
__host__ __device__ int actual_k(int t, int p) {
    const int c = t / 2, sub = t % 2;
    return c * 32 + 8 * ((p & 7) >> 1) + 4 * sub + ((p >> 3) << 1) + (p & 1);
}

__device__ __forceinline__ uint64_t desc(const void *p, int lbo, int sbo) {
    const uint64_t a = (uint32_t)__cvta_generic_to_shared(p);
    return ((a >> 4) & 0x3fff) | ((uint64_t)((lbo >> 4) & 0x3fff) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3fff) << 32);
}

__device__ __forceinline__ void wg_rs(float d[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                      uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, "
                 "{%4, %5, %6, %7}, %8, p, 1, 1, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db));
}
__device__ __forceinline__ void wg_ss(float d[4], uint64_t da, uint64_t db) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, "
                 "%4, %5, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "l"(da), "l"(db));
}

// Position of logical k p in the shared-memory operands of the ss variant (perm: 0 the contract's,
// 1 reversed, 2 halves swapped, 3 rotated by 5): the same 16 products, summed at other positions.
__device__ int place(int p, int perm) {
    return perm == 1 ? 15 - p : perm == 2 ? p ^ 8 : perm == 3 ? (p + 5) % 16 : p;
}

__global__ void __launch_bounds__(128) bits(const uint16_t *xs, const uint16_t *ws, float *out,
                                            int a_lbo, int a_sbo, int perm) {
    // out per trial: [4][MR][NC]: ref, rs, ss, swap
    __shared__ __align__(128) uint16_t Bs[STEPS][2][8][8];     // [t][k-core][n][k]
    __shared__ __align__(128) uint16_t As[STEPS][8][2][8][8];  // [t][m-core][k-core][m][k]
    const uint16_t *x = xs + (size_t)blockIdx.x * MR * K, *w = ws + (size_t)blockIdx.x * NC * K;
    float *o = out + (size_t)blockIdx.x * 4 * MR * NC;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    for (int e = threadIdx.x; e < STEPS * 16 * 8; e += 128) {
        const int t = e / 128, p = e / 8 % 16, n = e % 8;
        const int pp = place(p, perm);
        Bs[t][pp >> 3][n][pp & 7] = w[n * K + actual_k(t, p)];
    }
    for (int e = threadIdx.x; e < STEPS * 16 * MR; e += 128) {
        const int t = e / (16 * MR), p = e / MR % 16, m = e % MR;
        const int pp = place(p, perm);
        As[t][m >> 3][pp >> 3][m & 7][pp & 7] = x[m * K + actual_k(t, p)];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int r0 = 16 * warp + g, r1 = r0 + 8;
    auto frag = [&](const uint16_t *base, int row, int c) {
        return *reinterpret_cast<const uint4 *>(base + row * K + c * 32 + 8 * q);
    };
    auto put = [&](int which, const float d[4]) {
        float *p = o + which * MR * NC;
        p[r0 * NC + 2 * q] = d[0];
        p[r0 * NC + 2 * q + 1] = d[1];
        p[r1 * NC + 2 * q] = d[2];
        p[r1 * NC + 2 * q + 1] = d[3];
    };
    float ref[4] = {0.f, 0.f, 0.f, 0.f};
    for (int c = 0; c < 8; c++) {
        const uint4 lo = frag(x, r0, c), hi = frag(x, r1, c), bb = frag(w, g, c);
        mma_step(ref, lo.x, hi.x, lo.y, hi.y, bb.x, bb.y);
        mma_step(ref, lo.z, hi.z, lo.w, hi.w, bb.z, bb.w);
    }
    put(0, ref);
    float rs[4] = {0.f, 0.f, 0.f, 0.f};
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int c = 0; c < 8; c++) {
        const uint4 lo = frag(x, r0, c), hi = frag(x, r1, c);
        wg_rs(rs, lo.x, hi.x, lo.y, hi.y, desc(&Bs[2 * c][0][0][0], 128, 128)); // (perm 0 only)
        wg_rs(rs, lo.z, hi.z, lo.w, hi.w, desc(&Bs[2 * c + 1][0][0][0], 128, 128));
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    put(1, rs);
    float ss[4] = {0.f, 0.f, 0.f, 0.f};
    asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
    for (int t = 0; t < STEPS; t++)
        wg_ss(ss, desc(&As[t][0][0][0][0], a_lbo, a_sbo), desc(&Bs[t][0][0][0], 128, 128));
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
    put(2, ss);
    // swap: A = w rows g (and zero rows g + 8), B = x rows of n-tile h (rows 16·warp + 8h + g);
    // D[n][m] lands at (row g: column n, cols 2q, 2q+1: x rows 8h + 2q, +1)
    float sw[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};
    for (int c = 0; c < 8; c++) {
        const uint4 a = frag(w, g, c);
        for (int h = 0; h < 2; h++) {
            const uint4 b = frag(x, 16 * warp + 8 * h + g, c);
            mma_step(sw[h], a.x, 0u, a.y, 0u, b.x, b.y);
            mma_step(sw[h], a.z, 0u, a.w, 0u, b.z, b.w);
        }
    }
    float *p = o + 3 * MR * NC;
    for (int h = 0; h < 2; h++) {
        const int m = 16 * warp + 8 * h + 2 * q;
        p[m * NC + g] = sw[h][0];
        p[(m + 1) * NC + g] = sw[h][1];
    }
}

static uint32_t rng = 12345u;
static uint32_t next_u32() {
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}
static uint16_t rand_bf16(int spread) {
    const uint32_t r = next_u32();
    const int e = 127 + (int)(r % (2 * spread + 1)) - spread;
    const uint32_t bits = ((r >> 31) << 31) | ((uint32_t)e << 23) | ((next_u32() & 0x7f) << 16);
    return (uint16_t)(bits >> 16);
}
static float bf(uint16_t h) {
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

int main(int argc, char **argv) {
    const int trials = argc > 1 ? atoi(argv[1]) : 2000;
    const int spread = argc > 2 ? atoi(argv[2]) : 8;
    const int a_lbo = argc > 3 ? atoi(argv[3]) : 128, a_sbo = argc > 4 ? atoi(argv[4]) : 256;
    const int perm = argc > 5 ? atoi(argv[5]) : 0;
    const size_t nx = (size_t)trials * MR * K, nw = (size_t)trials * NC * K;
    const size_t no = (size_t)trials * 4 * MR * NC;
    uint16_t *hx = (uint16_t *)malloc(nx * 2), *hw = (uint16_t *)malloc(nw * 2);
    float *ho = (float *)malloc(no * 4);
    for (size_t i = 0; i < nx; i++) hx[i] = rand_bf16(spread);
    for (size_t i = 0; i < nw; i++) hw[i] = rand_bf16(spread);
    uint16_t *dx, *dw;
    float *dout;
    CK(cudaMalloc(&dx, nx * 2));
    CK(cudaMalloc(&dw, nw * 2));
    CK(cudaMalloc(&dout, no * 4));
    CK(cudaMemcpy(dx, hx, nx * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dw, hw, nw * 2, cudaMemcpyHostToDevice));
    bits<<<trials, 128>>>(dx, dw, dout, a_lbo, a_sbo, perm);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(ho, dout, no * 4, cudaMemcpyDeviceToHost));
    long long diff[4] = {0, 0, 0, 0}, far[4] = {0, 0, 0, 0}, total = 0;
    double worst_ref = 0;
    for (int tr = 0; tr < trials; tr++) {
        const float *o = ho + (size_t)tr * 4 * MR * NC;
        for (int m = 0; m < MR; m++)
            for (int n = 0; n < NC; n++) {
                double exact = 0, mag = 0;
                for (int k = 0; k < K; k++) {
                    const double v = (double)bf(hx[((size_t)tr * MR + m) * K + k]) *
                                     bf(hw[((size_t)tr * NC + n) * K + k]);
                    exact += v;
                    mag += fabs(v);
                }
                const float r = o[m * NC + n];
                const double er = fabs(r - exact) / (mag > 0 ? mag : 1);
                if (er > worst_ref) worst_ref = er;
                for (int v = 1; v < 4; v++) {
                    const float a = o[v * MR * NC + m * NC + n];
                    uint32_t ba, br;
                    memcpy(&ba, &a, 4);
                    memcpy(&br, &r, 4);
                    if (ba != br) diff[v]++;
                    if (fabs(a - exact) / (mag > 0 ? mag : 1) > 1e-3) far[v]++;
                }
                total++;
            }
    }
    printf("trials %d spread 2^+-%d, A lbo %d sbo %d, ss positions perm %d: %lld elements; ref vs "
           "exact: worst |err|/sum|xw| %.3g\n",
           trials, spread, a_lbo, a_sbo, perm, total, worst_ref);
    const char *name[4] = {"ref", "wgmma rs", "wgmma ss", "mma swap"};
    for (int v = 1; v < 4; v++)
        printf("%-9s: %lld of %lld differ from ref in bits; %lld far (> 1e-3 rel: wrong layout)\n",
               name[v], diff[v], total, far[v]);
    return 0;
}
