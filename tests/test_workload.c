// tests/test_workload.c: workload parsing: a full valid file, defaults, and each refusal.
// ctest-labels: cpu;unit
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/workload.h"
#include "testutil.h"

static int parse(const char *json, int vocab, sg_workload *w) {
    return workload_parse(json, strlen(json), "w.json", vocab, w);
}

START_TEST(valid_file_with_defaults) {
    const char *json =
        "{\"schema\": 1, \"requests\": ["
        "{\"id\": \"s1\", \"prompt\": [1, 2, 3], \"max_new_tokens\": 64, \"stop\": [7],"
        " \"temperature\": 0.8, \"seed\": 11, \"arrival_step\": 2, \"expect\": \"rejected\","
        " \"ignore_eos\": true},"
        "{\"id\": \"s2\", \"prompt\": [5], \"max_new_tokens\": 1}]}";
    sg_workload w;
    ck_assert_int_eq(parse(json, 100, &w), SG_OK);
    ck_assert_int_eq(w.n_requests, 2);
    sg_request *a = &w.requests[0], *b = &w.requests[1];
    ck_assert_str_eq(a->id, "s1");
    ck_assert_int_eq(a->n_prompt, 3);
    ck_assert_int_eq(a->prompt[2], 3);
    ck_assert_int_eq(a->max_new_tokens, 64);
    ck_assert_int_eq(a->n_stop, 1);
    ck_assert_int_eq(a->stop[0], 7);
    ck_assert(a->temperature == 0.8);
    ck_assert_int_eq((int)a->seed, 11);
    ck_assert_int_eq(a->arrival_step, 2);
    ck_assert_int_eq(a->expect_rejected, 1);
    ck_assert_int_eq(a->ignore_eos, 1);
    ck_assert_str_eq(b->id, "s2");
    ck_assert_int_eq(b->n_stop, 0);
    ck_assert(b->temperature == 0);
    ck_assert_int_eq(b->arrival_step, 0);
    ck_assert_int_eq(b->expect_rejected, 0);
    ck_assert_int_eq(b->ignore_eos, 0);
    workload_free(&w);
}
END_TEST

static void refused(const char *json, const char *needle) {
    sg_workload w;
    int status = parse(json, 100, &w);
    ck_assert_msg(status == SG_EXIT_INPUT, "accepted: %s", json);
    ck_assert_msg(strstr(sg_error(), needle) != NULL, "message \"%s\" lacks \"%s\"", sg_error(), needle);
    ck_assert_msg(strstr(sg_error(), "w.json") != NULL, "message \"%s\" lacks the file name", sg_error());
}

START_TEST(refusals_name_the_problem) {
    refused("{", "not valid JSON");
    refused("{\"schema\": 2, \"requests\": []}", "schema");
    refused("{\"schema\": 1, \"requests\": []}", "requests");
    refused("{\"schema\": 1, \"requests\": [3]}", "not an object");
    refused("{\"schema\": 1, \"requests\": [{\"prompt\": [1], \"max_new_tokens\": 1}]}", "\"id\"");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"max_new_tokens\": 1}]}", "prompt");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [], \"max_new_tokens\": 1}]}", "prompt");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [100], \"max_new_tokens\": 1}]}", "prompt\"[0]");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1.5], \"max_new_tokens\": 1}]}", "token id");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1]}]}", "max_new_tokens");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1], \"max_new_tokens\": 0}]}", "max_new_tokens");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1], \"max_new_tokens\": 1, \"stop\": [-1]}]}", "stop");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1], \"max_new_tokens\": 1, \"temperature\": -1}]}", "temperature");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1], \"max_new_tokens\": 1, \"expect\": \"maybe\"}]}", "expect");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1], \"max_new_tokens\": 1, \"ignore_eos\": 1}]}", "ignore_eos");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1], \"max_new_tokens\": 1, \"arrival_step\": -3}]}", "arrival_step");
    refused("{\"schema\": 1, \"requests\": [{\"id\": \"a\", \"prompt\": [1], \"max_new_tokens\": 1},"
            "{\"id\": \"a\", \"prompt\": [2], \"max_new_tokens\": 1}]}", "twice");
}
END_TEST

START_TEST(load_from_file_and_missing_file) {
    char dir[256], path[300];
    tu_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/w.json", dir);
    const char *json = "{\"schema\": 1, \"requests\": [{\"id\": \"x\", \"prompt\": [4, 5], \"max_new_tokens\": 3}]}";
    tu_write_file(path, json, strlen(json));
    sg_workload w;
    ck_assert_int_eq(workload_load(path, 0, &w), SG_OK);
    ck_assert_int_eq(w.requests[0].prompt[1], 5);
    workload_free(&w);
    snprintf(path, sizeof path, "%s/missing.json", dir);
    ck_assert_int_eq(workload_load(path, 0, &w), SG_EXIT_INPUT);
    ck_assert(strstr(sg_error(), "missing.json") != NULL);
}
END_TEST

int main(void) {
    Suite *s = suite_create("workload");
    TCase *tc = tcase_create("workload");
    tcase_add_test(tc, valid_file_with_defaults);
    tcase_add_test(tc, refusals_name_the_problem);
    tcase_add_test(tc, load_from_file_and_missing_file);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
