// wgmma_fold_gemm.cu (an experiment's record, not built by CMake): what a wgmma kernel of the CUDA
// GEMM's order with k-steps of 16 consecutive k (the path bench/README's goals section names)
// reaches against cuBLAS, and that it gives the bits of mma.sync chains of that order.
// y [M][N] fp32 = x [M][K] · w [N][K]ᵀ, bf16 operands; the order: K in segments of 256, a
// segment's value the chain of its 16 k-steps (16 consecutive k each, ascending) from +0, the
// element the left fold in fp32 of its segments (v = seg0; v = v + seg_s). Kernels:
//   ref:   mma.sync m16n8k16, a warp per 16 × 8 tile, operands straight from global memory;
//   wgmma: a block per 128 × 128 tile, two warpgroups of m64n128k16 (A and B from shared
//          memory in stages of 64 k, layout SW below), a ring of RING stages filled by cp.async
//          AHEAD stages ahead by all 256 threads (a block barrier per stage), one wgmma group in
//          flight within a segment; a segment's first k-step starts from zero (scale-d off: the
//          same as +0 unless the step's sum is -0) and at its end the group is waited for and
//          folded (the tensor pipe drains once per segment). A first version (c34) branched on
//          the stage within the segment at run time, and ptxas then waited for every group
//          (its C7517 note); the segment's stages are unrolled since. Tried and not measured:
//          two accumulator sets by segment parity (no drain between segments): 255 registers
//          with spills at this tile, and ptxas serialised the groups (C7514: the fold reads one
//          set while the other's group runs);
//   cuBLAS: cublasGemmEx, bf16 in, fp32 out, fp32 compute (its own order: time only).
// Prints per shape: µs and TFLOP/s of each, and the elements where each wgmma variant's bits
// differ from the reference of its order. Variants: the layout (no swizzle or 128-byte swizzle),
// the ring's stages and how many are loaded ahead, and the order: the natural k-steps above, or
// (c37) gemm.cu's contract, its operands placed by 8-byte copies (load_stage).
// Needs M % 128 == 0, N % 128 == 0, K % 256 == 0.
// nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 wgmma_fold_gemm.cu -lcublas -o wf
#include <cublas_v2.h>

#include "../h200-2026-12-01f/wgmma_test.cuh"

constexpr int TILE = 128, KT = 64, SEG = 256;
constexpr int OPERAND_BYTES = TILE * KT * 2;      // one operand's stage: 16 KB
constexpr int STAGE_BYTES = 2 * OPERAND_BYTES;    // x then w
constexpr int KGROUP_BYTES = TILE / 8 * 128;      // 2048: one k group's 16 core matrices

// Shared-memory layouts of a stage's operand (rows of 64 k = 128 bytes):
//   SW = 0, no swizzle: core matrix (row group rg, k group kg) at kg·2048 + rg·128, its 8 rows
//     16 bytes apart; a k-step's descriptor starts at 2j·2048 (LBO 2048, SBO 128);
//   SW = 1, 128-byte swizzle: row r at r·128, its 16-byte chunk c at chunk c ^ (r % 8); a
//     k-step's descriptor starts at 32j (SBO 1024, the 8-row atom; layout type 1).
template <int SW> __device__ __forceinline__ int piece_offset(int r, int kg) {
    return SW ? r * 128 + ((kg ^ (r & 7)) << 4) : kg * KGROUP_BYTES + (r >> 3) * 128 + (r & 7) * 16;
}
template <int SW> __device__ __forceinline__ uint64_t operand_desc(const unsigned char *base, int row0,
                                                                   int j) {
    if (SW) return desc(base + row0 * 128 + 32 * j, 16, 1024) | (1ull << 62);
    return desc(base + (row0 >> 3) * 128 + 2 * j * KGROUP_BYTES, KGROUP_BYTES, 128);
}

// d [64] = A (64 × 16) · B (16 × 128) + (accumulate ? d : nothing), A and B from shared memory.
__device__ __forceinline__ void wg_m64n128(float d[64], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "%64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]),
          "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]),
          "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]),
          "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),
          "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]),
          "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]),
          "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(accumulate));
}

// The 64 k from k0 of rows row0 .. row0 + 127 of a [rows][K] operand into a stage's operand
// (layout SW). Warp task T (4 a warp): row group T / 2, k groups 4·(T % 2) .. + 3; lane l takes
// row l % 8 of the group and k group l / 8 of the four, so a quarter-warp's 16-byte writes fall
// in distinct banks in either layout.
// ORDER 1 (gemm.cu's contract: step 0 of a 32-k chunk takes its k ≡ 0..3 (mod 8), step 1 its
// k ≡ 4..7): each 16-byte piece is copied as two 8-byte halves, the first to the chunk's step-0
// k-step and the second to its step-1 k-step, at the piece's place within the chunk (logical k
// 32c + 4p and 32c + 16 + 4p for piece p of chunk c), so each wgmma k-step reads the contract's
// set of 16 k (at other places within the step, which leaves its sum unchanged: wgmma_bits).
template <int SW, int ORDER>
__device__ __forceinline__ void load_stage(const uint16_t *a, int kdim, int row0, int k0,
                                           unsigned char *dst) {
    static_assert(ORDER == 0 || SW == 1, "the contract's placement is written for the swizzle");
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    for (int u = 0; u < 4; u++) {
        const int T = warp * 4 + u, rg = T >> 1, kg = 4 * (T & 1) + (lane >> 3);
        const int r = 8 * rg + (lane & 7);
        const uint16_t *src = a + (size_t)(row0 + r) * kdim + k0 + 8 * kg;
        if (ORDER == 0) {
            const uint32_t s = (uint32_t)__cvta_generic_to_shared(dst + piece_offset<SW>(r, kg));
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src));
            continue;
        }
        const int c = kg >> 2, p = kg & 3;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int L = 32 * c + 16 * h + 4 * p; // logical k within the stage
            const uint32_t s = (uint32_t)__cvta_generic_to_shared(
                dst + r * 128 + (((L >> 3) ^ (r & 7)) << 4) + (L & 7) * 2);
            asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(s), "l"(src + 4 * h));
        }
    }
}

// Keeps the compiler from moving or copying the accumulators across a wgmma group (a copy of a
// register a wgmma in flight defines makes ptxas wait for the group).
__device__ __forceinline__ void fence_operands(float d[64]) {
#pragma unroll
    for (int i = 0; i < 64; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// The segment in acc folded into total (v = seg0; v = v + seg_s).
__device__ __forceinline__ void fold(float total[64], const float acc[64], bool first) {
#pragma unroll
    for (int i = 0; i < 64; i++) total[i] = first ? acc[i] : __fadd_rn(total[i], acc[i]);
}

template <int SW, int RING, int AHEAD, int ORDER>
__global__ void __launch_bounds__(256, 1)
    gemm_wgmma(const uint16_t *x, const uint16_t *w, float *y, int M, int N, int kdim) {
    static_assert(AHEAD <= RING - 2, "a refill must not hit the stage a wgmma group may read");
    extern __shared__ __align__(1024) unsigned char smem[];
    const int wg = threadIdx.x >> 7, row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE;
    const int stages = kdim / KT;
    float acc[64], total[64];
    auto issue = [&](int t) {
        if (t < stages) {
            unsigned char *st = smem + (t % RING) * STAGE_BYTES;
            load_stage<SW, ORDER>(x, kdim, row0, t * KT, st);
            load_stage<SW, ORDER>(w, kdim, col0, t * KT, st + OPERAND_BYTES);
        }
        asm volatile("cp.async.commit_group;");
    };
    for (int t = 0; t < AHEAD; t++) issue(t);
    for (int seg = 0; seg < kdim / SEG; seg++) {
#pragma unroll
        for (int in_seg = 0; in_seg < SEG / KT; in_seg++) { // unrolled: no branch on the stage
            const int t = seg * (SEG / KT) + in_seg;
            asm volatile("cp.async.wait_group %0;" ::"n"(AHEAD - 1));
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads(); // stage t landed for everyone; stage t - 2's wgmmas are done everywhere
            issue(t + AHEAD);
            const unsigned char *st = smem + (t % RING) * STAGE_BYTES;
            fence_operands(acc);
            wg_begin();
#pragma unroll
            for (int j = 0; j < KT / 16; j++)
                wg_m64n128(acc, operand_desc<SW>(st, wg * TILE / 2, j),
                           operand_desc<SW>(st + OPERAND_BYTES, 0, j),
                           in_seg != 0 || j != 0); // a segment's first step from zero
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            fence_operands(acc);
            if (in_seg < SEG / KT - 1) {
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            } else { // the segment is complete: wait for it and fold it
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
                fold(total, acc, seg == 0);
            }
        }
    }
    const int lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    const int r = row0 + wg * 64 + ((threadIdx.x >> 5) & 3) * 16 + g;
#pragma unroll
    for (int j = 0; j < TILE / 8; j++) {
        const int c = col0 + 8 * j + 2 * q;
        y[(size_t)r * N + c] = total[4 * j];
        y[(size_t)r * N + c + 1] = total[4 * j + 1];
        y[(size_t)(r + 8) * N + c] = total[4 * j + 2];
        y[(size_t)(r + 8) * N + c + 1] = total[4 * j + 3];
    }
}

// The reference: a warp per 16 × 8 tile of y, the same order by mma.sync: ORDER 0 with logical k
// = physical, ORDER 1 gemm.cu's chain (lane q's 16 bytes at chunk + 8q, halves to steps 0 and 1).
template <int ORDER>
__global__ void gemm_ref(const uint16_t *x, const uint16_t *w, float *y, int M, int N, int kdim) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    const int tiles_n = N / 8, m0 = warp / tiles_n * 16, n0 = warp % tiles_n * 8;
    if (m0 >= M) return;
    const int g = lane >> 2, q = lane & 3, r0 = m0 + g, r1 = r0 + 8, n = n0 + g;
    auto pr = [&](const uint16_t *a, int row, int k) {
        return *reinterpret_cast<const uint32_t *>(a + (size_t)row * kdim + k);
    };
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    for (int s = 0; s < kdim / SEG; s++) {
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        for (int t = 0; t < SEG / 16; t++) {
            if (ORDER == 0) {
                const int k = s * SEG + 16 * t + 2 * q;
                mma_step(acc, pr(x, r0, k), pr(x, r1, k), pr(x, r0, k + 8), pr(x, r1, k + 8),
                         pr(w, n, k), pr(w, n, k + 8));
            } else { // step t: half t % 2 of the 16 bytes at chunk t / 2, + 8q
                const int k = s * SEG + 32 * (t / 2) + 8 * q + 4 * (t % 2);
                mma_step(acc, pr(x, r0, k), pr(x, r1, k), pr(x, r0, k + 2), pr(x, r1, k + 2),
                         pr(w, n, k), pr(w, n, k + 2));
            }
        }
        for (int e = 0; e < 4; e++) v[e] = s == 0 ? acc[e] : __fadd_rn(v[e], acc[e]);
    }
    y[(size_t)r0 * N + n0 + 2 * q] = v[0];
    y[(size_t)r0 * N + n0 + 2 * q + 1] = v[1];
    y[(size_t)r1 * N + n0 + 2 * q] = v[2];
    y[(size_t)r1 * N + n0 + 2 * q + 1] = v[3];
}

// One variant of gemm_wgmma: its layout, ring and distance ahead, and its shared memory.
struct variant {
    const char *name;
    void (*kernel)(const uint16_t *, const uint16_t *, float *, int, int, int);
    int smem, order;
};
template <int SW, int RING, int AHEAD, int ORDER> static variant make_variant(const char *name) {
    variant v = {name, gemm_wgmma<SW, RING, AHEAD, ORDER>, RING * STAGE_BYTES, ORDER};
    CK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));
    return v;
}

int main() {
    const int shapes[][4] = {// M, N, K, name index
                             {2048, 4096, 2560, 0}, {2048, 9728, 2560, 1}, {2048, 2560, 9728, 2},
                             {512, 9728, 2560, 1},  {512, 2560, 9728, 2},  {128, 9728, 2560, 1},
                             {128, 2560, 9728, 2},  {128, 4096, 2560, 0}};
    const char *names[] = {"q_proj", "gate_proj", "down_proj"};
    const variant variants[] = {
        make_variant<0, 4, 2, 0>("plain, 4 stages, 2 ahead"),
        make_variant<1, 4, 2, 0>("swizzled, 4 stages, 2 ahead"),
        make_variant<1, 6, 4, 0>("swizzled, 6 stages, 4 ahead"),
        make_variant<1, 4, 2, 1>("swizzled, 4 stages, 2 ahead, gemm.cu's order (8-byte copies)")};
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed\n");
        return 1;
    }
    printf("µs and TFLOP/s; wgmma variants (bits against ref: elements that differ):\n");
    for (const variant &v : variants) printf("  %s (%d KB of shared memory)\n", v.name, v.smem >> 10);
    for (const auto &sh : shapes) {
        const int M = sh[0], N = sh[1], kdim = sh[2];
        const size_t n = (size_t)M * N;
        const double flop = 2.0 * M * N * kdim;
        uint16_t *x, *w;
        float *yw, *yr, *yc;
        CK(cudaMalloc(&x, (size_t)M * kdim * 2));
        CK(cudaMalloc(&w, (size_t)N * kdim * 2));
        CK(cudaMalloc(&yw, n * 4));
        CK(cudaMalloc(&yr, n * 4));
        CK(cudaMalloc(&yc, n * 4));
        fill<<<1024, 256>>>(x, (size_t)M * kdim, 1u);
        fill<<<1024, 256>>>(w, (size_t)N * kdim, 2u);
        const int warps = M / 16 * (N / 8);
        float *yr1;
        CK(cudaMalloc(&yr1, n * 4));
        const float t_ref = time_us([&] { gemm_ref<0><<<(warps + 7) / 8, 256>>>(x, w, yr, M, N, kdim); }, 3);
        gemm_ref<1><<<(warps + 7) / 8, 256>>>(x, w, yr1, M, N, kdim);
        CK(cudaGetLastError());
        const float one = 1.f, zero = 0.f;
        const float t_cb = time_us(
            [&] {
                cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, kdim, &one, w, CUDA_R_16BF, kdim, x,
                             CUDA_R_16BF, kdim, &zero, yc, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT);
            },
            20);
        printf("%-10s M %5d N %5d K %5d | ref %8.1f %6.1f | cuBLAS %7.1f %6.1f |", names[sh[3]], M, N,
               kdim, t_ref, flop / t_ref * 1e-6, t_cb, flop / t_cb * 1e-6);
        for (const variant &v : variants) {
            CK(cudaMemset(yw, 0xff, n * 4)); // NaN: an unwritten element fails the check
            const dim3 grid(N / TILE, M / TILE);
            const float t = time_us([&] { v.kernel<<<grid, 256, v.smem>>>(x, w, yw, M, N, kdim); }, 20);
            CK(cudaGetLastError());
            printf(" %7.1f %6.1f (%zu)", t, flop / t * 1e-6, bits_differ(yw, v.order ? yr1 : yr, n));
        }
        printf("\n");
        CK(cudaFree(x));
        CK(cudaFree(w));
        CK(cudaFree(yw));
        CK(cudaFree(yr));
        CK(cudaFree(yr1));
        CK(cudaFree(yc));
    }
    cublasDestroy(h);
    return 0;
}
