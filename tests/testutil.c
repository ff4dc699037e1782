// tests/testutil.c: helpers shared by the Check tests (see testutil.h).
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cjson/cJSON.h>

#include "common/error.h"
#include "common/file.h"

void tu_tmpdir(char *buf, size_t size) {
    const char *base = getenv("TMPDIR");
    snprintf(buf, size, "%s/sparkgate-test-XXXXXX", base && *base ? base : "/tmp");
    SG_CHECK(mkdtemp(buf) != NULL, "mkdtemp %s failed", buf);
}

void tu_write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    SG_CHECK(f != NULL, "cannot write %s", path);
    SG_CHECK(fwrite(data, 1, n, f) == n, "short write to %s", path);
    fclose(f);
}

uint64_t tu_next(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double tu_uniform(uint64_t *state) { return (double)(tu_next(state) >> 11) * 0x1.0p-53; }

double tu_normal(uint64_t *state) {
    double u1 = tu_uniform(state), u2 = tu_uniform(state);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

bf16 *tu_random_bf16(size_t n, double scale, uint64_t seed) {
    bf16 *x = sg_calloc(n, sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = f32_to_bf16((float)(scale * tu_normal(&seed)));
    return x;
}

int tu_run_cli(const char *args, char *out, size_t size) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", SG_CLI_PATH, args);
    FILE *p = popen(cmd, "r");
    ck_assert_msg(p != NULL, "cannot run %s", cmd);
    size_t n = fread(out, 1, size - 1, p);
    out[n] = 0;
    while (fgetc(p) != EOF) continue; // drain what did not fit
    int status = pclose(p);
    ck_assert_msg(WIFEXITED(status), "%s did not exit normally", cmd);
    return WEXITSTATUS(status);
}

cJSON *tu_load_json(const char *path) {
    char *text;
    size_t len;
    ck_assert_msg(file_read_all(path, &text, &len) == SG_OK, "%s", sg_error());
    cJSON *j = cJSON_ParseWithLength(text, len);
    free(text);
    ck_assert_msg(j != NULL, "%s is not valid JSON", path);
    return j;
}

static int run_suite(Suite *suite, enum fork_status fork) {
    SRunner *runner = srunner_create(suite);
    srunner_set_fork_status(runner, fork);
    srunner_run_all(runner, CK_NORMAL);
    int failed = srunner_ntests_failed(runner);
    srunner_free(runner);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int tu_run(Suite *suite) { return run_suite(suite, CK_FORK_GETENV); }

int tu_run_no_fork(Suite *suite) { return run_suite(suite, CK_NOFORK); }
