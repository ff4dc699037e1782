// gpu/cuda_internal.h: shared by the units of gpu/ (C++ only): the backend's context and the entry
// points of each kernel unit, with the op signatures of engine/backend.h. The op table itself is
// assembled in gpu/cuda_backend.cu.
#ifndef SG_GPU_CUDA_INTERNAL_H
#define SG_GPU_CUDA_INTERNAL_H

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "cuda_check.h"

extern "C" {
#include "engine/backend.h"
}

struct cuda_ctx {
    int sm_count;
    cudaStream_t stream;
    // Scratch for two-stage selections (top2.cu, markov.cu) and gemm_swiglu's unfused path
    // (gemm.cu); park: gemm_tiled's parked segment values (gemm.cu), a buffer of its own since a
    // GEMM's x or y may be in the scratch; xperm: gemm_wgmma's permuted x (gemm.cu), for the same
    // reason. All grown on the host before a launch.
    void *scratch;
    size_t scratch_bytes;
    void *park;
    size_t park_bytes;
    void *xperm;
    size_t xperm_bytes;
    void **old_scratch; // superseded buffers of all three: captured graphs may still use them;
    int n_old_scratch;  // freed when the backend is destroyed
    cudaEvent_t t0, t1;
    void *cublas; // cublasHandle_t, made on first use of cuda_vendor_gemm
    int att_stored_keys; // attention scores kept in shared memory per row and head at most; -1:
                         // attention.cu's choice (att_stored)
    int att_teams;       // attention heads per block at most, 0: chosen by rows (attention.cu)
    int gemm_band;       // gemm_band's rows: 0 off, 1 wide products, 2 every product (gemm.cu)
    int gemm_from_end;   // every product's column tiles from the last one down (gemm.cu)
    int gemm_wgmma;      // gemm_wgmma's products: 0 none (off, or not built for the device), 1
                         // those it is faster for, 2 every one it can take (gemm.cu)
    int w2_from_end;     // the next Markov step reads w2 from its end (markov.cu)
};

// Scratch of at least `bytes`. A smaller one is replaced but stays allocated (graphs captured with
// it may still run) until the backend is destroyed; growing during a stream capture is an internal
// error (SG_CHECK): the eager run of the same ops sizes it first.
void *cuda_scratch(cuda_ctx *c, size_t bytes);
// The same for gemm_tiled's parked segment values and gemm_wgmma's permuted x (buffers of their
// own).
void *cuda_gemm_park(cuda_ctx *c, size_t bytes);
void *cuda_gemm_xperm(cuda_ctx *c, size_t bytes);

// A measurement or test switch from the environment: `dflt` when unset, else clamped to lo .. hi.
int cu_env_switch(const char *name, int dflt, int lo, int hi);

// Launches kernel k as a programmatic dependent of the kernel before it on the stream (pdl.h);
// SG_CUDA_PDL=0 in the environment launches it the ordinary way (to measure what PDL buys).
template <typename... P>
void launch_dependent(const cuda_ctx *c, void (*k)(P...), dim3 grid, int threads, size_t smem,
                      P... args) {
    static const int pdl = cu_env_switch("SG_CUDA_PDL", 1, 0, 1);
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr.val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = c->stream;
    cfg.attrs = &attr;
    cfg.numAttrs = pdl ? 1 : 0;
    CUDA_CHECK(cudaLaunchKernelEx(&cfg, k, args...));
}

// gemm.cu (cu_gemm_band_setting, cu_gemm_from_end_setting, cu_gemm_wgmma_setting: a new
// context's gemm_band, gemm_from_end and gemm_wgmma)
int cu_gemm_band_setting(void);
int cu_gemm_from_end_setting(void);
int cu_gemm_wgmma_setting(void);
void cu_gemm(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y, int out_f32);
void cu_gemm_from_end(cuda_ctx *c, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                      int out_f32, int from_end); // from_end: column tiles last to first
void cu_gemm_group(void *ctx, const bf16 *x, int M, int K, int n, const bf16 *const *w,
                   const int *N, bf16 *const *y);
void cu_gemm_swiglu(void *ctx, const bf16 *x, int M, int K, const bf16 *w_gate, const bf16 *w_up,
                    int N, bf16 *out);

// norms.cu
void cu_rmsnorm(void *ctx, const bf16 *x, int M, int D, const bf16 *w, float eps, bf16 *y);
void cu_add_rmsnorm(void *ctx, bf16 *h, const bf16 *x, int M, int D, const bf16 *w, float eps,
                    bf16 *y);
void cu_qk_norm_rope_store(void *ctx, const be_paging *pg, bf16 *k_pages, bf16 *v_pages,
                           const int32_t *row_table, const int32_t *pos, int rows, bf16 *q, int nq,
                           int n_heads, const bf16 *q_norm, bf16 *k, const bf16 *v,
                           const bf16 *k_norm, float eps, const bf16 *cos, const bf16 *sin);

// elementwise.cu
void cu_embed(void *ctx, const bf16 *table, int H, const int32_t *ids, int rows, bf16 *out);
void cu_swiglu(void *ctx, const bf16 *gate, const bf16 *up, size_t n, bf16 *out); // gemm_swiglu
void cu_add(void *ctx, bf16 *h, const bf16 *x, size_t n);

// attention.cu (cu_attention_init: once per process, before the first attention;
// cu_attention_stored_keys, cu_attention_teams: a new context's att_stored_keys, att_teams)
void cu_attention_init(void);
int cu_attention_stored_keys(void);
int cu_attention_teams(void);
void cu_attention(void *ctx, const be_paging *pg, const bf16 *k_pages, const bf16 *v_pages,
                  const int32_t *row_table, const int32_t *n_keys, const bf16 *q, int rows,
                  int n_heads, bf16 *out);

// top2.cu
void cu_argmax(void *ctx, const float *x, int rows, int n, size_t row_stride, int32_t *ids);
void cu_top2(void *ctx, const float *x, int rows, int n, size_t row_stride, int32_t *ids,
             float *vals);

// markov.cu
void cu_markov_step(void *ctx, const float *U, int V, const bf16 *w1, const bf16 *w2, int r,
                    int rows, const int32_t *chain_row, const int32_t *u_row, const int32_t *start,
                    const int32_t *limit, int s, int32_t *tokens, int tok_stride, int32_t *top_ids,
                    float *top_vals);
void cu_ladder_force(void *ctx, int32_t *tokens, int tok_stride, const int32_t *top_ids, int rows,
                     const int32_t *chain_row, const int32_t *a_row, const int32_t *branch);

// movement.cu
void cu_page_copy(void *ctx, void *base, int n_groups, size_t group_stride, size_t page_bytes,
                  const int32_t *src, const int32_t *dst, int n);
void cu_copy_rows(void *ctx, void *dst, size_t dst_stride, const int32_t *dst_idx, const void *src,
                  size_t src_stride, const int32_t *src_idx, int rows, size_t row_bytes);

// digest.cu
void cu_digest(void *ctx, const void *x, int rows, int n, int elem_bytes, size_t row_stride,
               uint64_t *digests);

// Grid-size helper: blocks of `threads` for n items, capped (kernels loop over the rest).
static inline unsigned cu_blocks(size_t n, unsigned threads, unsigned cap) {
    size_t b = (n + threads - 1) / threads;
    if (b < 1) b = 1;
    return (unsigned)(b < cap ? b : cap);
}

#endif
