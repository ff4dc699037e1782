// gpu/top2.h: the two-stage selection's shared parts (gpu/top2.cu, gpu/markov.cu): how many
// partitions a row is split into, and stage 2's merge of a row's partials. Since the top-2 under
// (value descending, id ascending) is exact, neither choice changes a result.
#ifndef SG_GPU_TOP2_H
#define SG_GPU_TOP2_H

#include "device_numerics.h"

// Partitions per row: enough blocks in all to cover the device twice, each scanning at least
// 16 values per thread, at most 128.
static inline int d_top2_partitions(int n, int rows, int threads, int sm_count) {
    int by_size = (n + threads * 16 - 1) / (threads * 16);
    int by_fill = (2 * sm_count + rows - 1) / rows;
    int P = by_size < by_fill ? by_size : by_fill;
    if (P < 1) P = 1;
    if (P > 128) P = 128;
    return P;
}

// One warp merges the P partials of a row; the result is valid in lane 0.
__device__ __forceinline__ d_cand2 d_top2_merge_partials(const d_cand2 *part, int P) {
    d_cand2 c = d_cand2_empty();
    for (int p = threadIdx.x; p < P; p += 32) c = d_cand2_merge(c, part[p]);
    for (int m = 16; m >= 1; m >>= 1) c = d_cand2_merge(c, d_cand2_shfl_xor(c, m));
    return c;
}

#endif
