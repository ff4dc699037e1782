// tests/test_gpu_backend.c: the CUDA backend (gpu/) on a GPU; exits 77 (skipped) without one.
// - Every op against its CPU twin through the bring-up tool (gates/ops.h) at tiny, small and
//   Qwen3-4B shapes: within each op's rule (bitwise for the ops that share the twin's reduction
//   order; gemm, gemm_logits and markov_step, whose K order is the CUDA backend's own, within the
//   order rule |d| <= 1e-5·S + rounding), guard zones intact, each row alone equal to the row in
//   the batch, the 2048-row GEMMs' prefixes M in {1, 2, 7, 8, 9, 16, 17, 32, 33, 64, 65, 256,
//   2048} equal bitwise, graph replay and reruns equal bitwise; attention also with its scores
//   recomputed past one tile or from the first key (SG_CUDA_ATT_STORED_KEYS); the GEMMs also with
//   gemm_band off and on every product width (SG_CUDA_GEMM_BAND), and with every product's column
//   tiles taken from the last one down (SG_CUDA_GEMM_FROM_END; markov_step alternates the order
//   itself, so its reruns compare the two orders bitwise), and with gemm_wgmma off and on every
//   product it can take (SG_CUDA_GEMM_WGMMA).
// - Memory: allocations are zero-filled, round trips are exact, an impossible allocation is NULL
//   and leaves the backend usable.
// - The engine on the committed tiny fixture with the CUDA backend: every request of every gate
//   workload gives the tokens of ref/ and the statuses, tokens and counters of the CPU backend
//   (the digests may differ across backends: the CUDA GEMM has its own K order, design.md §3);
//   within the CUDA backend, hedged, unhedged and plain runs give identical tokens and logits/tap
//   digests (also with a small max_rows, which chunks prefills and batches differently); the hedge
//   gate sees hedged rounds, chain wins and loss rounds.
// ctest-labels: gpu;ops
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef SG_HAVE_CUDA
int main(void) {
    fprintf(stderr, "test_gpu_backend: built without CUDA: skipped\n");
    return 77;
}
#else

#include "common/counters.h"
#include "engine_fixture.h"
#include "gates/ops.h"
#include "gpu/cuda_backend.h"

static sg_backend *gpu(void) {
    sg_backend *b = NULL;
    ck_assert_msg(cuda_backend_create(&b) == SG_OK, "%s", sg_error());
    return b;
}

// The bring-up tool's check mode over `op` (NULL: every op) on a new CUDA backend.
static void check_ops(const char *op) {
    sg_backend *g = gpu(), *c = cpu_backend_create();
    ops_device dev = {.sync = cuda_backend_sync,
                      .capture_begin = cuda_capture_begin,
                      .capture_end_replay = cuda_capture_end_replay,
                      .timer_begin = cuda_timer_begin,
                      .timer_end_us = cuda_timer_end_us,
                      .vendor_gemm = cuda_vendor_gemm,
                      .vendor_name = "cuBLAS"};
    ops_options o = {.seed = 1, .op = op};
    int st = ops_run(&o, g, &dev, c, stdout);
    ck_assert_msg(st == SG_OK, "%s", sg_error());
    c->destroy(c);
    g->destroy(g);
}

START_TEST(test_ops_against_cpu_twin) { check_ops(NULL); }
END_TEST

// The ops check of each of ops[0 .. n_ops) with the environment switch `name` (read when a
// backend is made) set to each of values[0 .. n). The switches are unset after every test
// (unset_switches), also after a failed one: the tests share one process.
static void check_ops_with(const char *const *ops, int n_ops, const char *name,
                           const char *const *values, int n) {
    for (int i = 0; i < n; i++) {
        setenv(name, values[i], 1);
        printf("%s=%s\n", name, values[i]);
        fflush(stdout); // shown even when a device fault aborts the check
        for (int k = 0; k < n_ops; k++) check_ops(ops[k]);
    }
}
static void check_attention_with(const char *name, const char *const *values, int n) {
    static const char *const attention[] = {"attention"};
    check_ops_with(attention, 1, name, values, n);
}

static void unset_switches(void) {
    unsetenv("SG_CUDA_ATT_STORED_KEYS");
    unsetenv("SG_CUDA_ATT_TEAMS");
    unsetenv("SG_CUDA_GEMM_BAND");
    unsetenv("SG_CUDA_GEMM_WGMMA");
    unsetenv("SG_CUDA_GEMM_FROM_END");
}

// Attention with fewer stored scores than keys (SG_CUDA_ATT_STORED_KEYS): 128 keeps one tile of
// the small and Qwen3-4B cases' up to 320 and 1600 keys, 0 none; the later passes recompute the
// rest from K, bit for bit the CPU twin's all the same.
START_TEST(test_attention_recomputed_scores) {
    static const char *const keys[] = {"128", "0"};
    check_attention_with("SG_CUDA_ATT_STORED_KEYS", keys, 2);
}
END_TEST

// Attention with 1, 2 and 4 heads per block at most (SG_CUDA_ATT_TEAMS; the cases have 3, 1 and
// 4 query heads per KV head, so blocks of 1, 2, 3 and 4 heads run), bitwise the CPU twin's; the
// default choice by rows takes at most 2 in these cases.
START_TEST(test_attention_heads_per_block) {
    static const char *const teams[] = {"1", "2", "4"};
    check_attention_with("SG_CUDA_ATT_TEAMS", teams, 3);
    setenv("SG_CUDA_ATT_STORED_KEYS", "0", 1); // 4 heads sharing tiles that are read again
    check_attention_with("SG_CUDA_ATT_TEAMS", teams + 2, 1);
}
END_TEST

// The GEMM ops with gemm_band off (9 to 32 rows of wide products back on gemm_split and
// gemm_tiled) and on every product width (SG_CUDA_GEMM_BAND=2: the tiny and small cases' narrow
// products, bands past N and gate/up pairs of 77 columns at 9 to 32 rows, prefixes included),
// within the order rule and bitwise across row counts all the same.
START_TEST(test_gemm_band_settings) {
    static const char *const gemm_ops[] = {"gemm", "gemm_logits", "gemm_group", "gemm_swiglu",
                                           "markov_step"};
    static const char *const band[] = {"0", "2"};
    check_ops_with(gemm_ops, 5, "SG_CUDA_GEMM_BAND", band, 2);
}
END_TEST

// The GEMM ops with every product's column tiles taken from the last one down
// (SG_CUDA_GEMM_FROM_END=1: gemm_split, gemm_band and gemm_tiled with and without its K split
// over blocks, over the sweep's row counts), within the order rule and bitwise across row counts
// all the same.
START_TEST(test_gemm_from_end) {
    static const char *const gemm_ops[] = {"gemm", "gemm_logits", "gemm_group", "gemm_swiglu"};
    static const char *const on[] = {"1"};
    check_ops_with(gemm_ops, 4, "SG_CUDA_GEMM_FROM_END", on, 1);
}
END_TEST

// The GEMM ops with gemm_wgmma off (the mma.sync kernels alone) and on every product it can take
// (SG_CUDA_GEMM_WGMMA=2: the Qwen3-4B cases' products at every row count of the sweep, 1 to 2048,
// so also row tiles mostly past M; the tiny and small cases, K % 256 != 0, keep the other
// kernels), within the order rule and bitwise across row counts all the same. By default (1) it
// takes the sweep's products from 65 rows, those of few tiles (k_proj, o_proj, down_proj, fc at
// 65 and 256 rows) with its K split over blocks, so the default run compares both forms' rows
// with the other kernels' bitwise. On a device or build without it, both runs are the default's.
START_TEST(test_gemm_wgmma_settings) {
    static const char *const gemm_ops[] = {"gemm", "gemm_logits", "gemm_group", "gemm_swiglu",
                                           "markov_step"};
    static const char *const wgmma[] = {"0", "2"};
    check_ops_with(gemm_ops, 5, "SG_CUDA_GEMM_WGMMA", wgmma, 2);
}
END_TEST

START_TEST(test_memory) {
    sg_backend *g = gpu();
    size_t n = 3 * 1000 * 1000 + 7;
    unsigned char *dev = g->alloc(g->ctx, n);
    ck_assert_ptr_nonnull(dev);
    unsigned char *h = malloc(n), *back = malloc(n);
    memset(h, 0x5c, n);
    g->download(g->ctx, back, dev, n);
    for (size_t i = 0; i < n; i++) ck_assert_msg(back[i] == 0, "alloc not zero-filled at %zu", i);
    for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 131 + 7);
    g->upload(g->ctx, dev, h, n);
    memset(h + 11, 0, 5); // upload has consumed the host buffer when it returns
    unsigned char *dev2 = g->alloc(g->ctx, n);
    g->copy(g->ctx, dev2, dev, n);
    g->download(g->ctx, back, dev2, n);
    for (size_t i = 0; i < n; i++) ck_assert_uint_eq(back[i], (unsigned char)(i * 131 + 7));
    ck_assert_ptr_null(g->alloc(g->ctx, (size_t)1 << 52)); // 4 PiB: refused, not fatal
    g->download(g->ctx, back, dev, 16);
    ck_assert_uint_eq(back[3], (unsigned char)(3 * 131 + 7));
    g->free(g->ctx, dev);
    g->free(g->ctx, dev2);
    g->free(g->ctx, NULL);
    free(h);
    free(back);
    g->destroy(g);
}
END_TEST

// ---- the engine on the tiny fixture ----

static ef_models M;

static void check_suite(const char *suite, int pool_pages, spec_counters *total, int *positions) {
    sg_workload w;
    ef_workload(&M, suite, &w);
    engine_options oh = ef_hedged(), ou = ef_unhedged(), op = ef_unhedged(), os = ef_hedged();
    op.plain = 1;
    os.max_rows = 40; // prefills in chunks, fewer requests per batch and hedged spans
    oh.pool_pages = ou.pool_pages = op.pool_pages = os.pool_pages = pool_pages;
    sg_backend *g = gpu(), *c = cpu_backend_create();
    sg_engine *eh = ef_run_on(&M, g, &M.dspark, &oh, &w, 0, -1);
    sg_engine *eu = ef_run_on(&M, g, &M.dspark, &ou, &w, 0, -1);
    sg_engine *ep = ef_run_on(&M, g, &M.dspark, &op, &w, 0, -1);
    sg_engine *es = ef_run_on(&M, g, &M.dspark, &os, &w, 0, -1);
    sg_engine *ec = ef_run_on(&M, c, &M.dspark, &oh, &w, 0, -1);
    ef_same_results(eh, eu, EF_DIGESTS, suite);
    ef_same_results(eh, ep, EF_DIGESTS, suite);
    ef_same_results(eh, es, EF_DIGESTS, suite);
    // Across backends tokens and statuses (counters below), not digests: the CUDA GEMM reduces K
    // in its own order, so its logits and taps differ from the CPU twin's by order effects.
    ef_same_results(eh, ec, 0, suite);
    for (int i = 0; i < w.n_requests; i++) {
        const sg_request *r = &w.requests[i];
        engine_result x, y;
        engine_result_of(eh, i, &x);
        engine_result_of(ec, i, &y);
        if (r->expect_rejected) {
            ck_assert_msg(x.status == ENGINE_REJECTED, "%s/%s: not rejected", suite, r->id);
            continue;
        }
        ck_assert_msg(x.status == ENGINE_DONE, "%s/%s: %s", suite, r->id, x.reason);
        ref_output ro;
        ef_ref(&M, NULL, r, &ro);
        ck_assert_msg(
            ro.n_generated == x.n_generated &&
                memcmp(ro.tokens + ro.n_prompt, x.tokens, sizeof(int) * (size_t)x.n_generated) == 0,
            "%s/%s: CUDA engine tokens differ from ref/", suite, r->id);
        ref_output_free(&ro);
        char a[512], b[512];
        counters_format(&x.counters, a, sizeof a);
        counters_format(&y.counters, b, sizeof b);
        ck_assert_msg(counters_equal(&x.counters, &y.counters), "%s/%s: cuda %s\n cpu %s", suite,
                      r->id, a, b);
        ck_assert_msg(counters_check(&x.counters, x.n_generated) == SG_OK, "%s", sg_error());
        counters_add(total, &x.counters);
        *positions += x.n_generated;
    }
    sg_engine *all[] = {eh, eu, ep, es, ec};
    for (int i = 0; i < 5; i++) engine_destroy(all[i]);
    g->destroy(g);
    c->destroy(c);
    workload_free(&w);
}

START_TEST(test_engine_tiny_fixture) {
    ef_open_set(&M, "tiny");
    static const char *suites[] = {"sequential", "concurrent", "capture_shape", "draft_headroom"};
    spec_counters total = {0};
    int positions = 0;
    for (int s = 0; s < 4; s++) check_suite(suites[s], 0, &total, &positions);
    check_suite("tiny_pool", 12, &total, &positions);
    ck_assert_int_gt(total.hedged_rounds, 0);
    ck_assert_int_gt(total.chain_wins, 0);
    ck_assert_int_gt(total.loss_rounds, 0);
    ck_assert_int_eq(total.chains_dropped_capacity, 0);
    printf("engine on cuda, tiny fixture: %d positions, tokens and counters equal to the CPU "
           "backend's, digests equal across hedged, unhedged and plain runs; hedged rounds %lld, "
           "chain wins %lld, loss rounds %lld\n",
           positions, (long long)total.hedged_rounds, (long long)total.chain_wins,
           (long long)total.loss_rounds);
    ef_close(&M);
}
END_TEST

int main(void) {
    sg_backend *probe = NULL;
    int st = cuda_backend_create(&probe);
    if (st != SG_OK) {
        fprintf(stderr, "test_gpu_backend: %s: skipped\n", sg_error());
        return st == SG_EXIT_NO_GPU ? 77 : 1;
    }
    probe->destroy(probe);
    Suite *s = suite_create("gpu_backend");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_checked_fixture(tc, NULL, unset_switches);
    tcase_add_test(tc, test_memory);
    tcase_add_test(tc, test_ops_against_cpu_twin);
    tcase_add_test(tc, test_attention_recomputed_scores);
    tcase_add_test(tc, test_attention_heads_per_block);
    tcase_add_test(tc, test_gemm_band_settings);
    tcase_add_test(tc, test_gemm_from_end);
    tcase_add_test(tc, test_gemm_wgmma_settings);
    tcase_add_test(tc, test_engine_tiny_fixture);
    suite_add_tcase(s, tc);
    return tu_run_no_fork(s);
}
#endif
