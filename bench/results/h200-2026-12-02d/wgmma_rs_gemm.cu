// wgmma_rs_gemm.cu (an experiment's record, not built by CMake): a wgmma kernel of gemm.cu's
// contract order as it is today (no change to the mma.sync kernels), by moving the placement the
// contract needs from the weights to the activations:
//   - the weights are wgmma's A operand, from registers: each warp reads its 16 rows' fragments
//     from a natural shared-memory stage by 16-byte loads, lane q at chunk + 8q, exactly as
//     gemm.cu's mma.sync kernels do (step 0 takes the first 8 bytes, step 1 the second);
//   - the activations are B, from shared memory (128-byte swizzle), which wgmma reads as 16
//     consecutive logical k per step. So x is first rewritten once in global memory (permute_x)
//     with each 32-k chunk's k placed where the weights' registers put them: pair d (2 bf16) of
//     the permuted chunk is pair 4q + 2·sub + hi of the natural one (d = 8·sub + 4·hi + q).
//     x is M × K: a small share of a product's bytes from 128 rows.
// So each wgmma k-step sums the contract's set of 16 products (in other positions within the
// step, which leaves the sum's bits unchanged: wgmma_bits, sixth 2026-12-01 session), and the
// segments are folded as gemm.cu does (the segment drained, then v = v + seg).
// y [M][N] fp32 = x [M][K] · w [N][K]ᵀ, bf16 operands. A block: 128 weight rows (two warpgroups of
// m64n128k16, 64 rows each) × 128 rows of x, stages of 64 k in a ring filled by cp.async.
// Prints per shape: µs and TFLOP/s of the reference, cuBLAS, the permute pass and each variant
// (with the pass), and the elements whose bits differ from the reference.
// Needs M % 128 == 0, N % 128 == 0, K % 256 == 0.
// nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 wgmma_rs_gemm.cu -lcublas -o wrs
#include <cublas_v2.h>

#include "../h200-2026-12-01f/wgmma_test.cuh"

constexpr int TILE = 128, KT = 64, SEG = 256;
constexpr int OPERAND_BYTES = TILE * KT * 2; // one operand's stage: 16 KB
constexpr int STAGE_BYTES = 2 * OPERAND_BYTES; // x' then w

// x' [M][K]: each 32-k chunk's 16 pairs permuted (above). A thread per chunk.
__global__ void permute_x(const uint16_t *x, uint16_t *xp, size_t chunks) {
    const size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= chunks) return;
    const uint4 *src = reinterpret_cast<const uint4 *>(x) + 4 * i;
    uint32_t in[16], out[16];
#pragma unroll
    for (int v = 0; v < 4; v++) {
        const uint4 u = src[v];
        in[4 * v] = u.x, in[4 * v + 1] = u.y, in[4 * v + 2] = u.z, in[4 * v + 3] = u.w;
    }
#pragma unroll
    for (int d = 0; d < 16; d++) out[d] = in[4 * (d & 3) + 2 * (d >> 3) + ((d >> 2) & 1)];
    uint4 *dst = reinterpret_cast<uint4 *>(xp) + 4 * i;
#pragma unroll
    for (int v = 0; v < 4; v++) dst[v] = make_uint4(out[4 * v], out[4 * v + 1], out[4 * v + 2], out[4 * v + 3]);
}

// Stage layouts (rows of 64 k = 128 bytes, 16-byte piece p of row r):
//   x' (B, read by wgmma): 128-byte swizzle, piece p at p ^ (r % 8); a k-step's descriptor at 32j;
//   w (A, read by the warps): piece p at p ^ 4·(r % 2), so a quarter-warp's 16-byte reads (rows g
//     and g + 1 at the same pieces) fall in distinct banks.
__device__ __forceinline__ int x_piece(int r, int p) { return r * 128 + ((p ^ (r & 7)) << 4); }
__device__ __forceinline__ int w_piece(int r, int p) { return r * 128 + ((p ^ ((r & 1) << 2)) << 4); }

// The 64 k from k0 of rows row0 .. row0 + 127 of a [rows][K] operand into a stage's operand.
// Warp task T (4 a warp): row group T / 2, pieces 4·(T % 2) .. + 3; lane l takes row l % 8 of the
// group and piece l / 8 of the four.
template <bool X>
__device__ __forceinline__ void load_stage(const uint16_t *a, int kdim, int row0, int k0,
                                           unsigned char *dst) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
#pragma unroll
    for (int u = 0; u < 4; u++) {
        const int T = warp * 4 + u, p = 4 * (T & 1) + (lane >> 3), r = 8 * (T >> 1) + (lane & 7);
        const uint16_t *src = a + (size_t)(row0 + r) * kdim + k0 + 8 * p;
        const uint32_t s =
            (uint32_t)__cvta_generic_to_shared(dst + (X ? x_piece(r, p) : w_piece(r, p)));
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src));
    }
}

// d [64] = A (64 × 16, registers) · B (16 × 128, shared memory) + (accumulate ? d : nothing).
__device__ __forceinline__ void wg_rs_m64n128(float d[64], uint32_t a0, uint32_t a1, uint32_t a2,
                                              uint32_t a3, uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1, 0;\n}\n"
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
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void fence_operands(float d[64]) {
#pragma unroll
    for (int i = 0; i < 64; i++) asm volatile("" : "+f"(d[i])::"memory");
}

// Block (blockIdx.x, blockIdx.y): ROWS_FAST ? (x-row tile x, weight tile y) : (weight tile x,
// x-row tile y). The stage t of the ring: wait, barrier, refill t + AHEAD, the warps' A fragments
// (two chunks: rows r and r + 8), four k-steps; one wgmma group in flight within a segment, the
// segment drained and folded at its end.
template <int RING, int AHEAD, bool ROWS_FAST>
__global__ void __launch_bounds__(256, 1)
    gemm_wgmma_rs(const uint16_t *xp, const uint16_t *w, float *y, int M, int N, int kdim) {
    static_assert(AHEAD <= RING - 2, "a refill must not hit the stage a wgmma group may read");
    extern __shared__ __align__(1024) unsigned char smem[];
    const int wg = threadIdx.x >> 7, warp4 = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31;
    const int g = lane >> 2, q = lane & 3;
    const int row0 = (ROWS_FAST ? blockIdx.x : blockIdx.y) * TILE;
    const int col0 = (ROWS_FAST ? blockIdx.y : blockIdx.x) * TILE;
    const int stages = kdim / KT, wr = 64 * wg + 16 * warp4 + g; // the lane's weight row (and + 8)
    float acc[64], total[64];
    auto issue = [&](int t) {
        if (t < stages) {
            unsigned char *st = smem + (t % RING) * STAGE_BYTES;
            load_stage<true>(xp, kdim, row0, t * KT, st);
            load_stage<false>(w, kdim, col0, t * KT, st + OPERAND_BYTES);
        }
        asm volatile("cp.async.commit_group;");
    };
    for (int t = 0; t < AHEAD; t++) issue(t);
    for (int seg = 0; seg < kdim / SEG; seg++) {
#pragma unroll
        for (int in_seg = 0; in_seg < SEG / KT; in_seg++) {
            const int t = seg * (SEG / KT) + in_seg;
            asm volatile("cp.async.wait_group %0;" ::"n"(AHEAD - 1));
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads();
            issue(t + AHEAD);
            const unsigned char *st = smem + (t % RING) * STAGE_BYTES;
            const unsigned char *ws = st + OPERAND_BYTES;
            uint4 a[2][2]; // [chunk][row r, r + 8]
#pragma unroll
            for (int c = 0; c < 2; c++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    a[c][h] = *reinterpret_cast<const uint4 *>(ws + w_piece(wr + 8 * h, 4 * c + q));
            fence_operands(acc);
            wg_begin();
#pragma unroll
            for (int c = 0; c < 2; c++) {
                const uint64_t d0 = desc(st + 64 * c, 16, 1024) | (1ull << 62);
                const uint64_t d1 = desc(st + 64 * c + 32, 16, 1024) | (1ull << 62);
                wg_rs_m64n128(acc, a[c][0].x, a[c][1].x, a[c][0].y, a[c][1].y, d0, in_seg != 0 || c != 0);
                wg_rs_m64n128(acc, a[c][0].z, a[c][1].z, a[c][0].w, a[c][1].w, d1, 1);
            }
            asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
            fence_operands(acc);
            if (in_seg < SEG / KT - 1) {
                asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
            } else {
                asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
#pragma unroll
                for (int i = 0; i < 64; i++) total[i] = seg == 0 ? acc[i] : __fadd_rn(total[i], acc[i]);
            }
        }
    }
    // d[4j .. 4j + 3]: weight rows wr (0, 1) and wr + 8 (2, 3), x rows 8j + 2q and + 1.
    const int n = col0 + wr;
#pragma unroll
    for (int j = 0; j < TILE / 8; j++) {
        const int m = row0 + 8 * j + 2 * q;
        y[(size_t)m * N + n] = total[4 * j];
        y[(size_t)(m + 1) * N + n] = total[4 * j + 1];
        y[(size_t)m * N + n + 8] = total[4 * j + 2];
        y[(size_t)(m + 1) * N + n + 8] = total[4 * j + 3];
    }
}

// The reference: gemm.cu's chain by mma.sync, a warp per 16 × 8 tile of y, operands straight from
// global memory (lane q's 16 bytes at chunk + 8q, halves to steps 0 and 1).
__global__ void gemm_ref(const uint16_t *x, const uint16_t *w, float *y, int M, int N, int kdim) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
    const int tiles_n = N / 8, m0 = warp / tiles_n * 16, n0 = warp % tiles_n * 8;
    if (m0 >= M) return;
    const int g = lane >> 2, q = lane & 3, r0 = m0 + g, r1 = r0 + 8, n = n0 + g;
    auto frag = [&](const uint16_t *a, int row, int k) {
        return *reinterpret_cast<const uint4 *>(a + (size_t)row * kdim + k);
    };
    float v[4] = {0.f, 0.f, 0.f, 0.f};
    for (int s = 0; s < kdim / SEG; s++) {
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        for (int c = 0; c < SEG / 32; c++) {
            const int k = s * SEG + 32 * c + 8 * q;
            const uint4 lo = frag(x, r0, k), hi = frag(x, r1, k), b = frag(w, n, k);
            mma_step(acc, lo.x, hi.x, lo.y, hi.y, b.x, b.y);
            mma_step(acc, lo.z, hi.z, lo.w, hi.w, b.z, b.w);
        }
        for (int e = 0; e < 4; e++) v[e] = s == 0 ? acc[e] : __fadd_rn(v[e], acc[e]);
    }
    y[(size_t)r0 * N + n0 + 2 * q] = v[0];
    y[(size_t)r0 * N + n0 + 2 * q + 1] = v[1];
    y[(size_t)r1 * N + n0 + 2 * q] = v[2];
    y[(size_t)r1 * N + n0 + 2 * q + 1] = v[3];
}

struct variant {
    const char *name;
    void (*kernel)(const uint16_t *, const uint16_t *, float *, int, int, int);
    int smem;
    bool rows_fast;
};
template <int RING, int AHEAD, bool ROWS_FAST> static variant make_variant(const char *name) {
    variant v = {name, gemm_wgmma_rs<RING, AHEAD, ROWS_FAST>, RING * STAGE_BYTES, ROWS_FAST};
    CK(cudaFuncSetAttribute(v.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, v.smem));
    return v;
}

int main() {
    const int shapes[][4] = {// M, N, K, name index
                             {2048, 4096, 2560, 0}, {2048, 9728, 2560, 1}, {2048, 2560, 9728, 2},
                             {512, 9728, 2560, 1},  {512, 2560, 9728, 2},  {128, 9728, 2560, 1},
                             {128, 2560, 9728, 2},  {128, 4096, 2560, 0}};
    const char *names[] = {"q_proj", "gate_proj", "down_proj"};
    const variant variants[] = {make_variant<4, 2, false>("4 stages, 2 ahead, weight tiles fast"),
                                make_variant<4, 2, true>("4 stages, 2 ahead, x-row tiles fast"),
                                make_variant<6, 4, true>("6 stages, 4 ahead, x-row tiles fast")};
    cublasHandle_t h;
    if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublasCreate failed\n");
        return 1;
    }
    printf("µs and TFLOP/s (wgmma variants with the permute pass; in brackets the elements whose "
           "bits differ from ref):\n");
    for (const variant &v : variants) printf("  %s (%d KB of shared memory)\n", v.name, v.smem >> 10);
    for (const auto &sh : shapes) {
        const int M = sh[0], N = sh[1], kdim = sh[2];
        const size_t n = (size_t)M * N, chunks = (size_t)M * kdim / 32;
        const double flop = 2.0 * M * N * kdim;
        uint16_t *x, *xp, *w;
        float *yw, *yr, *yc;
        CK(cudaMalloc(&x, (size_t)M * kdim * 2));
        CK(cudaMalloc(&xp, (size_t)M * kdim * 2));
        CK(cudaMalloc(&w, (size_t)N * kdim * 2));
        CK(cudaMalloc(&yw, n * 4));
        CK(cudaMalloc(&yr, n * 4));
        CK(cudaMalloc(&yc, n * 4));
        fill<<<1024, 256>>>(x, (size_t)M * kdim, 1u);
        fill<<<1024, 256>>>(w, (size_t)N * kdim, 2u);
        const int warps = M / 16 * (N / 8);
        const float t_ref = time_us([&] { gemm_ref<<<(warps + 7) / 8, 256>>>(x, w, yr, M, N, kdim); }, 3);
        CK(cudaGetLastError());
        const float one = 1.f, zero = 0.f;
        const float t_cb = time_us(
            [&] {
                cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, N, M, kdim, &one, w, CUDA_R_16BF, kdim, x,
                             CUDA_R_16BF, kdim, &zero, yc, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                             CUBLAS_GEMM_DEFAULT);
            },
            20);
        auto permute = [&] { permute_x<<<(unsigned)((chunks + 255) / 256), 256>>>(x, xp, chunks); };
        const float t_perm = time_us(permute, 20);
        CK(cudaGetLastError());
        printf("%-10s M %5d N %5d K %5d | ref %8.1f %6.1f | cuBLAS %7.1f %6.1f | permute %5.1f |",
               names[sh[3]], M, N, kdim, t_ref, flop / t_ref * 1e-6, t_cb, flop / t_cb * 1e-6, t_perm);
        for (const variant &v : variants) {
            CK(cudaMemset(yw, 0xff, n * 4)); // NaN: an unwritten element fails the check
            const dim3 grid = v.rows_fast ? dim3(M / TILE, N / TILE) : dim3(N / TILE, M / TILE);
            const float t = time_us(
                [&] {
                    permute();
                    v.kernel<<<grid, 256, v.smem>>>(xp, w, yw, M, N, kdim);
                },
                20);
            CK(cudaGetLastError());
            printf(" %7.1f %6.1f (%zu)", t, flop / t * 1e-6, bits_differ(yw, yr, n));
        }
        printf("\n");
        CK(cudaFree(x));
        CK(cudaFree(xp));
        CK(cudaFree(w));
        CK(cudaFree(yw));
        CK(cudaFree(yr));
        CK(cudaFree(yc));
    }
    cublasDestroy(h);
    return 0;
}
