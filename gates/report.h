// gates/report.h: what a gate run found, and its three renderings: the console (one line per suite
// and a summary, gates/report.c), JSON (gates/report_json.c) and JUnit XML (gates/report_junit.c).
// The model itself (building, freeing, check names) is gates/report_model.c.
//
// A suite passes when none of its checks failed; every failure names its check (gate_check), the
// request when there is one, and carries a multi-line text (its first line a summary; design.md §4
// lists what a verdict failure shows). The gate passes when every suite that ran passed (a suite
// skipped because the models cannot run it is reported as skipped, not failed).
#ifndef SG_GATES_REPORT_H
#define SG_GATES_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "common/counters.h"
#include "verdict.h"

struct cJSON;

#define GATE_REPORT_SCHEMA 1

typedef enum {
    CHECK_ENGINE,   // the engine ran every request to the end (no hard error)
    CHECK_VERDICT,  // each request IDENTICAL or TIE to the reference, REJECTED only where expected
    CHECK_LOGITS,   // each request's max |Δlogit| against the reference within the tolerance
    CHECK_DIGEST,   // within the backend: equal tokens and digests across runs of one request
    CHECK_COUNTERS, // design.md §5 invariants; equal to the simulator's where the suite says
    CHECK_RERUN,    // a rerun gives the same counters and digests
    CHECK_HEDGE,    // hedged rounds, chain wins and loss rounds above zero
    CHECK_POOL,     // the KV pools whole after every run
    CHECK_WAIT,     // requests waited for pages
    CHECK_REJECT,   // the refusal states its reason; the workload tests the boundary
    CHECK_ORACLE,   // a replaying drafter accepts every draft, an always-wrong one none
    GATE_N_CHECKS
} gate_check;

typedef struct {
    char id[64];
    verdict_kind verdict;
    int passed;          // the verdict passed
    int n_tokens;
    int *tokens;         // [n_tokens] generated ids (owned)
    spec_counters counters;
    uint64_t digest;     // engine_digest_summary
    double max_abs_dlogit;
    char reason[256];    // REJECTED: the engine's reason
} gate_request;

typedef struct {
    gate_check check;
    char request[64];    // "" for a suite-level failure
    char *text;          // owned; first line = summary
} gate_failure;

typedef struct {
    char name[32];
    int passed;
    int skipped;
    char skip_reason[256];
    spec_counters counters; // the suite's primary run, summed over its requests
    double max_abs_dlogit;  // over the primary run's requests
    int verdicts[VERDICT_KINDS];
    gate_request *requests; // the primary run's
    int n_requests, cap_requests;
    gate_failure *failures;
    int n_failures, cap_failures;
    int runs;               // engine runs made
    int faults_injected;    // summed over the runs (negative controls)
    double seconds;
} gate_suite;

typedef struct {
    char git_sha[48];
    char fixture_sha256[65];
    char target_sha256[65];
    char draft_sha256[65];
    char backend[32];
    char gpu[128];          // the device ("none" on the CPU backend)
    char architecture[64];  // the device's ("sm_90"), or the host's (uname -m) without one
} gate_provenance;

typedef struct {
    gate_provenance provenance;
    char backend[32];
    char fixture[64];    // the set's name
    char fixture_dir[1024];
    double tol;
    char fault[32];      // "" in a real run
    gate_suite *suites;
    int n_suites, cap_suites;
    int passed;
    double seconds;
} gate_report;

// ---- the model (report_model.c) ----
const char *gate_check_name(gate_check c);
gate_suite *report_add_suite(gate_report *r, const char *name);
gate_request *suite_add_request(gate_suite *s, const char *id);
// Records a failure of `check` (request may be NULL) and marks the suite failed.
void suite_fail(gate_suite *s, gate_check check, const char *request, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int suite_check_failed(const gate_suite *s, gate_check check);
// passed = every suite that ran passed; call when the suites are done.
void report_finish(gate_report *r);
void gate_report_free(gate_report *r);

// ---- console (report.c) ----
// One line for the suite (PASS/FAIL/SKIP, verdict counts, hedged rounds, wins, losses, accepted
// drafts per round, max |Δlogit|, time), then the first failures' texts, indented.
void report_print_suite(const gate_suite *s, FILE *out);
// The summary line: passed or failed, suites, fixture, backend, tolerance, elapsed time.
void report_print_summary(const gate_report *r, FILE *out);

// ---- JSON (report_json.c) ----
// {"schema_version", "provenance": {...}, "backend", "fixture", "tol", "fault", "passed",
//  "seconds", "suites": [{"name", "passed", "skipped", "counters", "max_abs_dlogit", "verdicts",
//  "failed_checks", "failures": [{"check", "request", "text"}], "requests": [{"id", "verdict",
//  "tokens", "counters", "digest", "max_abs_dlogit"}], ...}]}
struct cJSON *report_to_json(const gate_report *r);
// SG_EXIT_INPUT naming the file when it cannot be written.
int report_write_json(const gate_report *r, const char *path);

// ---- JUnit XML (report_junit.c) ----
// <testsuites> with one <testsuite> per suite, one <testcase> per request (its verdict) plus one
// per suite-level check that failed; skipped suites carry <skipped/>. Owned string.
char *report_junit_string(const gate_report *r);
int report_write_junit(const gate_report *r, const char *path);

#endif
