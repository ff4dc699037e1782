// tests/test_cli.c: the sparkgate program end to end: usage errors (exit 2; bad values of the
// shared flags, engine ones included), bad input (exit 3), --help, and a generate run on the
// default fixture.
// ctest-labels: cpu;unit
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static char output[1 << 16];

static int run_cli(const char *args) { return tu_run_cli(args, output, sizeof output); }

static void expect(const char *args, int status, const char *needle) {
    int got = run_cli(args);
    ck_assert_msg(got == status, "sparkgate %s: exit %d, expected %d; output:\n%s", args, got, status, output);
    ck_assert_msg(strstr(output, needle) != NULL, "sparkgate %s: output lacks \"%s\":\n%s", args, needle, output);
}

START_TEST(usage_errors_exit_2) {
    expect("", 2, "usage: sparkgate");
    expect("frobnicate", 2, "unknown command");
    expect("generate --bogus", 2, "unknown option --bogus");
    expect("generate --max-new 0", 2, "--max-new");
    expect("generate --max-new", 2, "needs a value");
    expect("generate --prompt 1,,2", 2, "--prompt");
    expect("generate --temperature -1", 2, "--temperature");
    expect("generate --backend tpu", 2, "--backend tpu");
    // The shared engine flags: values checked while parsing (exit 2 naming the flag), and refused
    // with the reference decoder, which has no pages or verify batch.
    expect("generate --page-size 0", 2, "--page-size: expected an integer in [1, 4096]");
    expect("generate --page-size 4097", 2, "--page-size");
    expect("generate --pool-pages x", 2, "--pool-pages: expected an integer");
    expect("generate --max-spans 0", 2, "--max-spans: expected an integer");
    expect("generate --max-rows -3", 2, "--max-rows: expected an integer");
    expect("generate --max-rows", 2, "--max-rows needs a value");
    expect("generate --page-size 8", 2, "--page-size is an engine option");
    expect("generate --backend ref --hedge-auto", 2, "--hedge-auto is an engine option");
    expect("run sequential --pool-pages 0", 2, "--pool-pages");
    expect("run sequential --max-spans 2x", 2, "--max-spans");
    expect("gate --page-size 8", 2, "unknown option --page-size");
    expect("gate --junit", 2, "--junit needs a value");
    expect("generate --block-layout sideways", 2, "--block-layout");
    expect("generate --hedge-positions 2,1 --hedge-cap 1", 2, "strictly increasing");
    expect("generate --hedge-positions 0,1 --chains 3 --hedge-cap 1", 2, "--chains 3");
    expect("generate --draft x --no-draft", 2, "exclude");
    expect("fixture", 2, "usage: sparkgate fixture");
    expect("fixture make --out /tmp/x", 2, "--set");
    expect("fixture polish", 2, "unknown action");
}
END_TEST

START_TEST(help_exits_0) {
    expect("--help", 0, "commands:");
    expect("generate --help", 0, "--hedge-positions");
    expect("fixture --help", 0, "fixture make");
}
END_TEST

START_TEST(bad_input_exits_3) {
    expect("generate --fixture /nonexistent/fixture", 3, "/nonexistent/fixture");
    expect("generate --target /nonexistent/target --prompt 1,2", 3, "/nonexistent/target");
}
END_TEST

START_TEST(generate_on_default_fixture) {
    expect("generate --max-new 8 --no-draft", 0, "tokens: ");
    expect("generate --max-new 24 --hedge-cap 8 --hedge-positions 0,1,2", 0, "simulated speculation");
    // A prompt id past the vocabulary is an impossible request.
    expect("generate --prompt 99999999 --no-draft", 2, "prompt");
}
END_TEST

int main(void) {
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, usage_errors_exit_2);
    tcase_add_test(tc, help_exits_0);
    tcase_add_test(tc, bad_input_exits_3);
    tcase_add_test(tc, generate_on_default_fixture);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
