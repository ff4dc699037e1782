// ref/simulate.h: the speculation simulator: replays one request's plain greedy decode as the
// engine's (hedged) speculative decoder would, round by round, and reports the counters of
// design.md §5 that the engine must match exactly, plus acceptance statistics.
//
// Contract (dspark-spec.md §4-5), per round, the anchor being the last committed token at p:
// - the drafter ingests the taps of positions committed_len .. p-1 (from ref_output: the target's
//   residual at a position does not depend on how it was computed) and drafts chain A;
// - drafts are cut at the first confidence c_k < conf_threshold (when > 0), then clamped to
//   remaining - 1 (remaining = max_new_tokens - generated): drafted = A's drafts left;
// - truth = the greedy tokens after the anchor (ending at the first stop/EOS or at
//   max_new_tokens); n = longest prefix of the drafts equal to truth; retained = min(n + 1,
//   truth tokens left) (stop truncation per candidate);
// - hedging (hedge_cap > 0): eligible iff remaining >= 2 and P[0] < min(drafts, remaining - 1);
//   C ladders are built (branch at the first C positions of P), each clamped like A; one equal to
//   A or to an earlier ladder is deduped, the rest are verified chain spans; a candidate replaces
//   the running winner only with a strictly greater retained (ties keep A, then the earlier one);
// - the round is booked with counters_book_round(n_winner, retained_winner, drafted) and the next
//   anchor is the last committed token, at p + retained.
// A sampled request (temperature > 0) is decoded one token per round: drafted 0, n 0, retained 1.
// The simulation is per request: it matches the engine when every eligible request is hedged in
// every round (H_cap and verify capacity not binding).
#ifndef SG_REF_SIMULATE_H
#define SG_REF_SIMULATE_H

#include <stdint.h>

#include "common/counters.h"
#include "common/model.h"
#include "generate.h"

#define REF_SIM_MAX_POSITIONS 16

typedef struct {
    int hedge_cap;  // 0 = hedging off; > 0 = on (a single request is always within the cap)
    int positions[REF_SIM_MAX_POSITIONS]; // P: strictly increasing, each < the number of drafts
    int n_positions;
    int chains;            // C, 0 .. n_positions: ladders at positions[0 .. C-1]
    double conf_threshold; // 0 = off; else needs a confidence head
    int layout;            // -1: the drafter config's; else a block_layout (the override)
} ref_sim_options;

typedef struct {
    int anchor_pos;   // p
    int drafted;      // chain A's verified drafts (after confidence truncation and clamp)
    int n_a;          // chain A's accepted drafts
    int winner;       // 0 = chain A; j >= 1 = the ladder branching at positions[j-1]
    int n_winner;     // accepted drafts of the winner
    int retained;     // tokens committed
    int chains_built; // ladders built this round
    int chain_spans;  // ladders verified this round (built minus deduped)
} ref_sim_round;

typedef struct {
    spec_counters counters;
    int n_rounds;
    ref_sim_round *rounds; // [n_rounds]
    int64_t pos_verified[SG_MAX_BLOCK]; // [k]: rounds in which chain A's draft k was verified
    int64_t pos_accepted[SG_MAX_BLOCK]; // [k]: rounds in which it was accepted
    int64_t breaks;          // rounds where A accepted fewer drafts than it verified
    int64_t runner_up_right; // breaks where A's runner-up at the break equals the true token
    // Smallest score margins top-1 minus top-2 (12) and top-2 minus top-3 (23) along chain A's
    // verified drafts and along every verified ladder from its branch on; +INFINITY when none.
    float min_margin_a12, min_margin_a23;
    float min_margin_ladder12, min_margin_ladder23;
} ref_sim_result;

// req: the greedy ref_output of the request (tokens = prompt + generated; taps of every fed
// position recorded with the drafter's target_layer_ids; taps may be NULL when temperature > 0).
// Bad options are SG_EXIT_USAGE, a request that does not fit the models SG_EXIT_INPUT.
int ref_simulate(const target_model *target, const drafter_model *drafter, const ref_output *req,
                 int max_new_tokens, double temperature, const ref_sim_options *o,
                 ref_sim_result *out);
void ref_sim_result_free(ref_sim_result *r);

#endif
