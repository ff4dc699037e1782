// gpu/pdl.h: programmatic dependent launch (sm_90). A kernel launched with the programmatic
// stream serialization attribute (launch_dependent, cuda_internal.h) may start while the kernel
// before it on the stream is still running, once every block of that kernel has called
// pdl_allow_dependents() (or exited); it must call pdl_wait_primary() before it reads anything the
// earlier kernel writes, and may only touch data no kernel writes before that (weights; host
// uploads, which complete before any kernel after them on the stream starts: attention.cu).
// Kernels that feed a GEMM call pdl_allow_dependents() first thing (attention once its first K
// tile has landed: attention.cu says why), and so does qk_norm_rope_store, which feeds attention;
// for a kernel launched the ordinary way both calls do nothing. Every block of a dependent calls
// pdl_wait_primary() before it ends, on every path, so a kernel's completion implies that of every
// kernel before it; a dependent that releases its own dependents only after its wait (markov.cu's
// gather) therefore lets them read anything written before it.
#ifndef SG_GPU_PDL_H
#define SG_GPU_PDL_H

__device__ __forceinline__ void pdl_allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}

__device__ __forceinline__ void pdl_wait_primary() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

#endif
