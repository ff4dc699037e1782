// tests/testutil.h: small helpers shared by the Check tests: temporary folders, files, seeded
// random tensors, and the runner boilerplate.
#ifndef SG_TESTUTIL_H
#define SG_TESTUTIL_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>

#include "common/bf16.h"

// Creates a fresh folder under $TMPDIR (or /tmp) and writes its path into buf.
void tu_tmpdir(char *buf, size_t size);
void tu_write_file(const char *path, const void *data, size_t n);
// Deterministic pseudo-random numbers (splitmix64).
uint64_t tu_next(uint64_t *state);
double tu_uniform(uint64_t *state);  // [0, 1)
double tu_normal(uint64_t *state);   // standard normal
// n bf16 values ~ N(0, scale²), seeded.
bf16 *tu_random_bf16(size_t n, double scale, uint64_t seed);
// Runs `sparkgate ARGS` (the CLI built with the tests) with stderr folded into stdout, keeping the
// output (NUL-terminated, cut to fit) in out; returns the exit status.
int tu_run_cli(const char *args, char *out, size_t size);
// Reads and parses a JSON file (the test fails when it cannot); the caller frees it with cJSON_Delete.
struct cJSON *tu_load_json(const char *path);
// Runs the suite (fork mode as CK_FORK says) and returns the process exit status.
int tu_run(Suite *suite);
// Runs the suite in this process, whatever CK_FORK says (GPU tests: their main has initialised
// CUDA to probe for a device, and a forked child cannot use it: "initialization error").
int tu_run_no_fork(Suite *suite);

#endif
