// tests/test_gate_cli.c: `sparkgate gate` as a program: --help (suites and faults), the exit
// statuses of design.md §8 (0 pass, 2 usage, 3 bad input, 77 no CUDA backend), comma lists of
// suites, the --json and --junit files, the console lines, and that CTest registers a gate test
// for every suite of the table.
// ctest-labels: cpu;unit
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "engine_fixture.h"
#include "gates/gate.h"

static char output[1 << 17];
static char fixture_dir[FIXTURE_PATH_MAX];
static char tmp[512];

static void setup(void) { ef_cli_setup(fixture_dir, sizeof fixture_dir, tmp, sizeof tmp); }

static int run(const char *fmt, const char *a, const char *b) {
    char args[4096];
    snprintf(args, sizeof args, fmt, a, b);
    return tu_run_cli(args, output, sizeof output);
}

static void expect(int status, const char *needle, const char *fmt, const char *a, const char *b) {
    int got = run(fmt, a, b);
    ck_assert_msg(got == status && strstr(output, needle), "exit %d (want %d), output lacks "
                  "\"%s\"?\n%s", got, status, needle, output);
}

START_TEST(test_help_and_usage) {
    expect(0, "usage: sparkgate gate", "gate --help", "", "");
    const char *const *names, *const *summaries;
    int n = gate_suite_list(&names, &summaries);
    for (int i = 0; i < n; i++) ck_assert_msg(strstr(output, names[i]), "%s", names[i]);
    ck_assert_ptr_nonnull(strstr(output, "tie-to-chain"));
    expect(0, "gate ", "--help", "", "");
    expect(2, "--suite nope: no such suite", "gate --fixture %s --suite nope", fixture_dir, "");
    expect(2, "--fault needs a value", "gate --fixture %s --fault", fixture_dir, "");
    expect(2, "no such fault", "gate --fixture %s --fault gremlins", fixture_dir, "");
    expect(2, "gate takes no arguments", "gate --fixture %s extra", fixture_dir, "");
    expect(2, "unknown option --hedge-cap", "gate --fixture %s --hedge-cap 8", fixture_dir, "");
    expect(2, "exactly one --suite", "gate --fixture %s --request s1", fixture_dir, "");
    expect(2, "engine runs on cpu or cuda", "gate --fixture %s --backend ref", fixture_dir, "");
    expect(3, "nonexistent", "gate --fixture %s/nonexistent", tmp, "");
    expect(3, "nowhere.json", "gate --fixture %s --suite sequential --workload %s/nowhere.json",
           fixture_dir, tmp);
}
END_TEST

START_TEST(test_cuda_backend) {
    // 77 while no CUDA device (or backend) is usable; a passing gate where one is.
    int got = run("gate --fixture %s --suite capture_shape --backend cuda", fixture_dir, "");
    ck_assert_msg(got == 77 || (got == 0 && strstr(output, "gate PASSED")), "exit %d\n%s", got,
                  output);
    if (got == 77) ck_assert_ptr_nonnull(strstr(output, "CUDA"));
}
END_TEST

START_TEST(test_reports) {
    char json[600], xml[600];
    snprintf(json, sizeof json, "%s/g.json", tmp);
    snprintf(xml, sizeof xml, "%s/g.xml", tmp);
    char args[4096];
    snprintf(args, sizeof args, "gate --fixture %s --suite capture_shape,draft_headroom --json %s "
             "--junit %s", fixture_dir, json, xml);
    int got = tu_run_cli(args, output, sizeof output);
    ck_assert_msg(got == 0, "exit %d\n%s", got, output);
    ck_assert_msg(strstr(output, "PASS  capture_shape     2 IDENTICAL"), "%s", output);
    ck_assert_msg(strstr(output, "PASS  draft_headroom    2 IDENTICAL, 1 REJECTED"), "%s", output);
    ck_assert_msg(strstr(output, "gate PASSED: 2 of 2 suites passed; fixture tiny, backend cpu"),
                  "%s", output);
    ck_assert_ptr_nonnull(strstr(output, "elapsed"));
    char *text;
    size_t len;
    ck_assert_int_eq(file_read_all(json, &text, &len), SG_OK);
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "passed")));
    cJSON *suites = cJSON_GetObjectItem(j, "suites");
    ck_assert_int_eq(cJSON_GetArraySize(suites), 2);
    cJSON *h = cJSON_GetArrayItem(suites, 1), *reqs = cJSON_GetObjectItem(h, "requests");
    ck_assert_str_eq(cJSON_GetObjectItem(h, "name")->valuestring, "draft_headroom");
    int rejected = 0;
    for (int i = 0; i < cJSON_GetArraySize(reqs); i++) {
        cJSON *q = cJSON_GetArrayItem(reqs, i);
        if (strcmp(cJSON_GetObjectItem(q, "verdict")->valuestring, "REJECTED") != 0) continue;
        rejected++;
        ck_assert_ptr_nonnull(strstr(cJSON_GetObjectItem(q, "reason")->valuestring,
                                     "draft headroom"));
    }
    ck_assert_int_eq(rejected, 1);
    ck_assert_int_eq(cJSON_GetObjectItem(h, "runs")->valueint, 2); // and without the refused one
    cJSON_Delete(j);
    ck_assert_int_eq(file_read_all(xml, &text, &len), SG_OK);
    ck_assert_ptr_nonnull(
        strstr(text, "<testsuite name=\"draft_headroom\" tests=\"3\" failures=\"0\""));
    free(text);
    expect(3, "cannot write", "gate --fixture %s --suite capture_shape --junit %s/no/such.xml",
           fixture_dir, tmp);
}
END_TEST

START_TEST(test_ctest_registers_every_suite) {
    const char *const *names, *const *summaries;
    int n = gate_suite_list(&names, &summaries);
    char registered[1024];
    snprintf(registered, sizeof registered, ",%s,", SG_GATE_CTEST_SUITES);
    int listed = 1;
    for (const char *p = SG_GATE_CTEST_SUITES; *p; p++) listed += *p == ',';
    ck_assert_int_eq(listed, n);
    for (int i = 0; i < n; i++) {
        char item[64];
        snprintf(item, sizeof item, ",%s,", names[i]);
        ck_assert_msg(strstr(registered, item), "tests/CMakeLists.txt does not register suite %s",
                      names[i]);
    }
}
END_TEST

int main(void) {
    Suite *s = suite_create("gate_cli");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_help_and_usage);
    tcase_add_test(tc, test_cuda_backend);
    tcase_add_test(tc, test_reports);
    tcase_add_test(tc, test_ctest_registers_every_suite);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
