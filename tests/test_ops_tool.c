// tests/test_ops_tool.c: the bring-up tool without a GPU (gates/ops*.c, cli/ops.c):
// - `sparkgate ops --list` and `--show-coverage` work without a GPU (every backend table entry has
//   a check); usage errors exit 2; the other modes either run (GPU present) or exit 77;
// - the tool's machinery, driven with the CPU backend as both the backend under test and the twin
//   (tiny and small shapes): every case passes, the JSON and CSV reports are written, a seed
//   replays the same inputs;
// - the tool catches faults, each with the check meant for it: an out-of-bounds write (guard
//   zone), a result that depends on the batch size (batch invariance and the twin comparison), a
//   wrong tie rule (first bad element named), a nondeterministic op (rerun).
// ctest-labels: cpu;unit
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/cpu_backend.h"
#include "gates/ops.h"
#include "testutil.h"

static char out[1 << 16];

START_TEST(test_list_needs_no_gpu) {
    ck_assert_int_eq(tu_run_cli("ops --list", out, sizeof out), 0);
    static const char *ops[] = {
        "copy",        "embed",        "gemm",      "gemm_logits", "rmsnorm", "head_norm_rope",
        "kv_store",    "attention",    "swiglu",    "add",         "argmax",  "top2",
        "markov_step", "ladder_force", "page_copy", "copy_rows",   "digest",  "digest_bf16"};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        char key[64];
        snprintf(key, sizeof key, "\n%s ", ops[i]);
        ck_assert_msg(strstr(out, key) || strncmp(out, key + 1, strlen(key) - 1) == 0,
                      "--list lacks %s:\n%s", ops[i], out);
        ck_assert(ops_known(ops[i]));
    }
    ck_assert_ptr_nonnull(strstr(out, "tolerance: exact"));
    ck_assert_ptr_nonnull(strstr(out, "why: "));
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
    static const char *bad[] = {"ops --op nosuch", "ops --seed abc", "ops --seed -3",
                                "ops --size huge", "ops --bogus",    "ops --op",
                                "ops perf --json"};
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

// Runs ops_run into a string; returns its status.
static int run_tool(const ops_options *o, const sg_backend *test, const sg_backend *ref) {
    FILE *f = tmpfile();
    ck_assert_ptr_nonnull(f);
    int st = ops_run(o, test, NULL, ref, f);
    rewind(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    out[n] = '\0';
    fclose(f);
    return st;
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
    size_t len;
    char *text = NULL;
    FILE *f = fopen(json, "rb");
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    len = (size_t)ftell(f);
    rewind(f);
    text = calloc(len + 1, 1);
    ck_assert_uint_eq(fread(text, 1, len, f), len);
    fclose(f);
    cJSON *root = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(root);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(root, "passed")));
    const cJSON *cases = cJSON_GetObjectItem(root, "cases");
    ck_assert_int_eq(cJSON_GetArraySize(cases), 18);
    const cJSON *c0 = cJSON_GetArrayItem(cases, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "batch_invariance")->valuestring, "ok");
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "guard")->valuestring, "ok");
    ck_assert_str_eq(cJSON_GetObjectItem(c0, "graph_vs_eager")->valuestring, "-"); // no graphs
    cJSON_Delete(root);
    f = fopen(csv, "r");
    ck_assert_ptr_nonnull(f);
    char line[256];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_int_eq(strncmp(line, "op,size,shape,max_abs,max_ulp", 29), 0);
    int rows = 0;
    while (fgets(line, sizeof line, f)) rows++;
    fclose(f);
    ck_assert_int_eq(rows, 18);
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
    if (M > 1) ((bf16 *)y)[0] ^= 1; // row 0 changes with the batch size
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
    f->argmax = argmax_ties_high;
    expect_fault("argmax", f, "first bad element: ids[1,0]");
    f->argmax = cpu_ops->argmax;
    f->digest = digest_drifting;
    expect_fault("digest", f, "rerun differs");
    f->destroy(f);
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
    tcase_add_test(tc, test_seed_replays);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
