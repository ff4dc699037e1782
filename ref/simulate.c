// ref/simulate.c: the speculation simulator (see simulate.h for the contract).
#include "simulate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "drafter.h"
#include "markov.h"

static int check_options(const drafter_model *dm, const ref_sim_options *o, int n_drafts) {
    if (o->layout < -1 || o->layout > LAYOUT_ANCHOR_DROP)
        return sg_fail(SG_EXIT_USAGE, "simulator: block layout %d is neither -1 (from the config), "
                       "anchor-first nor anchor-drop", o->layout);
    if (o->conf_threshold < 0.0 || o->conf_threshold > 1.0)
        return sg_fail(SG_EXIT_USAGE, "--conf-threshold %g is outside [0, 1]", o->conf_threshold);
    if (o->conf_threshold > 0.0 && !dm->conf_w)
        return sg_fail(SG_EXIT_USAGE, "--conf-threshold needs a drafter with a confidence head "
                       "(this one has none)");
    if (o->hedge_cap < 0 || o->hedge_cap > 64)
        return sg_fail(SG_EXIT_USAGE, "--hedge-cap %d is outside 0..64", o->hedge_cap);
    if (o->hedge_cap == 0) return SG_OK;
    if (dm->cfg.markov_rank <= 0)
        return sg_fail(SG_EXIT_USAGE,
                       "hedging needs a drafter with a Markov head (markov_rank > 0): use a DSpark "
                       "drafter or set --hedge-cap 0");
    if (o->n_positions < 1 || o->n_positions > REF_SIM_MAX_POSITIONS)
        return sg_fail(SG_EXIT_USAGE, "--hedge-positions needs 1..%d positions (got %d)",
                       REF_SIM_MAX_POSITIONS, o->n_positions);
    for (int j = 0; j < o->n_positions; j++)
        if (o->positions[j] < 0 || o->positions[j] >= n_drafts ||
            (j > 0 && o->positions[j] <= o->positions[j - 1]))
            return sg_fail(SG_EXIT_USAGE,
                           "--hedge-positions must be strictly increasing and each below the %d "
                           "drafts per round (position %d is %d)",
                           n_drafts, j, o->positions[j]);
    if (o->chains < 0 || o->chains > o->n_positions)
        return sg_fail(SG_EXIT_USAGE, "--chains %d is outside 0..%d (the number of positions)",
                       o->chains, o->n_positions);
    return SG_OK;
}

// Longest prefix of d[0 .. len) equal to truth[0 .. T).
static int accepted_prefix(const int *d, int len, const int *truth, int T) {
    int n = 0;
    while (n < len && n < T && d[n] == truth[n]) n++;
    return n;
}

static int min_int(int a, int b) { return a < b ? a : b; }

// Smallest margins along positions from .. to-1 of chain c.
static void track_margins(const ref_chain *c, int from, int to, float *m12, float *m23) {
    for (int k = from; k < to; k++) {
        *m12 = fminf(*m12, ref_chain_margin(c, k, 0));
        *m23 = fminf(*m23, ref_chain_margin(c, k, 1));
    }
}

static void result_init(ref_sim_result *r, int max_rounds) {
    memset(r, 0, sizeof *r);
    r->rounds = sg_calloc((size_t)(max_rounds > 0 ? max_rounds : 1), sizeof *r->rounds);
    r->min_margin_a12 = r->min_margin_a23 = INFINITY;
    r->min_margin_ladder12 = r->min_margin_ladder23 = INFINITY;
}

// One speculative round at anchor position p (state in d); appends to r.
static int sim_round(ref_drafter *d, const ref_output *req, int max_new_tokens, int p,
                     const ref_sim_options *o, block_layout layout, float *U, float *hidden,
                     ref_sim_result *r) {
    const drafter_model *dm = d->model;
    int V = dm->cfg.arch.vocab_size, H = dm->cfg.arch.hidden_size;
    int n_total = req->n_prompt + req->n_generated;
    int generated = p + 1 - req->n_prompt, remaining = max_new_tokens - generated;
    const float *pending = req->taps + (size_t)d->committed_len * req->n_tap_cols;
    SG_TRY(ref_drafter_block(d, pending, p - d->committed_len, req->tokens[p], U, hidden));

    int first, nd = ref_draft_rows(layout, dm->cfg.block_size, &first);
    ref_chain a;
    ref_markov_chain(dm, U + (size_t)first * V, nd, req->tokens[p], &a);
    int len = nd;
    if (o->conf_threshold > 0.0)
        len = ref_confidence_cut(dm, hidden + (size_t)first * H, &a, o->conf_threshold);
    len = min_int(len, remaining - 1);

    const int *truth = req->tokens + p + 1; // ends at the first stop/EOS or at max_new_tokens
    int T = n_total - (p + 1);
    int n_a = accepted_prefix(a.tokens, len, truth, T);
    for (int k = 0; k < len; k++) r->pos_verified[k]++;
    for (int k = 0; k < n_a; k++) r->pos_accepted[k]++;
    if (n_a < len) {
        r->breaks++;
        if (n_a < T && a.top_ids[n_a][1] == truth[n_a]) r->runner_up_right++;
    }
    track_margins(&a, 0, len, &r->min_margin_a12, &r->min_margin_a23);

    ref_sim_round *log = &r->rounds[r->n_rounds++];
    *log = (ref_sim_round){.anchor_pos = p, .drafted = len, .n_a = n_a, .winner = 0,
                           .n_winner = n_a, .retained = min_int(n_a + 1, T)};
    spec_counters *c = &r->counters;
    // Eligibility as the spec states it (remaining >= 2 is implied by the second test).
    if (o->hedge_cap > 0 && remaining >= 2 && o->positions[0] < min_int(nd, remaining - 1)) {
        ref_chain ladders[REF_SIM_MAX_POSITIONS];
        for (int j = 0; j < o->chains; j++) {
            ref_chain *l = &ladders[j];
            ref_markov_ladder(dm, U + (size_t)first * V, &a, o->positions[j], l);
            int dup = memcmp(l->tokens, a.tokens, (size_t)len * sizeof(int)) == 0;
            for (int i = 0; i < j && !dup; i++)
                dup = memcmp(l->tokens, ladders[i].tokens, (size_t)len * sizeof(int)) == 0;
            log->chains_built++;
            if (dup) {
                c->chains_deduped++;
                continue;
            }
            log->chain_spans++;
            track_margins(l, o->positions[j], len, &r->min_margin_ladder12,
                          &r->min_margin_ladder23);
            int n = accepted_prefix(l->tokens, len, truth, T), retained = min_int(n + 1, T);
            if (retained > log->retained) { // strictly longer only
                log->winner = j + 1;
                log->n_winner = n;
                log->retained = retained;
            }
        }
        c->chains_built += log->chains_built;
        c->chain_spans += log->chain_spans;
        if (log->chain_spans > 0) {
            c->hedged_rounds++;
            if (log->winner > 0)
                c->chain_wins++;
            else
                c->loss_rounds++;
        }
    }
    counters_book_round(c, log->n_winner, log->retained, len);
    return SG_OK;
}

int ref_simulate(const target_model *target, const drafter_model *drafter, const ref_output *req,
                 int max_new_tokens, double temperature, const ref_sim_options *o,
                 ref_sim_result *out) {
    block_layout layout = o->layout < 0 ? drafter->cfg.layout : (block_layout)o->layout;
    int first, nd = ref_draft_rows(layout, drafter->cfg.block_size, &first);
    if (nd < 1)
        return sg_fail(SG_EXIT_INPUT, "simulator: block_size %d leaves no draft row with the "
                       "anchor-drop layout (it needs block_size >= 2)", drafter->cfg.block_size);
    SG_TRY(check_options(drafter, o, nd));
    if (req->n_prompt < 1 || req->n_generated < 1 || req->n_generated > max_new_tokens)
        return sg_fail(SG_EXIT_INPUT,
                       "simulator: request with %d prompt and %d generated tokens for "
                       "max_new_tokens %d (needs a prompt and 1..max_new_tokens generated)",
                       req->n_prompt, req->n_generated, max_new_tokens);
    int n_total = req->n_prompt + req->n_generated;
    result_init(out, req->n_generated - 1);
    if (temperature > 0.0) { // decoded one token per round, never drafted
        for (int i = 1; i < req->n_generated; i++) {
            out->rounds[out->n_rounds++] = (ref_sim_round){
                .anchor_pos = req->n_prompt + i - 1, .n_winner = 0, .retained = 1};
            counters_book_round(&out->counters, 0, 1, 0);
        }
        return SG_OK;
    }
    int cols = drafter->cfg.n_taps * drafter->cfg.arch.hidden_size;
    if (!req->taps || req->n_tap_cols != cols) {
        ref_sim_result_free(out);
        return sg_fail(SG_EXIT_INPUT,
                       "simulator: the request's taps have %d columns, the drafter reads %d "
                       "(%d taps × hidden %d): record the greedy run with the drafter's "
                       "target_layer_ids",
                       req->taps ? req->n_tap_cols : 0, cols, drafter->cfg.n_taps,
                       drafter->cfg.arch.hidden_size);
    }
    ref_drafter d;
    int status = ref_drafter_init(&d, drafter, target, n_total + drafter->cfg.block_size);
    if (status != SG_OK) {
        ref_sim_result_free(out);
        return status;
    }
    int B = drafter->cfg.block_size, V = drafter->cfg.arch.vocab_size;
    float *U = sg_calloc((size_t)B * V, sizeof *U);
    float *hidden = sg_calloc((size_t)B * drafter->cfg.arch.hidden_size, sizeof *hidden);
    for (int p = req->n_prompt; status == SG_OK && p < n_total - 1;) {
        status = sim_round(&d, req, max_new_tokens, p, o, layout, U, hidden, out);
        if (status != SG_OK)
            status = sg_fail_context(status, "simulating the round anchored at position %d", p);
        else
            p += out->rounds[out->n_rounds - 1].retained;
    }
    free(U);
    free(hidden);
    ref_drafter_free(&d);
    if (status != SG_OK) ref_sim_result_free(out);
    return status;
}

void ref_sim_result_free(ref_sim_result *r) {
    free(r->rounds);
    r->rounds = NULL;
    r->n_rounds = 0;
}
