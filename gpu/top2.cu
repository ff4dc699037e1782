// gpu/top2.cu: argmax and the exact top-2 over fp32 rows (backend.h), in a strided two-stage
// kernel: stage 1 gives each of P partitions of a row a block whose threads scan the row with a
// stride of P·256 (coalesced) keeping a top-2 candidate, merged across the block; stage 2 merges
// the P partials of a row in one warp. The order is value descending then id ascending, a total
// order on (value, id), so the top-2 is unique and every merge order, P and grid give the same ids
// and values: argmax equals top-2's first id bit for bit, and P may depend on the row count without
// breaking batch invariance. A NaN or Inf anywhere in the row gives ids -1 (values NaN). Both
// stages are programmatic dependents (pdl.h) that read nothing before their wait: their launches
// overlap the kernel before them (the head GEMM, stage 1).
#include "cuda_internal.h"
#include "device_numerics.h"
#include "pdl.h"
#include "top2.h"

namespace {

constexpr int T2_THREADS = 256;

__global__ void __launch_bounds__(T2_THREADS)
    top2_stage1(const float *__restrict__ x, int n, size_t row_stride, d_cand2 *partials) {
    pdl_allow_dependents();
    pdl_wait_primary();
    const int p = blockIdx.x, P = gridDim.x, row = blockIdx.y;
    const float *xr = x + (size_t)row * row_stride;
    d_cand2 c = d_cand2_empty();
    d_top2_scan(c, n, p, P, [xr](int v) { return xr[v]; });
    c = d_cand2_block(c);
    if (threadIdx.x == 0) partials[(size_t)row * P + p] = c;
}

__global__ void top2_stage2(const d_cand2 *__restrict__ partials, int P, int32_t *ids, float *vals,
                            int argmax_only) {
    pdl_wait_primary();
    const int row = blockIdx.x;
    d_cand2 c = d_top2_merge_partials(partials + (size_t)row * P, P);
    if (threadIdx.x != 0) return;
    int ok = !c.bad && c.i0 >= 0;
    if (argmax_only) {
        ids[row] = ok ? c.i0 : -1;
        return;
    }
    ids[2 * row] = ok ? c.i0 : -1;
    ids[2 * row + 1] = ok ? c.i1 : -1;
    if (vals) {
        vals[2 * row] = ok ? c.v0 : NAN;
        vals[2 * row + 1] = ok ? (c.i1 >= 0 ? c.v1 : -INFINITY) : NAN;
    }
}

void select_rows(cuda_ctx *c, const float *x, int rows, int n, size_t row_stride, int32_t *ids,
                 float *vals, int argmax_only) {
    if (rows <= 0) return;
    SG_CHECK(n >= 1 && rows <= 65535, "selection over %d values, %d rows", n, rows);
    int P = d_top2_partitions(n, rows, T2_THREADS, c->sm_count);
    d_cand2 *partials = static_cast<d_cand2 *>(cuda_scratch(c, (size_t)rows * P * sizeof(d_cand2)));
    launch_dependent(c, top2_stage1, dim3((unsigned)P, (unsigned)rows), T2_THREADS, 0, x, n,
                     row_stride, partials);
    launch_dependent(c, top2_stage2, dim3((unsigned)rows), 32, 0, (const d_cand2 *)partials, P,
                     ids, vals, argmax_only);
}

} // namespace

void cu_argmax(void *ctx, const float *x, int rows, int n, size_t row_stride, int32_t *ids) {
    select_rows(static_cast<cuda_ctx *>(ctx), x, rows, n, row_stride, ids, NULL, 1);
}

void cu_top2(void *ctx, const float *x, int rows, int n, size_t row_stride, int32_t *ids,
             float *vals) {
    SG_CHECK(n >= 2, "top-2 over %d values", n);
    select_rows(static_cast<cuda_ctx *>(ctx), x, rows, n, row_stride, ids, vals, 0);
}
