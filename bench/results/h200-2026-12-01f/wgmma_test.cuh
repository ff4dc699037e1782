// wgmma_test.cuh (an experiment's record, not built by CMake): what the standalone wgmma bit tests
// share (wgmma_bits.cu here, ../h200-2026-12-02c/wgmma_natural_steps.cu). A trial is one block's
// x [MR][K] and w [NC][K], random bf16 with exponents spread over 2^±spread, one segment of K
// (16 k-steps) from +0; a test's kernel writes its variants' results [variants][MR][NC] per trial.
// At the end, what the standalone GEMM records share (../h200-2026-12-02c/wgmma_fold_gemm.cu,
// ../h200-2026-12-02d/wgmma_rs_gemm.cu): operands filled on the device, timing, bit comparison.
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

// A shared-memory matrix descriptor without swizzle: start, leading and stride byte offsets.
__device__ __forceinline__ uint64_t desc(const void *p, int lbo, int sbo) {
    const uint64_t a = (uint32_t)__cvta_generic_to_shared(p);
    return ((a >> 4) & 0x3fff) | ((uint64_t)((lbo >> 4) & 0x3fff) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3fff) << 32);
}

// wgmma m64n8k16 accumulating into d: A from registers (rs) or shared memory (ss), B from shared
// memory.
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

// Before a warpgroup's first wgmma of a chain (its accumulator registers are about to be read
// asynchronously), and after its last: commit the group and wait for it.
__device__ __forceinline__ void wg_begin() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wg_end() {
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}

// Stores lane (g, q)'s m16n8 accumulator fragment, rows r0 and r0 + 8 (r0 = 16·warp + g), as
// variant `which` of a trial's results o [variants][MR][NC].
__device__ __forceinline__ void put_frag(float *o, int which, int r0, int q, const float d[4]) {
    float *p = o + which * MR * NC;
    p[r0 * NC + 2 * q] = d[0];
    p[r0 * NC + 2 * q + 1] = d[1];
    p[(r0 + 8) * NC + 2 * q] = d[2];
    p[(r0 + 8) * NC + 2 * q + 1] = d[3];
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

// The trials' operands on the host and the device, and their results.
struct trial_set {
    int trials, variants;
    uint16_t *hx, *hw, *dx, *dw; // x [trials][MR][K], w [trials][NC][K]
    float *ho, *dout;            // [trials][variants][MR][NC]
};

// Random operands (x first, then w, from the one generator) uploaded, result buffers allocated.
static trial_set trials_make(int trials, int spread, int variants) {
    trial_set t = {trials, variants, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
    const size_t nx = (size_t)trials * MR * K, nw = (size_t)trials * NC * K;
    const size_t no = (size_t)trials * variants * MR * NC;
    t.hx = (uint16_t *)malloc(nx * 2);
    t.hw = (uint16_t *)malloc(nw * 2);
    t.ho = (float *)malloc(no * 4);
    if (!t.hx || !t.hw || !t.ho) {
        fprintf(stderr, "out of host memory for %d trials\n", trials);
        exit(1);
    }
    for (size_t i = 0; i < nx; i++) t.hx[i] = rand_bf16(spread);
    for (size_t i = 0; i < nw; i++) t.hw[i] = rand_bf16(spread);
    CK(cudaMalloc(&t.dx, nx * 2));
    CK(cudaMalloc(&t.dw, nw * 2));
    CK(cudaMalloc(&t.dout, no * 4));
    CK(cudaMemcpy(t.dx, t.hx, nx * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(t.dw, t.hw, nw * 2, cudaMemcpyHostToDevice));
    return t;
}

// Waits for the kernel that wrote t.dout and brings the results to t.ho.
static void trials_fetch(trial_set &t) {
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(t.ho, t.dout, (size_t)t.trials * t.variants * MR * NC * 4,
                  cudaMemcpyDeviceToHost));
}

// Variant v's value of element (m, n) of trial tr.
static float trial_value(const trial_set &t, int tr, int v, int m, int n) {
    return t.ho[(((size_t)tr * t.variants + v) * MR + m) * NC + n];
}

// The exact sum of element (m, n) of trial tr (double) and the sum of its products' magnitudes.
static void trial_exact(const trial_set &t, int tr, int m, int n, double *exact, double *mag) {
    *exact = 0;
    *mag = 0;
    for (int k = 0; k < K; k++) {
        const double v = (double)bf(t.hx[((size_t)tr * MR + m) * K + k]) *
                         bf(t.hw[((size_t)tr * NC + n) * K + k]);
        *exact += v;
        *mag += fabs(v);
    }
}

// Whether two floats have the same bits, and whether a value is further than 1e-3 relative (to the
// magnitude of its products) from the exact sum: a wrong layout, not a rounding.
static bool same_bits(float a, float b) {
    uint32_t ba, bb;
    memcpy(&ba, &a, 4);
    memcpy(&bb, &b, 4);
    return ba == bb;
}
static bool far_off(float a, double exact, double mag) {
    return fabs(a - exact) / (mag > 0 ? mag : 1) > 1e-3;
}

// Every element of every trial: per variant v, diff[v] values whose bits differ from variant 0's
// and far[v] values far from the exact sum; *worst0 the largest relative error of variant 0.
// Returns the elements compared per variant.
static long long trials_compare(const trial_set &t, long long *diff, long long *far,
                                double *worst0) {
    long long total = 0;
    for (int v = 0; v < t.variants; v++) diff[v] = far[v] = 0;
    *worst0 = 0;
    for (int tr = 0; tr < t.trials; tr++)
        for (int m = 0; m < MR; m++)
            for (int n = 0; n < NC; n++) {
                double exact, mag;
                trial_exact(t, tr, m, n, &exact, &mag);
                const float r = trial_value(t, tr, 0, m, n);
                const double er = fabs(r - exact) / (mag > 0 ? mag : 1);
                if (er > *worst0) *worst0 = er;
                for (int v = 0; v < t.variants; v++) {
                    const float a = trial_value(t, tr, v, m, n);
                    if (!same_bits(a, r)) diff[v]++;
                    if (far_off(a, exact, mag)) far[v]++;
                }
                total++;
            }
    return total;
}

// ---- the GEMM records ----

// Random bf16 with exponents in 2^-4 .. 2^0 and either sign (a hash of the index and seed).
__global__ void fill(uint16_t *a, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        uint32_t h = (uint32_t)i * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        const uint32_t e = 123 + h % 5;
        a[i] = (uint16_t)(((h >> 31) << 15) | (e << 7) | ((h >> 8) & 0x7f));
    }
}

template <typename F> static float time_us(F run, int reps) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    run();
    CK(cudaEventRecord(a));
    for (int i = 0; i < reps; i++) run();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1000.f / reps;
}

// Elements of two device results [n] whose bits differ.
static size_t bits_differ(const float *a, const float *b, size_t n) {
    float *ha = (float *)malloc(n * 4), *hb = (float *)malloc(n * 4);
    if (!ha || !hb) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    CK(cudaMemcpy(ha, a, n * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hb, b, n * 4, cudaMemcpyDeviceToHost));
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += !same_bits(ha[i], hb[i]);
    free(ha);
    free(hb);
    return diff;
}
