// gates/runner.h: one engine run for a gate suite: a fresh engine on the given backend over a list
// of requests, with the engine's test hooks (engine.h) recording every committed position's fp32
// logits row and the round and chain that committed it, an optional draft oracle, and an optional
// fault (negative control). Everything the suites judge is copied out of the engine.
//
// Contract: requests are submitted in the given order (or reversed), with their arrival steps, or
// all at step 0, or one at a time ("alone": each submitted once the previous one has finished, on
// the same engine). Results come back in the given order. The engine's own errors during the run
// (a NaN in a logits row) do not fail the call: they are recorded in run_result.error for the suite
// to report; a bad engine configuration is returned (SG_EXIT_USAGE, the engine's message).
#ifndef SG_GATES_RUNNER_H
#define SG_GATES_RUNNER_H

#include <stdint.h>

#include "common/workload.h"
#include "engine/engine.h"
#include "ref/generate.h"

typedef enum { ORACLE_NONE, ORACLE_REPLAY, ORACLE_WRONG } run_oracle;

typedef struct {
    engine_options o;  // hooks are set by the runner (leave NULL)
    int alone;         // each request alone, in turn, on the same engine
    int all_at_zero;   // every request arrives at step 0
    int reverse;       // submit in reverse order
    engine_fault fault;
    // Draft oracle: chain A is replaced by the reference's continuation (REPLAY) or by ids that
    // differ from it at every position (WRONG: reference id + 1 mod V); refs[i] is request i's
    // reference output (positions past its end keep the drafter's drafts).
    run_oracle oracle;
    const ref_output *const *refs;
} run_plan;

typedef struct {
    int round;      // the request's round (1-based); 0: the prefill
    int chain;      // winning span: -1 chain A, j >= 0 the ladder at positions[j]; -2 the prefill
    int anchor_pos; // the round's anchor position (the prefill: n_prompt - 1)
} run_origin;

typedef struct {
    int round, anchor_pos, drafted, chain, n_accepted, retained;
} run_round;

typedef struct {
    engine_req_status status;
    char reason[256];
    engine_stop stop;
    int n;                 // generated tokens
    int *tokens;           // [n]
    uint64_t *dig_logits;  // [n]
    uint64_t *dig_taps;    // [n]
    uint64_t digest;       // engine_digest_summary
    spec_counters counters;
    int waited;
    float *rows;           // [n, V] the logits rows that chose the tokens
    run_origin *origin;    // [n]
    run_round *rounds;     // [n_rounds] in order
    int n_rounds;
} run_request;

typedef struct {
    int n;
    run_request *req;     // [n], in the given order
    int V;
    int steps;
    int error;            // SG_OK, or the engine's status when the run stopped on a hard error
    char error_msg[512];
    int pools_whole;      // engine_check_pools after the run
    char pool_msg[256];
    int faults_injected;
    spec_counters total;
} run_result;

int run_engine(const sg_backend *be, const target_model *target, const drafter_model *draft,
               const run_plan *plan, const sg_request *reqs, int n, run_result *out);
void run_result_free(run_result *r);

#endif
