// tests/test_gate_faults.c: the gate's negative controls end to end. For every fault of
// gates/faults.h, `sparkgate gate --suite SUITE --fault NAME --json FILE` must exit 1 (a failed
// gate, not a crash), and the JSON report must show the fault injected and exactly the check the
// fault names as the suite's failed check; the same suite without the fault passes (exit 0), so
// the failure is the fault's.
// ctest-labels: cpu;gate
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "engine_fixture.h"
#include "gates/faults.h"

static char output[1 << 18];
static char fixture_dir[FIXTURE_PATH_MAX];
static char tmp[512];

static void setup(void) { ef_cli_setup(fixture_dir, sizeof fixture_dir, tmp, sizeof tmp); }

// Runs one suite, with the fault or without (NULL); returns the exit status and the JSON report.
static int gate(const char *suite, const char *fault, cJSON **json) {
    char args[4096], path[600];
    snprintf(path, sizeof path, "%s/%s-%s.json", tmp, suite, fault ? fault : "none");
    snprintf(args, sizeof args, "gate --fixture %s --suite %s --json %s%s%s", fixture_dir, suite,
             path, fault ? " --fault " : "", fault ? fault : "");
    int status = tu_run_cli(args, output, sizeof output);
    *json = tu_load_json(path);
    return status;
}

static void negative_control(int k) {
    const gate_fault *f = &gate_faults[k];
    cJSON *j;
    int status = gate(f->suite, f->name, &j);
    ck_assert_msg(status == 1, "--fault %s: exit %d, want 1 (a failed gate)\n%s", f->name, status,
                  output);
    ck_assert_msg(strstr(output, "gate FAILED"), "%s", output);
    ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "passed")));
    ck_assert_str_eq(cJSON_GetObjectItem(j, "fault")->valuestring, f->name);
    cJSON *s = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "suites"), 0);
    ck_assert_str_eq(cJSON_GetObjectItem(s, "name")->valuestring, f->suite);
    ck_assert_msg(cJSON_GetObjectItem(s, "faults_injected")->valueint > 0,
                  "--fault %s was never injected", f->name);
    cJSON *checks = cJSON_GetObjectItem(s, "failed_checks");
    char *got = cJSON_PrintUnformatted(checks);
    ck_assert_msg(cJSON_GetArraySize(checks) == 1 &&
                      strcmp(cJSON_GetArrayItem(checks, 0)->valuestring,
                             gate_check_name(f->caught_by)) == 0,
                  "--fault %s in %s: failed checks %s, want [\"%s\"]", f->name, f->suite, got,
                  gate_check_name(f->caught_by));
    free(got);
    cJSON_Delete(j);
    // Without the fault the same suite passes.
    status = gate(f->suite, NULL, &j);
    ck_assert_msg(status == 0, "%s without a fault: exit %d\n%s", f->suite, status, output);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "suites"), 0),
                                         "faults_injected")->valueint, 0);
    cJSON_Delete(j);
}

START_TEST(test_flip_draft) { negative_control(0); }
END_TEST
START_TEST(test_corrupt_kv) { negative_control(1); }
END_TEST
START_TEST(test_corrupt_tap) { negative_control(2); }
END_TEST
START_TEST(test_skip_copyback) { negative_control(3); }
END_TEST
START_TEST(test_tie_to_chain) { negative_control(4); }
END_TEST

START_TEST(test_table) {
    ck_assert_str_eq(gate_faults[0].name, "flip-draft");
    ck_assert_str_eq(gate_faults[1].name, "corrupt-kv");
    ck_assert_str_eq(gate_faults[2].name, "corrupt-tap");
    ck_assert_str_eq(gate_faults[3].name, "skip-copyback");
    ck_assert_str_eq(gate_faults[4].name, "tie-to-chain");
    for (int k = 0; k < GATE_N_FAULTS; k++) {
        ck_assert_ptr_eq(gate_fault_find(gate_faults[k].name), &gate_faults[k]);
        ck_assert_int_ne(gate_faults[k].fault, ENGINE_FAULT_NONE);
    }
    ck_assert_ptr_null(gate_fault_find("none"));
}
END_TEST

int main(void) {
    Suite *s = suite_create("gate_faults");
    TCase *tc = tcase_create("negative_controls");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_table);
    tcase_add_test(tc, test_flip_draft);
    tcase_add_test(tc, test_corrupt_kv);
    tcase_add_test(tc, test_corrupt_tap);
    tcase_add_test(tc, test_skip_copyback);
    tcase_add_test(tc, test_tie_to_chain);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
