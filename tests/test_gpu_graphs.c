// tests/test_gpu_graphs.c: the engine's CUDA-graph replay (engine/op_graphs.h over the CUDA
// backend's capture hooks) on a GPU; exits 77 (skipped) without one.
// Every request of the tiny fixture's gate workloads (sequential, concurrent, capture_shape,
// draft_headroom, tiny_pool with a 12-page pool), hedged, unhedged, plain and hedged with a small
// max_rows, on one CUDA backend with graphs on and off: identical tokens, logits and tap digests,
// statuses and counters, and over all runs graphs were captured and launched (more launches than
// captures: cached graphs were replayed).
// Scratch lifetime: a graph captured with the backend's first scratch buffer, replayed after an
// eager argmax over 65535 rows grew the scratch (65535 partials of 20 bytes > the first 1 MiB),
// still gives the right ids for new contents of its input.
// ctest-labels: gpu;unit
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef SG_HAVE_CUDA
int main(void) {
    fprintf(stderr, "test_gpu_graphs: built without CUDA: skipped\n");
    return 77;
}
#else

#include "common/counters.h"
#include "engine_fixture.h"
#include "gpu/cuda_backend.h"

static ef_models M;

START_TEST(test_graphs_on_off) {
    ef_open_set(&M, "tiny");
    static const char *suites[] = {"sequential", "concurrent", "capture_shape", "draft_headroom",
                                   "tiny_pool"};
    sg_backend *g = NULL;
    ck_assert_msg(cuda_backend_create(&g) == SG_OK, "%s", sg_error());
    ck_assert_ptr_nonnull(g->capture_begin);
    op_graphs_stats sum = {0};
    int runs = 0;
    for (int s = 0; s < 5; s++) {
        sg_workload w;
        ef_workload(&M, suites[s], &w);
        engine_options opts[4] = {ef_hedged(), ef_unhedged(), ef_unhedged(), ef_hedged()};
        opts[2].plain = 1;
        opts[3].max_rows = 40; // prefills in chunks, smaller batches
        for (int k = 0; k < 4; k++) {
            if (s == 4) opts[k].pool_pages = 12;
            char what[96];
            snprintf(what, sizeof what, "%s, options %d", suites[s], k);
            engine_options o = opts[k];
            o.graphs = 0;
            sg_engine *off = ef_run_on(&M, g, &M.dspark, &o, &w, 0, -1);
            o.graphs = 1;
            sg_engine *on = ef_run_on(&M, g, &M.dspark, &o, &w, 0, -1);
            ef_same_results(off, on, EF_DIGESTS | EF_COUNTERS, what);
            op_graphs_stats st;
            ck_assert_int_eq(engine_graph_stats(off, &st), 0);
            ck_assert_int_eq(engine_graph_stats(on, &st), 1);
            ck_assert_int_eq(st.flushes, st.eager_flushes + st.launches);
            sum.ops += st.ops;
            sum.flushes += st.flushes;
            sum.eager_flushes += st.eager_flushes;
            sum.captures += st.captures;
            sum.launches += st.launches;
            sum.graph_ops += st.graph_ops;
            sum.evictions += st.evictions;
            runs++;
            engine_destroy(on);
            engine_destroy(off);
        }
        workload_free(&w);
    }
    g->destroy(g);
    ck_assert_int_gt(sum.captures, 0);
    ck_assert_int_gt(sum.launches, sum.captures); // cached graphs were replayed
    ck_assert_int_gt(sum.graph_ops, sum.ops / 4);
    printf("graphs on cuda, tiny fixture, %d runs: tokens, digests and counters equal to graphs "
           "off; %lld ops in %lld flushes: %lld eager, %lld captures, %lld launches running %lld "
           "ops, %lld evictions\n",
           runs, (long long)sum.ops, (long long)sum.flushes, (long long)sum.eager_flushes,
           (long long)sum.captures, (long long)sum.launches, (long long)sum.graph_ops,
           (long long)sum.evictions);
    ef_close(&M);
}
END_TEST

// Row argmax on the host, ties to the lowest id.
static void host_argmax(const float *x, int rows, int n, int32_t *ids) {
    for (int r = 0; r < rows; r++) {
        int best = 0;
        for (int j = 1; j < n; j++)
            if (x[(size_t)r * n + j] > x[(size_t)r * n + best]) best = j;
        ids[r] = best;
    }
}

START_TEST(test_scratch_outlives_graphs) {
    enum { R = 4, NS = 1000, BIG = 65535 };
    sg_backend *g = NULL, *w = NULL;
    ck_assert_msg(cuda_backend_create(&g) == SG_OK, "%s", sg_error());
    ck_assert_int_eq(op_graphs_wrap(g, &w), SG_OK);
    float *xs = NULL, *xb = NULL;
    int32_t *ids = NULL, *idb = NULL;
    ck_assert_int_eq(be_alloc(w, R * NS * sizeof(float), "x", (void **)&xs), SG_OK);
    ck_assert_int_eq(be_alloc(w, BIG * 2 * sizeof(float), "big x", (void **)&xb), SG_OK);
    ck_assert_int_eq(be_alloc(w, R * sizeof(int32_t), "ids", (void **)&ids), SG_OK);
    ck_assert_int_eq(be_alloc(w, BIG * sizeof(int32_t), "big ids", (void **)&idb), SG_OK);
    static float host[R * NS], big[BIG * 2];
    int32_t want[R], got[R];
    static int32_t got_big[BIG];
    uint64_t seed = 7;
    for (int round = 0; round < 3; round++) { // eager, captured, launched after the growth
        for (int i = 0; i < R * NS; i++) host[i] = (float)tu_uniform(&seed);
        w->upload(w->ctx, xs, host, sizeof host);
        for (int k = 0; k < 4; k++) w->argmax(w->ctx, xs, R, NS, NS, ids);
        w->download(w->ctx, got, ids, sizeof got);
        host_argmax(host, R, NS, want);
        ck_assert_mem_eq(got, want, sizeof got);
        if (round == 1) { // the scratch grows (an eager op: one op is no graph)
            for (int i = 0; i < BIG; i++) {
                big[2 * i] = (float)(i % 3);
                big[2 * i + 1] = 1.0f;
            }
            w->upload(w->ctx, xb, big, sizeof big);
            w->argmax(w->ctx, xb, BIG, 2, 2, idb);
            w->download(w->ctx, got_big, idb, sizeof got_big);
            for (int i = 0; i < BIG; i++) ck_assert_int_eq(got_big[i], i % 3 == 0); // ties: id 0
        }
    }
    op_graphs_stats st;
    op_graphs_stats_of(w, &st);
    ck_assert_int_eq(st.captures, 1);
    ck_assert_int_eq(st.launches, 2);
    void *bufs[] = {xs, xb, ids, idb};
    for (int i = 0; i < 4; i++) w->free(w->ctx, bufs[i]);
    w->destroy(w);
    g->destroy(g);
}
END_TEST

int main(void) {
    sg_backend *probe = NULL;
    int st = cuda_backend_create(&probe);
    if (st != SG_OK) {
        fprintf(stderr, "test_gpu_graphs: %s: skipped\n", sg_error());
        return st == SG_EXIT_NO_GPU ? 77 : 1;
    }
    probe->destroy(probe);
    Suite *s = suite_create("gpu_graphs");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_scratch_outlives_graphs);
    tcase_add_test(tc, test_graphs_on_off);
    suite_add_tcase(s, tc);
    return tu_run_no_fork(s);
}
#endif
