// wgmma_natural_steps.cu (an experiment's record, not built by CMake): with k-steps of 16
// consecutive k (step t of a 256-k segment takes k = 16t .. 16t + 15) instead of gemm.cu's
// contract (step 0 of a 32-k chunk takes the four runs k ≡ 0..3 (mod 8), step 1 the runs 4..7),
// do wgmma (sm_90a) and mma.sync give the same bits? One block per trial: x [64][256] and
// w [8][256] random bf16 (exponents spread over 2^±spread, argument 2), one segment (16 k-steps)
// from +0, every variant's chain over the same steps in the same order:
//   nat8:     mma.sync m16n8k16, lane q reads 8 bytes of each row at k = 16t + 4q: its k 4q, 4q+1
//             go to the fragment's logical 2q, 2q+1 and k 4q+2, 4q+3 to 2q+8, 2q+9 (the
//             register kernels' form: two 8-byte loads per 32-k chunk);
//   natld:    mma.sync with logical = physical k (the ldmatrix form: a0 = k 2q, 2q+1, a2 = k 2q+8,
//             2q+9 of step t);
//   wgmma rs: wgmma m64n8k16, A = natld's registers, B = w in shared memory in natural k order
//             (no-swizzle core matrices, as a TMA box of the row would place it);
//   wgmma ss: wgmma m64n8k16, A and B from shared memory in natural k order;
//   contract: gemm.cu's chain (lane q reads 16 bytes at chunk + 8q), the negative control: it
//             sums other sets of k per step, so its bits must differ from nat8's somewhere.
// Each variant is compared with nat8 bit for bit, and with the exact sum (double) for its layout.
// Shares wgmma_test.cuh (the wrappers, the random operands, the comparison) with wgmma_bits.cu.
// nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 wgmma_natural_steps.cu -o wn
#include "../h200-2026-12-01f/wgmma_test.cuh"

constexpr int VARIANTS = 5;

// Two consecutive bf16 of row `row` at k (4-byte aligned), and four at k as two such words.
__device__ __forceinline__ uint32_t pair(const uint16_t *a, int row, int k) {
    return *reinterpret_cast<const uint32_t *>(a + row * K + k);
}
__device__ __forceinline__ uint2 quad(const uint16_t *a, int row, int k) {
    return *reinterpret_cast<const uint2 *>(a + row * K + k);
}

__global__ void __launch_bounds__(128) bits(const uint16_t *xs, const uint16_t *ws, float *out) {
    // out per trial: [VARIANTS][MR][NC]: nat8, natld, wgmma rs, wgmma ss, contract
    // Natural k order in no-swizzle core matrices (8 rows × 16 bytes, K-major): step t's k-core c
    // holds k = 16t + 8c .. + 7.
    __shared__ __align__(128) uint16_t Bs[STEPS][2][8][8];    // [t][k-core][n][k]
    __shared__ __align__(128) uint16_t As[STEPS][8][2][8][8]; // [t][m-core][k-core][m][k]
    const uint16_t *x = xs + (size_t)blockIdx.x * MR * K, *w = ws + (size_t)blockIdx.x * NC * K;
    float *o = out + (size_t)blockIdx.x * VARIANTS * MR * NC;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    for (int e = threadIdx.x; e < K * NC; e += 128) {
        const int n = e / K, k = e % K;
        Bs[k / 16][(k % 16) / 8][n][k % 8] = w[n * K + k];
    }
    for (int e = threadIdx.x; e < K * MR; e += 128) {
        const int m = e / K, k = e % K;
        As[k / 16][m / 8][(k % 16) / 8][m % 8][k % 8] = x[m * K + k];
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const int r0 = 16 * warp + g, r1 = r0 + 8;
    auto put = [&](int which, const float d[4]) { put_frag(o, which, r0, q, d); };
    float nat8[4] = {0.f, 0.f, 0.f, 0.f};
    for (int t = 0; t < STEPS; t++) {
        const uint2 lo = quad(x, r0, 16 * t + 4 * q), hi = quad(x, r1, 16 * t + 4 * q),
                    b = quad(w, g, 16 * t + 4 * q);
        mma_step(nat8, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
    }
    put(0, nat8);
    float natld[4] = {0.f, 0.f, 0.f, 0.f};
    for (int t = 0; t < STEPS; t++) {
        const int k = 16 * t + 2 * q;
        mma_step(natld, pair(x, r0, k), pair(x, r1, k), pair(x, r0, k + 8), pair(x, r1, k + 8),
                 pair(w, g, k), pair(w, g, k + 8));
    }
    put(1, natld);
    float rs[4] = {0.f, 0.f, 0.f, 0.f};
    wg_begin();
    for (int t = 0; t < STEPS; t++) {
        const int k = 16 * t + 2 * q;
        wg_rs(rs, pair(x, r0, k), pair(x, r1, k), pair(x, r0, k + 8), pair(x, r1, k + 8),
              desc(&Bs[t][0][0][0], 128, 128));
    }
    wg_end();
    put(2, rs);
    float ss[4] = {0.f, 0.f, 0.f, 0.f};
    wg_begin();
    for (int t = 0; t < STEPS; t++)
        wg_ss(ss, desc(&As[t][0][0][0][0], 128, 256), desc(&Bs[t][0][0][0], 128, 128));
    wg_end();
    put(3, ss);
    float contract[4] = {0.f, 0.f, 0.f, 0.f};
    for (int c = 0; c < K / 32; c++) {
        const uint4 lo = *reinterpret_cast<const uint4 *>(x + r0 * K + c * 32 + 8 * q);
        const uint4 hi = *reinterpret_cast<const uint4 *>(x + r1 * K + c * 32 + 8 * q);
        const uint4 bb = *reinterpret_cast<const uint4 *>(w + g * K + c * 32 + 8 * q);
        mma_step(contract, lo.x, hi.x, lo.y, hi.y, bb.x, bb.y);
        mma_step(contract, lo.z, hi.z, lo.w, hi.w, bb.z, bb.w);
    }
    put(4, contract);
}

int main(int argc, char **argv) {
    const int trials = argc > 1 ? atoi(argv[1]) : 2000;
    const int spread = argc > 2 ? atoi(argv[2]) : 8;
    if (trials < 1 || spread < 0 || spread > 60) {
        fprintf(stderr, "usage: %s [trials >= 1] [exponent spread 0..60]\n", argv[0]);
        return 2;
    }
    trial_set t = trials_make(trials, spread, VARIANTS);
    bits<<<trials, 128>>>(t.dx, t.dw, t.dout);
    trials_fetch(t);
    long long diff[VARIANTS], far[VARIANTS];
    double worst_nat8;
    const long long total = trials_compare(t, diff, far, &worst_nat8);
    printf("trials %d, exponents spread 2^+-%d: %lld elements per variant\n", trials, spread, total);
    const char *name[VARIANTS] = {"nat8", "natld", "wgmma rs", "wgmma ss", "contract"};
    for (int v = 1; v < VARIANTS; v++)
        printf("%-9s: %lld of %lld differ from nat8 in bits; %lld far from the exact sum "
               "(> 1e-3 relative: a wrong layout)\n",
               name[v], diff[v], total, far[v]);
    printf("nat8     : worst |err| / sum |x·w| %.3g; %lld far from the exact sum\n", worst_nat8,
           far[0]);
    return 0;
}
