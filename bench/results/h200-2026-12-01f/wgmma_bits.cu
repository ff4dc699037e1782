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
#include "wgmma_test.cuh"

// Actual k (within the segment) at logical position p (0..15) of k-step t.
__host__ __device__ int actual_k(int t, int p) {
    const int c = t / 2, sub = t % 2;
    return c * 32 + 8 * ((p & 7) >> 1) + 4 * sub + ((p >> 3) << 1) + (p & 1);
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
    auto put = [&](int which, const float d[4]) { put_frag(o, which, r0, q, d); };
    float ref[4] = {0.f, 0.f, 0.f, 0.f};
    for (int c = 0; c < 8; c++) {
        const uint4 lo = frag(x, r0, c), hi = frag(x, r1, c), bb = frag(w, g, c);
        mma_step(ref, lo.x, hi.x, lo.y, hi.y, bb.x, bb.y);
        mma_step(ref, lo.z, hi.z, lo.w, hi.w, bb.z, bb.w);
    }
    put(0, ref);
    float rs[4] = {0.f, 0.f, 0.f, 0.f};
    wg_begin();
    for (int c = 0; c < 8; c++) {
        const uint4 lo = frag(x, r0, c), hi = frag(x, r1, c);
        wg_rs(rs, lo.x, hi.x, lo.y, hi.y, desc(&Bs[2 * c][0][0][0], 128, 128)); // (perm 0 only)
        wg_rs(rs, lo.z, hi.z, lo.w, hi.w, desc(&Bs[2 * c + 1][0][0][0], 128, 128));
    }
    wg_end();
    put(1, rs);
    float ss[4] = {0.f, 0.f, 0.f, 0.f};
    wg_begin();
    for (int t = 0; t < STEPS; t++)
        wg_ss(ss, desc(&As[t][0][0][0][0], a_lbo, a_sbo), desc(&Bs[t][0][0][0], 128, 128));
    wg_end();
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

int main(int argc, char **argv) {
    const int trials = argc > 1 ? atoi(argv[1]) : 2000;
    const int spread = argc > 2 ? atoi(argv[2]) : 8;
    const int a_lbo = argc > 3 ? atoi(argv[3]) : 128, a_sbo = argc > 4 ? atoi(argv[4]) : 256;
    const int perm = argc > 5 ? atoi(argv[5]) : 0;
    trial_set t = trials_make(trials, spread, 4);
    bits<<<trials, 128>>>(t.dx, t.dw, t.dout, a_lbo, a_sbo, perm);
    trials_fetch(t);
    long long diff[4], far[4];
    double worst_ref;
    const long long total = trials_compare(t, diff, far, &worst_ref);
    printf("trials %d spread 2^+-%d, A lbo %d sbo %d, ss positions perm %d: %lld elements; ref vs "
           "exact: worst |err|/sum|xw| %.3g\n",
           trials, spread, a_lbo, a_sbo, perm, total, worst_ref);
    const char *name[4] = {"ref", "wgmma rs", "wgmma ss", "mma swap"};
    for (int v = 1; v < 4; v++)
        printf("%-9s: %lld of %lld differ from ref in bits; %lld far (> 1e-3 rel: wrong layout)\n",
               name[v], diff[v], total, far[v]);
    return 0;
}
