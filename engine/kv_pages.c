// engine/kv_pages.c: the page allocator, chain tables and the device K/V storage (kv_pages.h).
#include "kv_pages.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

int kv_pages_positions_needed(int prompt_len, int max_new_tokens, int block_size) {
    return prompt_len + max_new_tokens + block_size;
}

int kv_pages_per_chain(int block_size, int page_size) {
    return ceil_div(block_size, page_size) + 1;
}

int kv_pages_init(kv_pages *kp, const kv_pages_config *cfg) {
    memset(kp, 0, sizeof *kp);
    if (cfg->page_size < 1 || cfg->n_pages < 1 || cfg->max_seqs < 1 || cfg->max_positions < 1 ||
        cfg->n_chain_slots < 0 || cfg->block_size < 1)
        return sg_fail(SG_EXIT_USAGE,
                       "KV pages: page size %d, pool pages %d, sequences %d, max positions %d, "
                       "chain slots %d, block size %d: each must be >= 1 (chain slots >= 0); "
                       "check --page-size and --pool-pages",
                       cfg->page_size, cfg->n_pages, cfg->max_seqs, cfg->max_positions,
                       cfg->n_chain_slots, cfg->block_size);
    kp->cfg = *cfg;
    kp->pages_per_chain = kv_pages_per_chain(cfg->block_size, cfg->page_size);
    kp->n_scratch = cfg->n_chain_slots * kp->pages_per_chain;
    kp->table_stride = ceil_div(cfg->max_positions, cfg->page_size);
    kp->tables = sg_calloc((size_t)cfg->max_seqs * kp->table_stride, sizeof *kp->tables);
    for (size_t i = 0; i < (size_t)cfg->max_seqs * kp->table_stride; i++) kp->tables[i] = -1;
    kp->seqs = sg_calloc((size_t)cfg->max_seqs, sizeof *kp->seqs);
    kp->free_pages = sg_calloc((size_t)cfg->n_pages, sizeof *kp->free_pages);
    kp->owner = sg_calloc((size_t)cfg->n_pages, sizeof *kp->owner);
    // Stack with page 0 on top: pages are handed out in ascending id order from a fresh pool.
    for (int i = 0; i < cfg->n_pages; i++) {
        kp->free_pages[i] = cfg->n_pages - 1 - i;
        kp->owner[i] = -1;
    }
    kp->n_free = cfg->n_pages;
    return SG_OK;
}

void kv_pages_free(kv_pages *kp) {
    free(kp->tables);
    free(kp->seqs);
    free(kp->free_pages);
    free(kp->owner);
    memset(kp, 0, sizeof *kp);
}

kv_reserve_result kv_pages_reserve(kv_pages *kp, int positions, int *seq) {
    SG_CHECK(positions >= 1, "reserve of %d positions", positions);
    int need = ceil_div(positions, kp->cfg.page_size);
    if (positions > kp->cfg.max_positions || need > kp->cfg.n_pages) {
        sg_fail(SG_EXIT_USAGE,
                "a request needing %d KV positions (%d pages of %d) can never fit: the pool has "
                "%d pages and a sequence at most %d positions; raise --pool-pages or shorten the "
                "request",
                positions, need, kp->cfg.page_size, kp->cfg.n_pages, kp->cfg.max_positions);
        return KV_NEVER;
    }
    if (need > kp->n_free) return KV_WAIT;
    int s = 0;
    while (s < kp->cfg.max_seqs && kp->seqs[s].active) s++;
    if (s == kp->cfg.max_seqs) return KV_WAIT;
    int32_t *table = kp->tables + (size_t)s * kp->table_stride;
    for (int i = 0; i < need; i++) {
        int32_t page = kp->free_pages[--kp->n_free];
        SG_CHECK(kp->owner[page] == -1, "free page %d is owned by sequence %d", page,
                 kp->owner[page]);
        kp->owner[page] = s;
        table[i] = page;
    }
    kp->seqs[s] = (kv_seq){.active = 1, .positions = positions, .n_pages = need, .committed = 0};
    *seq = s;
    return KV_RESERVED;
}

static kv_seq *live_seq(const kv_pages *kp, int seq) {
    SG_CHECK(seq >= 0 && seq < kp->cfg.max_seqs && kp->seqs[seq].active,
             "sequence %d is not alive", seq);
    return &kp->seqs[seq];
}

void kv_pages_release(kv_pages *kp, int seq) {
    kv_seq *s = live_seq(kp, seq);
    int32_t *table = kp->tables + (size_t)seq * kp->table_stride;
    // Pushed in reverse so the next reservation gets the same pages in the same order.
    for (int i = s->n_pages - 1; i >= 0; i--) {
        SG_CHECK(kp->owner[table[i]] == seq, "page %d of sequence %d is owned by %d", table[i],
                 seq, kp->owner[table[i]]);
        kp->owner[table[i]] = -1;
        kp->free_pages[kp->n_free++] = table[i];
        table[i] = -1;
    }
    memset(s, 0, sizeof *s);
}

void kv_pages_commit(kv_pages *kp, int seq, int committed) {
    kv_seq *s = live_seq(kp, seq);
    SG_CHECK(committed >= s->committed && committed <= s->positions,
             "sequence %d commit %d (committed %d, reserved %d)", seq, committed, s->committed,
             s->positions);
    s->committed = committed;
}

int kv_pages_committed(const kv_pages *kp, int seq) { return live_seq(kp, seq)->committed; }

const int32_t *kv_pages_table(const kv_pages *kp, int seq) {
    live_seq(kp, seq);
    return kp->tables + (size_t)seq * kp->table_stride;
}

// The span's first and last page index in the sequence's table; checks the span fits.
static void span_pages(const kv_pages *kp, int seq, int slot, int span_start, int span_len,
                       int *first, int *last) {
    const kv_seq *s = live_seq(kp, seq);
    SG_CHECK(slot >= 0 && slot < kp->cfg.n_chain_slots, "chain slot %d of %d", slot,
             kp->cfg.n_chain_slots);
    SG_CHECK(span_len >= 1 && span_len <= kp->cfg.block_size + 1 && span_start >= 0 &&
                 span_start + span_len <= s->positions,
             "chain span [%d, +%d) of sequence %d (reserved %d, B %d)", span_start, span_len, seq,
             s->positions, kp->cfg.block_size);
    *first = span_start / kp->cfg.page_size;
    *last = (span_start + span_len - 1) / kp->cfg.page_size;
    SG_CHECK(*last - *first + 1 <= kp->pages_per_chain, "span touches %d pages",
             *last - *first + 1);
}

static int32_t scratch_page(const kv_pages *kp, int slot, int i) {
    return kp->cfg.n_pages + slot * kp->pages_per_chain + i;
}

int kv_pages_chain_table(const kv_pages *kp, int seq, int slot, int span_start, int span_len,
                         int32_t *table_out, int32_t *copy_src, int32_t *copy_dst) {
    int first, last;
    span_pages(kp, seq, slot, span_start, span_len, &first, &last);
    const int32_t *own = kp->tables + (size_t)seq * kp->table_stride;
    memcpy(table_out, own, (size_t)kp->table_stride * sizeof *table_out);
    for (int i = first; i <= last; i++) table_out[i] = scratch_page(kp, slot, i - first);
    if (span_start % kp->cfg.page_size == 0) return 0;
    *copy_src = own[first];
    *copy_dst = table_out[first];
    return 1;
}

int kv_pages_chain_copy_back(const kv_pages *kp, int seq, int slot, int span_start, int span_len,
                             int32_t *src, int32_t *dst) {
    int first, last;
    span_pages(kp, seq, slot, span_start, span_len, &first, &last);
    const int32_t *own = kp->tables + (size_t)seq * kp->table_stride;
    for (int i = first; i <= last; i++) {
        src[i - first] = scratch_page(kp, slot, i - first);
        dst[i - first] = own[i];
    }
    return last - first + 1;
}

int kv_pages_check_whole(const kv_pages *kp) {
    for (int s = 0; s < kp->cfg.max_seqs; s++)
        if (kp->seqs[s].active)
            return sg_fail(SG_EXIT_FAIL, "KV pages: sequence %d is still alive holding %d pages",
                           s, kp->seqs[s].n_pages);
    for (int p = 0; p < kp->cfg.n_pages; p++)
        if (kp->owner[p] != -1)
            return sg_fail(SG_EXIT_FAIL, "KV pages: page %d leaked (owned by sequence %d)", p,
                           kp->owner[p]);
    if (kp->n_free != kp->cfg.n_pages)
        return sg_fail(SG_EXIT_FAIL, "KV pages: %d of %d pages are free", kp->n_free,
                       kp->cfg.n_pages);
    char *seen = sg_calloc((size_t)kp->cfg.n_pages, 1);
    int status = SG_OK;
    for (int i = 0; i < kp->n_free && status == SG_OK; i++) {
        int32_t p = kp->free_pages[i];
        if (p < 0 || p >= kp->cfg.n_pages || seen[p])
            status = sg_fail(SG_EXIT_FAIL, "KV pages: free list entry %d holds page %d twice or "
                                           "out of range", i, p);
        else
            seen[p] = 1;
    }
    free(seen);
    return status;
}

// ---- device storage ----

int kv_cache_init(kv_cache *kc, const sg_backend *be, const kv_pages *kp, int n_layers,
                  int kv_dim) {
    memset(kc, 0, sizeof *kc);
    kc->be = be;
    kc->n_layers = n_layers;
    kc->kv_dim = kv_dim;
    kc->page_size = kp->cfg.page_size;
    kc->max_seqs = kp->cfg.max_seqs;
    kc->n_tables = kp->cfg.max_seqs + kp->cfg.n_chain_slots;
    kc->table_stride = kp->table_stride;
    kc->pages_total = (size_t)kp->cfg.n_pages + (size_t)kp->n_scratch;
    kc->max_copies = 64;
    size_t bytes = (size_t)n_layers * kc->pages_total * kc->page_size * kv_dim * sizeof(bf16);
    void *k = NULL, *v = NULL, *tables = NULL, *idx = NULL;
    int st = be_alloc(be, bytes, "the K cache", &k);
    if (st == SG_OK) st = be_alloc(be, bytes, "the V cache", &v);
    if (st == SG_OK)
        st = be_alloc(be, (size_t)kc->n_tables * kc->table_stride * sizeof(int32_t),
                      "the page tables", &tables);
    if (st == SG_OK)
        st = be_alloc(be, 2 * (size_t)kc->max_copies * sizeof(int32_t), "page copy lists", &idx);
    kc->k = k;
    kc->v = v;
    kc->tables = tables;
    kc->copy_idx = idx;
    if (st != SG_OK) {
        kv_cache_free(kc);
        return st;
    }
    int32_t *none = sg_calloc((size_t)kc->n_tables * kc->table_stride, sizeof *none);
    for (size_t i = 0; i < (size_t)kc->n_tables * kc->table_stride; i++) none[i] = -1;
    be->upload(be->ctx, kc->tables, none,
               (size_t)kc->n_tables * kc->table_stride * sizeof *none);
    free(none);
    return SG_OK;
}

void kv_cache_free(kv_cache *kc) {
    if (kc->be) {
        kc->be->free(kc->be->ctx, kc->k);
        kc->be->free(kc->be->ctx, kc->v);
        kc->be->free(kc->be->ctx, kc->tables);
        kc->be->free(kc->be->ctx, kc->copy_idx);
    }
    memset(kc, 0, sizeof *kc);
}

static size_t layer_elems(const kv_cache *kc) {
    return kc->pages_total * kc->page_size * kc->kv_dim;
}

bf16 *kv_cache_k(const kv_cache *kc, int l) { return kc->k + (size_t)l * layer_elems(kc); }
bf16 *kv_cache_v(const kv_cache *kc, int l) { return kc->v + (size_t)l * layer_elems(kc); }

be_paging kv_cache_paging(const kv_cache *kc, int n_kv_heads, int head_dim) {
    SG_CHECK(n_kv_heads * head_dim == kc->kv_dim, "paging %d x %d over kv_dim %d", n_kv_heads,
             head_dim, kc->kv_dim);
    return (be_paging){.page_size = kc->page_size,
                       .n_kv_heads = n_kv_heads,
                       .head_dim = head_dim,
                       .page_tables = kc->tables,
                       .table_stride = kc->table_stride};
}

void kv_cache_upload_seq_table(kv_cache *kc, const kv_pages *kp, int seq) {
    kc->be->upload(kc->be->ctx, kc->tables + (size_t)seq * kc->table_stride,
                   kv_pages_table(kp, seq), (size_t)kc->table_stride * sizeof(int32_t));
}

void kv_cache_upload_chain_table(kv_cache *kc, int slot, const int32_t *table) {
    SG_CHECK(slot >= 0 && kc->max_seqs + slot < kc->n_tables, "chain slot %d", slot);
    kc->be->upload(kc->be->ctx, kc->tables + (size_t)(kc->max_seqs + slot) * kc->table_stride,
                   table, (size_t)kc->table_stride * sizeof(int32_t));
}

void kv_cache_copy_pages(kv_cache *kc, const int32_t *src, const int32_t *dst, int n) {
    const sg_backend *be = kc->be;
    size_t page_bytes = (size_t)kc->page_size * kc->kv_dim * sizeof(bf16);
    size_t group_stride = layer_elems(kc) * sizeof(bf16);
    for (int i0 = 0; i0 < n; i0 += kc->max_copies) {
        int m = n - i0 < kc->max_copies ? n - i0 : kc->max_copies;
        be->upload(be->ctx, kc->copy_idx, src + i0, (size_t)m * sizeof(int32_t));
        be->upload(be->ctx, kc->copy_idx + kc->max_copies, dst + i0, (size_t)m * sizeof(int32_t));
        be->page_copy(be->ctx, kc->k, kc->n_layers, group_stride, page_bytes, kc->copy_idx,
                      kc->copy_idx + kc->max_copies, m);
        be->page_copy(be->ctx, kc->v, kc->n_layers, group_stride, page_bytes, kc->copy_idx,
                      kc->copy_idx + kc->max_copies, m);
    }
}
