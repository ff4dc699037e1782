// gpu/cuda_backend.h: the CUDA backend of the engine (design.md §2) and the few device services
// the bring-up tool (`sparkgate ops`, gates/ops.h) needs beyond the op table: device facts, stream
// synchronisation, CUDA-graph capture of an op, event timing, and cuBLAS for comparison.
//
// Contract. Every op of backend.h, on device memory of one CUDA device, issued in order on one
// stream owned by the backend; download waits for that stream. Numerics: every op but the GEMM has
// exactly the CPU twin's (engine/cpu_backend.c) reduction orders and rounding points, and glibc's
// expf algorithm ported to the device (gpu/device_numerics.h), so those outputs are bitwise equal
// to the CPU backend's (on a host whose glibc runs the FMA build of expf, as x86-64 machines with
// FMA do); the GEMM (gpu/gemm.cu, tensor cores) has its own K order and agrees within a bound.
// Every kernel computes an output element from its own row with an order fixed by the op's
// dimensions alone, never by the row count, the row's place, the launch configuration or a graph:
// batch and path invariant by construction (design.md §3). The GEMM is used for every product,
// the drafter's and the Markov bias too; cuBLAS is linked only for the bring-up tool's comparisons
// (cuda_vendor_gemm), it never computes an engine result.
// Weights stay resident as bf16 in device memory (uploaded once by the engine's loaders).
// The table has backend.h's capture hooks: stream capture (thread-local mode) into an instantiated
// CUDA graph, launched on the backend's stream; scratch memory a graph captured stays allocated
// until the backend is destroyed, and growing it during a capture is an internal error.
#ifndef SG_GPU_CUDA_BACKEND_H
#define SG_GPU_CUDA_BACKEND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "engine/backend.h"

typedef struct {
    char name[256]; // e.g. "NVIDIA H200"
    int cc_major, cc_minor;
    int sm_count;
    size_t mem_bytes;
    size_t l2_bytes;
    int runtime_version; // cudaRuntimeGetVersion, e.g. 13000
    int driver_version;  // cudaDriverGetVersion
    char built_for[128]; // architectures the loaded kernels were compiled for, e.g. "sm_90"
    int kernel_arch;     // the architecture of the kernel image the driver loaded (e.g. 90)
} cuda_device_info;

// Facts about the device the backend would use (device 0, or $SG_CUDA_DEVICE). SG_EXIT_NO_GPU with
// a message when there is no usable CUDA device (no driver, no device, or no kernel image for it).
int cuda_device_query(cuda_device_info *out);

// A new CUDA backend (free it with be->destroy(be)); SG_EXIT_NO_GPU as cuda_device_query.
int cuda_backend_create(sg_backend **out);

// ---- services for the bring-up tool (be made by cuda_backend_create) ----

// Waits for every op issued so far.
void cuda_backend_sync(const sg_backend *be);
// Starts capturing the backend's stream into a CUDA graph: the ops issued until
// cuda_capture_end_replay are recorded, not run. Only ops (no upload, download, alloc or free) may
// be issued while capturing, and each should have run once eagerly with the same shapes first (an
// op may grow its scratch memory on first use, which a capture cannot do: SG_CHECK).
void cuda_capture_begin(const sg_backend *be);
// Ends the capture, instantiates the graph, launches it once and waits for it.
void cuda_capture_end_replay(const sg_backend *be);
// Event timing on the backend's stream: microseconds between begin and end (end waits).
void cuda_timer_begin(const sg_backend *be);
double cuda_timer_end_us(const sg_backend *be);
// The same product as be->gemm through cuBLAS (cublasGemmEx, bf16 inputs, fp32 compute, default
// algorithm): y [M, N] = x [M, K] · w [N, K]ᵀ, bf16 or fp32 out. For comparison only.
void cuda_vendor_gemm(const sg_backend *be, const bf16 *x, int M, int K, const bf16 *w, int N,
                      void *y, int out_f32);

#ifdef __cplusplus
}
#endif

#endif
