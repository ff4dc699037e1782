// gpu/cuda_backend.cu: the CUDA backend's op table and its device services (cuda_backend.h):
// device discovery (a missing driver, device or kernel image is SG_EXIT_NO_GPU, never a crash),
// memory on one stream, scratch for the two-stage selections (kept alive while graphs may use it),
// graph capture (the backend.h hooks, which engine/op_graphs.c replays, and the bring-up tool's
// capture of an op), event timing and cuBLAS for the bring-up tool. The kernels live in one unit
// per op family (gemm, norms, elementwise, attention, top2, markov, movement, digest).
#include <cublas_v2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

extern "C" {
#include "cuda_backend.h"
}

#ifndef SG_CUDA_ARCHS
#define SG_CUDA_ARCHS "unknown"
#endif

namespace {

// A kernel of this library whose attributes tell whether the device can run our image at all.
__global__ void probe_k(int *p) {
    if (p) *p = 0;
}

int pick_device(int *device) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return sg_fail(SG_EXIT_NO_GPU, "no usable CUDA device: %s (%s)", cudaGetErrorString(e),
                       cudaGetErrorName(e));
    }
    if (n < 1) return sg_fail(SG_EXIT_NO_GPU, "no usable CUDA device: the driver reports none");
    int d = 0;
    const char *env = getenv("SG_CUDA_DEVICE");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v < 0 || v >= n)
            return sg_fail(SG_EXIT_NO_GPU, "SG_CUDA_DEVICE=%s: not a device index below %d", env,
                           n);
        d = (int)v;
    }
    e = cudaSetDevice(d);
    if (e != cudaSuccess) {
        cudaGetLastError();
        return sg_fail(SG_EXIT_NO_GPU, "CUDA device %d is not usable: %s", d,
                       cudaGetErrorString(e));
    }
    cudaFuncAttributes attr;
    e = cudaFuncGetAttributes(&attr, probe_k);
    if (e != cudaSuccess) {
        cudaGetLastError();
        cudaDeviceProp prop;
        int ok = cudaGetDeviceProperties(&prop, d) == cudaSuccess;
        cudaGetLastError();
        return sg_fail(SG_EXIT_NO_GPU,
                       "CUDA device %d (compute capability %d.%d) cannot run this build (compiled "
                       "for %s): %s; rebuild with CMAKE_CUDA_ARCHITECTURES naming it",
                       d, ok ? prop.major : 0, ok ? prop.minor : 0, SG_CUDA_ARCHS,
                       cudaGetErrorString(e));
    }
    *device = d;
    return SG_OK;
}

cuda_ctx *ctx_of(const sg_backend *be) { return static_cast<cuda_ctx *>(be->ctx); }

// ---- memory ----

void *cu_alloc(void *ctx, size_t bytes) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    void *p = NULL;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
        cudaGetLastError(); // out of memory is an answer, not a fault
        return NULL;
    }
    CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, c->stream));
    return p;
}

void cu_free(void *ctx, void *p) {
    (void)ctx;
    if (p) CUDA_CHECK(cudaFree(p)); // waits for the work that may still use p
}

// From pageable memory the copy has consumed the host buffer when the call returns.
void cu_upload(void *ctx, void *dst, const void *src, size_t bytes) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream));
}

void cu_download(void *ctx, void *dst, const void *src, size_t bytes) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream));
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
}

void cu_copy(void *ctx, void *dst, const void *src, size_t bytes) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    if (bytes) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream));
}

void cu_destroy(sg_backend *be) {
    cuda_ctx *c = ctx_of(be);
    CUDA_CHECK(cudaStreamSynchronize(c->stream));
    if (c->cublas) cublasDestroy(static_cast<cublasHandle_t>(c->cublas));
    if (c->scratch) CUDA_CHECK(cudaFree(c->scratch));
    if (c->park) CUDA_CHECK(cudaFree(c->park));
    if (c->xperm) CUDA_CHECK(cudaFree(c->xperm));
    for (int i = 0; i < c->n_old_scratch; i++) CUDA_CHECK(cudaFree(c->old_scratch[i]));
    free(c->old_scratch);
    CUDA_CHECK(cudaEventDestroy(c->t0));
    CUDA_CHECK(cudaEventDestroy(c->t1));
    CUDA_CHECK(cudaStreamDestroy(c->stream));
    free(c);
    free(be);
}

} // namespace

int cu_env_switch(const char *name, int dflt, int lo, int hi) {
    const char *env = getenv(name);
    const long v = env && *env ? strtol(env, NULL, 10) : dflt;
    return v < lo ? lo : v > hi ? hi : (int)v;
}

namespace {

// A captured graph keeps the buffer address it was captured with, so a superseded buffer stays
// allocated until the backend is destroyed (at most about the final size again, as it doubles).
void *grow_buffer(cuda_ctx *c, void *&buf, size_t &have, size_t bytes, const char *what) {
    if (bytes <= have) return buf;
    cudaStreamCaptureStatus cs;
    CUDA_CHECK(cudaStreamIsCapturing(c->stream, &cs));
    SG_CHECK(cs == cudaStreamCaptureStatusNone,
             "%s must grow from %zu to %zu bytes during a graph capture: run the captured ops "
             "eagerly first", what, have, bytes);
    size_t want = have * 2 > bytes ? have * 2 : bytes;
    if (buf) {
        void **old = static_cast<void **>(sg_calloc((size_t)c->n_old_scratch + 1, sizeof *old));
        if (c->n_old_scratch) memcpy(old, c->old_scratch, sizeof *old * (size_t)c->n_old_scratch);
        old[c->n_old_scratch++] = buf;
        free(c->old_scratch);
        c->old_scratch = old;
    }
    CUDA_CHECK(cudaMalloc(&buf, want));
    have = want;
    return buf;
}

} // namespace

void *cuda_scratch(cuda_ctx *c, size_t bytes) {
    return grow_buffer(c, c->scratch, c->scratch_bytes, bytes, "scratch");
}

void *cuda_gemm_park(cuda_ctx *c, size_t bytes) {
    return grow_buffer(c, c->park, c->park_bytes, bytes, "the GEMM park");
}

void *cuda_gemm_xperm(cuda_ctx *c, size_t bytes) {
    return grow_buffer(c, c->xperm, c->xperm_bytes, bytes, "the GEMM's permuted x");
}

// ---- graph capture (backend.h hooks; also the bring-up tool's capture_begin / end_replay) ----

namespace {

void cu_capture_begin(void *ctx) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    CUDA_CHECK(cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal));
}

void *cu_capture_end(void *ctx) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CUDA_CHECK(cudaStreamEndCapture(c->stream, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph)); // the executable graph is independent of it
    return exec;
}

void cu_graph_launch(void *ctx, void *graph) {
    cuda_ctx *c = static_cast<cuda_ctx *>(ctx);
    CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(graph), c->stream));
}

// An executable graph still running is freed when it completes.
void cu_graph_destroy(void *ctx, void *graph) {
    (void)ctx;
    CUDA_CHECK(cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(graph)));
}

} // namespace

extern "C" int cuda_device_query(cuda_device_info *out) {
    memset(out, 0, sizeof *out);
    int d;
    SG_TRY(pick_device(&d));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, d));
    snprintf(out->name, sizeof out->name, "%s", prop.name);
    out->cc_major = prop.major;
    out->cc_minor = prop.minor;
    out->sm_count = prop.multiProcessorCount;
    out->mem_bytes = prop.totalGlobalMem;
    out->l2_bytes = (size_t)prop.l2CacheSize;
    CUDA_CHECK(cudaRuntimeGetVersion(&out->runtime_version));
    CUDA_CHECK(cudaDriverGetVersion(&out->driver_version));
    snprintf(out->built_for, sizeof out->built_for, "%s", SG_CUDA_ARCHS);
    cudaFuncAttributes attr;
    CUDA_CHECK(cudaFuncGetAttributes(&attr, probe_k));
    out->kernel_arch = attr.binaryVersion;
    return SG_OK;
}

extern "C" int cuda_backend_create(sg_backend **out) {
    *out = NULL;
    int d;
    SG_TRY(pick_device(&d));
    cuda_ctx *c = static_cast<cuda_ctx *>(sg_calloc(1, sizeof *c));
    CUDA_CHECK(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, d));
    CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&c->t0));
    CUDA_CHECK(cudaEventCreate(&c->t1));
    cuda_scratch(c, (size_t)1 << 20);
    cu_attention_init();
    c->att_stored_keys = cu_attention_stored_keys();
    c->att_teams = cu_attention_teams();
    c->gemm_band = cu_gemm_band_setting();
    c->gemm_from_end = cu_gemm_from_end_setting();
    c->gemm_wgmma = cu_gemm_wgmma_setting();
    sg_backend *be = static_cast<sg_backend *>(sg_calloc(1, sizeof *be));
    be->name = "cuda";
    be->ctx = c;
    be->alloc = cu_alloc;
    be->free = cu_free;
    be->upload = cu_upload;
    be->download = cu_download;
    be->copy = cu_copy;
    be->embed = cu_embed;
    be->gemm = cu_gemm;
    be->gemm_group = cu_gemm_group;
    be->rmsnorm = cu_rmsnorm;
    be->add_rmsnorm = cu_add_rmsnorm;
    be->qk_norm_rope_store = cu_qk_norm_rope_store;
    be->attention = cu_attention;
    be->gemm_swiglu = cu_gemm_swiglu;
    be->add = cu_add;
    be->argmax = cu_argmax;
    be->top2 = cu_top2;
    be->markov_step = cu_markov_step;
    be->ladder_force = cu_ladder_force;
    be->page_copy = cu_page_copy;
    be->copy_rows = cu_copy_rows;
    be->digest = cu_digest;
    be->destroy = cu_destroy;
    be->capture_begin = cu_capture_begin;
    be->capture_end = cu_capture_end;
    be->graph_launch = cu_graph_launch;
    be->graph_destroy = cu_graph_destroy;
    *out = be;
    return SG_OK;
}

extern "C" void cuda_backend_sync(const sg_backend *be) {
    CUDA_CHECK(cudaStreamSynchronize(ctx_of(be)->stream));
}

extern "C" void cuda_capture_begin(const sg_backend *be) {
    CUDA_CHECK(cudaStreamSynchronize(ctx_of(be)->stream));
    cu_capture_begin(be->ctx);
}

extern "C" void cuda_capture_end_replay(const sg_backend *be) {
    void *exec = cu_capture_end(be->ctx);
    cu_graph_launch(be->ctx, exec);
    CUDA_CHECK(cudaStreamSynchronize(ctx_of(be)->stream));
    cu_graph_destroy(be->ctx, exec);
}

extern "C" void cuda_timer_begin(const sg_backend *be) {
    cuda_ctx *c = ctx_of(be);
    CUDA_CHECK(cudaEventRecord(c->t0, c->stream));
}

extern "C" double cuda_timer_end_us(const sg_backend *be) {
    cuda_ctx *c = ctx_of(be);
    CUDA_CHECK(cudaEventRecord(c->t1, c->stream));
    CUDA_CHECK(cudaEventSynchronize(c->t1));
    float ms = 0.f;
    CUDA_CHECK(cudaEventElapsedTime(&ms, c->t0, c->t1));
    return (double)ms * 1000.0;
}

#define CUBLAS_CHECK(call)                                                                         \
    do {                                                                                           \
        cublasStatus_t cublas_st_ = (call);                                                        \
        if (cublas_st_ != CUBLAS_STATUS_SUCCESS)                                                   \
            sg_check_failed(__FILE__, __LINE__, #call, "cuBLAS error %d: %s", (int)cublas_st_,     \
                            cublasGetStatusString(cublas_st_));                                    \
    } while (0)

extern "C" void cuda_vendor_gemm(const sg_backend *be, const bf16 *x, int M, int K, const bf16 *w,
                                 int N, void *y, int out_f32) {
    cuda_ctx *c = ctx_of(be);
    if (!c->cublas) {
        cublasHandle_t h;
        CUBLAS_CHECK(cublasCreate(&h));
        CUBLAS_CHECK(cublasSetStream(h, c->stream));
        c->cublas = h;
    }
    const float alpha = 1.0f, beta = 0.0f;
    // Row-major y[M, N] = x[M, K]·w[N, K]ᵀ is column-major yᵀ[N, M] = wᵀ-op(w)[N, K]·xᵀ[K, M].
    CUBLAS_CHECK(cublasGemmEx(static_cast<cublasHandle_t>(c->cublas), CUBLAS_OP_T, CUBLAS_OP_N, N,
                              M, K, &alpha, w, CUDA_R_16BF, K, x, CUDA_R_16BF, K, &beta, y,
                              out_f32 ? CUDA_R_32F : CUDA_R_16BF, N, CUBLAS_COMPUTE_32F,
                              CUBLAS_GEMM_DEFAULT));
}
