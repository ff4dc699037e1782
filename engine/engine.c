// engine/engine.c: the engine's public API: options, the graph wrapper (options.graphs), setup of
// the forwards, page pools, KV caches and device buffers, request submission, stepping and results
// (see engine.h for the contract; the work itself is in scheduler.c, draft.c and round.c).
#include "engine_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

void engine_options_default(engine_options *o) {
    memset(o, 0, sizeof *o);
    o->chains = -1;
    o->layout = -1;
    o->n_positions = 1; // P = [0]
}

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

// Option checks that need the models; fills the derived sizes into e.
static int check_options(sg_engine *e, const engine_options *o) {
    const drafter_model *dm = e->dm;
    if (o->hedge_cap < 0 || o->hedge_cap > 64)
        return sg_fail(SG_EXIT_USAGE, "--hedge-cap %d is outside 0..64", o->hedge_cap);
    int hedging = o->hedge_cap > 0 || o->hedge_auto;
    if (hedging && (!dm || dm->cfg.markov_rank <= 0))
        return sg_fail(SG_EXIT_USAGE,
                       "hedging (--hedge-cap / --hedge-auto) needs a drafter with a Markov head "
                       "(markov_rank > 0); %s: drop the hedge options or use a DSpark drafter",
                       dm ? "this drafter has none" : "there is no drafter");
    if (o->hedge_auto && o->hedge_cap == 0)
        return sg_fail(SG_EXIT_USAGE, "--hedge-auto chooses the chain count of hedged requests: "
                                      "it needs --hedge-cap > 0");
    if (o->n_positions < 1 || o->n_positions > ENGINE_MAX_POSITIONS)
        return sg_fail(SG_EXIT_USAGE, "--hedge-positions needs 1..%d positions (got %d)",
                       ENGINE_MAX_POSITIONS, o->n_positions);
    for (int j = 0; j < o->n_positions; j++)
        if (o->positions[j] < 0 || (j > 0 && o->positions[j] <= o->positions[j - 1]) ||
            (hedging && o->positions[j] >= e->n_drafts))
            return sg_fail(SG_EXIT_USAGE,
                           "--hedge-positions must be strictly increasing, >= 0 and below the %d "
                           "drafts per round (entry %d is %d)",
                           e->n_drafts, j, o->positions[j]);
    if (o->chains < -1 || o->chains > o->n_positions)
        return sg_fail(SG_EXIT_USAGE, "--chains %d is outside 0..%d (the number of positions)",
                       o->chains, o->n_positions);
    if (!(o->conf_threshold >= 0.0 && o->conf_threshold <= 1.0))
        return sg_fail(SG_EXIT_USAGE, "--conf-threshold %g is outside [0, 1]", o->conf_threshold);
    if (o->conf_threshold > 0.0 && (!dm || !dm->conf_w))
        return sg_fail(SG_EXIT_USAGE, "--conf-threshold needs a drafter with a confidence head "
                                      "(this one has none)");
    if (o->hooks &&
        (o->hooks->fault < ENGINE_FAULT_NONE || o->hooks->fault > ENGINE_FAULT_TIE_TO_CHAIN))
        return sg_fail(SG_EXIT_USAGE, "engine hooks: unknown fault %d", (int)o->hooks->fault);
    if (o->page_size < 0 || o->pool_pages < 0 || o->max_spans < 0 || o->max_rows < 0 ||
        o->max_seqs < 0 || o->scratch_pages < 0)
        return sg_fail(SG_EXIT_USAGE, "--page-size, --pool-pages, --max-spans, --max-rows, "
                                      "max_seqs and scratch pages must not be negative");
    return SG_OK;
}

static int dev_alloc(sg_engine *e, size_t bytes, const char *what, void **out) {
    return be_alloc(e->be, bytes > 0 ? bytes : 1, what, out);
}

static int setup(sg_engine *e) {
    engine_options *o = &e->o;
    const qwen3_config *tc = &e->tm->cfg;
    e->V = tc->vocab_size;
    e->H = tc->hidden_size;
    int max_pos = tc->max_position_embeddings;
    if (e->dm) {
        const drafter_config *dc = &e->dm->cfg;
        block_layout layout = o->layout < 0 ? dc->layout : (block_layout)o->layout;
        e->B = dc->block_size;
        if (layout == LAYOUT_ANCHOR_DROP && e->B < 2)
            return sg_fail(SG_EXIT_USAGE, "--block-layout anchor-drop needs block_size >= 2 "
                                          "(the drafter's is %d)", e->B);
        e->n_drafts = layout == LAYOUT_ANCHOR_FIRST ? e->B : e->B - 1;
        e->first_row = layout == LAYOUT_ANCHOR_FIRST ? 0 : 1;
        e->tap_w = dc->n_taps * e->H;
        if (dc->arch.max_position_embeddings < max_pos) max_pos = dc->arch.max_position_embeddings;
    }
    e->speculate = e->dm && !o->plain;
    if (o->n_positions == 0) { // the default P = [0]
        o->n_positions = 1;
        o->positions[0] = 0;
    }
    SG_TRY(check_options(e, o));
    if (o->chains < 0) o->chains = o->n_positions;
    if (!o->page_size) o->page_size = ENGINE_DEFAULT_PAGE_SIZE;
    if (!o->max_spans) o->max_spans = ENGINE_DEFAULT_MAX_SPANS;
    if (!o->max_rows) o->max_rows = ENGINE_DEFAULT_MAX_ROWS;
    int span_rows = e->speculate ? e->B + 1 : 1;
    if (!o->max_seqs) o->max_seqs = eng_min(eng_min(o->max_spans, o->max_rows / span_rows), 64);
    if (span_rows > o->max_rows)
        return sg_fail(SG_EXIT_USAGE,
                       "one request's span of up to %d rows does not fit --max-rows %d: raise it "
                       "to at least %d",
                       span_rows, o->max_rows, span_rows);
    if (o->max_seqs < 1 || o->max_seqs > o->max_spans || o->max_seqs * span_rows > o->max_rows)
        return sg_fail(SG_EXIT_USAGE,
                       "a batch of %d requests with spans of up to %d rows does not fit --max-rows "
                       "%d and --max-spans %d: raise them",
                       o->max_seqs, span_rows, o->max_rows, o->max_spans);
    int ppc = kv_pages_per_chain(e->B > 0 ? e->B : 1, o->page_size);
    int hedging = e->speculate && o->hedge_cap > 0;
    if (!o->scratch_pages && hedging) o->scratch_pages = o->hedge_cap * o->n_positions * ppc;
    e->chain_slots = hedging ? o->scratch_pages / ppc : 0;
    if (!o->pool_pages)
        o->pool_pages = o->max_seqs * ceil_div(max_pos < 2048 ? max_pos : 2048, o->page_size);
    e->max_chains = o->max_seqs + e->chain_slots;

    SG_TRY(fwd_target_load(&e->t, e->be, e->tm, e->dm ? e->dm->cfg.target_layer_ids : NULL,
                           e->dm ? e->dm->cfg.n_taps : 0));
    kv_pages_config kc = {.page_size = o->page_size, .n_pages = o->pool_pages,
                          .max_seqs = o->max_seqs, .max_positions = max_pos,
                          .n_chain_slots = e->chain_slots, .block_size = e->B > 0 ? e->B : 1};
    SG_TRY(kv_pages_init(&e->kp, &kc));
    SG_TRY(kv_cache_init(&e->kc, e->be, &e->kp, tc->num_hidden_layers,
                         tc->num_key_value_heads * tc->head_dim));
    SG_TRY(fwd_work_init(&e->tw, e->be, tc, o->max_rows));
    size_t R = (size_t)o->max_rows;
    SG_TRY(dev_alloc(e, R * e->V * sizeof(float), "verify logits", (void **)&e->logits));
    SG_TRY(dev_alloc(e, R * e->tap_w * sizeof(bf16), "verify taps", (void **)&e->taps));
    SG_TRY(dev_alloc(e, 2 * R * sizeof(uint64_t) + R * sizeof(int32_t), "row results",
                     (void **)&e->dig));
    if (e->dm) {
        const drafter_config *dc = &e->dm->cfg;
        SG_TRY(fwd_drafter_load(&e->d, e->be, e->dm, &e->t));
        kv_pages_config dkc = kc;
        dkc.n_chain_slots = 0;
        SG_TRY(kv_pages_init(&e->dkp, &dkc));
        SG_TRY(kv_cache_init(&e->dkc, e->be, &e->dkp, dc->arch.num_hidden_layers,
                             dc->arch.num_key_value_heads * dc->arch.head_dim));
        SG_TRY(fwd_work_init(&e->dw, e->be, &dc->arch, o->max_rows));
        size_t NB = (size_t)o->max_seqs * e->B, MC = (size_t)e->max_chains;
        SG_TRY(dev_alloc(e, R * e->tap_w * sizeof(bf16), "drafter context", (void **)&e->ctx_taps));
        SG_TRY(dev_alloc(e, NB * e->V * sizeof(float), "draft logits", (void **)&e->U));
        SG_TRY(dev_alloc(e, NB * e->H * sizeof(bf16), "draft hidden rows", (void **)&e->hidden));
        SG_TRY(dev_alloc(e, MC * (e->B + 1) * sizeof(int32_t), "chains", (void **)&e->chain_tok));
        SG_TRY(dev_alloc(e, MC * e->B * 2 * sizeof(int32_t), "chain top-2", (void **)&e->top_ids));
        SG_TRY(dev_alloc(e, 6 * MC * sizeof(int32_t), "Markov indices", (void **)&e->mk));
    }
    if (o->hedge_auto)
        ac_init(&e->ac, o->n_positions, o->clock ? o->clock : ac_monotonic_clock,
                o->clock ? o->clock_ctx : NULL);
    e->running = sg_calloc((size_t)o->max_seqs, sizeof *e->running);
    return SG_OK;
}

int engine_create(const sg_backend *be, const target_model *target, const drafter_model *drafter,
                  const engine_options *o, sg_engine **out) {
    *out = NULL;
    sg_engine *e = sg_calloc(1, sizeof *e);
    e->be = e->user_be = be;
    e->tm = target;
    e->dm = drafter;
    if (o) e->o = *o;
    else engine_options_default(&e->o);
    int st = SG_OK;
    if (e->o.graphs && be->capture_begin) {
        st = op_graphs_wrap(be, &e->graphs);
        if (st == SG_OK) e->be = e->graphs;
    }
    if (st == SG_OK) st = setup(e);
    if (st != SG_OK) {
        engine_destroy(e);
        return st;
    }
    *out = e;
    return SG_OK;
}

void engine_destroy(sg_engine *e) {
    if (!e) return;
    const sg_backend *be = e->be;
    for (int i = 0; i < e->n_reqs; i++) {
        eng_req *r = &e->reqs[i];
        if (r->status == ENGINE_RUNNING) eng_finish(e, i); // a dead engine's leftovers
        free(r->req.prompt);
        free(r->req.stop);
        free(r->tokens);
        free(r->dig_logits);
        free(r->dig_taps);
    }
    free(e->reqs);
    free(e->running);
    free(e->queue);
    void *bufs[] = {e->logits, e->taps, e->dig, e->ctx_taps, e->U, e->hidden,
                    e->chain_tok, e->top_ids, e->mk};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        if (bufs[i]) be->free(be->ctx, bufs[i]);
    fwd_work_free(&e->tw);
    fwd_work_free(&e->dw);
    if (e->kc.be) kv_cache_free(&e->kc);
    if (e->dkc.be) kv_cache_free(&e->dkc);
    if (e->kp.tables) kv_pages_free(&e->kp);
    if (e->dkp.tables) kv_pages_free(&e->dkp);
    fwd_drafter_free(&e->d);
    fwd_target_free(&e->t);
    if (e->graphs) e->graphs->destroy(e->graphs);
    free(e);
}

int engine_submit(sg_engine *e, const sg_request *r, int *index) {
    int V = e->V;
    if (r->n_prompt < 1 || !r->prompt)
        return sg_fail(SG_EXIT_USAGE, "request %s: the prompt is empty", r->id);
    for (int i = 0; i < r->n_prompt; i++)
        if (r->prompt[i] < 0 || r->prompt[i] >= V)
            return sg_fail(SG_EXIT_USAGE, "request %s: prompt token %d (index %d) is outside the "
                           "vocabulary [0, %d)", r->id, r->prompt[i], i, V);
    if (r->max_new_tokens < 1)
        return sg_fail(SG_EXIT_USAGE, "request %s: max_new_tokens is %d; it must be at least 1",
                       r->id, r->max_new_tokens);
    if (!(r->temperature >= 0.0) || isinf(r->temperature))
        return sg_fail(SG_EXIT_USAGE, "request %s: temperature %g must be finite and >= 0", r->id,
                       r->temperature);
    if (r->arrival_step < 0)
        return sg_fail(SG_EXIT_USAGE, "request %s: arrival_step %d is negative", r->id,
                       r->arrival_step);
    if (e->n_reqs == e->cap_reqs) {
        e->cap_reqs = e->cap_reqs ? 2 * e->cap_reqs : 8;
        eng_req *grown = sg_calloc((size_t)e->cap_reqs, sizeof *grown);
        if (e->n_reqs) memcpy(grown, e->reqs, (size_t)e->n_reqs * sizeof *grown);
        free(e->reqs);
        e->reqs = grown;
        int *q = sg_calloc((size_t)e->cap_reqs, sizeof *q);
        if (e->n_queue) memcpy(q, e->queue, (size_t)e->n_queue * sizeof *q);
        free(e->queue);
        e->queue = q;
    }
    eng_req *x = &e->reqs[e->n_reqs];
    memset(x, 0, sizeof *x);
    x->req = *r;
    x->req.prompt = sg_calloc((size_t)r->n_prompt, sizeof(int));
    memcpy(x->req.prompt, r->prompt, (size_t)r->n_prompt * sizeof(int));
    x->req.stop = sg_calloc((size_t)(r->n_stop > 0 ? r->n_stop : 1), sizeof(int));
    if (r->n_stop > 0) memcpy(x->req.stop, r->stop, (size_t)r->n_stop * sizeof(int));
    x->status = ENGINE_QUEUED;
    x->seq = -1;
    x->admitted_step = -1;
    x->tokens = sg_calloc((size_t)r->n_prompt + r->max_new_tokens, sizeof(int));
    memcpy(x->tokens, r->prompt, (size_t)r->n_prompt * sizeof(int));
    x->dig_logits = sg_calloc((size_t)r->max_new_tokens, sizeof(uint64_t));
    x->dig_taps = sg_calloc((size_t)r->max_new_tokens, sizeof(uint64_t));
    if (index) *index = e->n_reqs;
    e->n_reqs++;
    return SG_OK;
}

int engine_finished(const sg_engine *e) {
    for (int i = 0; i < e->n_reqs; i++)
        if (e->reqs[i].status == ENGINE_QUEUED || e->reqs[i].status == ENGINE_RUNNING) return 0;
    return 1;
}

int engine_step(sg_engine *e) {
    if (e->dead)
        return sg_fail(SG_EXIT_FAIL, "the engine stopped after a hard error; create a new one");
    int first_new = e->n_running;
    int st = eng_admit(e);
    if (st == SG_OK && e->n_running > first_new)
        st = eng_prefill(e, e->running + first_new, e->n_running - first_new);
    if (st == SG_OK && e->n_running > 0) st = eng_round(e);
    if (e->graphs) op_graphs_flush(e->graphs); // the step's last ops (e.g. KV commits) run now
    if (st != SG_OK) e->dead = 1;
    e->step++;
    return st;
}

int engine_run(sg_engine *e) {
    while (!engine_finished(e)) SG_TRY(engine_step(e));
    return SG_OK;
}

int engine_steps(const sg_engine *e) { return e->step; }
int engine_n_requests(const sg_engine *e) { return e->n_reqs; }
const auto_controller *engine_auto(const sg_engine *e) { return e->o.hedge_auto ? &e->ac : NULL; }

void engine_result_of(const sg_engine *e, int index, engine_result *out) {
    SG_CHECK(index >= 0 && index < e->n_reqs, "request %d of %d", index, e->n_reqs);
    const eng_req *r = &e->reqs[index];
    memset(out, 0, sizeof *out);
    out->status = r->status;
    memcpy(out->reason, r->reason, sizeof out->reason);
    out->stop = r->stop;
    out->n_generated = r->n_generated;
    out->tokens = r->tokens + r->req.n_prompt;
    out->digest_logits = r->dig_logits;
    out->digest_taps = r->dig_taps;
    out->counters = r->counters;
    out->admitted_step = r->admitted_step;
    out->waited = r->waited;
}

static uint64_t mix64(uint64_t x) {
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t engine_digest_summary(const engine_result *r) {
    uint64_t h = 0x6a09e667f3bcc908ULL;
    for (int i = 0; i < r->n_generated; i++) {
        h = mix64(h ^ r->digest_logits[i]);
        h = mix64(h ^ r->digest_taps[i]);
        h = mix64(h ^ (uint64_t)(uint32_t)r->tokens[i]);
    }
    return mix64(h ^ (uint64_t)r->n_generated);
}

void engine_counters_total(const sg_engine *e, spec_counters *out) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < e->n_reqs; i++) counters_add(out, &e->reqs[i].counters);
}

void engine_transfer_stats(const sg_engine *e, engine_transfers *out) { *out = e->xfer; }

int engine_graph_stats(const sg_engine *e, op_graphs_stats *out) {
    memset(out, 0, sizeof *out);
    if (!e->graphs) return 0;
    op_graphs_stats_of(e->graphs, out);
    return 1;
}

void eng_sync(const sg_engine *e) {
    if (e->graphs) op_graphs_flush(e->graphs);
    if (e->o.timing->sync) e->o.timing->sync(e->user_be);
}

int64_t engine_d2h_copies(const engine_d2h *d) {
    int64_t n = 0;
    for (int k = 0; k < ENGINE_D2H_KINDS; k++) n += d->copies[k];
    return n;
}

int engine_check_pools(const sg_engine *e) {
    SG_TRY(kv_pages_check_whole(&e->kp));
    if (e->dm) SG_TRY(kv_pages_check_whole(&e->dkp));
    return SG_OK;
}
