// gpu/kv_paging.h: where a position's K/V row lives in a layer's page pool (backend.h be_paging),
// for the kernels that store rows (norms.cu qk_norm_rope_store) and read them (attention.cu).
// A missing page traps (a CPU SG_CHECK failure: the KV cache reserves pages before the forward).
#ifndef SG_GPU_KV_PAGING_H
#define SG_GPU_KV_PAGING_H

#include "cuda_internal.h"

// Element offset of position t of sequence s in a layer pool [n_pages, page_size, kv_dim].
__device__ __forceinline__ size_t kv_row(const be_paging &pg, int s, int t) {
    int page = pg.page_tables[(size_t)s * pg.table_stride + t / pg.page_size];
    if (page < 0) __trap();
    return ((size_t)page * pg.page_size + (size_t)(t % pg.page_size)) *
           ((size_t)pg.n_kv_heads * pg.head_dim);
}

#endif
