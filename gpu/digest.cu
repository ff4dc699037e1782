// gpu/digest.cu: row digests on the device (backend.h digest): bit for bit be_digest
// (engine/backend.c) — the position-keyed sum Σ_i mix64((i << 32) | e_i) mod 2^64 finished by
// mix64(h ^ n·0x9e3779b97f4a7c15). Integer addition is associative, so the terms may be reduced in
// any order and give the CPU's bits: P blocks per row each sum a strided share (threads, shuffles,
// warps) into a partial, and one warp per row adds the P partials and finishes.
#include "cuda_internal.h"

namespace {

constexpr int DG_THREADS = 256;

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Partial sums: block (p, row) takes the elements i ≡ p·DG_THREADS + t (mod P·DG_THREADS).
__global__ void __launch_bounds__(DG_THREADS)
    digest_partial_k(const char *__restrict__ x, int n, int elem_bytes, size_t row_stride,
                     uint64_t *__restrict__ partials) {
    __shared__ uint64_t part[DG_THREADS / 32];
    const int p = blockIdx.x, P = gridDim.x, row = blockIdx.y;
    const char *xr = x + (size_t)row * row_stride;
    uint64_t h = 0;
    for (int i = p * DG_THREADS + threadIdx.x; i < n; i += P * DG_THREADS) {
        uint32_t e = elem_bytes == 4 ? reinterpret_cast<const uint32_t *>(xr)[i]
                                     : reinterpret_cast<const uint16_t *>(xr)[i];
        h += mix64(((uint64_t)(uint32_t)i << 32) | e);
    }
    for (int m = 16; m >= 1; m >>= 1) h += __shfl_xor_sync(0xffffffffu, h, m);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = h;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint64_t t = 0;
        for (int w = 0; w < DG_THREADS / 32; w++) t += part[w];
        partials[(size_t)row * P + p] = t;
    }
}

// One warp per row: the P partials summed, then the finish.
__global__ void digest_finish_k(const uint64_t *__restrict__ partials, int P, int n,
                                uint64_t *__restrict__ digests) {
    const int row = blockIdx.x;
    uint64_t h = 0;
    for (int p = threadIdx.x; p < P; p += 32) h += partials[(size_t)row * P + p];
    for (int m = 16; m >= 1; m >>= 1) h += __shfl_xor_sync(0xffffffffu, h, m);
    if (threadIdx.x == 0) digests[row] = mix64(h ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull));
}

} // namespace

void cu_digest(void *ctx, const void *x, int rows, int n, int elem_bytes, size_t row_stride,
               uint64_t *digests) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(elem_bytes == 2 || elem_bytes == 4, "digest of %d-byte elements", elem_bytes);
    SG_CHECK((uintptr_t)x % (size_t)elem_bytes == 0 && row_stride % (size_t)elem_bytes == 0,
             "digest rows must be aligned to their %d-byte elements", elem_bytes);
    SG_CHECK(rows <= 65535, "digest rows %d beyond the grid", rows);
    if (rows <= 0) return;
    // Enough blocks to cover the device twice, each with at least 16 elements per thread.
    int P = (n + DG_THREADS * 16 - 1) / (DG_THREADS * 16);
    const int fill = (2 * c->sm_count + rows - 1) / rows;
    P = P < fill ? P : fill;
    P = P < 1 ? 1 : P > 256 ? 256 : P;
    uint64_t *partials = static_cast<uint64_t *>(cuda_scratch(c, (size_t)rows * P * 8));
    digest_partial_k<<<dim3((unsigned)P, (unsigned)rows), DG_THREADS, 0, c->stream>>>(
        static_cast<const char *>(x), n, elem_bytes, row_stride, partials);
    CUDA_CHECK_LAUNCH();
    digest_finish_k<<<(unsigned)rows, 32, 0, c->stream>>>(partials, P, n, digests);
    CUDA_CHECK_LAUNCH();
}
