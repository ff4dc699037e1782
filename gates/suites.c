// gates/suites.c: the gate suites (see suites.h; the checks they share are gates/judge.c).
//
//   sequential        each request alone (unhedged) vs the reference
//   concurrent        the heterogeneous workload in one batch, staggered arrivals (unhedged)
//   capture_shape     a max_new_tokens = 4 request, then a long one, on one engine (hedged)
//   draft_headroom    exactly at the limit runs, one past is REJECTED with its reason, the others
//                     are unaffected (equal to a run without the refused ones) (hedged)
//   tiny_pool         the smallest pool every request fits: requests wait, the pool ends whole
//   hedge_sequential  sequential, hedged: hedged rounds, chain wins, loss rounds > 0, and every
//                     request IDENTICAL (a TIE, which passes elsewhere, fails here)
//   hedge_concurrent  concurrent, hedged: the same
//   invariance        plain, unhedged and hedged runs over batch compositions, verify capacities
//                     and chain counts: identical tokens and digests within the backend
//   oracles           a drafter replaying the reference accepts every draft, an always-wrong one
//                     none; the output identical in both
//   counters          per-request counters equal the simulator's (hedged and unhedged, alone);
//                     a rerun gives the same counters and digests
// Every run also checks the counter invariants, the pools and the engine's own errors (judge.h).
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine/kv_pages.h"
#include "judge.h"

// ---- engine configurations ----

// Graph replay is on (it takes effect on a backend with capture hooks: CUDA); the invariance suite
// also runs with it off.
static run_plan plan_unhedged(const gate_ctx *g) {
    run_plan p;
    memset(&p, 0, sizeof p);
    engine_options_default(&p.o);
    p.o.graphs = 1;
    p.fault = g->fault;
    return p;
}

static run_plan plan_plain(const gate_ctx *g) {
    run_plan p = plan_unhedged(g);
    p.o.plain = 1;
    return p;
}

// Hedge cap 8, branch positions 0,1,2, `chains` ladders (unhedged when the drafter cannot hedge).
static run_plan plan_hedged(const gate_ctx *g, int chains) {
    run_plan p = plan_unhedged(g);
    if (!g->can_hedge) return p;
    p.o.hedge_cap = 8;
    p.o.n_positions = 3;
    for (int j = 0; j < 3; j++) p.o.positions[j] = j;
    p.o.chains = chains;
    return p;
}

static const char *hedged_name(const gate_ctx *g) { return g->can_hedge ? "hedged" : "unhedged"; }

// ---- suites that judge one run ----

static int load1(const gate_ctx *g, const char *name, suite_workload *w) {
    const char *names[1] = {name};
    return suite_workload_load(g, names, 1, w);
}

// Loads `workload`, makes one run, judges it (the primary run); hedge: the hedge gate too, and
// every request must be IDENTICAL (a TIE fails).
static int judged_suite(gate_ctx *g, gate_suite *s, const char *workload, const char *name,
                        const run_plan *p, int hedge) {
    suite_workload w;
    SG_TRY(load1(g, workload, &w));
    run_result r;
    if (suite_run(g, s, name, p, &w, &r)) {
        judge_run(g, s, name, p, &w, &r, 1, hedge);
        if (hedge) check_hedge(s, name, &r.total);
        run_result_free(&r);
    }
    suite_workload_free(&w);
    return SG_OK;
}

static int suite_sequential(gate_ctx *g, gate_suite *s) {
    run_plan p = plan_unhedged(g);
    p.alone = 1;
    return judged_suite(g, s, "sequential", "unhedged, each request alone", &p, 0);
}

static int suite_concurrent(gate_ctx *g, gate_suite *s) {
    run_plan p = plan_unhedged(g);
    return judged_suite(g, s, "concurrent", "unhedged, batched", &p, 0);
}

static int suite_capture_shape(gate_ctx *g, gate_suite *s) {
    run_plan p = plan_hedged(g, -1);
    return judged_suite(g, s, "capture_shape", hedged_name(g), &p, 0);
}

static int suite_hedge_sequential(gate_ctx *g, gate_suite *s) {
    run_plan p = plan_hedged(g, -1);
    p.alone = 1;
    return judged_suite(g, s, "sequential", "hedged, each request alone", &p, 1);
}

static int suite_hedge_concurrent(gate_ctx *g, gate_suite *s) {
    run_plan p = plan_hedged(g, -1);
    return judged_suite(g, s, "concurrent", "hedged, batched", &p, 1);
}

// ---- draft_headroom ----

// The workload must hold the boundary: an admitted request exactly at the draft-headroom limit
// and a refused one a position past it (unless --request picked one request).
static void check_boundary(const gate_ctx *g, gate_suite *s, const suite_workload *w) {
    int limit = g->target->cfg.max_position_embeddings, B = g->draft->cfg.block_size;
    if (g->draft->cfg.arch.max_position_embeddings < limit)
        limit = g->draft->cfg.arch.max_position_embeddings;
    int at = 0, past = 0;
    for (int i = 0; i < w->n; i++) {
        long need = (long)w->reqs[i].n_prompt + w->reqs[i].max_new_tokens + B;
        at |= !w->reqs[i].expect_rejected && need == limit;
        past |= w->reqs[i].expect_rejected && need == limit + 1;
    }
    if (g->request || (at && past)) return;
    suite_fail(s, CHECK_REJECT, NULL,
               "the workload does not test the draft-headroom boundary: it needs a request "
               "expected to run with prompt + max_new_tokens + B exactly %d (max_position_"
               "embeddings) and one expected rejected at %d (has: %s, %s)\n",
               limit, limit + 1, at ? "yes" : "no", past ? "yes" : "no");
}

static int suite_draft_headroom(gate_ctx *g, gate_suite *s) {
    suite_workload w;
    SG_TRY(load1(g, "draft_headroom", &w));
    check_boundary(g, s, &w);
    run_plan p = plan_hedged(g, -1);
    const char *name = hedged_name(g);
    run_result r;
    if (suite_run(g, s, name, &p, &w, &r)) {
        judge_run(g, s, name, &p, &w, &r, 1, 0);
        for (int i = 0; i < w.n; i++)
            if (r.req[i].status == ENGINE_REJECTED && !strstr(r.req[i].reason, "draft headroom"))
                suite_fail(s, CHECK_REJECT, w.reqs[i].id,
                           "%s run: refused, but the reason does not name the draft-headroom "
                           "rule: \"%s\"\n", name, r.req[i].reason);
        // The other requests are unaffected: a run without the refused ones gives the same.
        suite_workload kept = {.reqs = sg_calloc((size_t)(w.n > 0 ? w.n : 1), sizeof *kept.reqs)};
        int *map = sg_calloc((size_t)(w.n > 0 ? w.n : 1), sizeof *map);
        for (int i = 0; i < w.n; i++)
            if (!w.reqs[i].expect_rejected) {
                map[kept.n] = i;
                kept.reqs[kept.n++] = w.reqs[i];
            }
        run_result r2;
        if (kept.n < w.n && suite_run(g, s, "without the refused requests", &p, &kept, &r2)) {
            compare_runs(g, s, CHECK_DIGEST, 1, name, &p, &r, "without the refused requests", &p,
                         &r2, &kept, map);
            run_result_free(&r2);
        }
        free(kept.reqs);
        free(map);
        run_result_free(&r);
    }
    suite_workload_free(&w);
    return SG_OK;
}

// ---- tiny_pool ----

static int suite_tiny_pool(gate_ctx *g, gate_suite *s) {
    suite_workload w;
    SG_TRY(load1(g, "tiny_pool", &w));
    run_plan p = plan_hedged(g, -1);
    // The smallest pool every request fits in: its largest request's worst-case pages.
    int ps = ENGINE_DEFAULT_PAGE_SIZE, pages = 1;
    for (int i = 0; i < w.n; i++) {
        int need = kv_pages_positions_needed(w.reqs[i].n_prompt, w.reqs[i].max_new_tokens,
                                             g->draft->cfg.block_size);
        int need_pages = (need + ps - 1) / ps;
        if (!w.reqs[i].expect_rejected && need_pages > pages) pages = need_pages;
    }
    p.o.page_size = ps;
    p.o.pool_pages = pages;
    char name[64];
    snprintf(name, sizeof name, "%s, pool of %d pages", hedged_name(g), pages);
    run_result r;
    if (suite_run(g, s, name, &p, &w, &r)) {
        judge_run(g, s, name, &p, &w, &r, 1, 0);
        int waited = 0;
        for (int i = 0; i < w.n; i++) waited += r.req[i].waited;
        if (w.n > 1 && waited == 0)
            suite_fail(s, CHECK_WAIT, NULL, "%s run: no request waited for pages; the suite "
                       "needs requests that do not fit the pool together\n", name);
        run_result_free(&r);
    }
    suite_workload_free(&w);
    return SG_OK;
}

// ---- invariance ----

typedef struct {
    const char *name;
    int hedged;       // 0: unhedged (or plain), else the chain count
    int plain;
    int alone, reverse_at_zero, small_capacity, eager; // eager: graph replay off
} invariance_run;

static const invariance_run invariance_runs[] = {
    {"plain", 0, 1, 0, 0, 0, 0},
    {"unhedged", 0, 0, 0, 0, 0, 0},
    {"unhedged, each request alone", 0, 0, 1, 0, 0, 0},
    {"hedged", 3, 0, 0, 0, 0, 0},
    {"hedged, reversed, all arriving at step 0", 3, 0, 0, 1, 0, 0},
    {"hedged, each request alone", 3, 0, 1, 0, 0, 0},
    {"hedged, 1 chain", 1, 0, 0, 0, 0, 0},
    {"hedged, 2 chains, reversed, all at step 0", 2, 0, 0, 1, 0, 0},
    {"hedged, small verify capacity", 3, 0, 0, 0, 1, 0},
    {"hedged, graph replay off", 3, 0, 0, 0, 0, 1},
};

static run_plan invariance_plan(const gate_ctx *g, const invariance_run *v) {
    run_plan p = v->plain    ? plan_plain(g)
                 : v->hedged ? plan_hedged(g, v->hedged)
                             : plan_unhedged(g);
    p.alone = v->alone;
    p.reverse = p.all_at_zero = v->reverse_at_zero;
    p.o.graphs = !v->eager;
    if (v->small_capacity) {
        // 4 requests at a time, 6 spans, scratch for 4 chains: hedging is capped by every limit.
        int W = g->draft->cfg.block_size + 1;
        p.o.max_rows = 4 * W;
        p.o.max_spans = 6;
        p.o.max_seqs = 4;
        p.o.scratch_pages =
            g->can_hedge ? 4 * kv_pages_per_chain(W - 1, ENGINE_DEFAULT_PAGE_SIZE) : 0;
    }
    return p;
}

static int suite_invariance(gate_ctx *g, gate_suite *s) {
    static const char *const names[2] = {"sequential", "concurrent"};
    suite_workload w;
    SG_TRY(suite_workload_load(g, names, 2, &w));
    int n_runs = (int)(sizeof invariance_runs / sizeof *invariance_runs);
    run_plan base_plan = invariance_plan(g, &invariance_runs[0]);
    run_result base;
    if (suite_run(g, s, invariance_runs[0].name, &base_plan, &w, &base)) {
        judge_run(g, s, invariance_runs[0].name, &base_plan, &w, &base, 1, 0);
        for (int k = 1; k < n_runs; k++) {
            const invariance_run *v = &invariance_runs[k];
            if (v->hedged && !g->can_hedge) continue;
            run_plan p = invariance_plan(g, v);
            run_result r;
            if (!suite_run(g, s, v->name, &p, &w, &r)) continue;
            compare_runs(g, s, CHECK_DIGEST, 0, invariance_runs[0].name, &base_plan, &base,
                         v->name, &p, &r, &w, NULL);
            run_result_free(&r);
        }
        run_result_free(&base);
    }
    suite_workload_free(&w);
    return SG_OK;
}

// ---- oracles ----

// Every round of a finished request accepted every draft the reference covers (replay) or none
// (wrong); at least one draft verified over the run.
static void check_oracle(gate_suite *s, const char *name, run_oracle kind,
                         const suite_workload *w, const run_result *r,
                         const ref_output *const *refs) {
    int64_t drafted = 0;
    for (int i = 0; i < w->n; i++) {
        const run_request *q = &r->req[i];
        if (q->status != ENGINE_DONE || !refs[i]) continue;
        int end = refs[i]->n_prompt + refs[i]->n_generated;
        for (int k = 0; k < q->n_rounds; k++) {
            const run_round *d = &q->rounds[k];
            int left = end - 1 - d->anchor_pos; // reference tokens after the anchor
            int covered = d->drafted < left ? d->drafted : left;
            int want = kind == ORACLE_REPLAY ? covered : 0;
            drafted += d->drafted;
            if (kind == ORACLE_REPLAY ? d->n_accepted >= want : d->n_accepted == 0) continue;
            suite_fail(s, CHECK_ORACLE, w->reqs[i].id,
                       "%s run: round %d (anchor position %d) accepted %d of %d drafts; the %s "
                       "drafter must have %s\n", name, d->round, d->anchor_pos, d->n_accepted,
                       d->drafted, kind == ORACLE_REPLAY ? "replaying" : "always-wrong",
                       kind == ORACLE_REPLAY ? "every draft the reference covers accepted"
                                             : "none accepted");
            break;
        }
    }
    if (drafted == 0)
        suite_fail(s, CHECK_ORACLE, NULL, "%s run: no draft was verified; the oracle was never "
                   "consulted\n", name);
}

static int suite_oracles(gate_ctx *g, gate_suite *s) {
    suite_workload w;
    SG_TRY(load1(g, "sequential", &w));
    const ref_output **refs = sg_calloc((size_t)(w.n > 0 ? w.n : 1), sizeof *refs);
    int refs_ok = 1;
    for (int i = 0; i < w.n; i++)
        if (!w.reqs[i].expect_rejected && ref_cache_get(&g->refs, &w.reqs[i], &refs[i]) != SG_OK) {
            suite_fail(s, CHECK_ORACLE, w.reqs[i].id, "the reference cannot decode it: %s\n",
                       sg_error());
            refs_ok = 0;
        }
    static const struct {
        const char *name;
        run_oracle kind;
    } oracles[2] = {{"replaying oracle", ORACLE_REPLAY}, {"always-wrong oracle", ORACLE_WRONG}};
    for (int k = 0; k < 2 && refs_ok; k++) {
        run_plan p = plan_unhedged(g);
        p.oracle = oracles[k].kind;
        p.refs = refs;
        run_result r;
        if (!suite_run(g, s, oracles[k].name, &p, &w, &r)) continue;
        judge_run(g, s, oracles[k].name, &p, &w, &r, k == 0, 0);
        check_oracle(s, oracles[k].name, oracles[k].kind, &w, &r, refs);
        run_result_free(&r);
    }
    free(refs);
    suite_workload_free(&w);
    return SG_OK;
}

// ---- counters ----

static int suite_counters(gate_ctx *g, gate_suite *s) {
    suite_workload w;
    SG_TRY(load1(g, "sequential", &w));
    run_plan hedged = plan_hedged(g, -1), unhedged = plan_unhedged(g);
    hedged.alone = unhedged.alone = 1;
    const char *hname =
        g->can_hedge ? "hedged, each request alone" : "unhedged, each request alone";
    run_result r, again, u;
    if (suite_run(g, s, hname, &hedged, &w, &r)) {
        judge_run(g, s, hname, &hedged, &w, &r, 1, 0);
        compare_simulator(g, s, hname, &hedged, &w, &r);
        if (suite_run(g, s, "rerun", &hedged, &w, &again)) {
            compare_runs(g, s, CHECK_RERUN, 1, hname, &hedged, &r, "rerun", &hedged, &again, &w,
                         NULL);
            run_result_free(&again);
        }
        run_result_free(&r);
    }
    if (g->can_hedge && suite_run(g, s, "unhedged, each request alone", &unhedged, &w, &u)) {
        compare_simulator(g, s, "unhedged, each request alone", &unhedged, &w, &u);
        run_result_free(&u);
    }
    suite_workload_free(&w);
    return SG_OK;
}

const suite_def gate_suite_defs[GATE_N_SUITES] = {
    {"sequential", "each request alone, unhedged, against the reference", 0, suite_sequential},
    {"concurrent", "heterogeneous batch with staggered arrivals, unhedged", 0, suite_concurrent},
    {"capture_shape", "a 4-token request, then a long one, on one engine", 0, suite_capture_shape},
    {"draft_headroom", "at the limit runs, one past is refused, the others unaffected", 0,
     suite_draft_headroom},
    {"tiny_pool", "the smallest pool: requests wait, outputs identical, pool whole", 0,
     suite_tiny_pool},
    {"hedge_sequential", "sequential, hedged: hedged rounds, chain wins, losses; all IDENTICAL", 1,
     suite_hedge_sequential},
    {"hedge_concurrent", "concurrent, hedged: hedged rounds, chain wins, losses; all IDENTICAL", 1,
     suite_hedge_concurrent},
    {"invariance", "plain/unhedged/hedged over compositions: identical tokens and digests", 0,
     suite_invariance},
    {"oracles", "replaying drafter accepts all, always-wrong accepts none", 0, suite_oracles},
    {"counters", "counters equal the simulator's; a rerun gives the same", 0, suite_counters},
};

const suite_def *suite_find(const char *name) {
    for (int i = 0; i < GATE_N_SUITES; i++)
        if (strcmp(gate_suite_defs[i].name, name) == 0) return &gate_suite_defs[i];
    return NULL;
}
