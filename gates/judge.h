// gates/judge.h: the checks the gate suites share (internal to gates/): a suite's workload, engine
// runs booked in the suite, the verdict of every request against the reference with the failure
// report of design.md §4, within-backend comparisons of runs, the counters against the
// speculation simulator, and the hedge gate.
//
// Every failure text starts with a one-line summary, then the details, and ends with a command
// line that replays just that request (`sparkgate gate --suite S --request ID ...`).
#ifndef SG_GATES_JUDGE_H
#define SG_GATES_JUDGE_H

#include "runner.h"
#include "suites.h"

typedef struct {
    sg_workload parts[2];
    int n_parts;
    sg_request *reqs; // [n] shallow copies of the parts' requests, filtered to --request
    int n;
} suite_workload;

// Loads the named workload files of the fixture (merged, in order), or --workload instead;
// filtered to --request (SG_EXIT_USAGE when that id is not there). Bad files: SG_EXIT_INPUT.
int suite_workload_load(const gate_ctx *g, const char *const *names, int n_names,
                        suite_workload *out);
void suite_workload_free(suite_workload *w);

// One engine run (runner.h), booked in the suite (runs, injected faults) and checked: the engine
// ran to the end (engine), every finished request's counters keep the invariants of design.md §5
// and so does their sum (counters), the KV pools are whole (pool). Returns 1 when the run was
// made (out must then be freed), 0 when the engine could not be created (an engine failure).
int suite_run(gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
              const suite_workload *w, run_result *out);

// The verdict of every request of run r against the reference (verdict), and its |Δlogit| within
// the tolerance (logits) over the positions whose prefix the engine and the reference share (a
// MISMATCH's too, up to its first difference). primary: the requests become the suite's reported
// requests, their verdicts, counters and |Δlogit| the suite's. identical_only: a TIE fails too
// (the hedge suites require every request IDENTICAL; elsewhere a TIE passes, design.md §4).
void judge_run(gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
               const suite_workload *w, const run_result *r, int primary, int identical_only);

// Run b against run a within the backend: every request of b (wb's request i is a's map[i], or i
// when map is NULL) has a's status, tokens and per-position logits and tap digests, and, with
// with_counters, its counters; a failure of `check` per request that differs.
void compare_runs(gate_ctx *g, gate_suite *s, gate_check check, int with_counters,
                  const char *name_a, const run_plan *pa, const run_result *a, const char *name_b,
                  const run_plan *pb, const run_result *b, const suite_workload *wb,
                  const int *map);

// Every finished request's counters equal ref_simulate's for the run's options (counters), with
// the first round where the two differ when they do. Requests must run alone (plan.alone).
void compare_simulator(gate_ctx *g, gate_suite *s, const char *name, const run_plan *p,
                       const suite_workload *w, const run_result *r);

// The hedge gate: hedged rounds, chain wins and loss rounds above zero (hedge).
void check_hedge(gate_suite *s, const char *name, const spec_counters *total);

#endif
