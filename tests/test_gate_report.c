// tests/test_gate_report.c: the gate report (gates/report*.c) on a hand-built report: failed checks
// and the gate's verdict, the console lines (verdict counts, hedge counters, accepted/round,
// |Δlogit|, failures indented and capped, skipped suites, the summary), the JSON layout (schema
// version, provenance, every counter of design.md §5, requests with verdict, tokens, counters and
// digest; NaN as "nan"), the JUnit XML (counts, escaping, skipped suites) and unwritable files.
// ctest-labels: cpu;unit
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/file.h"
#include "gates/report.h"
#include "testutil.h"

static const char *weird_id = "a<b&\"c'";

// sequential: s1 IDENTICAL, a weird id MISMATCH, a hedge failure; hedge_sequential skipped;
// concurrent: one IDENTICAL request.
static void build(gate_report *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->provenance.git_sha, sizeof r->provenance.git_sha, "%s", "0123abcd");
    snprintf(r->provenance.fixture_sha256, sizeof r->provenance.fixture_sha256, "%064d", 7);
    snprintf(r->provenance.backend, sizeof r->provenance.backend, "cpu");
    snprintf(r->provenance.gpu, sizeof r->provenance.gpu, "none");
    snprintf(r->provenance.architecture, sizeof r->provenance.architecture, "x86_64");
    snprintf(r->backend, sizeof r->backend, "cpu");
    snprintf(r->fixture, sizeof r->fixture, "tiny");
    r->tol = 0.02;
    r->seconds = 12.5;
    gate_suite *s = report_add_suite(r, "sequential");
    gate_request *q = suite_add_request(s, "s1");
    q->verdict = VERDICT_IDENTICAL;
    q->passed = 1;
    q->n_tokens = 3;
    q->tokens = calloc(3, sizeof(int));
    q->tokens[0] = 5, q->tokens[1] = 6, q->tokens[2] = 7;
    counters_book_round(&q->counters, 1, 2, 3);
    q->digest = 0x0123456789abcdefULL;
    q->max_abs_dlogit = 1e-3;
    s->verdicts[VERDICT_IDENTICAL]++;
    q = suite_add_request(s, weird_id);
    q->verdict = VERDICT_MISMATCH;
    q->tokens = calloc(1, sizeof(int));
    q->max_abs_dlogit = NAN;
    s->verdicts[VERDICT_MISMATCH]++;
    s->counters.rounds = 4;
    s->counters.accepted = 10;
    s->counters.hedged_rounds = 3;
    s->counters.chain_wins = 1;
    s->counters.loss_rounds = 2;
    s->max_abs_dlogit = 2.5e-3;
    s->seconds = 0.25;
    suite_fail(s, CHECK_VERDICT, weird_id, "run: MISMATCH <x>\nsecond line\x01\n");
    suite_fail(s, CHECK_HEDGE, NULL, "hedge gate: no chain wins\n");
    gate_suite *k = report_add_suite(r, "hedge_sequential");
    k->skipped = 1;
    snprintf(k->skip_reason, sizeof k->skip_reason, "no Markov head");
    gate_suite *c = report_add_suite(r, "concurrent");
    q = suite_add_request(c, "c1");
    q->verdict = VERDICT_IDENTICAL;
    q->passed = 1;
    q->tokens = calloc(1, sizeof(int));
    c->verdicts[VERDICT_IDENTICAL]++;
    report_finish(r);
}

static char *capture(void (*print)(const gate_report *, FILE *), const gate_report *r) {
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    print(r, f);
    fclose(f);
    return text;
}

static void print_suites(const gate_report *r, FILE *f) {
    for (int i = 0; i < r->n_suites; i++) report_print_suite(&r->suites[i], f);
}

START_TEST(test_model) {
    gate_report r;
    build(&r);
    ck_assert(!r.passed); // sequential failed; a skipped suite does not fail the gate
    ck_assert(!r.suites[0].passed && r.suites[2].passed);
    ck_assert(suite_check_failed(&r.suites[0], CHECK_VERDICT));
    ck_assert(suite_check_failed(&r.suites[0], CHECK_HEDGE));
    ck_assert(!suite_check_failed(&r.suites[0], CHECK_DIGEST));
    ck_assert_str_eq(gate_check_name(CHECK_COUNTERS), "counters");
    ck_assert_str_eq(r.suites[0].failures[0].request, weird_id);
    ck_assert_str_eq(r.suites[0].failures[1].request, "");
    gate_report_free(&r);
    gate_report ok = {0};
    report_add_suite(&ok, "sequential");
    gate_suite *sk = report_add_suite(&ok, "counters");
    sk->skipped = 1;
    report_finish(&ok);
    ck_assert(ok.passed);
    gate_report_free(&ok);
}
END_TEST

START_TEST(test_console) {
    gate_report r;
    build(&r);
    char *lines = capture(print_suites, &r), *summary = capture(report_print_summary, &r);
    ck_assert_msg(strstr(lines, "FAIL  sequential        1 IDENTICAL, 1 MISMATCH"), "%s", lines);
    ck_assert_msg(strstr(lines, "hedged   3 wins   1 losses   2  accepted/round 2.50  "
                                "max|dlogit| 2.50e-03    0.2 s"), "%s", lines);
    ck_assert_msg(strstr(lines, "      [verdict] a<b&\"c': run: MISMATCH <x>\n        second line"),
                  "%s", lines);
    ck_assert_msg(strstr(lines, "      [hedge] hedge gate: no chain wins\n"), "%s", lines);
    ck_assert_msg(strstr(lines, "SKIP  hedge_sequential  no Markov head\n"), "%s", lines);
    ck_assert_msg(strstr(lines, "PASS  concurrent        1 IDENTICAL"), "%s", lines);
    ck_assert_str_eq(summary, "gate FAILED: 1 of 2 suites passed, 1 skipped (failed: "
                              "sequential[verdict,hedge]); fixture tiny, backend cpu, tol 0.02; "
                              "elapsed 12.5 s\n");
    free(lines);
    free(summary);
    // Many failures: the console shows four, then says how many more the reports hold.
    for (int i = 0; i < 4; i++) suite_fail(&r.suites[0], CHECK_DIGEST, "s1", "digest %d\n", i);
    lines = capture(print_suites, &r);
    ck_assert_msg(strstr(lines, "... and 2 more failures"), "%s", lines);
    ck_assert_msg(strstr(lines, "digest 1") && !strstr(lines, "digest 2"), "%s", lines);
    free(lines);
    r.passed = 1;
    snprintf(r.fault, sizeof r.fault, "flip-draft");
    summary = capture(report_print_summary, &r);
    ck_assert_msg(strstr(summary, "gate PASSED") && strstr(summary, "fault flip-draft"), "%s",
                  summary);
    free(summary);
    gate_report_free(&r);
}
END_TEST

static cJSON *item(const cJSON *o, const char *key) {
    cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    ck_assert_msg(x != NULL, "JSON lacks \"%s\"", key);
    return x;
}

START_TEST(test_json) {
    gate_report r;
    build(&r);
    cJSON *j = report_to_json(&r);
    ck_assert_int_eq(item(j, "schema_version")->valueint, GATE_REPORT_SCHEMA);
    cJSON *p = item(j, "provenance");
    ck_assert_str_eq(item(p, "git_sha")->valuestring, "0123abcd");
    ck_assert_int_eq((int)strlen(item(p, "fixture_sha256")->valuestring), 64);
    ck_assert_str_eq(item(p, "backend")->valuestring, "cpu");
    ck_assert_str_eq(item(p, "gpu")->valuestring, "none");
    ck_assert_str_eq(item(p, "architecture")->valuestring, "x86_64");
    ck_assert_str_eq(item(j, "backend")->valuestring, "cpu");
    ck_assert_str_eq(item(j, "fixture")->valuestring, "tiny");
    ck_assert(cJSON_IsNull(item(j, "fault")));
    ck_assert(cJSON_IsFalse(item(j, "passed")));
    cJSON *suites = item(j, "suites");
    ck_assert_int_eq(cJSON_GetArraySize(suites), 3);
    cJSON *s = cJSON_GetArrayItem(suites, 0);
    ck_assert_str_eq(item(s, "name")->valuestring, "sequential");
    ck_assert(cJSON_IsFalse(item(s, "passed")));
    static const char *counters[] = {"rounds", "drafted", "accepted", "bonus", "emitted",
                                     "zero_accept", "full_accept", "hist", "hedged_rounds",
                                     "chain_spans", "chain_wins", "loss_rounds", "chains_built",
                                     "chains_deduped", "chains_dropped_capacity"};
    for (size_t i = 0; i < sizeof counters / sizeof *counters; i++)
        item(item(s, "counters"), counters[i]);
    ck_assert_double_eq_tol(item(s, "max_abs_dlogit")->valuedouble, 2.5e-3, 1e-12);
    cJSON *fc = item(s, "failed_checks");
    ck_assert_int_eq(cJSON_GetArraySize(fc), 2);
    ck_assert_str_eq(cJSON_GetArrayItem(fc, 0)->valuestring, "verdict");
    ck_assert_str_eq(cJSON_GetArrayItem(fc, 1)->valuestring, "hedge");
    cJSON *f0 = cJSON_GetArrayItem(item(s, "failures"), 0);
    ck_assert_str_eq(item(f0, "check")->valuestring, "verdict");
    ck_assert_str_eq(item(f0, "request")->valuestring, weird_id);
    cJSON *q = cJSON_GetArrayItem(item(s, "requests"), 0);
    ck_assert_str_eq(item(q, "id")->valuestring, "s1");
    ck_assert_str_eq(item(q, "verdict")->valuestring, "IDENTICAL");
    ck_assert_int_eq(cJSON_GetArraySize(item(q, "tokens")), 3);
    ck_assert_int_eq(cJSON_GetArrayItem(item(q, "tokens"), 2)->valueint, 7);
    ck_assert_int_eq(item(item(q, "counters"), "emitted")->valueint, 2);
    ck_assert_str_eq(item(q, "digest")->valuestring, "0123456789abcdef");
    q = cJSON_GetArrayItem(item(s, "requests"), 1);
    ck_assert_str_eq(item(q, "max_abs_dlogit")->valuestring, "nan");
    s = cJSON_GetArrayItem(suites, 1);
    ck_assert(cJSON_IsTrue(item(s, "skipped")) && cJSON_IsTrue(item(s, "passed")));
    ck_assert_str_eq(item(s, "skip_reason")->valuestring, "no Markov head");
    // The file holds the same JSON; an unwritable path is a bad-input error naming it.
    char dir[512], path[600];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/gate.json", dir);
    ck_assert_int_eq(report_write_json(&r, path), SG_OK);
    char *text;
    size_t len;
    ck_assert_int_eq(file_read_all(path, &text, &len), SG_OK);
    cJSON *back = cJSON_ParseWithLength(text, len);
    ck_assert(cJSON_Compare(back, j, 1));
    cJSON_Delete(back);
    free(text);
    snprintf(path, sizeof path, "%s/missing/gate.json", dir);
    ck_assert_int_eq(report_write_json(&r, path), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), path));
    cJSON_Delete(j);
    gate_report_free(&r);
}
END_TEST

static int count(const char *text, const char *needle) {
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

START_TEST(test_junit) {
    gate_report r;
    build(&r);
    char *xml = report_junit_string(&r);
    ck_assert_msg(strstr(xml, "<testsuites name=\"sparkgate gate\" tests=\"5\" failures=\"2\" "
                              "skipped=\"1\" time=\"12.500\">"), "%s", xml);
    ck_assert_msg(strstr(xml, "<testsuite name=\"sequential\" tests=\"3\" failures=\"2\""), "%s",
                  xml);
    ck_assert_int_eq(count(xml, "<testcase "), 5);
    ck_assert_int_eq(count(xml, "</testcase>"), 5);
    ck_assert_int_eq(count(xml, "<failure "), 2);
    ck_assert_msg(strstr(xml, "name=\"a&lt;b&amp;&quot;c&apos; MISMATCH\""), "%s", xml);
    ck_assert_msg(strstr(xml, "message=\"run: MISMATCH &lt;x&gt;\">run: MISMATCH &lt;x&gt;\n"
                              "second line?\n</failure>"), "%s", xml);
    ck_assert_msg(strstr(xml, "name=\"check hedge\""), "%s", xml);
    ck_assert_msg(strstr(xml, "<skipped message=\"no Markov head\"/>"), "%s", xml);
    ck_assert(!strchr(xml, '\x01'));
    char dir[512], path[600];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/gate.xml", dir);
    ck_assert_int_eq(report_write_junit(&r, path), SG_OK);
    char *text;
    size_t len;
    ck_assert_int_eq(file_read_all(path, &text, &len), SG_OK);
    ck_assert_str_eq(text, xml);
    free(text);
    snprintf(path, sizeof path, "%s/missing/gate.xml", dir);
    ck_assert_int_eq(report_write_junit(&r, path), SG_EXIT_INPUT);
    free(xml);
    gate_report_free(&r);
}
END_TEST

int main(void) {
    Suite *s = suite_create("gate_report");
    TCase *tc = tcase_create("report");
    tcase_add_test(tc, test_model);
    tcase_add_test(tc, test_console);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_junit);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
