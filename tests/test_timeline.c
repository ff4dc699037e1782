// tests/test_timeline.c: bench/timeline.h's summary on hand-made timelines: exposed time (what a
// kernel adds past every earlier-started kernel's end), idle gaps, their sum equal to the span,
// rows merged by name and shape and ordered by exposed time, the printed table, and the errors.
// ctest-labels: cpu;unit
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/timeline.h"
#include "common/error.h"
#include "testutil.h"

// Times in µs, as ns.
static tl_kernel kern(const char *name, double start_us, double end_us, int64_t blocks) {
    return (tl_kernel){.start_ns = (uint64_t)(start_us * 1e3),
                       .end_ns = (uint64_t)(end_us * 1e3),
                       .blocks = blocks,
                       .threads = 128,
                       .name = name};
}

static const tl_row *find(const tl_summary *s, const char *name, int64_t blocks) {
    for (size_t i = 0; i < s->n_rows; i++)
        if (strcmp(s->rows[i].name, name) == 0 && s->rows[i].blocks == blocks) return &s->rows[i];
    ck_abort_msg("no row %s x %lld", name, (long long)blocks);
    return NULL;
}

START_TEST(test_exposed_and_idle) {
    // Out of start order on purpose. gemm [0,10]; norm [5,12] starts under gemm and adds 2;
    // idle 12..20; attn [20,25]; small [21,23] inside attn adds 0; idle 25..30; gemm [30,40];
    // gemm with another grid [35,38] inside it.
    tl_kernel k[] = {kern("gemm", 30, 40, 8), kern("norm", 5, 12, 1), kern("gemm", 0, 10, 8),
                     kern("small", 21, 23, 1), kern("attn", 20, 25, 16), kern("gemm", 35, 38, 4)};
    tl_summary s;
    ck_assert_int_eq(tl_summarize(k, 6, &s), SG_OK);
    ck_assert_uint_eq(s.n_kernels, 6);
    ck_assert_double_eq_tol(s.span_us, 40, 1e-9);
    ck_assert_double_eq_tol(s.idle_us, 13, 1e-9);
    ck_assert_uint_eq(s.n_rows, 5);
    const tl_row *g8 = find(&s, "gemm", 8), *g4 = find(&s, "gemm", 4);
    ck_assert_int_eq(g8->launches, 2);
    ck_assert_double_eq_tol(g8->busy_us, 20, 1e-9);
    ck_assert_double_eq_tol(g8->exposed_us, 20, 1e-9);
    ck_assert_double_eq_tol(g4->exposed_us, 0, 1e-9);
    ck_assert_double_eq_tol(find(&s, "norm", 1)->exposed_us, 2, 1e-9);
    ck_assert_double_eq_tol(find(&s, "norm", 1)->busy_us, 7, 1e-9);
    ck_assert_double_eq_tol(find(&s, "attn", 16)->exposed_us, 5, 1e-9);
    ck_assert_double_eq_tol(find(&s, "small", 1)->exposed_us, 0, 1e-9);
    double exposed = 0;
    for (size_t i = 0; i < s.n_rows; i++) {
        exposed += s.rows[i].exposed_us;
        if (i) ck_assert(s.rows[i - 1].exposed_us >= s.rows[i].exposed_us);
    }
    ck_assert_double_eq_tol(exposed + s.idle_us, s.span_us, 1e-9);
    ck_assert_str_eq(s.rows[0].name, "gemm");
    // Sorted in place by start.
    for (int i = 1; i < 6; i++) ck_assert_uint_le(k[i - 1].start_ns, k[i].start_ns);
    tl_summary_free(&s);
    ck_assert_ptr_null(s.rows);
}
END_TEST

START_TEST(test_printed_table) {
    tl_kernel k[] = {kern("a", 0, 4, 1), kern("b", 2, 10, 2), kern("c", 12, 13, 3)};
    tl_summary s;
    ck_assert_int_eq(tl_summarize(k, 3, &s), SG_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    tl_summary_print(f, &s, "test", 2);
    fclose(f);
    ck_assert_msg(strstr(text, "timeline: 3 kernels (test), span 0.013 ms, idle 0.002 ms (15.4%)"),
                  "%s", text);
    // b first (6 us exposed), then a (4 us); c left out.
    const char *b = strstr(text, "  b\n"), *a = strstr(text, "  a\n");
    ck_assert_msg(b && a && b < a, "%s", text);
    ck_assert_msg(strstr(text, "0.006  46.2%") != NULL, "%s", text);
    ck_assert_ptr_null(strstr(text, "  c\n"));
    ck_assert_msg(strstr(text, "(1 more kernels)") != NULL, "%s", text);
    free(text);
    tl_summary_free(&s);
}
END_TEST

START_TEST(test_errors) {
    tl_summary s;
    ck_assert_int_eq(tl_summarize(NULL, 0, &s), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "no kernels"));
    tl_kernel k[] = {kern("ok", 0, 1, 1), kern("backwards", 5, 3, 1)};
    ck_assert_int_eq(tl_summarize(k, 2, &s), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "backwards ends"));
    ck_assert_ptr_null(s.rows);
}
END_TEST

int main(void) {
    Suite *s = suite_create("timeline");
    TCase *tc = tcase_create("summary");
    tcase_add_test(tc, test_exposed_and_idle);
    tcase_add_test(tc, test_printed_table);
    tcase_add_test(tc, test_errors);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
