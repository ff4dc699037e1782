// tests/test_kv_pages.c: the paged KV allocator: worst-case reservation, waiting vs never-fits,
// scratch pages never handed out, chain tables (a partly filled first page copied whole), copy
// back through the device storage, commit, and the whole-pool check catching leaks.
// ctest-labels: cpu;unit
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/cpu_backend.h"
#include "engine/kv_pages.h"
#include "testutil.h"

// page 16, 10 pages, 3 sequences, 200 positions, 2 chain slots, B 7: pages_per_chain 2.
static kv_pages_config base_cfg(void) {
    return (kv_pages_config){.page_size = 16, .n_pages = 10, .max_seqs = 3, .max_positions = 200,
                             .n_chain_slots = 2, .block_size = 7};
}

START_TEST(test_reserve_rule) {
    ck_assert_int_eq(kv_pages_positions_needed(20, 30, 7), 57);
    ck_assert_int_eq(kv_pages_per_chain(7, 16), 2);
    ck_assert_int_eq(kv_pages_per_chain(16, 16), 2);
    ck_assert_int_eq(kv_pages_per_chain(17, 16), 3);
    kv_pages kp;
    kv_pages_config cfg = base_cfg();
    ck_assert_int_eq(kv_pages_init(&kp, &cfg), SG_OK);
    ck_assert_int_eq(kp.n_scratch, 4);
    ck_assert_int_eq(kp.table_stride, 13);
    int s;
    ck_assert_int_eq(kv_pages_reserve(&kp, 57, &s), KV_RESERVED); // 4 pages
    const int32_t *t = kv_pages_table(&kp, s);
    for (int i = 0; i < 4; i++) {
        ck_assert(t[i] >= 0 && t[i] < 10);
        for (int j = 0; j < i; j++) ck_assert_int_ne(t[i], t[j]);
    }
    for (int i = 4; i < kp.table_stride; i++) ck_assert_int_eq(t[i], -1);
    ck_assert_int_eq(kp.n_free, 6);
    ck_assert_int_eq(kv_pages_committed(&kp, s), 0);
    kv_pages_commit(&kp, s, 20);
    kv_pages_commit(&kp, s, 25);
    ck_assert_int_eq(kv_pages_committed(&kp, s), 25);
    kv_pages_release(&kp, s);
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_OK);
    kv_pages_free(&kp);
    cfg.page_size = 0;
    ck_assert_int_eq(kv_pages_init(&kp, &cfg), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "--page-size"));
}
END_TEST

START_TEST(test_wait_vs_never) {
    kv_pages kp;
    kv_pages_config cfg = base_cfg();
    ck_assert_int_eq(kv_pages_init(&kp, &cfg), SG_OK);
    int a, b, c, d;
    ck_assert_int_eq(kv_pages_reserve(&kp, 57, &a), KV_RESERVED); // 4 of 10
    ck_assert_int_eq(kv_pages_reserve(&kp, 100, &b), KV_WAIT);    // 7 > 6 free: wait
    ck_assert_int_eq(kv_pages_reserve(&kp, 161, &b), KV_NEVER);   // 11 > 10 pages: never
    ck_assert_ptr_nonnull(strstr(sg_error(), "can never fit"));
    ck_assert_int_eq(kv_pages_reserve(&kp, 201, &b), KV_NEVER); // past max_positions
    ck_assert_int_eq(kv_pages_reserve(&kp, 160, &b), KV_WAIT);  // the whole pool: later
    kv_pages_release(&kp, a);
    ck_assert_int_eq(kv_pages_reserve(&kp, 100, &b), KV_RESERVED); // now it fits
    kv_pages_release(&kp, b);
    // Slots: three sequences of one page, the fourth waits for a slot.
    ck_assert_int_eq(kv_pages_reserve(&kp, 1, &a), KV_RESERVED);
    ck_assert_int_eq(kv_pages_reserve(&kp, 16, &b), KV_RESERVED);
    ck_assert_int_eq(kv_pages_reserve(&kp, 3, &c), KV_RESERVED);
    ck_assert_int_eq(kv_pages_reserve(&kp, 3, &d), KV_WAIT);
    kv_pages_release(&kp, b);
    ck_assert_int_eq(kv_pages_reserve(&kp, 3, &d), KV_RESERVED);
    ck_assert_int_eq(d, b); // the freed slot
    kv_pages_release(&kp, a);
    kv_pages_release(&kp, c);
    kv_pages_release(&kp, d);
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_OK);
    kv_pages_free(&kp);
}
END_TEST

// Draining the pool by every possible reservation never yields a scratch page; chain tables use
// only scratch pages for the span, each slot its own.
START_TEST(test_scratch_never_handed_out) {
    kv_pages kp;
    kv_pages_config cfg = base_cfg();
    cfg.max_seqs = 20;
    ck_assert_int_eq(kv_pages_init(&kp, &cfg), SG_OK);
    int seqs[20], n = 0, s;
    while (kv_pages_reserve(&kp, 16, &s) == KV_RESERVED) seqs[n++] = s;
    ck_assert_int_eq(n, 10);
    ck_assert_int_eq(kp.n_free, 0);
    for (int i = 0; i < n; i++) {
        int32_t p = kv_pages_table(&kp, seqs[i])[0];
        ck_assert(p >= 0 && p < cfg.n_pages);
    }
    for (int i = 1; i < n; i++) kv_pages_release(&kp, seqs[i]);
    ck_assert_int_eq(kv_pages_reserve(&kp, 144, &s), KV_RESERVED); // 9 pages: the rest of the pool
    int32_t table[13], src, dst;
    for (int slot = 0; slot < 2; slot++) {
        ck_assert_int_eq(kv_pages_chain_table(&kp, s, slot, 14, 8, table, &src, &dst), 1);
        // span [14, 22) covers pages 0 and 1 of the table
        ck_assert_int_eq(table[0], 10 + slot * 2);
        ck_assert_int_eq(table[1], 10 + slot * 2 + 1);
        for (int i = 2; i < 9; i++) ck_assert_int_eq(table[i], kv_pages_table(&kp, s)[i]);
    }
    kv_pages_release(&kp, s);
    kv_pages_release(&kp, seqs[0]);
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_OK);
    kv_pages_free(&kp);
}
END_TEST

START_TEST(test_chain_tables) {
    kv_pages kp;
    kv_pages_config cfg = base_cfg();
    ck_assert_int_eq(kv_pages_init(&kp, &cfg), SG_OK);
    int s;
    ck_assert_int_eq(kv_pages_reserve(&kp, 57, &s), KV_RESERVED);
    const int32_t *own = kv_pages_table(&kp, s);
    int32_t table[13], src[2], dst[2];
    // Partly filled first page: committed 20, span [20, 28) in page 1: one copy own[1] → scratch.
    kv_pages_commit(&kp, s, 20);
    ck_assert_int_eq(kv_pages_chain_table(&kp, s, 1, 20, 8, table, src, dst), 1);
    ck_assert_int_eq(src[0], own[1]);
    ck_assert_int_eq(dst[0], 12);
    ck_assert_int_eq(table[1], 12);
    ck_assert(table[0] == own[0] && table[2] == own[2] && table[3] == own[3]);
    ck_assert_int_eq(kv_pages_chain_copy_back(&kp, s, 1, 20, 8, src, dst), 1);
    ck_assert(src[0] == 12 && dst[0] == own[1]);
    // Page-aligned span: no copy. Span across a page boundary: two scratch pages.
    kv_pages_commit(&kp, s, 32);
    ck_assert_int_eq(kv_pages_chain_table(&kp, s, 0, 32, 8, table, src, dst), 0);
    ck_assert_int_eq(table[2], 10);
    ck_assert_int_eq(kv_pages_chain_table(&kp, s, 0, 28, 8, table, src, dst), 1);
    ck_assert(table[1] == 10 && table[2] == 11 && src[0] == own[1] && dst[0] == 10);
    ck_assert_int_eq(kv_pages_chain_copy_back(&kp, s, 0, 28, 8, src, dst), 2);
    ck_assert(src[0] == 10 && src[1] == 11 && dst[0] == own[1] && dst[1] == own[2]);
    kv_pages_release(&kp, s);
    kv_pages_free(&kp);
}
END_TEST

enum { CHAIN_L = 2, CHAIN_KVD = 4 };

// Rows into their pages through qk_norm_rope_store (keys and values only: no query rows; unit norm
// weights, the identity rotation), so a page slot holds its row's value as given and its key
// normed in place in k: normed[l][pos] keeps that key for the checks.
static void store_rows(sg_backend *be, kv_cache *kc, const be_paging *pg, int l, const int32_t *tab,
                       const int32_t *pos, bf16 *k, const bf16 *v, int n,
                       bf16 normed[][12][CHAIN_KVD]) {
    bf16 ones[CHAIN_KVD], rot_cos[12 * CHAIN_KVD / 2], rot_sin[12 * CHAIN_KVD / 2];
    for (int d = 0; d < CHAIN_KVD; d++) ones[d] = f32_to_bf16(1.0f);
    for (int i = 0; i < 12 * CHAIN_KVD / 2; i++) {
        rot_cos[i] = f32_to_bf16(1.0f);
        rot_sin[i] = f32_to_bf16(0.0f);
    }
    be->qk_norm_rope_store(be->ctx, pg, kv_cache_k(kc, l), kv_cache_v(kc, l), tab, pos, n, NULL, 0,
                           1, NULL, k, v, ones, 1e-6f, rot_cos, rot_sin);
    for (int i = 0; i < n; i++) memcpy(normed[l][pos[i]], k + i * CHAIN_KVD, sizeof normed[l][0]);
}

// Through the CPU device storage: a chain sees the committed rows of its partly filled first page
// (copied whole), writes its span into scratch without touching the sequence's pages, and the copy
// back makes the chain's rows the sequence's.
START_TEST(test_chain_device_copy) {
    sg_backend *be = cpu_backend_create();
    kv_pages kp;
    kv_pages_config cfg = {.page_size = 4, .n_pages = 6, .max_seqs = 2, .max_positions = 24,
                           .n_chain_slots = 1, .block_size = 3};
    ck_assert_int_eq(kv_pages_init(&kp, &cfg), SG_OK);
    kv_cache kc;
    enum { L = CHAIN_L, KVD = CHAIN_KVD };
    ck_assert_int_eq(kv_cache_init(&kc, be, &kp, L, KVD), SG_OK);
    int s;
    ck_assert_int_eq(kv_pages_reserve(&kp, 14, &s), KV_RESERVED); // 4 pages of 4
    kv_cache_upload_seq_table(&kc, &kp, s);
    be_paging pg = kv_cache_paging(&kc, 1, KVD);
    // Rows 0 .. 5 committed, value 20·layer + position + 50 (keys: + d before the norm): small
    // integers, exact. committed / chain: the normed keys of each (layer, position).
    bf16 k[12 * KVD], v[12 * KVD], committed[L][12][KVD], chain[L][12][KVD];
    int32_t tab[12], pos[12];
    for (int l = 0; l < L; l++) {
        for (int t = 0; t < 6; t++) {
            tab[t] = s;
            pos[t] = t;
            for (int d = 0; d < KVD; d++) {
                k[t * KVD + d] = f32_to_bf16((float)(20 * l + t + d));
                v[t * KVD + d] = f32_to_bf16((float)(20 * l + t + 50));
            }
        }
        store_rows(be, &kc, &pg, l, tab, pos, k, v, 6, committed);
    }
    kv_pages_commit(&kp, s, 6);
    int32_t table[6], src[2], dst[2];
    int n = kv_pages_chain_table(&kp, s, 0, 6, 4, table, src, dst); // span [6, 10): pages 1, 2
    ck_assert_int_eq(n, 1);
    kv_cache_copy_pages(&kc, src, dst, n);
    kv_cache_upload_chain_table(&kc, 0, table);
    // The chain writes positions 6 .. 9 (value 100 + 20·layer + position) through row max_seqs + 0.
    for (int l = 0; l < L; l++) {
        for (int i = 0; i < 4; i++) {
            tab[i] = cfg.max_seqs;
            pos[i] = 6 + i;
            for (int d = 0; d < KVD; d++) {
                k[i * KVD + d] = f32_to_bf16((float)(100 + 20 * l + 6 + i - d));
                v[i * KVD + d] = f32_to_bf16((float)(100 + 20 * l + 6 + i));
            }
        }
        store_rows(be, &kc, &pg, l, tab, pos, k, v, 4, chain);
    }
    size_t psz = 4 * KVD;
    bf16 *pool = sg_calloc(kc.pages_total * psz, sizeof *pool);
    bf16 *vpool = sg_calloc(kc.pages_total * psz, sizeof *vpool);
    const int32_t *own = kv_pages_table(&kp, s);
    for (int l = 0; l < L; l++) {
        be->download(be->ctx, pool, kv_cache_k(&kc, l), kc.pages_total * psz * sizeof *pool);
        be->download(be->ctx, vpool, kv_cache_v(&kc, l), kc.pages_total * psz * sizeof *vpool);
        // scratch page of position 4..7: rows 4, 5 copied from the committed page, 6, 7 the chain's
        ck_assert(bf16_to_f32(vpool[table[1] * psz + 0 * KVD]) == 20 * l + 4 + 50);
        ck_assert(bf16_to_f32(vpool[table[1] * psz + 1 * KVD]) == 20 * l + 5 + 50);
        ck_assert(bf16_to_f32(vpool[table[1] * psz + 2 * KVD]) == 100 + 20 * l + 6);
        ck_assert_mem_eq(pool + table[1] * psz + 0 * KVD, committed[l][4], sizeof committed[l][4]);
        ck_assert_mem_eq(pool + table[1] * psz + 1 * KVD, committed[l][5], sizeof committed[l][5]);
        ck_assert_mem_eq(pool + table[1] * psz + 2 * KVD, chain[l][6], sizeof chain[l][6]);
        // the sequence's own page 1 still holds zeros past the committed rows
        ck_assert(bf16_to_f32(pool[own[1] * psz + 2 * KVD]) == 0);
        ck_assert(bf16_to_f32(vpool[own[1] * psz + 2 * KVD]) == 0);
    }
    n = kv_pages_chain_copy_back(&kp, s, 0, 6, 4, src, dst);
    ck_assert_int_eq(n, 2);
    kv_cache_copy_pages(&kc, src, dst, n);
    for (int l = 0; l < L; l++) {
        be->download(be->ctx, pool, kv_cache_k(&kc, l), kc.pages_total * psz * sizeof *pool);
        be->download(be->ctx, vpool, kv_cache_v(&kc, l), kc.pages_total * psz * sizeof *vpool);
        ck_assert(bf16_to_f32(vpool[own[1] * psz + 1 * KVD]) == 20 * l + 5 + 50);
        ck_assert(bf16_to_f32(vpool[own[1] * psz + 3 * KVD]) == 100 + 20 * l + 7);
        ck_assert(bf16_to_f32(vpool[own[2] * psz + 1 * KVD]) == 100 + 20 * l + 9);
        ck_assert_mem_eq(pool + own[1] * psz + 1 * KVD, committed[l][5], sizeof committed[l][5]);
        ck_assert_mem_eq(pool + own[1] * psz + 3 * KVD, chain[l][7], sizeof chain[l][7]);
        ck_assert_mem_eq(pool + own[2] * psz + 1 * KVD, chain[l][9], sizeof chain[l][9]);
    }
    free(pool);
    free(vpool);
    kv_pages_release(&kp, s);
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_OK);
    kv_cache_free(&kc);
    kv_pages_free(&kp);
    be->destroy(be);
}
END_TEST

START_TEST(test_check_whole_catches_leaks) {
    kv_pages kp;
    kv_pages_config cfg = base_cfg();
    ck_assert_int_eq(kv_pages_init(&kp, &cfg), SG_OK);
    int s;
    ck_assert_int_eq(kv_pages_reserve(&kp, 40, &s), KV_RESERVED);
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_EXIT_FAIL); // a live sequence
    ck_assert_ptr_nonnull(strstr(sg_error(), "still alive"));
    kv_pages_release(&kp, s);
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_OK);
    // A page dropped from the free list (what a missing release would leave).
    kp.n_free--;
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_EXIT_FAIL);
    ck_assert_ptr_nonnull(strstr(sg_error(), "9 of 10 pages are free"));
    kp.n_free++;
    // A page still marked as owned.
    kp.owner[3] = 1;
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_EXIT_FAIL);
    ck_assert_ptr_nonnull(strstr(sg_error(), "page 3 leaked"));
    kp.owner[3] = -1;
    // A page listed twice.
    int32_t saved = kp.free_pages[0];
    kp.free_pages[0] = kp.free_pages[1];
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_EXIT_FAIL);
    kp.free_pages[0] = saved;
    ck_assert_int_eq(kv_pages_check_whole(&kp), SG_OK);
    kv_pages_free(&kp);
}
END_TEST

// A backend whose allocations fail after `budget` successes.
static sg_backend *real;
static int budget;
static void *limited_alloc(void *ctx, size_t bytes) {
    return budget-- > 0 ? real->alloc(ctx, bytes) : NULL;
}

// Device out of memory at each allocation of kv_cache_init: SG_EXIT_USAGE naming what, nothing
// leaked (the sanitizer build checks), and the cache usable when memory suffices.
START_TEST(test_cache_out_of_memory) {
    real = cpu_backend_create();
    sg_backend limited = *real;
    limited.alloc = limited_alloc;
    kv_pages kp;
    kv_pages_config cfg = base_cfg();
    ck_assert_int_eq(kv_pages_init(&kp, &cfg), SG_OK);
    kv_cache kc;
    for (int b = 0; b < 4; b++) {
        budget = b;
        ck_assert_int_eq(kv_cache_init(&kc, &limited, &kp, 2, 8), SG_EXIT_USAGE);
        ck_assert_ptr_nonnull(strstr(sg_error(), "cannot allocate"));
    }
    budget = 4;
    ck_assert_int_eq(kv_cache_init(&kc, &limited, &kp, 2, 8), SG_OK);
    ck_assert_int_eq(kc.pages_total, 14);
    kv_cache_free(&kc);
    kv_pages_free(&kp);
    real->destroy(real);
}
END_TEST

int main(void) {
    Suite *s = suite_create("kv_pages");
    TCase *tc = tcase_create("pages");
    tcase_add_test(tc, test_reserve_rule);
    tcase_add_test(tc, test_wait_vs_never);
    tcase_add_test(tc, test_scratch_never_handed_out);
    tcase_add_test(tc, test_chain_tables);
    tcase_add_test(tc, test_chain_device_copy);
    tcase_add_test(tc, test_check_whole_catches_leaks);
    tcase_add_test(tc, test_cache_out_of_memory);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
