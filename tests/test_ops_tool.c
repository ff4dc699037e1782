// tests/test_ops_tool.c: the bring-up tool without a GPU (gates/ops*.c, cli/ops.c):
// - `sparkgate ops --list` and `--show-coverage` work without a GPU (every backend table entry has
//   a check); usage errors exit 2; the other modes either run (GPU present) or exit 77;
// - the tool's machinery, driven with the CPU backend as both the backend under test and the twin
//   (tiny and small shapes): every case passes, the JSON and CSV reports are written (with the
//   order rule's worst |d|/S for gemm, gemm_logits and markov_step), a seed replays the same inputs;
// - the tool catches faults, each with the check meant for it: an out-of-bounds write (guard
//   zone), a result that depends on the batch size (batch invariance and the twin comparison), a
//   wrong tie rule (first bad element named), a nondeterministic op (rerun);
// - the order rule (gemm's own K order, design.md §3): a gemm, a gemm_swiglu and a markov_step
//   bias summing K in another order (descending k) pass although their bits differ from the
//   twin's (fp32 logits), and so does a bf16 output rounded the other way (one bf16 ULP; for
//   gemm_swiglu its gate and up); one dropped k term fails (gemm, gemm_logits, gemm_swiglu,
//   markov_step's top_vals); a logits argmax that differs within both values'
//   allowances is a reported near tie that passes, one beyond them fails; a Markov bias that
//   leaves out the first or the last column tile of 8 ids fails markov_step's case (its row 0
//   plants the top-2 at the vocabulary's edges);
// - perf mode's GEMM table selection (--weight, --rows): parsed and refused with usage errors (a
//   repeated M too), and a selected table run on the CPU backend (wall-clock timers) times exactly
//   the chosen rows; with a vendor library (a fake one with set times) the GEMM goal by M is
//   printed under the table and written to the JSON.
// ctest-labels: cpu;unit
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "engine/cpu_backend.h"
#include "gates/ops.h"
#include "testutil.h"

static char out[1 << 16];

START_TEST(test_list_needs_no_gpu) {
    ck_assert_int_eq(tu_run_cli("ops --list", out, sizeof out), 0);
    static const char *ops[] = {
        "copy",       "embed",        "gemm",           "gemm_logits", "gemm_group",
        "rmsnorm",    "add_rmsnorm",  "qk_norm_rope_store",            "attention",
        "gemm_swiglu", "add",          "argmax",         "top2",        "markov_step",
        "ladder_force", "page_copy",  "copy_rows",      "digest",      "digest_bf16"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "\n%s ", ops[i]);
        ck_assert_msg(strstr(out, key) || strncmp(out, key + 1, strlen(key) - 1) == 0,
                      "--list lacks %s:\n%s", ops[i], out);
        ck_assert(ops_known(ops[i]));
    }
    ck_assert_ptr_nonnull(strstr(out, "tolerance: exact"));
    ck_assert_ptr_nonnull(strstr(out, "why: "));
    // gemm's own K order: the order rule, with its constant and reason.
    const char *g = strstr(out, "\ngemm ");
    ck_assert_ptr_nonnull(g);
    ck_assert_msg(strncmp(strstr(g, "tolerance: "), "tolerance: |got - twin| <= 1e-05*S", 34) == 0,
                  "%s", g);
    ck_assert_ptr_nonnull(strstr(g, "1 bf16 ulp of max(|got|,|twin|)"));
    ck_assert(!ops_known("gemv"));
}
END_TEST

START_TEST(test_coverage_complete) {
    ck_assert_int_eq(tu_run_cli("ops --show-coverage", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "ops without a check: 0"));
    ck_assert_ptr_null(strstr(out, "NO CHECK"));
    ck_assert_ptr_nonnull(strstr(out, "markov_step     markov_step"));
}
END_TEST

START_TEST(test_usage_errors) {
    static const char *bad[] = {"ops --op nosuch",
                                "ops --seed abc",
                                "ops --seed -3",
                                "ops --size huge",
                                "ops --bogus",
                                "ops --op",
                                "ops perf --json",
                                "ops perf --weight nosuch",
                                "ops perf --weight q_proj,",
                                "ops perf --rows 0",
                                "ops perf --rows 2049",
                                "ops perf --rows 7x",
                                "ops perf --rows 1,,2",
                                "ops perf --rows 1,2,3,4,5,6,7,8,9",
                                "ops perf --rows 8,1,8",
                                "ops --rows 1",
                                "ops check --weight fc",
                                "ops perf --op add --rows 1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        ck_assert_msg(tu_run_cli(bad[i], out, sizeof out) == SG_EXIT_USAGE, "%s: %s", bad[i], out);
    ck_assert_int_eq(tu_run_cli("ops --help", out, sizeof out), 0);
    ck_assert_ptr_nonnull(strstr(out, "--show-coverage"));
}
END_TEST

// Without a usable GPU (CI, build machines) the checks exit 77 with a message; with one they run.
START_TEST(test_checks_need_a_gpu) {
    int st = tu_run_cli("ops --op add --size tiny", out, sizeof out);
    ck_assert_msg(st == 0 || st == SG_EXIT_NO_GPU, "status %d: %s", st, out);
    if (st == SG_EXIT_NO_GPU)
        ck_assert_ptr_nonnull(strstr(out, "CUDA"));
    else
        ck_assert_ptr_nonnull(strstr(out, "0 failed"));
}
END_TEST

// Runs ops_run (with dev's services, NULL: none) into a string; returns its status.
static int run_tool_on(const ops_options *o, const sg_backend *test, const ops_device *dev,
                       const sg_backend *ref) {
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    int st = ops_run(o, test, dev, ref, f);
    rewind(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    return st;
}

static int run_tool(const ops_options *o, const sg_backend *test, const sg_backend *ref) {
    return run_tool_on(o, test, NULL, ref);
}

START_TEST(test_cpu_against_itself) {
    sg_backend *a = cpu_backend_create(), *b = cpu_backend_create();
    char dir[512], json[600], csv[600];
    tu_tmpdir(dir, sizeof dir);
    snprintf(json, sizeof json, "%s/ops.json", dir);
    snprintf(csv, sizeof csv, "%s/ops.csv", dir);
    for (int s = 0; s < 2; s++) {
        ops_options o = {.size = s ? "small" : "tiny", .seed = 7, .json = json, .csv = csv};
        ck_assert_msg(run_tool(&o, a, b) == SG_OK, "%s\n%s", sg_error(), out);
        ck_assert_ptr_nonnull(strstr(out, " 0 failed"));
        ck_assert_ptr_null(strstr(out, "FAIL"));
    }
    // The JSON report of the last run: every case passed, with its checks.
    cJSON *root = tu_load_json(json);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "passed")));
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    ck_assert_int_eq(cJSON_GetArraySize(cases), 19);
    const cJSON *c0 = cJSON_GetArrayItem(cases, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "batch_invariance")->valuestring, "ok");
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "guard")->valuestring, "ok");
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "graph_vs_eager")->valuestring, "-"); // no graphs
    // The order rule's figures for gemm, gemm_logits, gemm_group, gemm_swiglu and markov_step
    // only: 0 against itself.
    int order_ops = 0;
    for (int i = 0; i < cJSON_GetArraySize(cases); i++) {
        const cJSON *c = cJSON_GetArrayItem(cases, i), *w = cJSON_GetObjectItem(c, "worst_d_over_s");
        const char *op = cJSON_GetObjectItem(c, "op")->valuestring;
        int order = strcmp(op, "gemm") == 0 || strcmp(op, "gemm_logits") == 0 ||
                    strcmp(op, "gemm_group") == 0 || strcmp(op, "gemm_swiglu") == 0 ||
                    strcmp(op, "markov_step") == 0;
        ck_assert_msg(order == (w != NULL), "%s: worst_d_over_s %s", op, w ? "present" : "absent");
        if (!w) continue;
        order_ops++;
        ck_assert_double_eq(w->valuedouble, 0);
        ck_assert_double_eq(cJSON_GetObjectItem(c, "tol_rel")->valuedouble, 1e-5);
    }
    ck_assert_int_eq(order_ops, 5);
    cJSON_Delete(root);
    FILE *f = fopen(csv, "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_int_eq(strncmp(line, "op,size,shape,max_abs,max_ulp", 29), 0);
    int rows = 0;
    while (fgets(line, sizeof line, f)) rows++;
    fclose(f);
    ck_assert_int_eq(rows, 19);
    a->destroy(a);
    b->destroy(b);
}
END_TEST

// ---- faulty backends: the CPU backend with one op broken ----

static sg_backend *cpu_ops; // the real ops the faulty ones wrap
static unsigned long calls;

static void add_past_end(void *ctx, bf16 *h, const bf16 *x, size_t n) {
    cpu_ops->add(ctx, h, x, n);
    h[n] ^= 1; // one element past the end (host memory on the CPU backend)
}

static void gemm_batch_dependent(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N,
                                 void *y, int out_f32) {
    cpu_ops->gemm(ctx, x, M, K, w, N, y, out_f32);
    if (M > 1) ((bf16 *)y)[0] ^= 0x40; // row 0 changes with the batch size (beyond any tolerance)
}

static void argmax_ties_high(void *ctx, const float *x, int rows, int n, size_t stride,
                             int32_t *ids) {
    (void)ctx;
    for (int i = 0; i < rows; i++) {
        const float *r = x + (size_t)i * stride;
        int b = 0, bad = 0;
        for (int j = 0; j < n; j++) {
            bad |= !(r[j] - r[j] == 0.0f);
            if (r[j] >= r[b]) b = j; // ties to the highest id: wrong
        }
        ids[i] = bad ? -1 : b;
    }
}

static void digest_drifting(void *ctx, const void *x, int rows, int n, int eb, size_t stride,
                            uint64_t *d) {
    cpu_ops->digest(ctx, x, rows, n, eb, stride, d);
    d[0] ^= calls++; // differs from one call to the next
}

// A grouped product mixed up: every product takes the first product's weights.
static void gemm_group_first_weights(void *ctx, const bf16 *x, int M, int K, int n,
                                     const bf16 *const *w, const int *N, bf16 *const *y) {
    for (int p = 0; p < n; p++) cpu_ops->gemm(ctx, x, M, K, w[0], N[p], y[p], 0);
}

// The fused add that normalises the sum but leaves h as it was.
static void add_rmsnorm_keeps_h(void *ctx, bf16 *h, const bf16 *x, int M, int D, const bf16 *w,
                                float eps, bf16 *y) {
    bf16 *sum = sg_calloc((size_t)M * D, sizeof *sum);
    memcpy(sum, h, (size_t)M * D * sizeof *sum);
    cpu_ops->add(ctx, sum, x, (size_t)M * D);
    cpu_ops->rmsnorm(ctx, sum, M, D, w, eps, y);
    free(sum);
}

static void expect_fault(const char *op, sg_backend *faulty, const char *needle) {
    sg_backend *ref = cpu_backend_create();
    ops_options o = {.op = op, .size = "small", .seed = 3};
    ck_assert_msg(run_tool(&o, faulty, ref) == SG_EXIT_FAIL, "%s fault not caught:\n%s", op, out);
    ck_assert_msg(strstr(out, needle) != NULL, "%s: no \"%s\" in\n%s", op, needle, out);
    ck_assert_ptr_nonnull(strstr(out, "FAIL"));
    ref->destroy(ref);
}

START_TEST(test_catches_faults) {
    cpu_ops = cpu_backend_create();
    sg_backend *f = cpu_backend_create();
    f->add = add_past_end;
    expect_fault("add", f, "guard zone of h overwritten (after");
    f->add = cpu_ops->add;
    f->gemm = gemm_batch_dependent;
    expect_fault("gemm", f, "a row alone differs from the row in the batch");
    ck_assert_ptr_nonnull(strstr(out, "first bad element: y[0,0]"));
    f->gemm = cpu_ops->gemm;
    f->gemm_group = gemm_group_first_weights;
    expect_fault("gemm_group", f, "first bad element: y1[");
    f->gemm_group = cpu_ops->gemm_group;
    f->add_rmsnorm = add_rmsnorm_keeps_h;
    expect_fault("add_rmsnorm", f, "first bad element: h[");
    f->add_rmsnorm = cpu_ops->add_rmsnorm;
    f->argmax = argmax_ties_high;
    expect_fault("argmax", f, "first bad element: ids[1,0]");
    f->argmax = cpu_ops->argmax;
    f->digest = digest_drifting;
    expect_fault("digest", f, "rerun differs");
    f->destroy(f);
    cpu_ops->destroy(cpu_ops);
}
END_TEST

// ---- the order rule: gemm's own K order (design.md §3) ----

static int drop_k0;     // the planted defect: the k = 0 term left out
static int skip_tile;   // markov_descending's defect: 1 ids 0..7, 2 ids V-8..V-1 without a bias
static int toward_zero; // a bf16 output rounded toward zero: one bf16 ULP the other way at most

// Σ_k x[k]·w[k] in fp32 with k descending: another order than the CPU backend's 8 lanes (each
// product of two bf16 values is exact in fp32).
static float dot_descending(const bf16 *x, const bf16 *w, int K) {
    float s = 0.0f;
    for (int k = K - 1; k >= (drop_k0 ? 1 : 0); k--) s += bf16_to_f32(x[k]) * bf16_to_f32(w[k]);
    return s;
}

// v rounded to bf16: to nearest even, or toward zero.
static bf16 to_bf16(float v) {
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return toward_zero ? (bf16)(u >> 16) : f32_to_bf16(v);
}

static void gemm_descending(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                            int out_f32) {
    (void)ctx;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            float v = dot_descending(x + (size_t)m * K, w + (size_t)n * K, K);
            if (out_f32)
                ((float *)y)[(size_t)m * N + n] = v;
            else
                ((bf16 *)y)[(size_t)m * N + n] = to_bf16(v);
        }
}

// gemm_swiglu with gate and up in gemm_descending's order (and rounding), then backend.h's SwiGLU.
static void gemm_swiglu_descending(void *ctx, const bf16 *x, int M, int K, const bf16 *w_gate,
                                   const bf16 *w_up, int N, bf16 *y) {
    size_t n = (size_t)M * N;
    bf16 *g = sg_calloc(n, sizeof *g), *u = sg_calloc(n, sizeof *u);
    gemm_descending(ctx, x, M, K, w_gate, N, g, 0);
    gemm_descending(ctx, x, M, K, w_up, N, u, 0);
    for (size_t i = 0; i < n; i++) {
        float gv = bf16_to_f32(g[i]);
        y[i] = f32_to_bf16(bf16_round(gv / (1.0f + expf(-gv))) * bf16_to_f32(u[i]));
    }
    free(g);
    free(u);
}

// markov_step with its bias in gemm_descending's order: each row's score row U + bias built here,
// then the CPU backend's step without a Markov head (r = 0) over it (u_row = -k points at it).
static void markov_descending(void *ctx, const float *U, int V, const bf16 *w1, const bf16 *w2,
                              int r, int rows, const int32_t *chain_row, const int32_t *u_row,
                              const int32_t *start, const int32_t *limit, int s, int32_t *tokens,
                              int tok_stride, int32_t *top_ids, float *top_vals) {
    float *score = calloc((size_t)V, sizeof *score);
    for (int i = 0; i < rows; i++) {
        int k = start[i] + s;
        int32_t prev = k < limit[i] ? tokens[(size_t)chain_row[i] * tok_stride + k] : -1;
        if (r == 0 || prev < 0) { // no bias taken: the CPU backend's step as it is
            cpu_ops->markov_step(ctx, U, V, w1, w2, r, 1, chain_row + i, u_row + i, start + i,
                                 limit + i, s, tokens, tok_stride, top_ids, top_vals);
            continue;
        }
        const float *u = U + (size_t)(u_row[i] + k) * V;
        for (int v = 0; v < V; v++) {
            int skipped = (skip_tile == 1 && v < 8) || (skip_tile == 2 && v >= V - 8);
            score[v] = u[v] + (skipped ? 0.0f
                                       : bf16_to_f32(to_bf16(dot_descending(
                                             w1 + (size_t)prev * r, w2 + (size_t)v * r, r))));
        }
        int32_t at = -k;
        cpu_ops->markov_step(ctx, score, V, NULL, NULL, 0, 1, chain_row + i, &at, start + i,
                             limit + i, s, tokens, tok_stride, top_ids, top_vals);
    }
    free(score);
}

// Runs one op at tiny and small against the CPU twin with a JSON report; returns the status of
// the small run and leaves its report in *json (the caller deletes it).
static int run_order(const char *op, sg_backend *test, cJSON **json) {
    sg_backend *ref = cpu_backend_create();
    char dir[512], path[600];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/ops.json", dir);
    int st = SG_OK;
    for (int s = 0; s < 2; s++) {
        ops_options o = {.op = op, .size = s ? "small" : "tiny", .seed = 3, .json = path};
        st = run_tool(&o, test, ref);
        if (s == 0 && st != SG_OK) break;
    }
    *json = tu_load_json(path);
    ref->destroy(ref);
    return st;
}

static double case_number(const cJSON *json, const char *key) {
    const cJSON *c = cJSON_GetArrayItem(cJSON_GetObjectItem(json, "cases"), 0);
    const cJSON *v = cJSON_GetObjectItem(c, key);
    ck_assert_msg(cJSON_IsNumber(v), "no %s in the report", key);
    return v->valuedouble;
}

START_TEST(test_order_rule_accepts_another_order) {
    cpu_ops = cpu_backend_create();
    sg_backend *f = cpu_backend_create();
    f->gemm = gemm_descending;
    f->gemm_swiglu = gemm_swiglu_descending;
    f->markov_step = markov_descending;
    static const char *ops[] = {"gemm", "gemm_logits", "gemm_swiglu", "markov_step"};
    for (int i = 0; i < 4; i++) {
        cJSON *json;
        ck_assert_msg(run_order(ops[i], f, &json) == SG_OK, "%s in another K order failed:\n%s",
                      ops[i], out);
        ck_assert_ptr_nonnull(strstr(out, "order rule: worst |d|/S"));
        double share = case_number(json, "share_differing"), rel = case_number(json, "worst_d_over_s");
        double excess = case_number(json, "worst_excess_over_s");
        printf("%s small, k descending vs the 8-lane twin: %.2f%% of the elements differ, worst "
               "|d|/S %.3g, beyond the rounding allowance %.3g (limit 1e-05)\n",
               ops[i], 100 * share, rel, excess);
        ck_assert(excess <= 1e-5 && excess <= rel);
        if (strcmp(ops[i], "gemm_logits") == 0) {
            // The order change is visible: a bitwise comparison would fail; the rule passes it
            // with headroom (a few 2^-24 of S).
            ck_assert_msg(share > 0.1, "share %g", share);
            ck_assert(rel > 0 && rel < 1e-6);
            ck_assert_double_eq(case_number(json, "argmax_agreement"), 1);
        }
        cJSON_Delete(json);
    }
    // A bf16 output, or markov_step's bf16 bias, that rounds the other way (here: toward zero,
    // about half the time): within the rule's one bf16 ULP, although far from bitwise; and so is
    // gemm_swiglu's SwiGLU of a gate and up rounded that way.
    toward_zero = 1;
    cJSON *json;
    ck_assert_msg(run_order("gemm", f, &json) == SG_OK, "%s", out);
    ck_assert_msg(case_number(json, "share_differing") > 0.3, "%s", out);
    ck_assert_double_eq(case_number(json, "max_ulp"), 1);
    ck_assert_double_eq(case_number(json, "worst_excess_over_s"), 0);
    cJSON_Delete(json);
    ck_assert_msg(run_order("gemm_swiglu", f, &json) == SG_OK, "%s", out);
    ck_assert_msg(case_number(json, "share_differing") > 0.1, "%s", out);
    cJSON_Delete(json);
    ck_assert_msg(run_order("markov_step", f, &json) == SG_OK, "%s", out);
    ck_assert_msg(case_number(json, "share_differing") > 0, "%s", out);
    ck_assert(case_number(json, "worst_d_over_s") > 1e-5); // the bias's rounding, not its order
    cJSON_Delete(json);
    toward_zero = 0;
    f->destroy(f);
    cpu_ops->destroy(cpu_ops);
}
END_TEST

START_TEST(test_order_rule_catches_a_dropped_term) {
    cpu_ops = cpu_backend_create();
    sg_backend *f = cpu_backend_create();
    f->gemm = gemm_descending;
    f->gemm_swiglu = gemm_swiglu_descending;
    f->markov_step = markov_descending;
    drop_k0 = 1;
    static const char *ops[] = {"gemm", "gemm_logits", "gemm_swiglu", "markov_step"};
    static const char *first[] = {"first bad element: y[", "first bad element: y[",
                                  "first bad element: out[", "first bad element: top_vals["};
    for (int i = 0; i < 4; i++) {
        cJSON *json;
        ck_assert_msg(run_order(ops[i], f, &json) == SG_EXIT_FAIL, "%s: dropped term passed:\n%s",
                      ops[i], out);
        ck_assert_msg(strstr(out, first[i]) && strstr(out, "> allowed"), "%s:\n%s", ops[i], out);
        ck_assert(case_number(json, "worst_excess_over_s") > 1e-5);
        cJSON_Delete(json);
    }
    drop_k0 = 0;
    f->destroy(f);
    cpu_ops->destroy(cpu_ops);
}
END_TEST

// A Markov bias whose gemm leaves out its first or its last column tile of 8 ids (a tile mapping
// off by one, as a from-the-end order planted with count - b instead of count - 1 - b: twelfth
// 2026-12-01 session, bench/README.md): top-2 ids at random rarely fall there, so markov_step's
// case plants row 0's at ids 0 and V - 1, and either defect fails it.
START_TEST(test_markov_case_covers_edge_tiles) {
    cpu_ops = cpu_backend_create();
    sg_backend *f = cpu_backend_create();
    f->markov_step = markov_descending;
    for (skip_tile = 1; skip_tile <= 2; skip_tile++) {
        cJSON *json;
        ck_assert_msg(run_order("markov_step", f, &json) == SG_EXIT_FAIL,
                      "markov_step with tile %d left out passed:\n%s", skip_tile, out);
        ck_assert_msg(strstr(out, "first bad element: top_"), "%s", out);
        cJSON_Delete(json);
    }
    skip_tile = 0;
    f->destroy(f);
    cpu_ops->destroy(cpu_ops);
}
END_TEST

// Near ties of logits rows: the twin makes every fp32 row's runner-up `tie_rel`·|top| below its
// top; the backend under test swaps the two (its top that much lower, its runner-up at the top),
// so the argmaxes differ across a gap of tie_rel·|top|. Row by row: batch invariant.
static double tie_rel;

static void top2_of(const float *y, int N, int *t, int *g) {
    *t = y[1] > y[0];
    *g = !*t;
    for (int n = 2; n < N; n++) {
        if (y[n] > y[*t]) {
            *g = *t;
            *t = n;
        } else if (y[n] > y[*g]) {
            *g = n;
        }
    }
}

static void gemm_tied(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                      int out_f32, int swap) {
    cpu_ops->gemm(ctx, x, M, K, w, N, y, out_f32);
    for (int m = 0; m < M && out_f32; m++) {
        float *row = (float *)y + (size_t)m * N, top;
        int t, g;
        top2_of(row, N, &t, &g);
        top = row[t];
        row[g] = top - (float)(tie_rel * fabsf(top));
        if (swap) {
            row[t] = row[g];
            row[g] = top;
        }
    }
}
static void gemm_twin_tied(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                           int out_f32) {
    gemm_tied(ctx, x, M, K, w, N, y, out_f32, 0);
}
static void gemm_tie_swapped(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N,
                             void *y, int out_f32) {
    gemm_tied(ctx, x, M, K, w, N, y, out_f32, 1);
}

START_TEST(test_order_rule_near_ties) {
    cpu_ops = cpu_backend_create();
    sg_backend *test = cpu_backend_create(), *twin = cpu_backend_create();
    test->gemm = gemm_tie_swapped;
    twin->gemm = gemm_twin_tied;
    ops_options o = {.op = "gemm_logits", .size = "small", .seed = 5};
    tie_rel = 0x1p-21; // 4 fp32 ulp of the top: far within 1e-5·S (|top| <= S)
    ck_assert_msg(run_tool(&o, test, twin) == SG_OK, "%s", out);
    ck_assert_msg(strstr(out, "argmax: 9 near tie(s), 0 failed") && strstr(out, "(near tie)"),
                  "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "argmax agreement 0.0%"));
    tie_rel = 0x1p-7; // ~1% of the top: beyond any order effect
    ck_assert_msg(run_tool(&o, test, twin) == SG_EXIT_FAIL, "%s", out);
    ck_assert_msg(strstr(out, "argmax: 0 near tie(s), 9 failed") &&
                      strstr(out, "beyond the allowance"),
                  "%s", out);
    test->destroy(test);
    twin->destroy(twin);
    cpu_ops->destroy(cpu_ops);
}
END_TEST

START_TEST(test_seed_replays) {
    sg_backend *a = cpu_backend_create(), *b = cpu_backend_create();
    ops_options o = {.op = "attention", .size = "small", .seed = 11};
    ck_assert_int_eq(run_tool(&o, a, b), SG_OK);
    char *first = strdup(out);
    ck_assert_int_eq(run_tool(&o, a, b), SG_OK);
    ck_assert_str_eq(first, out);
    free(first);
    ck_assert_ptr_nonnull(strstr(out, "seed 11"));
    ops_options bad = {.op = "gemv"};
    ck_assert_int_eq(run_tool(&bad, a, b), SG_EXIT_USAGE);
    a->destroy(a);
    b->destroy(b);
}
END_TEST

START_TEST(test_gemm_table_parse) {
    ops_gemm_table t;
    ck_assert_int_eq(ops_gemm_table_parse(NULL, NULL, &t), SG_OK);
    ck_assert_uint_eq(t.weights, 0xffu); // all eight
    ck_assert_int_eq(t.n_rows, 8);
    ck_assert_int_eq(t.rows[0], 1);
    ck_assert_int_eq(t.rows[7], 2048);
    ck_assert_int_eq(t.invariance, 1);
    ck_assert_int_eq(ops_gemm_table_parse("lm_head,k_proj", "30,1,7", &t), SG_OK);
    ck_assert_uint_eq(t.weights, (1u << 7) | (1u << 1));
    ck_assert_int_eq(t.n_rows, 3);
    ck_assert_int_eq(t.rows[0], 30); // in the order given
    ck_assert_int_eq(t.rows[2], 7);
    ck_assert_int_eq(t.invariance, 0);
    ck_assert_int_eq(ops_gemm_table_parse("markov_w2", NULL, &t), SG_OK);
    ck_assert_uint_eq(t.weights, 1u << 6);
    ck_assert_int_eq(t.invariance, 1);
    ck_assert_int_eq(ops_gemm_table_parse("q_proj", "2048", &t), SG_OK);
    ck_assert_int_eq(ops_gemm_table_parse("Q_PROJ", NULL, &t), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "lm_head")); // the message lists the valid names
    ck_assert_int_eq(ops_gemm_table_parse(NULL, "-1", &t), SG_EXIT_USAGE);
    ck_assert_int_eq(ops_gemm_table_parse(NULL, "", &t), SG_EXIT_USAGE);
    ck_assert_int_eq(ops_gemm_table_parse(NULL, "8,1,8", &t), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "M 8 is given twice"));
}
END_TEST

static double wall_t0;
static void wall_begin(const sg_backend *be) {
    (void)be;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    wall_t0 = ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}
static double wall_end_us(const sg_backend *be) {
    (void)be;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3 - wall_t0;
}

// Perf mode's GEMM table selected to k_proj at M = 3 and 1, its JSON report to json (in a fresh
// temporary folder).
static ops_options k_proj_table(char *json, size_t n) {
    char dir[512];
    tu_tmpdir(dir, sizeof dir);
    snprintf(json, n, "%s/perf.json", dir);
    return (ops_options){.perf = 1, .op = "gemm", .size = "tiny", .seed = 2, .json = json,
                         .gemm_weights = "k_proj", .gemm_rows = "3,1"};
}

// A selected GEMM table on the CPU backend (wall-clock timers, no vendor library): exactly the
// chosen weight at the chosen M, in the printed table and the JSON report, and no row-invariance
// sweep; without a timer perf mode is refused.
START_TEST(test_gemm_table_selection_runs) {
    sg_backend *a = cpu_backend_create(), *b = cpu_backend_create();
    ops_device dev = {.timer_begin = wall_begin, .timer_end_us = wall_end_us};
    char json[600];
    ops_options o = k_proj_table(json, sizeof json);
    ck_assert_msg(run_tool_on(&o, a, &dev, b) == SG_OK, "%s\n%s", sg_error(), out);
    int k_rows = 0;
    for (const char *l = strstr(out, "\nk_proj "); l; l = strstr(l + 1, "\nk_proj ")) k_rows++;
    ck_assert_msg(k_rows == 2, "%s", out);
    ck_assert_ptr_nonnull(strstr(out, "\nk_proj          3   2560    1024"));
    ck_assert_ptr_nonnull(strstr(out, "\nk_proj          1   2560    1024"));
    ck_assert_ptr_null(strstr(out, "\nq_proj "));
    ck_assert_ptr_null(strstr(out, "row invariance"));
    ck_assert_ptr_null(strstr(out, "GEMM goal")); // no vendor library, no goal
    cJSON *root = tu_load_json(json);
    const cJSON *g = cJSON_GetObjectItem(root, "gemm");
    ck_assert_int_eq(cJSON_GetArraySize(g), 2);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(g, 0), "weight")->valuestring,
                     "k_proj");
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(g, 0), "M")->valueint, 3);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(g, 1), "M")->valueint, 1);
    ck_assert(cJSON_GetObjectItem(cJSON_GetArrayItem(g, 1), "us")->valuedouble > 0);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "row_invariance")), 0);
    ck_assert_ptr_null(cJSON_GetObjectItem(root, "gemm_goal"));
    cJSON_Delete(root);
    ck_assert_int_eq(run_tool_on(&o, a, NULL, b), SG_EXIT_USAGE); // no timers
    ops_options check = {.op = "gemm", .gemm_rows = "1"};          // not perf mode
    ck_assert_int_eq(run_tool(&check, a, b), SG_EXIT_USAGE);
    a->destroy(a);
    b->destroy(b);
}
END_TEST

// A vendor library whose times the test sets: each timed run of ours reads 40 ms, of the
// vendor's 40 ms at M = 1 and 32 ms at M = 3 (over 20 ms, so three runs each).
static int vendor_called, vendor_M;
static void fake_begin(const sg_backend *be) {
    (void)be;
    vendor_called = 0;
}
static double fake_end_us(const sg_backend *be) {
    (void)be;
    return vendor_called && vendor_M == 3 ? 32000.0 : 40000.0;
}
static void fake_vendor_gemm(const sg_backend *be, const bf16 *x, int M, int K, const bf16 *w,
                             int N, void *y, int out_f32) {
    (void)be, (void)x, (void)K, (void)w, (void)N, (void)y, (void)out_f32;
    vendor_called = 1;
    vendor_M = M;
}

// The GEMM goal under the table and in the JSON: per M, the shapes within 10 % of the vendor's
// time and those beyond it, with their ratio (ours 1.25x the vendor's at M = 3, 1.00x at M = 1).
START_TEST(test_gemm_goal_by_m) {
    sg_backend *a = cpu_backend_create(), *b = cpu_backend_create();
    ops_device dev = {.timer_begin = fake_begin,
                      .timer_end_us = fake_end_us,
                      .vendor_gemm = fake_vendor_gemm,
                      .vendor_name = "fakeBLAS"};
    char json[600];
    ops_options o = k_proj_table(json, sizeof json);
    ck_assert_msg(run_tool_on(&o, a, &dev, b) == SG_OK, "%s\n%s", sg_error(), out);
    ck_assert_msg(strstr(out, "\nGEMM goal (bench/README.md): ours within 10 % of fakeBLAS's time, "
                              "by M:\n"
                              "  M=3     0 of 1 shapes, worst 1.25x; beyond: k_proj 1.25x\n"
                              "  M=1     1 of 1 shapes, worst 1.00x\n"),
                  "%s", out);
    cJSON *root = tu_load_json(json);
    const cJSON *goal = cJSON_GetObjectItem(root, "gemm_goal");
    ck_assert_ptr_nonnull(goal);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(goal, "ratio")->valuedouble, 1.1, 1e-12);
    const cJSON *by = cJSON_GetObjectItem(goal, "by_M");
    ck_assert_int_eq(cJSON_GetArraySize(by), 2);
    const cJSON *m3 = cJSON_GetArrayItem(by, 0), *m1 = cJSON_GetArrayItem(by, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(m3, "M")->valueint, 3);
    ck_assert_int_eq(cJSON_GetObjectItem(m3, "shapes")->valueint, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(m3, "within")->valueint, 0);
    ck_assert_double_eq_tol(cJSON_GetObjectItem(m3, "worst_ratio")->valuedouble, 1.25, 1e-12);
    ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(m3, "beyond"), 0)->valuestring,
                     "k_proj");
    ck_assert_int_eq(cJSON_GetObjectItem(m1, "M")->valueint, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(m1, "within")->valueint, 1);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m1, "beyond")), 0);
    cJSON_Delete(root);
    a->destroy(a);
    b->destroy(b);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ops_tool");
    TCase *tc = tcase_create("ops_tool");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_list_needs_no_gpu);
    tcase_add_test(tc, test_coverage_complete);
    tcase_add_test(tc, test_usage_errors);
    tcase_add_test(tc, test_checks_need_a_gpu);
    tcase_add_test(tc, test_cpu_against_itself);
    tcase_add_test(tc, test_catches_faults);
    tcase_add_test(tc, test_order_rule_accepts_another_order);
    tcase_add_test(tc, test_order_rule_catches_a_dropped_term);
    tcase_add_test(tc, test_markov_case_covers_edge_tiles);
    tcase_add_test(tc, test_order_rule_near_ties);
    tcase_add_test(tc, test_seed_replays);
    tcase_add_test(tc, test_gemm_table_parse);
    tcase_add_test(tc, test_gemm_goal_by_m);
    tcase_add_test(tc, test_gemm_table_selection_runs);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
