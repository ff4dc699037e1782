// gpu/elementwise.cu: embedding gather and residual add (backend.h), and the SwiGLU of
// gemm_swiglu's unfused path (gpu/gemm.cu), element by element with the CPU twin's rounding
// points: silu(g) = g / (1.0f + expf(-g)) in fp32 (IEEE division, glibc's expf:
// device_numerics.h d_swiglu), rounded to bf16, times up, rounded; h + x rounded. Bitwise the CPU
// twin's; each element depends only on its own inputs.
#include "cuda_internal.h"
#include "device_numerics.h"
#include "pdl.h"

namespace {

constexpr unsigned EW_THREADS = 256;
constexpr unsigned EW_MAX_BLOCKS = 65535;

__global__ void embed_k(const uint16_t *__restrict__ table, int H, const int32_t *__restrict__ ids,
                        int rows, uint16_t *__restrict__ out) {
    pdl_allow_dependents();
    size_t n = (size_t)rows * H;
    for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < n;
         e += (size_t)gridDim.x * blockDim.x) {
        size_t i = e / (size_t)H, j = e % (size_t)H;
        int id = ids[i];
        if (id < 0) __trap();
        out[e] = table[(size_t)id * H + j];
    }
}

// out may alias gate or up: each element is read before it is written, by the same thread.
__global__ void swiglu_k(const uint16_t *gate, const uint16_t *up, size_t n, uint16_t *out) {
    pdl_allow_dependents();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        out[i] = d_swiglu(gate[i], up[i]);
    }
}

__global__ void add_k(uint16_t *h, const uint16_t *x, size_t n) {
    pdl_allow_dependents();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        h[i] = d_f32_to_bf16(__fadd_rn(d_bf16_to_f32(h[i]), d_bf16_to_f32(x[i])));
}

} // namespace

void cu_embed(void *ctx, const bf16 *table, int H, const int32_t *ids, int rows, bf16 *out) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (rows <= 0) return;
    size_t n = (size_t)rows * H;
    embed_k<<<cu_blocks(n, EW_THREADS, EW_MAX_BLOCKS), EW_THREADS, 0, c->stream>>>(table, H, ids,
                                                                                   rows, out);
    CUDA_CHECK_LAUNCH();
}

void cu_swiglu(void *ctx, const bf16 *gate, const bf16 *up, size_t n, bf16 *out) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (n == 0) return;
    swiglu_k<<<cu_blocks(n, EW_THREADS, EW_MAX_BLOCKS), EW_THREADS, 0, c->stream>>>(gate, up, n,
                                                                                    out);
    CUDA_CHECK_LAUNCH();
}

void cu_add(void *ctx, bf16 *h, const bf16 *x, size_t n) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (n == 0) return;
    add_k<<<cu_blocks(n, EW_THREADS, EW_MAX_BLOCKS), EW_THREADS, 0, c->stream>>>(h, x, n);
    CUDA_CHECK_LAUNCH();
}
