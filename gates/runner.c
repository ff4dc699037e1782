// gates/runner.c: one engine run with the test hooks (see runner.h).
#include "runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

typedef struct {
    const run_plan *plan;
    run_result *out;
    const sg_request *reqs;
    int *slot_of;  // engine submission index → index in reqs
    int n_submitted;
} run_state;

static run_request *request_of(run_state *s, int engine_index) {
    SG_CHECK(engine_index >= 0 && engine_index < s->n_submitted, "hook for request %d of %d",
             engine_index, s->n_submitted);
    return &s->out->req[s->slot_of[engine_index]];
}

static void on_commit(void *ctx, int req, int index, int token, const float *row, int V) {
    run_state *s = ctx;
    run_request *r = request_of(s, req);
    const sg_request *q = &s->reqs[s->slot_of[req]];
    SG_CHECK(index < q->max_new_tokens && V == s->out->V, "commit %d of %d", index,
             q->max_new_tokens);
    (void)token;
    memcpy(r->rows + (size_t)index * V, row, (size_t)V * sizeof *row);
    run_origin o = {.round = 0, .chain = -2, .anchor_pos = q->n_prompt - 1};
    if (r->n_rounds > 0) {
        const run_round *last = &r->rounds[r->n_rounds - 1];
        o = (run_origin){.round = last->round, .chain = last->chain,
                         .anchor_pos = last->anchor_pos};
    }
    r->origin[index] = o;
}

static void on_round(void *ctx, int req, int round, int anchor_pos, int drafted, int chain,
                     int n_accepted, int retained) {
    run_state *s = ctx;
    run_request *r = request_of(s, req);
    SG_CHECK(r->n_rounds < s->reqs[s->slot_of[req]].max_new_tokens, "more rounds than tokens");
    r->rounds[r->n_rounds++] = (run_round){.round = round, .anchor_pos = anchor_pos,
                                           .drafted = drafted, .chain = chain,
                                           .n_accepted = n_accepted, .retained = retained};
}

static void on_draft(void *ctx, int req, int anchor_pos, int32_t *drafts, int len) {
    run_state *s = ctx;
    const ref_output *ref = s->plan->refs[s->slot_of[req]];
    int end = ref->n_prompt + ref->n_generated, V = s->out->V;
    for (int k = 0; k < len && anchor_pos + 1 + k < end; k++) {
        int truth = ref->tokens[anchor_pos + 1 + k];
        drafts[k] = s->plan->oracle == ORACLE_REPLAY ? truth : (truth + 1) % V;
    }
}

static void copy_result(const sg_engine *e, int index, run_request *r) {
    engine_result x;
    engine_result_of(e, index, &x);
    r->status = x.status;
    memcpy(r->reason, x.reason, sizeof r->reason);
    r->stop = x.stop;
    r->n = x.n_generated;
    memcpy(r->tokens, x.tokens, (size_t)x.n_generated * sizeof *r->tokens);
    memcpy(r->dig_logits, x.digest_logits, (size_t)x.n_generated * sizeof *r->dig_logits);
    memcpy(r->dig_taps, x.digest_taps, (size_t)x.n_generated * sizeof *r->dig_taps);
    r->digest = engine_digest_summary(&x);
    r->counters = x.counters;
    r->waited = x.waited;
}

// Submits request i of the plan; records the engine index.
static int submit(run_state *s, sg_engine *e, int i) {
    sg_request q = s->reqs[i];
    if (s->plan->all_at_zero || s->plan->alone) q.arrival_step = 0;
    int index;
    SG_TRY(engine_submit(e, &q, &index));
    SG_CHECK(index == s->n_submitted, "submission index %d, expected %d", index, s->n_submitted);
    s->slot_of[s->n_submitted++] = i;
    return SG_OK;
}

int run_engine(const sg_backend *be, const target_model *target, const drafter_model *draft,
               const run_plan *plan, const sg_request *reqs, int n, run_result *out) {
    memset(out, 0, sizeof *out);
    int V = target->cfg.vocab_size;
    out->n = n;
    out->V = V;
    out->req = sg_calloc((size_t)(n > 0 ? n : 1), sizeof *out->req);
    for (int i = 0; i < n; i++) {
        run_request *r = &out->req[i];
        size_t m = (size_t)reqs[i].max_new_tokens;
        r->tokens = sg_calloc(m, sizeof *r->tokens);
        r->dig_logits = sg_calloc(m, sizeof *r->dig_logits);
        r->dig_taps = sg_calloc(m, sizeof *r->dig_taps);
        r->rows = sg_calloc(m * V, sizeof *r->rows);
        r->origin = sg_calloc(m, sizeof *r->origin);
        r->rounds = sg_calloc(m, sizeof *r->rounds);
        r->status = ENGINE_QUEUED;
    }
    run_state s = {.plan = plan, .out = out, .reqs = reqs,
                   .slot_of = sg_calloc((size_t)(n > 0 ? n : 1), sizeof(int))};
    engine_hooks hooks = {.ctx = &s, .commit = on_commit, .round = on_round,
                          .draft = plan->oracle != ORACLE_NONE ? on_draft : NULL,
                          .fault = plan->fault};
    engine_options o = plan->o;
    o.hooks = &hooks;
    sg_engine *e = NULL;
    int st = engine_create(be, target, draft, &o, &e);
    if (st != SG_OK) {
        free(s.slot_of);
        run_result_free(out);
        return st;
    }
    int run_st = SG_OK;
    for (int k = 0; k < n && run_st == SG_OK; k++) {
        int i = plan->reverse ? n - 1 - k : k;
        st = submit(&s, e, i);
        if (st != SG_OK) break;
        if (plan->alone) run_st = engine_run(e);
    }
    if (st == SG_OK && run_st == SG_OK && !plan->alone) run_st = engine_run(e);
    if (st == SG_OK) {
        if (run_st != SG_OK) {
            out->error = run_st;
            snprintf(out->error_msg, sizeof out->error_msg, "%s", sg_error());
        }
        for (int k = 0; k < s.n_submitted; k++) copy_result(e, k, &out->req[s.slot_of[k]]);
        out->steps = engine_steps(e);
        engine_counters_total(e, &out->total);
        out->pools_whole = run_st == SG_OK && engine_check_pools(e) == SG_OK;
        if (run_st == SG_OK && !out->pools_whole)
            snprintf(out->pool_msg, sizeof out->pool_msg, "%s", sg_error());
        out->faults_injected = hooks.faults_injected;
    }
    engine_destroy(e);
    free(s.slot_of);
    if (st != SG_OK) run_result_free(out);
    return st;
}

void run_result_free(run_result *r) {
    for (int i = 0; r->req && i < r->n; i++) {
        run_request *q = &r->req[i];
        free(q->tokens);
        free(q->dig_logits);
        free(q->dig_taps);
        free(q->rows);
        free(q->origin);
        free(q->rounds);
    }
    free(r->req);
    memset(r, 0, sizeof *r);
}
