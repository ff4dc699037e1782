// gpu/cuda_check.h: CUDA_CHECK, the check of every CUDA runtime and cuBLAS call in gpu/.
//
// Contract: a failing CUDA call inside a backend op is an internal fault (a kernel bug, a lost
// device), never bad input: it is reported with the file, the line, the call and CUDA's own error
// string through sg_check_failed (common/error.h), which aborts. Calls whose failure is an expected
// outcome (allocation, device discovery) test their status themselves instead.
#ifndef SG_GPU_CUDA_CHECK_H
#define SG_GPU_CUDA_CHECK_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "common/error.h"
#ifdef __cplusplus
}
#endif

#define CUDA_CHECK(call)                                                                           \
    do {                                                                                           \
        cudaError_t cuda_check_err_ = (call);                                                      \
        if (cuda_check_err_ != cudaSuccess)                                                        \
            sg_check_failed(__FILE__, __LINE__, #call, "CUDA error %d (%s): %s",                   \
                            (int)cuda_check_err_, cudaGetErrorName(cuda_check_err_),               \
                            cudaGetErrorString(cuda_check_err_));                                  \
    } while (0)

// After a kernel launch: the launch itself (bad configuration) is checked at once; faults inside
// the kernel surface at the next synchronising call, which is checked too.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

#endif
