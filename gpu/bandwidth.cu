// gpu/bandwidth.cu: the read-only bandwidth kernel (see bandwidth.h for the contract).
#include <stdlib.h>

#include "bandwidth.h"
#include "cuda_check.h"

namespace {

// Grid-stride 16-byte loads, four independent ones in flight per thread; the XOR of the words read
// is folded into *sink (atomically, once per thread), so every load is live.
__global__ void read_all(const uint4 *__restrict__ p, size_t n, unsigned *sink) {
    size_t stride = (size_t)gridDim.x * blockDim.x,
           i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a = __ldcs(p + i), b = __ldcs(p + i + stride), c = __ldcs(p + i + 2 * stride),
              d = __ldcs(p + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^
               d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        uint4 a = __ldcs(p + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (acc) atomicXor(sink, acc);
}

int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

} // namespace

extern "C" int cuda_read_bandwidth(size_t bytes, int reps, double *gbps) {
    *gbps = 0.0;
    int dev = 0, n_dev = 0;
    if (cudaGetDeviceCount(&n_dev) != cudaSuccess || n_dev < 1) {
        cudaGetLastError();
        return sg_fail(SG_EXIT_NO_GPU, "bandwidth: no usable CUDA device");
    }
    CUDA_CHECK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
    size_t flush_bytes = 2 * (size_t)prop.l2CacheSize;
    bytes &= ~(size_t)15;
    void *buf = NULL, *flush = NULL;
    unsigned *sink = NULL;
    if (cudaMalloc(&buf, bytes) != cudaSuccess || cudaMalloc(&flush, flush_bytes) != cudaSuccess ||
        cudaMalloc((void **)&sink, sizeof *sink) != cudaSuccess) {
        cudaGetLastError();
        cudaFree(buf);
        cudaFree(flush);
        return sg_fail(SG_EXIT_NO_GPU, "bandwidth: cannot allocate %.2f GB of device memory",
                       (double)bytes / 1e9);
    }
    CUDA_CHECK(cudaMemset(buf, 0x5a, bytes));
    CUDA_CHECK(cudaMemset(sink, 0, sizeof *sink));
    cudaEvent_t t0, t1;
    CUDA_CHECK(cudaEventCreate(&t0));
    CUDA_CHECK(cudaEventCreate(&t1));
    int blocks = prop.multiProcessorCount * 8, threads = 512;
    float *ms = (float *)sg_calloc((size_t)reps + 1, sizeof *ms);
    for (int r = -1; r < reps; r++) { // r = -1: warm-up
        CUDA_CHECK(cudaMemset(flush, r & 0xff, flush_bytes));
        CUDA_CHECK(cudaEventRecord(t0));
        read_all<<<blocks, threads>>>((const uint4 *)buf, bytes / 16, sink);
        CUDA_CHECK_LAUNCH();
        CUDA_CHECK(cudaEventRecord(t1));
        CUDA_CHECK(cudaEventSynchronize(t1));
        if (r >= 0) CUDA_CHECK(cudaEventElapsedTime(&ms[r], t0, t1));
    }
    unsigned host_sink = 0;
    CUDA_CHECK(cudaMemcpy(&host_sink, sink, sizeof host_sink, cudaMemcpyDeviceToHost));
    qsort(ms, (size_t)reps, sizeof *ms, cmp_float);
    double med = reps % 2 ? ms[reps / 2] : 0.5 * (ms[reps / 2 - 1] + ms[reps / 2]);
    *gbps = (double)bytes / (med * 1e-3) / 1e9;
    free(ms);
    CUDA_CHECK(cudaEventDestroy(t0));
    CUDA_CHECK(cudaEventDestroy(t1));
    CUDA_CHECK(cudaFree(buf));
    CUDA_CHECK(cudaFree(flush));
    CUDA_CHECK(cudaFree(sink));
    // 0x5a5a5a5a XORed an even number of times per thread is 0; any value is fine: it is read.
    (void)host_sink;
    return SG_OK;
}
