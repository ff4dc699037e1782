// tests/test_bench.c: `sparkgate bench` on the CPU backend (tiny fixture): the table, the JSON
// fields, usage errors; bench_run with a fake bandwidth (floors and shares follow bytes /
// bandwidth); and the engine's phase timing (engine.h engine_timing): the phases fit in the
// rounds, the work sums match the batch, and timing leaves tokens unchanged.
// ctest-labels: cpu;unit
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "common/error.h"
#include "common/model.h"
#include "engine/cpu_backend.h"
#include "engine/engine.h"
#include "fixtures/catalog.h"
#include "testutil.h"

static char output[1 << 16];

static cJSON *read_json(const char *path) {
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    cJSON *j = cJSON_Parse(buf);
    ck_assert_ptr_nonnull(j);
    return j;
}

static double num(const cJSON *o, const char *name) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, name);
    ck_assert_msg(cJSON_IsNumber(x), "field %s is not a number", name);
    return x->valuedouble;
}

// Runs `bench FLAGS --json <a fresh temporary file>` on the CLI: its exit status, the output in
// `output` and the JSON's path in json [600].
static int run_bench_json(const char *flags, char *json) {
    char dir[512], args[1024];
    tu_tmpdir(dir, sizeof dir);
    snprintf(json, 600, "%s/bench.json", dir);
    snprintf(args, sizeof args, "bench %s --json %s", flags, json);
    return tu_run_cli(args, output, sizeof output);
}

START_TEST(cli_table_and_json) {
    char json[600];
    int st = run_bench_json("--backend cpu --fixture tiny --concurrency 1 --max-new 16", json);
    ck_assert_msg(st == 0, "exit %d: %s", st, output);
    ck_assert_ptr_nonnull(strstr(output, "bandwidth: NOT MEASURED"));
    ck_assert_ptr_nonnull(strstr(output, "tok/s"));
    ck_assert_ptr_nonnull(strstr(output, "break-even"));
    ck_assert_ptr_nonnull(strstr(output, "goals at concurrency 1"));
    ck_assert_ptr_nonnull(strstr(output, "graph replay on"));
    cJSON *j = read_json(json);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "graphs")));
    ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(j, "bandwidth_gbps")));
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
    ck_assert_int_eq(cJSON_GetArraySize(runs), BENCH_MODES);
    for (int i = 0; i < BENCH_MODES; i++) {
        const cJSON *r = cJSON_GetArrayItem(runs, i);
        ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r, "mode")->valuestring,
                         bench_mode_names[i]);
        ck_assert(num(r, "concurrency") == 1);
        // Step 0 (prefill: one token, then the first round) is the untimed warm-up.
        if (i == BENCH_PLAIN) ck_assert(num(r, "tokens") == 14 && num(r, "rounds") == 14);
        ck_assert(num(r, "tokens") >= num(r, "rounds"));
        ck_assert(num(r, "accepted_per_round") >= 0 && num(r, "hedge_wins") >= 0);
        ck_assert(num(r, "rounds") > 0);
        ck_assert(num(r, "tokens_per_s") > 0 && num(r, "ms_per_round") > 0);
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(r, "phases");
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(ph, "verify");
        ck_assert(num(v, "ms") > 0);
        ck_assert(num(v, "bytes") > 0);
        ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(v, "share_of_floor")));
        const cJSON *d = cJSON_GetObjectItemCaseSensitive(ph, "drafter");
        ck_assert(i == BENCH_PLAIN ? num(d, "bytes") == 0 : num(d, "bytes") > 0);
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(ph, "ladder");
        ck_assert(i >= BENCH_HEDGE1 ? num(l, "bytes") > 0 : num(l, "bytes") == 0);
        ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "break_even")) ==
                  (i >= BENCH_HEDGE1));
    }
    const cJSON *goals = cJSON_GetObjectItemCaseSensitive(j, "goals");
    ck_assert_int_ge(cJSON_GetArraySize(goals), 6);
    const cJSON *check = cJSON_GetObjectItemCaseSensitive(j, "check");
    ck_assert_int_ge(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(check, "prompt")), 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(check, "tokens")), 16);
    cJSON_Delete(j);
}
END_TEST

START_TEST(cli_usage_errors) {
    const char *bad[] = {"bench --concurrency 0",
                         "bench --concurrency 1,x",
                         "bench --modes warp",
                         "bench --max-new -3",
                         "bench --frobnicate",
                         "bench --json",
                         "bench --graphs sometimes",
                         "bench --repeat 0",
                         "bench --repeat 21",
                         "bench --repeat twice",
                         "bench --backend tpu --concurrency 1 --max-new 2"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int st = tu_run_cli(bad[i], output, sizeof output);
        ck_assert_msg(st == 2, "%s: exit %d: %s", bad[i], st, output);
        ck_assert_ptr_nonnull(strstr(output, "sparkgate: "));
    }
    ck_assert_int_eq(tu_run_cli("bench --help", output, sizeof output), 0);
    ck_assert_ptr_nonnull(strstr(output, "--concurrency"));
    ck_assert_ptr_nonnull(strstr(output, "--graphs on|off"));
}
END_TEST

// A --max-new so small that every request ends within its untimed first step (the prefill and one
// round) leaves no round to measure: refused with exit 2, not printed as 0 tok/s; the rows measured
// before it stay in the JSON.
START_TEST(cli_nothing_to_measure) {
    char json[600];
    int st = run_bench_json("--fixture tiny --concurrency 1 --modes plain,spec --max-new 4", json);
    ck_assert_msg(st == 2, "exit %d: %s", st, output);
    ck_assert_ptr_nonnull(strstr(output, "N=1 spec: every request finished within its first step"));
    ck_assert_ptr_nonnull(strstr(output, "raise --max-new (now 4)"));
    ck_assert_ptr_null(strstr(output, "   1 spec ")); // no row of zeros
    cJSON *j = read_json(json);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
    ck_assert_int_eq(cJSON_GetArraySize(runs), 1); // plain's row, measured
    ck_assert(num(cJSON_GetArrayItem(runs, 0), "tokens_per_s") > 0);
    cJSON_Delete(j);
    ck_assert_int_eq(tu_run_cli("bench --fixture tiny --concurrency 1 --modes plain --max-new 2",
                                output, sizeof output),
                     2);
    ck_assert_ptr_nonnull(strstr(output, "N=1 plain: every request finished"));
}
END_TEST

// --repeat: tokens/s is the median of the passes, between the slowest and the fastest.
START_TEST(cli_repeats) {
    char json[600];
    int st = run_bench_json(
        "--fixture tiny --concurrency 1,2 --modes plain,spec --max-new 8 --repeat 3", json);
    ck_assert_msg(st == 0, "exit %d: %s", st, output);
    ck_assert_ptr_nonnull(strstr(output, "tok/s   spr"));
    cJSON *j = read_json(json);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
    ck_assert_int_eq(cJSON_GetArraySize(runs), 4);
    for (int i = 0; i < 4; i++) {
        const cJSON *r = cJSON_GetArrayItem(runs, i);
        ck_assert(num(r, "repeats") == 3);
        ck_assert(num(r, "tokens_per_s_min") <= num(r, "tokens_per_s"));
        ck_assert(num(r, "tokens_per_s") <= num(r, "tokens_per_s_max"));
        ck_assert(num(r, "tokens_per_s_min") > 0);
    }
    cJSON_Delete(j);
}
END_TEST

// A backend whose argmax drifts (id + 1) from the third prefill on: the warm-up batch and the first
// repeat are faithful, the second repeat commits other tokens, which the bench must refuse.
static const sg_backend *drift_inner;
static int drift_prefills;

static void drift_embed(void *ctx, const bf16 *table, int H, const int32_t *ids, int rows,
                        bf16 *out) {
    if (rows > 1) drift_prefills++;
    drift_inner->embed(ctx, table, H, ids, rows, out);
}

static void drift_argmax(void *ctx, const float *x, int rows, int n, size_t row_stride,
                         int32_t *ids) {
    drift_inner->argmax(ctx, x, rows, n, row_stride, ids);
    for (int i = 0; drift_prefills >= 3 && i < rows; i++)
        if (ids[i] >= 0) ids[i] = (ids[i] + 1) % n;
}

static void drift_destroy(sg_backend *be) {
    drift_inner->destroy((sg_backend *)drift_inner);
    free(be);
}

START_TEST(repeats_must_commit_the_same_tokens) {
    sg_backend *cpu = cpu_backend_create(), *be = malloc(sizeof *be);
    *be = *cpu;
    be->embed = drift_embed;
    be->argmax = drift_argmax;
    be->destroy = drift_destroy;
    drift_inner = cpu;
    bench_device dev = {.description = "test"};
    bench_options o = {.fixture = "tiny", .conc = {1}, .n_conc = 1, .max_new = 6};
    o.modes[BENCH_PLAIN] = 1;
    FILE *out = tmpfile();
    for (int repeat = 2; repeat >= 1; repeat--) { // the faithful control runs second
        drift_prefills = 0;
        o.repeat = repeat;
        int st = bench_run(&o, be, &dev, out);
        ck_assert_int_eq(st, repeat == 2 ? SG_EXIT_FAIL : SG_OK);
        if (repeat == 2) ck_assert_ptr_nonnull(strstr(sg_error(), "repeat 2 committed"));
    }
    fclose(out);
    be->destroy(be);
}
END_TEST

static int fake_bandwidth(size_t bytes, int reps, double *gbps) {
    ck_assert(bytes >= 8000000000u && reps >= 1);
    *gbps = 2.0; // 2 GB/s: the tiny model's phases take a visible share of it
    return SG_OK;
}

START_TEST(shares_follow_bandwidth) {
    char dir[512], json[600];
    tu_tmpdir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/bench.json", dir);
    bench_options o = {.fixture = "tiny", .conc = {1, 2}, .n_conc = 2, .max_new = 12, .json = json};
    o.modes[BENCH_PLAIN] = o.modes[BENCH_SPEC] = o.modes[BENCH_HEDGE1] = 1;
    sg_backend *be = cpu_backend_create();
    bench_device dev = {.bandwidth = fake_bandwidth, .description = "test"};
    FILE *out = tmpfile();
    ck_assert_int_eq(bench_run(&o, be, &dev, out), SG_OK);
    fclose(out);
    be->destroy(be);
    cJSON *j = read_json(json);
    ck_assert(num(j, "bandwidth_gbps") == 2.0);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
    ck_assert_int_eq(cJSON_GetArraySize(runs), 6);
    const cJSON *r;
    cJSON_ArrayForEach(r, runs) {
        const cJSON *ph = cJSON_GetObjectItemCaseSensitive(r, "phases");
        const cJSON *p;
        cJSON_ArrayForEach(p, ph) {
            const cJSON *share = cJSON_GetObjectItemCaseSensitive(p, "share_of_floor");
            if (num(p, "bytes") <= 0) {
                ck_assert(cJSON_IsNull(share));
                continue;
            }
            double floor_ms = num(p, "bytes") / 2e9 * 1e3;
            ck_assert(fabs(num(p, "floor_ms") - floor_ms) <= 1e-9 * floor_ms);
            ck_assert(fabs(share->valuedouble - floor_ms / num(p, "ms")) <=
                      1e-9 * share->valuedouble);
        }
    }
    // Goals at concurrency 1 are measured with a bandwidth: the plain roofline share is a number.
    const cJSON *g0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "goals"), 0);
    ck_assert(num(g0, "value") > 0);
    cJSON_Delete(j);
}
END_TEST

// The engine's phase timing on the tiny fixture: one request, hedge C = 1.
START_TEST(engine_timing_sums) {
    fixture_info fx;
    ck_assert_int_eq(fixture_open("tiny", &fx), SG_OK);
    target_model t;
    drafter_model d;
    ck_assert_int_eq(target_model_load(fx.target, &t), SG_OK);
    ck_assert_int_eq(drafter_model_load(fx.draft, &t, &d), SG_OK);
    sg_workload w;
    ck_assert_int_eq(fixture_load_workload(&fx, "sequential", t.cfg.vocab_size, &w), SG_OK);
    sg_backend *be = cpu_backend_create();
    int tokens[2][64], n[2];
    engine_timing tm = {0};
    for (int timed = 0; timed < 2; timed++) {
        engine_options o;
        engine_options_default(&o);
        o.hedge_cap = 1;
        tm = (engine_timing){.on = timed};
        o.timing = &tm;
        sg_engine *e;
        ck_assert_int_eq(engine_create(be, &t, &d, &o, &e), SG_OK);
        sg_request q = w.requests[0];
        q.max_new_tokens = 24;
        q.n_stop = 0;
        q.ignore_eos = 1;
        ck_assert_int_eq(engine_submit(e, &q, NULL), SG_OK);
        ck_assert_int_eq(engine_run(e), SG_OK);
        engine_result r;
        engine_result_of(e, 0, &r);
        n[timed] = r.n_generated;
        memcpy(tokens[timed], r.tokens, (size_t)r.n_generated * sizeof(int));
        if (timed) {
            ck_assert_int_eq(tm.rounds, r.counters.rounds);
            int64_t sum = 0;
            for (int p = 0; p < ENGINE_PHASES; p++) sum += tm.ns[p];
            ck_assert(tm.ns[ENGINE_PHASE_VERIFY] > 0 && tm.ns[ENGINE_PHASE_DRAFTER] > 0);
            ck_assert(sum <= tm.round_ns);
            ck_assert_int_eq(tm.verify_forwards, tm.rounds);
            // Every round verifies chain A (drafts + 1 rows) and the ladder unless deduped.
            int64_t ladders = r.counters.chains_built - r.counters.chains_deduped;
            ck_assert_int_eq(tm.verify_spans, r.counters.rounds + ladders);
            ck_assert_int_gt(tm.verify_rows, r.counters.drafted + r.counters.rounds);
            ck_assert_int_le(tm.verify_rows, r.counters.drafted + r.counters.rounds +
                                                 ladders * (int64_t)(d.cfg.block_size + 1));
            ck_assert_int_eq(tm.markov_steps, tm.drafter_forwards * d.cfg.block_size);
            ck_assert_int_eq(tm.ladder_row_steps, r.counters.chains_built * (d.cfg.block_size - 1));
        } else {
            ck_assert_int_eq(tm.rounds, 0); // off: nothing written
            ck_assert_int_eq(tm.verify_rows, 0);
        }
        engine_destroy(e);
    }
    ck_assert_int_eq(n[0], n[1]);
    ck_assert_mem_eq(tokens[0], tokens[1], (size_t)n[0] * sizeof(int));
    be->destroy(be);
    workload_free(&w);
    drafter_model_free(&d);
    target_model_free(&t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("bench");
    TCase *tc = tcase_create("bench");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, cli_table_and_json);
    tcase_add_test(tc, cli_usage_errors);
    tcase_add_test(tc, cli_nothing_to_measure);
    tcase_add_test(tc, cli_repeats);
    tcase_add_test(tc, repeats_must_commit_the_same_tokens);
    tcase_add_test(tc, shares_follow_bandwidth);
    tcase_add_test(tc, engine_timing_sums);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
