// tests/test_op_graphs.c: the graph-replay wrapper (engine/op_graphs.h) and the engine's graphs
// option, on the CPU backend plus a fake capturing device: the fake's table is a deferring
// op_graphs wrapper over the CPU backend (its ops queue, its memory calls run the queue first, as
// a stream does) with capture hooks that take the ops issued during a capture as the "graph"
// (NOT run) and queue them again at each launch; its memory calls fail the test if issued while
// capturing.
// - A log's first flush runs eagerly, the second captures and launches, the third launches; the
//   results equal the CPU backend's bit for bit; a changed host argument is a new log; short logs
//   are never captured.
// - Eviction: the least recently used graph is destroyed when the cache is full of graphs, a log
//   seen once goes first, an evicted log is seen afresh; destroy frees every graph.
// - Order: upload, download, alloc and free run the recorded ops first (an op recorded before an
//   upload of the buffer it reads sees the old contents).
// - The engine on the tiny fixture with graphs on gives the tokens, digests and counters of graphs
//   off (a hedged run of the concurrent workload, a plain run of the sequential one), with graphs
//   actually launched and every graph destroyed with the engine; graphs on a backend without
//   capture hooks change nothing; the phase-timing sync (eng_sync) runs the recorded ops first and
//   waits on the user's backend.
// - The bench's warm-up (bench/bench.c) on the fake device: batches until one captures no new
//   graph in its timed steps (a step shape a batch meets once is captured in the second batch,
//   which one warm-up batch left to the first measured one), and the same for its phase-timed
//   batch (its syncs cut the logs elsewhere): no measured batch captures.
// ctest-labels: cpu;unit
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench/bench.h"
#include "common/counters.h"
#include "engine/engine_internal.h"
#include "engine/op_graphs.h"
#include "engine_fixture.h"

// ---- the fake capturing device ----

typedef struct {
    void *log;
    size_t bytes;
} fake_graph;

static struct {
    sg_backend *cpu, *queue; // queue: op_graphs over the CPU backend (no hooks: defers only)
    sg_backend be;           // the fake's table; be.ctx is the queue's
    int capturing;
    int begins, ends, launches, destroys;
} F;

static void *fake_alloc(void *ctx, size_t bytes) {
    ck_assert_msg(!F.capturing, "alloc during a capture");
    return F.queue->alloc(ctx, bytes);
}

static void fake_free(void *ctx, void *p) {
    ck_assert_msg(!F.capturing, "free during a capture");
    F.queue->free(ctx, p);
}

static void fake_upload(void *ctx, void *dst, const void *src, size_t bytes) {
    ck_assert_msg(!F.capturing, "upload during a capture");
    F.queue->upload(ctx, dst, src, bytes);
}

static void fake_download(void *ctx, void *dst, const void *src, size_t bytes) {
    ck_assert_msg(!F.capturing, "download during a capture");
    F.queue->download(ctx, dst, src, bytes);
}

static void fake_capture_begin(void *ctx) {
    (void)ctx;
    ck_assert(!F.capturing);
    op_graphs_flush(F.queue); // what came before is not part of the graph
    F.capturing = 1;
    F.begins++;
}

static void *fake_capture_end(void *ctx) {
    (void)ctx;
    ck_assert(F.capturing);
    F.capturing = 0;
    F.ends++;
    fake_graph *g = sg_calloc(1, sizeof *g);
    g->bytes = op_graphs_take(F.queue, &g->log);
    ck_assert_uint_gt(g->bytes, 0);
    return g;
}

static void fake_graph_launch(void *ctx, void *graph) {
    (void)ctx;
    ck_assert(!F.capturing);
    const fake_graph *g = graph;
    op_graphs_put(F.queue, g->log, g->bytes);
    F.launches++;
}

static void fake_graph_destroy(void *ctx, void *graph) {
    (void)ctx;
    fake_graph *g = graph;
    free(g->log);
    free(g);
    F.destroys++;
}

static void fake_destroy(sg_backend *be) {
    (void)be;
    F.queue->destroy(F.queue);
    F.cpu->destroy(F.cpu);
}

static sg_backend *fake_create(void) {
    memset(&F, 0, sizeof F);
    F.cpu = cpu_backend_create();
    ck_assert_int_eq(op_graphs_wrap(F.cpu, &F.queue), SG_OK);
    F.be = *F.queue;
    F.be.name = "fake";
    F.be.alloc = fake_alloc;
    F.be.free = fake_free;
    F.be.upload = fake_upload;
    F.be.download = fake_download;
    F.be.destroy = fake_destroy;
    F.be.capture_begin = fake_capture_begin;
    F.be.capture_end = fake_capture_end;
    F.be.graph_launch = fake_graph_launch;
    F.be.graph_destroy = fake_graph_destroy;
    return &F.be;
}

// ---- small op logs ----

enum { N = 64 };

typedef struct {
    const sg_backend *be;
    bf16 *h, *x; // device [N]
} bufs;

static bufs bufs_make(const sg_backend *be) {
    bufs b = {.be = be};
    bf16 host[N];
    for (int i = 0; i < N; i++) host[i] = f32_to_bf16((float)(i % 7) - 3.0f);
    ck_assert_int_eq(be_alloc_upload(be, host, sizeof host, "x", (void **)&b.x), SG_OK);
    ck_assert_int_eq(be_alloc(be, sizeof host, "h", (void **)&b.h), SG_OK);
    return b;
}

static void bufs_free(bufs *b) {
    b->be->free(b->be->ctx, b->h);
    b->be->free(b->be->ctx, b->x);
}

// A log of n_ops adds h += x over the first n elements.
static void record(const bufs *b, int n_ops, int n) {
    for (int k = 0; k < n_ops; k++) b->be->add(b->be->ctx, b->h, b->x, (size_t)n);
}

static void fetch(const bufs *b, bf16 *out) {
    b->be->download(b->be->ctx, out, b->h, N * sizeof(bf16));
}

static op_graphs_stats stats(const sg_backend *w) {
    op_graphs_stats s;
    op_graphs_stats_of(w, &s);
    return s;
}

START_TEST(test_eager_capture_launch) {
    sg_backend *fake = fake_create(), *w = NULL, *cpu = cpu_backend_create();
    ck_assert_int_eq(op_graphs_wrap(fake, &w), SG_OK);
    ck_assert_ptr_eq(op_graphs_inner(w), fake);
    ck_assert_str_eq(w->name, "fake");
    ck_assert_ptr_null(w->capture_begin);
    bufs g = bufs_make(w), c = bufs_make(cpu);
    // first, second and third flush of one log
    for (int round = 1; round <= 3; round++) {
        record(&g, 5, N);
        record(&c, 5, N);
        op_graphs_flush(w);
        op_graphs_stats s = stats(w);
        ck_assert_int_eq(s.flushes, round);
        ck_assert_int_eq(s.eager_flushes, 1);
        ck_assert_int_eq(s.captures, round >= 2);
        ck_assert_int_eq(s.launches, round - 1);
        ck_assert_int_eq(s.graph_ops, 5 * (round - 1));
        ck_assert_int_eq(F.begins, round >= 2);
        ck_assert_int_eq(F.ends, round >= 2);
        ck_assert_int_eq(F.launches, round - 1);
    }
    bf16 a[N], b[N];
    fetch(&g, a);
    fetch(&c, b);
    ck_assert_mem_eq(a, b, sizeof a);
    ck_assert_float_eq(bf16_to_f32(a[0]), -45.0f); // 15 adds of -3, so the graph runs did run
    // a changed host argument (n) is a new log: eager, then captured
    for (int round = 1; round <= 2; round++) {
        record(&g, 4, N - 1);
        record(&c, 4, N - 1);
        op_graphs_flush(w);
    }
    op_graphs_stats s = stats(w);
    ck_assert_int_eq(s.eager_flushes, 2);
    ck_assert_int_eq(s.captures, 2);
    ck_assert_int_eq(s.launches, 3);
    // a short log is never captured
    for (int round = 1; round <= 3; round++) {
        record(&g, OP_GRAPHS_MIN_OPS - 1, N);
        record(&c, OP_GRAPHS_MIN_OPS - 1, N);
        op_graphs_flush(w);
    }
    s = stats(w);
    ck_assert_int_eq(s.eager_flushes, 5);
    ck_assert_int_eq(s.captures, 2);
    op_graphs_flush(w); // an empty log is no flush
    ck_assert_int_eq(stats(w).flushes, s.flushes);
    fetch(&g, a);
    fetch(&c, b);
    ck_assert_mem_eq(a, b, sizeof a);
    bufs_free(&g);
    bufs_free(&c);
    w->destroy(w);
    ck_assert_int_eq(F.destroys, 2); // destroy frees every graph
    fake->destroy(fake);
    cpu->destroy(cpu);
}
END_TEST

START_TEST(test_eviction) {
    sg_backend *fake = fake_create(), *w = NULL;
    ck_assert_int_eq(op_graphs_wrap(fake, &w), SG_OK);
    bufs g = bufs_make(w);
    int extra = 10, logs = OP_GRAPHS_CACHE + extra;
    for (int i = 0; i < logs; i++)
        for (int round = 0; round < 2; round++) { // log i: adds over i + 1 elements
            record(&g, 4, i % N + 1);
            g.be->add(g.be->ctx, g.h, g.x, (size_t)(i / N)); // keeps the logs distinct past N
            op_graphs_flush(w);
        }
    op_graphs_stats s = stats(w);
    ck_assert_int_eq(s.captures, logs);
    ck_assert_int_eq(s.evictions, extra);
    ck_assert_int_eq(F.destroys, extra);
    // log 0 was evicted: seen afresh (eager); the last log still launches
    record(&g, 4, 1);
    g.be->add(g.be->ctx, g.h, g.x, 0);
    op_graphs_flush(w);
    ck_assert_int_eq(stats(w).eager_flushes, s.eager_flushes + 1);
    ck_assert_int_eq(stats(w).launches, s.launches);
    ck_assert_int_eq(F.destroys, extra + 1); // it took the least recently used graph's place
    record(&g, 4, (logs - 1) % N + 1);
    g.be->add(g.be->ctx, g.h, g.x, (size_t)((logs - 1) / N));
    op_graphs_flush(w);
    ck_assert_int_eq(stats(w).launches, s.launches + 1);
    ck_assert_int_eq(stats(w).captures, s.captures);
    // a new log now takes the place of the log seen once, not a graph's
    record(&g, 5, N);
    op_graphs_flush(w);
    ck_assert_int_eq(stats(w).evictions, extra + 1);
    ck_assert_int_eq(F.destroys, extra + 1);
    bufs_free(&g);
    w->destroy(w);
    ck_assert_int_eq(F.destroys, F.ends);
    fake->destroy(fake);
}
END_TEST

START_TEST(test_memory_calls_flush_first) {
    for (int hooks = 0; hooks < 2; hooks++) {
        sg_backend *inner = hooks ? fake_create() : cpu_backend_create(), *w = NULL;
        ck_assert_int_eq(op_graphs_wrap(inner, &w), SG_OK);
        bufs b = bufs_make(w);
        bf16 old[N], fresh[N], out[N];
        w->download(w->ctx, old, b.x, sizeof old);
        for (int i = 0; i < N; i++) fresh[i] = f32_to_bf16(100.0f + (float)i);
        // a copy recorded before an upload of its source copies the old contents
        for (int round = 0; round < 3; round++) { // eager, captured, launched
            w->upload(w->ctx, b.x, old, sizeof old);
            w->copy(w->ctx, b.h, b.x, sizeof old);
            record(&b, 3, 0); // long enough to capture
            w->upload(w->ctx, b.x, fresh, sizeof fresh);
            w->download(w->ctx, out, b.h, sizeof out);
            ck_assert_mem_eq(out, old, sizeof out);
        }
        ck_assert_int_eq(stats(w).launches, hooks ? 2 : 0);
        // every memory call runs the recorded ops first
        int64_t f = stats(w).flushes;
        w->copy(w->ctx, b.h, b.x, sizeof old);
        void *p = w->alloc(w->ctx, 16);
        ck_assert_int_eq(stats(w).flushes, f + 1);
        w->copy(w->ctx, b.h, b.x, sizeof old);
        w->free(w->ctx, p);
        ck_assert_int_eq(stats(w).flushes, f + 2);
        w->copy(w->ctx, b.h, b.x, sizeof old);
        w->download(w->ctx, out, b.h, sizeof out);
        ck_assert_mem_eq(out, fresh, sizeof out);
        ck_assert_int_eq(stats(w).flushes, f + 3);
        bufs_free(&b);
        w->destroy(w);
        inner->destroy(inner);
    }
}
END_TEST

// ---- the engine ----

static ef_models M;

static void setup_models(void) { ef_open_set(&M, "tiny"); }
static void teardown_models(void) { ef_close(&M); }

START_TEST(test_engine_graphs_same_bits) {
    // hedged on the concurrent workload (batches, ladders, copy-back), plain on the sequential one
    engine_options hedged = ef_hedged(), plain = ef_unhedged();
    plain.plain = 1;
    struct {
        const char *suite, *mode;
        const engine_options *o;
    } runs[] = {{"concurrent", "hedged", &hedged}, {"sequential", "plain", &plain}};
    spec_counters total = {0};
    for (int k = 0; k < 2; k++) {
        sg_workload w;
        ef_workload(&M, runs[k].suite, &w);
        sg_backend *cpu = cpu_backend_create(), *fake = fake_create();
        engine_options o = *runs[k].o;
        o.graphs = 0;
        sg_engine *off = ef_run_on(&M, cpu, &M.dspark, &o, &w, 0, -1);
        o.graphs = 1;
        sg_engine *on = ef_run_on(&M, fake, &M.dspark, &o, &w, 0, -1);
        ef_same_results(off, on, EF_DIGESTS | EF_COUNTERS, runs[k].suite);
        op_graphs_stats g;
        ck_assert_int_eq(engine_graph_stats(off, &g), 0);
        ck_assert_int_eq(g.ops, 0);
        ck_assert_int_eq(engine_graph_stats(on, &g), 1);
        ck_assert_int_gt(g.captures, 0);
        ck_assert_int_gt(g.launches, g.captures);
        ck_assert_int_gt(g.graph_ops, g.ops / 4);
        ck_assert_int_eq(g.flushes, g.eager_flushes + g.launches);
        ck_assert_int_eq(F.begins, g.captures);
        ck_assert_int_eq(F.launches, g.launches);
        ck_assert(!F.capturing);
        printf("%s, %s: %lld ops, %lld flushes: %lld eager, %lld captures, %lld launches running "
               "%lld ops\n", runs[k].suite, runs[k].mode, (long long)g.ops, (long long)g.flushes,
               (long long)g.eager_flushes, (long long)g.captures, (long long)g.launches,
               (long long)g.graph_ops);
        for (int i = 0; i < engine_n_requests(on); i++) {
            engine_result r;
            engine_result_of(on, i, &r);
            counters_add(&total, &r.counters);
        }
        engine_destroy(on);
        ck_assert_int_eq(F.destroys, F.ends); // the engine's graphs die with it
        engine_destroy(off);
        fake->destroy(fake);
        cpu->destroy(cpu);
        workload_free(&w);
    }
    ck_assert_int_gt(total.hedged_rounds, 0); // ladders, page copies and copy-back were recorded
    ck_assert_int_gt(total.chain_wins, 0);
}
END_TEST

static int syncs;
static const sg_backend *synced_be;
static const sg_backend *fake_be;

static void count_sync(const sg_backend *be) {
    syncs++;
    synced_be = be;
    ck_assert_int_eq(F.capturing, 0);
}

START_TEST(test_engine_graphs_options) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    // graphs on a backend without capture hooks: not wrapped, the same run
    sg_backend *cpu = cpu_backend_create();
    engine_options o = ef_unhedged();
    o.graphs = 1;
    sg_engine *e = ef_run_on(&M, cpu, NULL, &o, &w, 0, -1);
    op_graphs_stats g;
    ck_assert_int_eq(engine_graph_stats(e, &g), 0);
    ck_assert_ptr_eq(e->be, cpu);
    engine_destroy(e);
    // the timing sync: the wrapper's ops run first, then the user's backend is waited on
    fake_be = fake_create();
    engine_timing tm = {.sync = count_sync};
    o.timing = &tm;
    ck_assert_int_eq(engine_create(fake_be, &M.target, NULL, &o, &e), SG_OK);
    ck_assert_ptr_ne(e->be, fake_be);
    bufs b = bufs_make(e->be);
    record(&b, 2, N);
    int64_t flushes = stats(e->be).flushes;
    eng_sync(e);
    ck_assert_int_eq(syncs, 1);
    ck_assert_ptr_eq(synced_be, fake_be);
    ck_assert_int_eq(stats(e->be).flushes, flushes + 1);
    bufs_free(&b);
    engine_destroy(e);
    F.be.destroy(&F.be);
    cpu->destroy(cpu);
    workload_free(&w);
}
END_TEST

START_TEST(test_bench_warms_up_until_no_capture) {
    char dir[512], json[600];
    tu_tmpdir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/bench.json", dir);
    bench_options o = {.fixture = "tiny", .conc = {1, 2}, .n_conc = 2, .max_new = 16,
                       .repeat = 2, .graphs = 1, .json = json};
    o.modes[BENCH_PLAIN] = o.modes[BENCH_SPEC] = o.modes[BENCH_HEDGE1] = 1;
    sg_backend *fake = fake_create();
    bench_device dev = {.description = "fake capturing device"};
    FILE *out = tmpfile();
    ck_assert_int_eq(bench_run(&o, fake, &dev, out), SG_OK);
    rewind(out);
    static char text[1 << 16];
    text[fread(text, 1, sizeof text - 1, out)] = '\0';
    fclose(out);
    fake->destroy(fake);
    ck_assert_ptr_nonnull(strstr(text, "graph replay: warm-up batches, then phase-timed"));
    FILE *f = fopen(json, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    buf[fread(buf, 1, sizeof buf - 1, f)] = '\0';
    fclose(f);
    cJSON *j = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(j);
    const cJSON *r;
    int more_than_one = 0;
    cJSON_ArrayForEach(r, cJSON_GetObjectItemCaseSensitive(j, "runs")) {
        const char *mode = cJSON_GetObjectItemCaseSensitive(r, "mode")->valuestring;
        int warmups = cJSON_GetObjectItemCaseSensitive(r, "warmup_batches")->valueint;
        double warm = cJSON_GetObjectItemCaseSensitive(r, "warmup_graph_captures")->valuedouble;
        double measured =
            cJSON_GetObjectItemCaseSensitive(r, "measured_graph_captures")->valuedouble;
        int timed = cJSON_GetObjectItemCaseSensitive(r, "phase_timed_batches")->valueint;
        double kept = cJSON_GetObjectItemCaseSensitive(r, "phase_timed_graph_captures")->valuedouble;
        printf("bench on the fake device, %s N=%d: %d warm-up batches, %.0f captures, %.0f in "
               "the measured batches; %d phase-timed batches, %.0f captures in the kept one\n",
               mode, cJSON_GetObjectItemCaseSensitive(r, "concurrency")->valueint, warmups, warm,
               measured, timed, kept);
        // The batches repeat the same requests, so after the warm-up their timed steps meet no new
        // step shape (step 0 is not counted: a prefill's log holds its requests' own buffers).
        ck_assert_msg(measured == 0 && kept == 0, "%s: graphs captured after the warm-up", mode);
        ck_assert(warm > 0);
        ck_assert_int_ge(timed, 1);
        ck_assert_int_le(timed, 4);
        ck_assert_int_ge(warmups, 1);
        ck_assert_int_le(warmups, 4);
        more_than_one += warmups > 1;
    }
    // Step shapes a batch meets once are captured in the second batch: it ran.
    ck_assert_int_gt(more_than_one, 0);
    cJSON_Delete(j);
}
END_TEST

int main(void) {
    Suite *s = suite_create("op_graphs");
    TCase *tc = tcase_create("wrapper");
    tcase_add_test(tc, test_eager_capture_launch);
    tcase_add_test(tc, test_eviction);
    tcase_add_test(tc, test_memory_calls_flush_first);
    suite_add_tcase(s, tc);
    TCase *te = tcase_create("engine");
    tcase_set_timeout(te, 300);
    tcase_add_checked_fixture(te, setup_models, teardown_models);
    tcase_add_test(te, test_engine_graphs_same_bits);
    tcase_add_test(te, test_engine_graphs_options);
    tcase_add_test(te, test_bench_warms_up_until_no_capture);
    suite_add_tcase(s, te);
    return tu_run(s);
}
