// gpu/top2.h: the two-stage selection's shared parts (gpu/top2.cu, gpu/markov.cu): how many
// partitions a row is split into, stage 1's scan of a partition and stage 2's merge of a row's
// partials. Since the top-2 under (value descending, id ascending) is exact, neither the
// partitions nor the order of a scan changes a result.
#ifndef SG_GPU_TOP2_H
#define SG_GPU_TOP2_H

#include "device_numerics.h"

// Partitions per row: enough blocks in all to fill the device (8 blocks of 256 per SM), each
// thread scanning at least T2_MIN_PER_THREAD values, at most 128. Stage 1 is latency-bound (a
// 151936-value row is 0.6 MB): at 16 values per thread and 38 partitions one row took 8.4 us on
// the H200 (ncu), its loads 16 dependent round trips.
#define T2_MIN_PER_THREAD 4
#define T2_BATCH 4 // values a thread loads together before it compares them
static inline int d_top2_partitions(int n, int rows, int threads, int sm_count) {
    int by_size = (n + threads * T2_MIN_PER_THREAD - 1) / (threads * T2_MIN_PER_THREAD);
    int by_fill = (8 * sm_count + rows - 1) / rows;
    int P = by_size < by_fill ? by_size : by_fill;
    if (P < 1) P = 1;
    if (P > 128) P = 128;
    return P;
}

// Thread t of partition p (of P, T threads each) offers value(v) at id v for v = p·T + t, + P·T,
// ... < n into c, loading T2_BATCH values before it compares any (the order of the offers does
// not matter: the top-2 is exact).
template <typename F>
__device__ __forceinline__ void d_top2_scan(d_cand2 &c, int n, int p, int P, F value) {
    const int T = blockDim.x, step = P * T;
    for (int v0 = p * T + (int)threadIdx.x; v0 < n; v0 += T2_BATCH * step) {
        float x[T2_BATCH];
#pragma unroll
        for (int j = 0; j < T2_BATCH; j++)
            if (v0 + j * step < n) x[j] = value(v0 + j * step);
#pragma unroll
        for (int j = 0; j < T2_BATCH; j++)
            if (v0 + j * step < n) d_cand2_push(c, x[j], v0 + j * step);
    }
}

// One warp merges the P partials of a row; the result is valid in lane 0.
__device__ __forceinline__ d_cand2 d_top2_merge_partials(const d_cand2 *part, int P) {
    d_cand2 c = d_cand2_empty();
    for (int p = threadIdx.x; p < P; p += 32) c = d_cand2_merge(c, part[p]);
    for (int m = 16; m >= 1; m >>= 1) c = d_cand2_merge(c, d_cand2_shfl_xor(c, m));
    return c;
}

#endif
