// tests/test_cli_run.c: `sparkgate run WORKLOAD` and `sparkgate generate --backend cpu|cuda` end
// to end on the tiny fixture: per-request status (ok / rejected with the reason), tokens equal
// between hedged and unhedged runs and equal to the reference decoder's, counters and digests in
// the JSON, the shared engine flags reaching the engine, and the exit statuses (0 ok, 2 usage,
// 3 bad input, 77 no CUDA backend).
// ctest-labels: cpu;unit
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "engine_fixture.h"

static char output[1 << 17];
static char fixture_dir[FIXTURE_PATH_MAX];
static char tmp[512];

static int run_cli(const char *args) { return tu_run_cli(args, output, sizeof output); }

static void expect(int status, const char *needle, const char *fmt, const char *a, const char *b) {
    char args[2048];
    snprintf(args, sizeof args, fmt, a, b);
    int got = run_cli(args);
    ck_assert_msg(got == status && strstr(output, needle), "sparkgate %s: exit %d (want %d), "
                  "output lacks \"%s\"?\n%s", args, got, status, needle, output);
}

static void setup(void) { ef_cli_setup(fixture_dir, sizeof fixture_dir, tmp, sizeof tmp); }

START_TEST(test_run_hedged_vs_unhedged) {
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/hedged.json", tmp);
    snprintf(b, sizeof b, "%s/plain.json", tmp);
    expect(0, "total over 6 requests", "run sequential --fixture %s --hedge-cap 8 "
           "--hedge-positions 0,1,2 --page-size 8 --json %s", fixture_dir, a);
    expect(0, "s6: ok", "run sequential --fixture %s --json %s", fixture_dir, b);
    cJSON *h = tu_load_json(a), *u = tu_load_json(b);
    cJSON *hr = cJSON_GetObjectItem(h, "requests"), *ur = cJSON_GetObjectItem(u, "requests");
    ck_assert_int_eq(cJSON_GetArraySize(hr), 6);
    for (int i = 0; i < 6; i++) {
        cJSON *x = cJSON_GetArrayItem(hr, i), *y = cJSON_GetArrayItem(ur, i);
        ck_assert_str_eq(cJSON_GetObjectItem(x, "status")->valuestring, "ok");
        ck_assert(cJSON_Compare(cJSON_GetObjectItem(x, "tokens"), cJSON_GetObjectItem(y, "tokens"), 1));
        ck_assert(cJSON_Compare(cJSON_GetObjectItem(x, "digest_logits"),
                                cJSON_GetObjectItem(y, "digest_logits"), 1));
        ck_assert_str_eq(cJSON_GetObjectItem(x, "digest")->valuestring,
                         cJSON_GetObjectItem(y, "digest")->valuestring);
    }
    cJSON *t = cJSON_GetObjectItem(h, "total");
    ck_assert_int_gt(cJSON_GetObjectItem(t, "chain_wins")->valueint, 0);
    ck_assert_int_eq(cJSON_GetObjectItem(t, "chains_dropped_capacity")->valueint, 0);
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetObjectItem(u, "total"), "hedged_rounds")->valueint, 0);
    cJSON_Delete(h);
    cJSON_Delete(u);
}
END_TEST

START_TEST(test_run_rejects_and_errors) {
    expect(0, "h2: rejected: draft headroom", "run draft_headroom --fixture %s%s", fixture_dir, "");
    expect(0, "h3: ok", "run draft_headroom --fixture %s --pool-pages 20 --hedge-auto "
           "--hedge-cap 2%s", fixture_dir, "");
    expect(2, "Markov head", "run sequential --fixture %s --draft %s/dflash --hedge-cap 2",
           fixture_dir, fixture_dir);
    expect(2, "exactly one WORKLOAD", "run --fixture %s%s", fixture_dir, "");
    expect(2, "--page-size", "run sequential --fixture %s --page-size 0%s", fixture_dir, "");
    // The engine flags reach the engine: 7 rows cannot hold one span of B + 1 = 8 rows, and one
    // verify span per round leaves no room for a hedge chain.
    expect(2, "--max-rows 7", "run sequential --fixture %s --max-rows 7%s", fixture_dir, "");
    ck_assert_msg(strstr(output, "span of up to 8 rows") && strstr(output, "at least 8"), "%s",
                  output);
    for (int spans = 0; spans < 2; spans++) {
        expect(0, "total over 6 requests", spans ? "run sequential --fixture %s --hedge-cap 2%s"
               : "run sequential --fixture %s --hedge-cap 2 --max-spans 1%s", fixture_dir, "");
        const char *total = strstr(output, "total over 6 requests");
        ck_assert_msg((strstr(total, "hedged 0, wins 0") != NULL) == !spans, "%s", total);
    }
    expect(2, "--graphs: expected on or off", "run sequential --fixture %s --graphs maybe%s",
           fixture_dir, "");
    expect(2, "--graphs: expected on or off", "generate --fixture %s --backend cpu --graphs 1%s",
           fixture_dir, "");
    expect(3, "nosuch", "run nosuch --fixture %s%s", fixture_dir, "");
    expect(77, "CUDA", "run sequential --fixture %s --backend cuda%s", fixture_dir, "");
    expect(0, "--pool-pages", "run --help%s%s", "", "");
    expect(0, "--graphs on|off", "generate --help%s%s", "", "");
    expect(0, "run", "--help%s%s", "", "");
}
END_TEST

START_TEST(test_generate_cpu_matches_ref) {
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/cpu.json", tmp);
    snprintf(b, sizeof b, "%s/ref.json", tmp);
    expect(0, "engine (cpu backend, anchor-first, hedge cap 4)", "generate --fixture %s "
           "--backend cpu --hedge-cap 4 --hedge-positions 0,1 --max-new 40 --json %s", fixture_dir, a);
    expect(0, "simulated speculation", "generate --fixture %s --max-new 40 --json %s", fixture_dir, b);
    cJSON *c = tu_load_json(a), *r = tu_load_json(b);
    ck_assert(cJSON_Compare(cJSON_GetObjectItem(c, "tokens"), cJSON_GetObjectItem(r, "tokens"), 1));
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "tokens")), 40);
    ck_assert_int_gt(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "counters"), "rounds")->valueint, 0);
    cJSON_Delete(r);
    expect(0, "no drafter", "generate --fixture %s --backend cpu --no-draft --temperature 1.5 "
           "--seed 3%s", fixture_dir, "");
    // The engine flags reach the engine with generate --backend cpu too: the same tokens on
    // pages of 4 positions and a small verify batch; a pool, a row limit and the auto controller
    // refused by the engine with its reasons.
    snprintf(b, sizeof b, "%s/pages.json", tmp);
    expect(0, "hedge cap 4", "generate --fixture %s --backend cpu --hedge-cap 4 --hedge-positions "
           "0,1 --max-new 40 --page-size 4 --max-spans 8 --max-rows 64 --json %s", fixture_dir, b);
    cJSON *p = tu_load_json(b);
    ck_assert(cJSON_Compare(cJSON_GetObjectItem(c, "tokens"), cJSON_GetObjectItem(p, "tokens"), 1));
    cJSON_Delete(p);
    cJSON_Delete(c);
    expect(2, "raise --pool-pages", "generate --fixture %s --backend cpu --max-new 40 "
           "--pool-pages 3%s", fixture_dir, "");
    expect(2, "--max-rows 7", "generate --fixture %s --backend cpu --max-rows 7%s", fixture_dir,
           "");
    expect(2, "needs --hedge-cap", "generate --fixture %s --backend cpu --hedge-auto%s",
           fixture_dir, "");
    expect(2, "--page-size: expected", "generate --fixture %s --backend cpu --page-size 0%s",
           fixture_dir, "");
    // --backend cuda: 77 while no CUDA device (or backend) is usable, the engine's run where one is.
    char args[1200];
    snprintf(args, sizeof args, "generate --fixture %s --backend cuda --max-new 8", fixture_dir);
    int got = run_cli(args);
    ck_assert_msg((got == 77 && strstr(output, "CUDA")) ||
                      (got == 0 && strstr(output, "engine (cuda backend")), "exit %d\n%s", got,
                  output);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli_run");
    TCase *tc = tcase_create("cli");
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_run_hedged_vs_unhedged);
    tcase_add_test(tc, test_run_rejects_and_errors);
    tcase_add_test(tc, test_generate_cpu_matches_ref);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
