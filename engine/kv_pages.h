// engine/kv_pages.h: the paged KV cache (design.md §7, dspark-spec.md §5): a host-side page
// allocator with per-sequence page tables, worst-case reservation at admission, scratch pages for
// hedge chains, and (kv_cache) the device K/V storage the tables point into.
//
// Pages. Page ids 0 .. n_pages-1 form the pool handed to sequences; ids n_pages .. n_pages +
// n_scratch - 1 are scratch pages the pool never hands out. Chain slot j (0 <= j < n_chain_slots)
// owns scratch pages n_pages + j*pages_per_chain + (0 .. pages_per_chain-1), so chains of one
// round never share a scratch page and nothing needs freeing after a round.
//
// Reservation rule. A request reserves, at admission, every page its worst case can touch:
// positions = prompt_len + max_new_tokens + B (kv_pages_positions_needed), pages =
// ceil(positions / page_size), allocated at once (the page table never changes while the request
// lives). Why that count: the anchor of a round sits at position p <= prompt + max_new - 2 (the
// last generated token is never fed back), and a verify span has at most B+1 rows p .. p+B, so
// even an unclamped span ends at p + B <= prompt + max_new + B - 2; the verify clamp only makes it
// shorter. The drafter's cache uses the same rule (its block rows sit at p .. p+B-1), which is
// design.md §7's draft-headroom bound.
//
// Commit and rollback. committed = positions whose K/V rows are final (0 .. committed-1). A verify
// span writes rows p .. p+len-1 with p = committed; kv_pages_commit advances committed to p+n+1
// (the anchor plus the accepted drafts); rows past it are dead and simply overwritten by the next
// span, so a rollback needs no call.
//
// Chains. A chain's page table is its request's table with the pages covering the span positions
// [p, p+len) replaced by the chain slot's scratch pages (at most pages_per_chain = ceil(B /
// page_size) + 1 for len <= B+1). When p is not page-aligned the first span page also holds
// committed rows, so it is copied whole into its scratch page before the verify (the copy list
// kv_pages_chain_table returns). A winning chain's scratch pages are copied whole back over the
// request's span pages (kv_pages_chain_copy_back); rows past the new committed length are dead.
//
// Device tables (kv_cache). Row s of the device page-table matrix is sequence s's table; row
// max_seqs + j is chain slot j's. The K/V storage is, per layer, [n_pages + n_scratch, page_size,
// kv_dim] bf16, K and V in two buffers [n_layers, ...].
#ifndef SG_ENGINE_KV_PAGES_H
#define SG_ENGINE_KV_PAGES_H

#include <stdint.h>

#include "backend.h"

typedef struct {
    int page_size;     // positions per page (default 16)
    int n_pages;       // pages of the pool (what requests get)
    int max_seqs;      // sequence slots (requests alive at once)
    int max_positions; // most positions one sequence may reserve (the model's max position)
    int n_chain_slots; // H_cap · |P| (0: no hedging, no scratch pages)
    int block_size;    // B, for pages_per_chain
} kv_pages_config;

typedef struct {
    int active;
    int positions; // reserved
    int n_pages;   // pages held = ceil(positions / page_size)
    int committed; // positions with final K/V
} kv_seq;

typedef struct {
    kv_pages_config cfg;
    int pages_per_chain; // ceil(B / page_size) + 1
    int n_scratch;       // n_chain_slots * pages_per_chain
    int table_stride;    // entries per table = ceil(max_positions / page_size)
    int32_t *tables;     // [max_seqs, table_stride], -1 where no page
    kv_seq *seqs;        // [max_seqs]
    int32_t *free_pages; // stack of free page ids [n_pages]
    int n_free;
    int32_t *owner; // [n_pages]: owning sequence or -1
} kv_pages;

typedef enum {
    KV_RESERVED = 0, // *seq holds the new sequence
    KV_WAIT = 1,     // not now: too few free pages or no free slot; retry after a release
    KV_NEVER = 2,    // can never fit (more pages than the whole pool, or positions > max); reject
} kv_reserve_result;

// SG_EXIT_USAGE with a message on a bad configuration.
int kv_pages_init(kv_pages *kp, const kv_pages_config *cfg);
void kv_pages_free(kv_pages *kp);

int kv_pages_positions_needed(int prompt_len, int max_new_tokens, int block_size);
int kv_pages_per_chain(int block_size, int page_size);
// Reserves (and allocates) ceil(positions / page_size) pages for a new sequence. KV_NEVER also
// leaves a message in sg_error() naming the sizes.
kv_reserve_result kv_pages_reserve(kv_pages *kp, int positions, int *seq);
// Returns the sequence's pages to the pool.
void kv_pages_release(kv_pages *kp, int seq);
// committed may only grow and stay within the reservation.
void kv_pages_commit(kv_pages *kp, int seq, int committed);
int kv_pages_committed(const kv_pages *kp, int seq);
const int32_t *kv_pages_table(const kv_pages *kp, int seq); // [table_stride]

// The table of chain slot `slot` for a span of sequence `seq` at positions [span_start,
// span_start + span_len) (span_len <= B + 1): table_out [table_stride]. Writes the pages to copy
// before the verify into copy_src/copy_dst (room for 1) and returns their count (0 or 1: the
// first span page when span_start is not page-aligned).
int kv_pages_chain_table(const kv_pages *kp, int seq, int slot, int span_start, int span_len,
                         int32_t *table_out, int32_t *copy_src, int32_t *copy_dst);
// The page copies (scratch → the sequence's own pages, room for pages_per_chain) that make a
// winning chain's span K/V the sequence's; returns their count.
int kv_pages_chain_copy_back(const kv_pages *kp, int seq, int slot, int span_start, int span_len,
                             int32_t *src, int32_t *dst);

// SG_OK when every page is free again and no sequence is alive; else SG_EXIT_FAIL naming the
// first leaked page and its owner (or the live sequence, or a corrupt free list).
int kv_pages_check_whole(const kv_pages *kp);

// ---- device storage ----

typedef struct {
    const sg_backend *be;
    int n_layers;
    int kv_dim;      // n_kv_heads * head_dim
    int page_size;
    int n_tables;    // max_seqs + n_chain_slots
    int table_stride;
    int max_seqs;
    size_t pages_total; // n_pages + n_scratch
    bf16 *k;         // device [n_layers, pages_total, page_size, kv_dim]
    bf16 *v;         // device, same shape
    int32_t *tables; // device [n_tables, table_stride]
    int32_t *copy_idx; // device staging for page-copy lists [2, max_copies]
    int max_copies;    // longer lists are copied in chunks
} kv_cache;

int kv_cache_init(kv_cache *kc, const sg_backend *be, const kv_pages *kp, int n_layers,
                  int kv_dim);
void kv_cache_free(kv_cache *kc);
// Layer l's K and V pools [pages_total, page_size, kv_dim] (device pointers).
bf16 *kv_cache_k(const kv_cache *kc, int l);
bf16 *kv_cache_v(const kv_cache *kc, int l);
// The paging geometry over the device tables (for backend ops and the forwards).
be_paging kv_cache_paging(const kv_cache *kc, int n_kv_heads, int head_dim);
// Uploads sequence seq's table into row seq (after kv_pages_reserve).
void kv_cache_upload_seq_table(kv_cache *kc, const kv_pages *kp, int seq);
// Uploads a chain table into row max_seqs + slot.
void kv_cache_upload_chain_table(kv_cache *kc, int slot, const int32_t *table);
// Copies n whole pages (every layer, K and V): page dst[i] := page src[i] (host id lists).
void kv_cache_copy_pages(kv_cache *kc, const int32_t *src, const int32_t *dst, int n);

#endif
