// tests/test_gpu_timeline.c: the CUPTI timeline library (bench/timeline_cupti/) injected into a
// real run, `sparkgate bench` on the tiny fixture with graphs: the summary covers the replayed
// graphs' kernels (the decode's GEMMs among them), its exposed times and idle time add up to the
// span it prints, and the CSV holds every kernel with its end at or after its start, some from
// graphs. Exits 77 (skipped) without a GPU, or when the library cannot load (libcupti not on the
// loader's path: the message says so).
// ctest-labels: gpu;unit
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#if !defined(SG_HAVE_CUDA) || !defined(SG_TIMELINE_LIB)
int main(void) {
    fprintf(stderr, "test_gpu_timeline: built without CUDA or CUPTI: skipped\n");
    return 77;
}
#else

#include <dlfcn.h>

#include "common/error.h"
#include "gpu/cuda_backend.h"

static char out[1 << 20];

// Sum of the exposed-ms column of the printed table, and the span and idle of its header.
static void read_summary(const char *text, double *span, double *idle, double *exposed, int *rows,
                         long *kernels) {
    const char *h = strstr(text, "timeline: ");
    ck_assert_msg(h != NULL, "no timeline summary in:\n%s", text);
    ck_assert_msg(sscanf(h, "timeline: %ld kernels (kernels launched from CUDA graphs), span %lf "
                            "ms, idle %lf ms",
                         kernels, span, idle) == 3,
                  "unexpected header: %.200s", h);
    const char *line = strchr(strchr(h, '\n') + 1, '\n') + 1; // past the column titles
    *exposed = 0;
    *rows = 0;
    double ms, share;
    while (sscanf(line, "%lf %lf%%", &ms, &share) == 2) {
        *exposed += ms;
        (*rows)++;
        const char *nl = strchr(line, '\n');
        if (!nl) break;
        line = nl + 1;
    }
}

START_TEST(test_bench_under_timeline) {
    char dir[256], csv[300], args[512];
    tu_tmpdir(dir, sizeof dir);
    snprintf(csv, sizeof csv, "%s/kernels.csv", dir);
    setenv("CUDA_INJECTION64_PATH", SG_TIMELINE_LIB, 1);
    setenv("SG_TIMELINE_CSV", csv, 1);
    setenv("SG_TIMELINE_ROWS", "0", 1);
    snprintf(args, sizeof args,
             "bench --backend cuda --fixture %s --concurrency 1 --modes plain,spec --max-new 16 "
             "--repeat 1",
             SG_DEFAULT_FIXTURE);
    int st = tu_run_cli(args, out, sizeof out);
    unsetenv("CUDA_INJECTION64_PATH");
    ck_assert_msg(st == 0, "bench under the timeline exited %d:\n%s", st, out);

    double span, idle, exposed;
    int rows;
    long kernels;
    read_summary(out, &span, &idle, &exposed, &rows, &kernels);
    ck_assert_int_gt(kernels, 100);
    ck_assert_int_gt(rows, 3);
    ck_assert(span > 0 && idle >= 0 && idle < span);
    // Each printed figure is rounded to 0.001 ms.
    const double rounding = 0.001 * (rows + 2);
    ck_assert_msg(exposed + idle <= span + rounding && exposed + idle >= span - rounding,
                  "exposed %.3f + idle %.3f ms != span %.3f ms", exposed, idle, span);
    ck_assert_msg(strstr(out, "gemm_") != NULL, "no GEMM among the graph kernels:\n%s", out);

    FILE *f = fopen(csv, "r");
    ck_assert_msg(f != NULL, "no CSV at %s", csv);
    char line[4096];
    ck_assert_ptr_nonnull(fgets(line, sizeof line, f));
    ck_assert_str_eq(line, "start_ns,end_ns,blocks,threads,graph,name\n");
    long n = 0, from_graphs = 0;
    unsigned long long s, e, prev = 0;
    long long blocks, threads;
    unsigned graph;
    while (fgets(line, sizeof line, f)) {
        ck_assert_msg(
            sscanf(line, "%llu,%llu,%lld,%lld,%u,", &s, &e, &blocks, &threads, &graph) == 5,
            "bad CSV line %s", line);
        ck_assert_msg(e >= s && s >= prev && blocks > 0 && threads > 0, "bad kernel %s", line);
        prev = s;
        from_graphs += graph != 0;
        n++;
    }
    fclose(f);
    ck_assert_int_eq(from_graphs, kernels);
    ck_assert_int_gt(n, kernels); // uploads, warm-up and the bandwidth probe run outside graphs
    printf("bench on the tiny fixture under the timeline: %ld kernels, %ld from graphs, span %.3f "
           "ms, idle %.3f ms, %d rows\n",
           n, from_graphs, span, idle, rows);
}
END_TEST

int main(void) {
    sg_backend *gpu = NULL;
    int st = cuda_backend_create(&gpu);
    if (st != SG_OK) {
        fprintf(stderr, "test_gpu_timeline: %s: skipped\n", sg_error());
        return st == SG_EXIT_NO_GPU ? 77 : 1;
    }
    gpu->destroy(gpu);
    void *lib = dlopen(SG_TIMELINE_LIB, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr,
                "test_gpu_timeline: %s: skipped (put the folder of libcupti.so on "
                "LD_LIBRARY_PATH)\n",
                dlerror());
        return 77;
    }
    dlclose(lib);
    Suite *s = suite_create("gpu_timeline");
    TCase *tc = tcase_create("gpu");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_bench_under_timeline);
    suite_add_tcase(s, tc);
    return tu_run_no_fork(s);
}
#endif
