// engine/engine_internal.h: the engine's state, shared by its units (engine.c: API and setup;
// scheduler.c: admission, prefill, iterations; draft.c: drafting, ladders, confidence; round.c:
// the verify round, acceptance, winner, commit). Not a public header.
#ifndef SG_ENGINE_ENGINE_INTERNAL_H
#define SG_ENGINE_ENGINE_INTERNAL_H

#include "engine.h"
#include "forward.h"
#include "kv_pages.h"

typedef struct {
    sg_request req;     // owned copies of prompt and stop
    engine_req_status status;
    int arrived;        // in the queue (or past it)
    char reason[256];
    engine_stop stop;
    int admit_order;    // batch order
    int admitted_step;
    int waited;
    int seq;            // slot in the target's and the drafter's page pools
    int *tokens;        // [n_prompt + max_new_tokens]: prompt then generated
    int n_generated;
    uint64_t *dig_logits, *dig_taps; // [max_new_tokens]
    spec_counters counters;
    // Drafter state.
    int draft_len;      // context positions the drafter has ingested
    bf16 *pending;      // device [pending_cap, tap_w]: tap rows of positions draft_len ..
    int n_pending;
    int pending_cap;
} eng_req;

// Per-round drafting output for one drafting request (draft.c → round.c).
typedef struct {
    int req;            // request index
    int len;            // chain A's drafts after confidence cut and clamp
    int hedged;         // ladders built for it
    int chain0;         // its first ladder's chain row (ladder j at chain0 + j)
} eng_draft_req;

struct sg_engine {
    const sg_backend *be;      // every op goes here: the graph wrapper (graphs on), else user_be
    const sg_backend *user_be; // the backend given to engine_create
    sg_backend *graphs;        // the op_graphs wrapper over user_be (options.graphs), else NULL
    engine_options o;
    const target_model *tm;
    const drafter_model *dm; // NULL: plain decoding only
    fwd_target t;
    fwd_drafter d;
    int speculate;           // drafter present and not plain
    int B, n_drafts, first_row; // block size, drafts per round, U row of draft 0
    int V, H, tap_w;         // tap_w = n_taps·H (0 without a drafter)
    int n_chains;            // C of the current round
    int chain_slots;         // hedge chain slots (scratch_pages / pages_per_chain)
    kv_pages kp, dkp;        // target and drafter page pools (reserved in tandem)
    kv_cache kc, dkc;
    fwd_work tw, dw;
    // Device buffers.
    float *logits;           // [max_rows, V]
    bf16 *taps;              // [max_rows, tap_w]
    uint64_t *dig;           // [2·max_rows] uint64 + [max_rows] int32: a forward's results,
                             // packed densely from dig on by eng_results for ONE download.
    bf16 *ctx_taps;          // [max_rows, tap_w] drafter context rows
    float *U;                // [max_seqs·B, V]
    bf16 *hidden;            // [max_seqs·B, H]
    int32_t *chain_tok;      // [max_chains, B+1]
    int32_t *top_ids;        // [max_chains, B, 2]
    int32_t *mk;             // [6, max_chains] Markov loop index arrays
    int max_chains;          // max_seqs + chain_slots
    // Requests.
    eng_req *reqs;
    int n_reqs, cap_reqs;
    int *running;            // request indices in batch (admission) order
    int n_running;
    int *queue;              // arrived, waiting for admission, in order
    int n_queue;
    int admit_counter;
    int step;
    int dead;                // a hard error happened
    auto_controller ac;
    engine_transfers xfer;   // device-to-host copies (engine_transfer_stats)
    engine_d2h xfer_round;   // the current round's or prefill forward's, folded into xfer
};

// scheduler.c
int eng_admit(sg_engine *e);   // admission of arrived requests; rejects; reserves
int eng_prefill(sg_engine *e, const int *reqs, int n); // first tokens of newly admitted requests
void eng_finish(sg_engine *e, int req); // DONE: releases pages and pending taps
// round.c
int eng_round(sg_engine *e);
// Appends a token chosen by a logits row with digests; sets stop when it ends the request.
// Returns 1 when the request is finished.
int eng_commit_token(sg_engine *e, eng_req *r, int token, uint64_t dig_logits, uint64_t dig_taps);
int eng_is_stop(const sg_engine *e, const eng_req *r, int token, engine_stop *why);
// The engine's device-to-host copy of a round: be->download, counted in e->xfer_round by kind.
void eng_download(sg_engine *e, engine_d2h_kind kind, void *dst_host, const void *src_dev,
                  size_t bytes);
// Adds the copies of record d into sum.
void eng_d2h_add(engine_d2h *sum, const engine_d2h *d);
// A forward's results, computed on the device packed from e->dig on and fetched in ONE download
// of kind `kind` into host [(n_logits + n_taps)·8 + n_logits·4 bytes]: logits digests [n_logits]
// of logits rows 0 .. n_logits, tap digests [n_taps] of tap rows 0 .. n_taps (none without taps),
// argmax ids [n_logits] int32 (-1: NaN / Inf row). *dl, *dt (NULL without taps), *ids point into
// host. The logits digests come first, as the commit hook expects.
void eng_results(sg_engine *e, engine_d2h_kind kind, int n_logits, int n_taps, uint64_t *host,
                 uint64_t **dl, uint64_t **dt, int32_t **ids);
// draft.c: drafts chain A for reqs[0 .. n) (greedy requests with at least one draft left after
// the clamp; their pending context is ingested first) and, for those with hedge[i], C =
// e->n_chains ladders; fills out[n] and the host chain matrix host_tok [max_chains, B+1]
// (row i: chain A of reqs[i]; ladders from row n on), downloaded in ONE copy after the whole
// Markov loop (chain A, ladder force, ladders) ran on the device. SG_EXIT_FAIL on NaN / Inf scores.
int eng_draft(sg_engine *e, const int *reqs, const int *hedge, int n, eng_draft_req *out,
              int32_t *host_tok);
// Appends n tap rows (device, contiguous) to a request's pending drafter context.
void eng_push_pending(sg_engine *e, eng_req *r, const bf16 *rows, int n);

// Phase timing (engine.h engine_timing), in round.c: waits for the device, then CLOCK_MONOTONIC
// in ns. The inline pair is free when timing is off: start returns 0, end does nothing.
// eng_timing: the record while timing is on, else NULL.
int64_t eng_clock(const sg_engine *e);
// The device wait of eng_clock (engine.c): runs the ops the graph wrapper still holds, then the
// timing record's sync on the user's backend (never on the wrapper, whose ctx is not the device's).
void eng_sync(const sg_engine *e);
static inline engine_timing *eng_timing(const sg_engine *e) {
    return e->o.timing && e->o.timing->on ? e->o.timing : NULL;
}
static inline int64_t eng_phase_start(const sg_engine *e) { return eng_timing(e) ? eng_clock(e) : 0; }
static inline void eng_phase_end(const sg_engine *e, engine_phase p, int64_t t0) {
    if (eng_timing(e)) e->o.timing->ns[p] += eng_clock(e) - t0;
}

static inline int eng_min(int a, int b) { return a < b ? a : b; }
static inline int eng_remaining(const eng_req *r) { return r->req.max_new_tokens - r->n_generated; }
static inline int eng_anchor_pos(const eng_req *r) { return r->req.n_prompt + r->n_generated - 1; }

#endif
