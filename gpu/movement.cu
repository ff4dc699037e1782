// gpu/movement.cu: page copy and row gather / scatter (backend.h page_copy, copy_rows): the
// scratch-page copies before a hedge chain's verify and the winner's copy-back of KV pages and
// tap rows, as device-side copies driven by device index lists (no host round trip). Bytes are
// moved, never values: the result is the CPU twin's memcpy. One block per (page, layer group) or
// per row; 16-byte accesses when every address and size allows it, else 4-byte or 1-byte ones.
// Pages or rows of one call must not overlap (the engine never asks for that).
#include "cuda_internal.h"
#include "pdl.h"

namespace {

template <typename W>
__device__ __forceinline__ void copy_words(char *dst, const char *src, size_t bytes) {
    W *d = reinterpret_cast<W *>(dst);
    const W *s = reinterpret_cast<const W *>(src);
    for (size_t e = threadIdx.x; e < bytes / sizeof(W); e += blockDim.x) d[e] = s[e];
}

// width: 16, 4 or 1 bytes per access, chosen on the host from the alignment of everything.
__device__ __forceinline__ void copy_bytes(char *dst, const char *src, size_t bytes, int width) {
    if (width == 16)
        copy_words<uint4>(dst, src, bytes);
    else if (width == 4)
        copy_words<uint32_t>(dst, src, bytes);
    else
        copy_words<unsigned char>(dst, src, bytes);
}

__global__ void page_copy_k(char *base, size_t group_stride, size_t page_bytes,
                            const int32_t *__restrict__ src, const int32_t *__restrict__ dst,
                            int width) {
    const int i = blockIdx.x, g = blockIdx.y;
    if (src[i] < 0 || dst[i] < 0) __trap();
    char *b = base + (size_t)g * group_stride;
    copy_bytes(b + (size_t)dst[i] * page_bytes, b + (size_t)src[i] * page_bytes, page_bytes, width);
}

__global__ void copy_rows_k(char *dst, size_t dst_stride, const int32_t *__restrict__ dst_idx,
                            const char *src, size_t src_stride, const int32_t *__restrict__ src_idx,
                            size_t row_bytes, int width) {
    pdl_allow_dependents();
    const int i = blockIdx.x;
    long long si = src_idx ? src_idx[i] : i, di = dst_idx ? dst_idx[i] : i;
    if (si < 0 || di < 0) __trap();
    copy_bytes(dst + (size_t)di * dst_stride, src + (size_t)si * src_stride, row_bytes, width);
}

int width_of(uintptr_t a, uintptr_t b, size_t s1, size_t s2, size_t bytes) {
    uintptr_t all = a | b | (uintptr_t)s1 | (uintptr_t)s2 | (uintptr_t)bytes;
    return all % 16 == 0 ? 16 : all % 4 == 0 ? 4 : 1;
}

} // namespace

void cu_page_copy(void *ctx, void *base, int n_groups, size_t group_stride, size_t page_bytes,
                  const int32_t *src, const int32_t *dst, int n) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (n <= 0 || n_groups <= 0 || page_bytes == 0) return;
    SG_CHECK(n_groups <= 65535, "page copy over %d groups", n_groups);
    int width = width_of((uintptr_t)base, 0, group_stride, 0, page_bytes);
    page_copy_k<<<dim3((unsigned)n, (unsigned)n_groups), 256, 0, c->stream>>>(
        static_cast<char *>(base), group_stride, page_bytes, src, dst, width);
    CUDA_CHECK_LAUNCH();
}

void cu_copy_rows(void *ctx, void *dst, size_t dst_stride, const int32_t *dst_idx, const void *src,
                  size_t src_stride, const int32_t *src_idx, int rows, size_t row_bytes) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (rows <= 0 || row_bytes == 0) return;
    int width = width_of((uintptr_t)dst, (uintptr_t)src, dst_stride, src_stride, row_bytes);
    copy_rows_k<<<(unsigned)rows, 256, 0, c->stream>>>(static_cast<char *>(dst), dst_stride,
                                                       dst_idx, static_cast<const char *>(src),
                                                       src_stride, src_idx, row_bytes, width);
    CUDA_CHECK_LAUNCH();
}
