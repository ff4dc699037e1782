// gpu/digest.cu: row digests on the device (backend.h digest): bit for bit be_digest
// (engine/backend.c) — the position-keyed sum Σ_i mix64((i << 32) | e_i) mod 2^64 finished by
// mix64(h ^ n·0x9e3779b97f4a7c15). Integer addition is associative, so one block per row reduces
// the terms in any order (strided threads, then shuffles, then the warps) and gets the CPU's bits.
#include "cuda_internal.h"

namespace {

constexpr int DG_THREADS = 256;

__device__ __forceinline__ uint64_t mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__global__ void __launch_bounds__(DG_THREADS)
    digest_k(const char *__restrict__ x, int n, int elem_bytes, size_t row_stride,
             uint64_t *__restrict__ digests) {
    __shared__ uint64_t part[DG_THREADS / 32];
    const char *row = x + (size_t)blockIdx.x * row_stride;
    uint64_t h = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        uint32_t e = elem_bytes == 4 ? reinterpret_cast<const uint32_t *>(row)[i]
                                     : reinterpret_cast<const uint16_t *>(row)[i];
        h += mix64(((uint64_t)(uint32_t)i << 32) | e);
    }
    for (int m = 16; m >= 1; m >>= 1) h += __shfl_xor_sync(0xffffffffu, h, m);
    if ((threadIdx.x & 31) == 0) part[threadIdx.x >> 5] = h;
    __syncthreads();
    if (threadIdx.x == 0) {
        uint64_t t = 0;
        for (int w = 0; w < DG_THREADS / 32; w++) t += part[w];
        digests[blockIdx.x] = mix64(t ^ ((uint64_t)n * 0x9e3779b97f4a7c15ull));
    }
}

} // namespace

void cu_digest(void *ctx, const void *x, int rows, int n, int elem_bytes, size_t row_stride,
               uint64_t *digests) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    SG_CHECK(elem_bytes == 2 || elem_bytes == 4, "digest of %d-byte elements", elem_bytes);
    SG_CHECK((uintptr_t)x % (size_t)elem_bytes == 0 && row_stride % (size_t)elem_bytes == 0,
             "digest rows must be aligned to their %d-byte elements", elem_bytes);
    if (rows <= 0) return;
    digest_k<<<(unsigned)rows, DG_THREADS, 0, c->stream>>>(static_cast<const char *>(x), n,
                                                           elem_bytes, row_stride, digests);
    CUDA_CHECK_LAUNCH();
}
