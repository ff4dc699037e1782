// engine/engine.h: the hedged speculative decoder's public API (design.md §5, §7, §8;
// dspark-spec.md §4-5): an engine over a backend, a target and an optional drafter; requests are
// submitted, the engine is stepped (one iteration: admission, prefill, one speculative round over
// the running batch) or run to completion; each request's tokens, counters, digests and status
// are read back.
//
// Contract.
// - Admission (engine/scheduler.c). A request arrives at iteration arrival_step and joins the
//   waiting queue (arrival order, ties by submission order). The queue is admitted first-come
//   first-served: a request is REJECTED with a reason when it fails the draft-headroom rule
//   (prompt + max_new_tokens + B <= the drafter's and the target's max_position_embeddings; B = 0
//   without a drafter) or when its worst-case KV pages (kv_pages.h) exceed the whole pool;
//   otherwise it reserves them (in the target's and the drafter's pool) or, when they are not free
//   now or no batch slot is, it waits (and so does everything queued behind it). Batch order =
//   admission order. An admitted request is prefilled in the same iteration (prompts packed into
//   forwards of at most max_rows rows, long ones chunked) and its first token taken from the last
//   prompt row; it then takes part in every round until it stops (a stop id or an EOS id of the
//   target config unless ignore_eos, the token kept, or max_new_tokens), when its pages return.
// - Rounds (engine/round.c, engine/draft.c), exactly dspark-spec.md §4-5: greedy requests with a
//   drafter speculate (chain A, confidence cut, clamp to remaining - 1 drafts, hedge ladders for
//   the selected requests); sampled requests and plain decoding (no drafter, or options.plain)
//   verify a span of one row and pick with common/sampler.h at the token's absolute position. One
//   verify forward holds all chain-A spans in batch order, then the chain spans. The number of
//   hedged requests per round is min(H_cap, eligible, ⌊(max_spans − N)/C⌋, ⌊(max_rows − rows of
//   the A spans)/(C·(B+1))⌋, ⌊scratch_pages/(C·pages_per_chain)⌋), so chains_dropped_capacity is
//   always 0.
// - Numerics: the backend's (design.md §3). Every committed position gets the 64-bit digest
//   (be_digest) of the fp32 target logits row that chose it and of the tap row of the position
//   that produced that row (the input row; 0 without taps). Plain, unhedged and hedged runs give
//   the same tokens and digests; a request decoded alone gives the counters of ref_simulate.
// - A NaN or Inf in a target logits row or in the drafter's scores is a hard error: engine_step
//   returns SG_EXIT_FAIL naming the request and position, and the engine refuses further steps.
// - Determinism: the same inputs and options give the same tokens, digests and counters (with
//   hedge_auto, only with a deterministic injected clock).
// - Graphs (options.graphs): the engine issues its ops through the op_graphs wrapper, which runs
//   what it recorded at every upload, download, alloc and free and at the end of each step, as
//   eager ops or cached graph launches; tokens, digests and counters are those of graphs off.
#ifndef SG_ENGINE_ENGINE_H
#define SG_ENGINE_ENGINE_H

#include <stdint.h>

#include "auto_controller.h"
#include "backend.h"
#include "op_graphs.h"
#include "common/counters.h"
#include "common/model.h"
#include "common/workload.h"

#define ENGINE_MAX_POSITIONS 16
#define ENGINE_DEFAULT_PAGE_SIZE 16
#define ENGINE_DEFAULT_MAX_SPANS 256
#define ENGINE_DEFAULT_MAX_ROWS 512

// Test hooks (used by the gates, gates/): observers of committed tokens and rounds, an override of
// chain A's drafts, and one deliberate bug (a negative control). Off by default (options.hooks =
// NULL): the engine then does no extra work. Each callback may be NULL. `req` is the request's
// submission index.
typedef enum {
    ENGINE_FAULT_NONE,
    ENGINE_FAULT_FLIP_DRAFT,     // once: the accept step commits one accepted draft with its id + 1
    ENGINE_FAULT_CORRUPT_KV,     // once: after the first round's commit, the anchor's K/V row is
                                 // negated in every layer
    ENGINE_FAULT_CORRUPT_TAP,    // every chain win: the last tap row copied back into the drafter's
                                 // context is negated
    ENGINE_FAULT_SKIP_COPY_BACK, // every chain win: the scratch pages are not copied back
    ENGINE_FAULT_TIE_TO_CHAIN,   // every tie in retained length: the later span wins (chain over A)
} engine_fault;

typedef struct engine_hooks {
    void *ctx;
    // Every committed token, with the fp32 target logits row that chose it (host memory, V values,
    // valid during the call; the row is the one whose digest the position records) and `index`,
    // the token's place among the request's generated tokens.
    void (*commit)(void *ctx, int req, int index, int token, const float *row, int V);
    // Every round of a request after its winner is chosen: the round number (1-based, the
    // request's counters.rounds), the anchor position, chain A's verified drafts, the winning
    // span (-1: chain A; j >= 0: the ladder branching at positions[j]), its accepted drafts and
    // the tokens the round commits (positions anchor_pos + 1 .. anchor_pos + retained).
    void (*round)(void *ctx, int req, int round, int anchor_pos, int drafted, int chain,
                  int n_accepted, int retained);
    // Draft override: called after drafting with chain A's drafts of a drafting request (drafts
    // [len], host memory, for the positions anchor_pos + 1 .. anchor_pos + len); the hook may
    // replace them with ids in [0, V) before the verify. Hedge ladders keep the drafter's own
    // prefix (they were built before the override).
    void (*draft)(void *ctx, int req, int anchor_pos, int32_t *drafts, int len);
    engine_fault fault;  // ENGINE_FAULT_NONE in every real run
    int faults_injected; // written by the engine: how many times the fault was applied
} engine_hooks;

// Phase timing (bench/): off by default (options.timing = NULL, or timing->on = 0: one test per
// phase edge, nothing else). While it is on, the engine, at both edges of each phase of a round and
// of the round itself, waits for the device (sync) and reads CLOCK_MONOTONIC, summing wall times
// into the record; it also sums the work of each phase, from which bench/bench.c counts the bytes
// the phase must move. The edge syncs cost a little overlap (a few microseconds each on CUDA).
// Timing changes no token, digest or counter (tested).
typedef enum {
    ENGINE_PHASE_DRAFTER, // drafter forwards: context ingestion, the backbone and U = head rows
    ENGINE_PHASE_MARKOV,  // chain A: index upload and the Markov loop (n_drafts steps)
    ENGINE_PHASE_LADDER,  // the hedge ladders: ladder_force and their Markov loop
    ENGINE_PHASE_VERIFY,  // verify batch (chain tables, first-page copies), the target forward,
                          // argmax, digests and the results download
    ENGINE_PHASE_ACCEPT,  // acceptance, winner, copy-back, commit, drafter context push
    ENGINE_PHASES
} engine_phase;

typedef struct {
    // Waits until every op issued on the backend has finished (the CUDA backend's stream sync);
    // NULL for a backend whose ops are done when they return (the CPU's). Called with the backend
    // given to engine_create, after the engine has run the ops its graph wrapper held (graphs).
    void (*sync)(const sg_backend *be);
    int on; // timing and work sums only while non-zero (the caller may switch it between steps)
    // Written by the engine, summed over every round (prefill is not a round):
    int64_t rounds;
    int64_t round_ns;          // wall time of the rounds; round_ns - sum of ns: the rest (hedge
                               // selection, span download, host bookkeeping)
    int64_t ns[ENGINE_PHASES]; // wall time per phase
    int64_t verify_forwards, verify_rows, verify_spans;
    int64_t verify_keys;       // per span, the positions of its sequence it attends to (last + 1)
    int64_t drafter_forwards, drafter_ctx_rows, drafter_blk_rows;
    int64_t drafter_keys;      // per block, the drafter positions it attends to (p + B)
    int64_t markov_steps, markov_row_steps; // chain A: steps with a live row; (row, step) pairs
    int64_t ladder_steps, ladder_row_steps; // ladders: the same
} engine_timing;

typedef struct {
    int plain;      // 1: never draft (one token per round) even with a drafter (its taps recorded)
    int hedge_cap;  // H_cap: 0 = off, at most 64 (needs a Markov head)
    int positions[ENGINE_MAX_POSITIONS]; // P: strictly increasing, each < drafts per round
    int n_positions;                     // 0 means the default P = [0]
    int chains;          // C, -1 = n_positions (ignored with hedge_auto)
    int hedge_auto;      // choose C per round with the auto controller
    ac_clock_fn clock;   // auto controller clock (NULL: CLOCK_MONOTONIC)
    void *clock_ctx;
    int page_size;       // 0 = 16
    int pool_pages;      // 0 = enough for max_seqs sequences of the models' max positions
    int max_spans;       // verify spans per round, 0 = 256
    int max_rows;        // rows per target forward (and drafter forward), 0 = 512
    int max_seqs;        // requests running at once, 0 = min(max_spans, max_rows / (B + 1), 64)
    int scratch_pages;   // hedge scratch pages, 0 = H_cap·|P|·pages_per_chain
    double conf_threshold; // 0 = off; drafts cut at the first c_k below it (needs the head)
    int layout;          // -1 = the drafter config's; else a block_layout (the override)
    engine_hooks *hooks; // NULL = none (see engine_hooks); must outlive the engine
    engine_timing *timing; // NULL = off (see engine_timing); must outlive the engine
    int graphs;          // 1: replay the op sequences as cached graphs (engine/op_graphs.h) when
                         // the backend has capture hooks (CUDA); no effect on any result. 0 = off
} engine_options;

// Fills the defaults above (all zero except chains = -1, layout = -1, P = [0]; no hooks).
void engine_options_default(engine_options *o);

typedef enum {
    ENGINE_QUEUED,   // submitted, not admitted yet (not arrived, or waiting for pages / a slot)
    ENGINE_RUNNING,
    ENGINE_DONE,
    ENGINE_REJECTED, // refused at admission; reason says why
} engine_req_status;

typedef enum { ENGINE_STOP_NONE, ENGINE_STOP_MAX_NEW, ENGINE_STOP_ID, ENGINE_STOP_EOS } engine_stop;

typedef struct {
    engine_req_status status;
    char reason[256];       // for REJECTED
    engine_stop stop;
    int n_generated;
    const int *tokens;      // [n_generated] generated ids
    const uint64_t *digest_logits; // [n_generated]: the logits row that chose each token
    const uint64_t *digest_taps;   // [n_generated]: the tap row of the position before it
    spec_counters counters;
    int admitted_step;      // iteration of admission (-1 if never)
    int waited;             // 1 when it had to wait for pages or a slot
} engine_result;

typedef struct sg_engine sg_engine;

// drafter may be NULL (plain decoding). The engine keeps pointers to the models (they must outlive
// it). Bad options: SG_EXIT_USAGE naming the option; device out of memory: SG_EXIT_USAGE.
int engine_create(const sg_backend *be, const target_model *target, const drafter_model *drafter,
                  const engine_options *o, sg_engine **out);
void engine_destroy(sg_engine *e);

// Copies the request (prompt and stop ids); returns its index through *index (submission order).
// A request with ids outside the vocabulary, an empty prompt or max_new_tokens < 1 is
// SG_EXIT_USAGE (nothing is submitted).
int engine_submit(sg_engine *e, const sg_request *r, int *index);
// One iteration. SG_OK, or an error (NaN/Inf: SG_EXIT_FAIL) after which the engine is dead.
int engine_step(sg_engine *e);
// Steps until every submitted request is DONE or REJECTED.
int engine_run(sg_engine *e);
int engine_finished(const sg_engine *e);
int engine_steps(const sg_engine *e); // iterations so far

int engine_n_requests(const sg_engine *e);
// The view stays valid until the next submit or destroy.
void engine_result_of(const sg_engine *e, int index, engine_result *out);
// One 64-bit digest over a request's positions (its logits and tap digests in order).
uint64_t engine_digest_summary(const engine_result *r);
// Sum of the counters of every request.
void engine_counters_total(const sg_engine *e, spec_counters *out);
// SG_OK when the KV pools are whole (no live sequence, no leaked page): call after engine_run.
int engine_check_pools(const sg_engine *e);
// The auto controller (NULL without hedge_auto).
const auto_controller *engine_auto(const sg_engine *e);

// Device-to-host copies, by kind: those of the speculative rounds (the round of each step) and,
// apart, those of the prefill forwards before them. A round's common path makes at most two: ONE
// copy of the drafted span tokens of every chain (chain A and all ladders, packed in the device
// chain matrix; none when no request drafts) and ONE copy of the verify results of every row
// (argmax ids, logits-row and tap-row digests, packed on the device). A prefill forward makes ONE
// copy of its results in the same packed layout (ids and logits digests of the rows that end a
// prompt, tap digests of every row), none when it ends no prompt. Only when used: the drafter's
// hidden rows for --conf-threshold (one copy), one logits row per sampled request, and the test
// hooks' reads.
typedef enum {
    ENGINE_D2H_SPANS,   // drafted chain tokens
    ENGINE_D2H_RESULTS, // verify ids and digests
    ENGINE_D2H_CONF,    // confidence-cut hidden rows
    ENGINE_D2H_SAMPLED, // logits rows of sampled requests
    ENGINE_D2H_HOOKS,   // test hooks and faults (engine_hooks)
    ENGINE_D2H_PREFILL, // prefill ids and digests
    ENGINE_D2H_KINDS
} engine_d2h_kind;

typedef struct {
    int64_t copies[ENGINE_D2H_KINDS];
    int64_t bytes[ENGINE_D2H_KINDS];
} engine_d2h;

typedef struct {
    int64_t rounds;   // rounds run
    engine_d2h last;  // the last round's copies
    engine_d2h total; // summed over every round
    int64_t prefills;   // prefill forwards run
    engine_d2h prefill; // the prefill forwards' copies, summed (not in last or total)
} engine_transfers;

void engine_transfer_stats(const sg_engine *e, engine_transfers *out);
// The graph replay's statistics (op_graphs.h): 1 when the engine replays graphs (options.graphs
// and a backend with capture hooks), else 0 with *out zeroed. Current as of the last step.
int engine_graph_stats(const sg_engine *e, op_graphs_stats *out);
// All copies of a record (every kind).
int64_t engine_d2h_copies(const engine_d2h *d);

#endif
