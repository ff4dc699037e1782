// tests/test_engine_edges.c: edge cases of the engine's rounds and scheduler on the tiny fixture:
// stop ids at every early position of greedy outputs (inside spans and inside chain suffixes:
// each candidate is truncated before the winner is chosen), a deliberate stop inside the accepted
// suffix of a ladder that would win without it (observed through the round hook: a loss round
// won by chain A, where comparing raw accepted lengths would pick the ladder), max_new_tokens 1
// and 2, prompts of length 1, a pool that makes requests wait and one request that can never fit
// (rejected while the others run), the draft-headroom boundary with and without a drafter, the
// verify capacity with the span, row and scratch limits each binding (chains_dropped_capacity
// stays 0), NaN in the target head and in the Markov head (hard errors naming request and
// position), and bad options.
// ctest-labels: cpu;unit
#include <math.h>
#include <string.h>

#include "engine_fixture.h"
#include "ref/simulate.h"

static ef_models M;
static void setup(void) { ef_open_set(&M, "tiny"); }
static void teardown(void) { ef_close(&M); }

static sg_request make_req(const char *id, const int *prompt, int n_prompt, int max_new) {
    sg_request r = {0};
    snprintf(r.id, sizeof r.id, "%s", id);
    r.prompt = (int *)prompt;
    r.n_prompt = n_prompt;
    r.max_new_tokens = max_new;
    return r;
}

// Engine alone (hedged) vs ref tokens and ref_simulate counters; returns the simulator's result.
static void check_alone(const sg_request *r, const engine_options *o, ref_sim_result *sim) {
    sg_workload w = {.requests = (sg_request *)r, .n_requests = 1};
    sg_backend *be;
    sg_engine *e = ef_run(&M, &M.dspark, o, &w, 0, 1, &be);
    engine_result x;
    engine_result_of(e, 0, &x);
    ck_assert_int_eq(x.status, ENGINE_DONE);
    ref_output ro;
    ef_ref(&M, &M.dspark, r, &ro);
    ck_assert_msg(ro.n_generated == x.n_generated &&
                      memcmp(ro.tokens + ro.n_prompt, x.tokens, sizeof(int) * x.n_generated) == 0,
                  "request %s: tokens differ from ref/", r->id);
    ref_sim_options so = {.hedge_cap = o->hedge_cap, .n_positions = o->n_positions,
                          .chains = o->n_positions, .layout = -1};
    memcpy(so.positions, o->positions, sizeof(int) * (size_t)o->n_positions);
    ck_assert_msg(ref_simulate(&M.target, &M.dspark, &ro, r->max_new_tokens, 0.0, &so, sim) ==
                      SG_OK, "%s", sg_error());
    ck_assert_msg(counters_equal(&x.counters, &sim->counters), "request %s: counters differ",
                  r->id);
    ck_assert_msg(counters_check(&x.counters, x.n_generated) == SG_OK, "%s", sg_error());
    ref_output_free(&ro);
    ef_free(e, be);
}

// Stop ids at the first occurrence of each of the first 24 generated tokens of the sequential
// requests: the output ends right there, and the counters equal the simulator's, which
// truncates each candidate (A and every chain) before the winner is picked. Some round must
// have truncated a candidate that accepted past the stop (retained < n + 1) in a hedged round.
START_TEST(test_stops_everywhere) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    engine_options o = ef_hedged();
    int truncated_hedged = 0, cases = 0;
    for (int i = 0; i < 3; i++) {
        ref_output full;
        sg_request r = w.requests[i];
        ef_ref(&M, NULL, &r, &full);
        const int *gen = full.tokens + full.n_prompt;
        for (int q = 1; q < 24; q += 2) {
            int first = 1;
            for (int k = 0; k < q; k++) first &= gen[k] != gen[q];
            if (!first) continue;
            int stop = gen[q];
            r.stop = &stop;
            r.n_stop = 1;
            ref_sim_result sim;
            check_alone(&r, &o, &sim);
            cases++;
            for (int k = 0; k < sim.n_rounds; k++)
                truncated_hedged += sim.rounds[k].chain_spans > 0 &&
                                    sim.rounds[k].retained < sim.rounds[k].n_winner + 1;
            ref_sim_result_free(&sim);
        }
        ref_output_free(&full);
    }
    ck_assert_int_ge(cases, 20);
    ck_assert_int_gt(truncated_hedged, 0);
    workload_free(&w);
}
END_TEST

// The engine's round hook: every round of the (one) request, in order.
#define MAX_LOGGED 256
typedef struct {
    int n;
    struct {
        int anchor, drafted, chain, n_accepted, retained;
    } r[MAX_LOGGED];
} round_log;

static void log_round(void *ctx, int req, int round, int anchor_pos, int drafted, int chain,
                      int n_accepted, int retained) {
    round_log *l = ctx;
    ck_assert_int_eq(req, 0);
    ck_assert_int_eq(round, l->n + 1);
    ck_assert_int_lt(l->n, MAX_LOGGED);
    l->r[l->n].anchor = anchor_pos;
    l->r[l->n].drafted = drafted;
    l->r[l->n].chain = chain;
    l->r[l->n].n_accepted = n_accepted;
    l->r[l->n++].retained = retained;
}

// Runs r alone with options o, the round hook logging into *log and the given fault (or none);
// the request's counters and generated length come back through *counters and *n_generated.
static void run_logged(const sg_request *r, engine_options o, engine_fault fault, round_log *log,
                       spec_counters *counters, int *n_generated) {
    engine_hooks hk = {.ctx = log, .round = log_round, .fault = fault};
    memset(log, 0, sizeof *log);
    o.hooks = &hk;
    sg_workload w = {.requests = (sg_request *)r, .n_requests = 1};
    sg_backend *be;
    sg_engine *e = ef_run(&M, &M.dspark, &o, &w, 0, 1, &be);
    engine_result x;
    engine_result_of(e, 0, &x);
    ck_assert_int_eq(x.status, ENGINE_DONE);
    *counters = x.counters;
    *n_generated = x.n_generated;
    ef_free(e, be);
}

// The seed's follow-up defect (dspark-spec.md §5, verify side 3): a stop token inside a chain's
// accepted suffix must truncate that candidate BEFORE the winner is chosen. Scenario, built from
// the tiny fixture's own hedged rounds: in a round won by the ladder j (hook: chain j, n_j raw
// accepted drafts), A broke at its draft P_j (a ladder only beats A by branching exactly at A's
// break, with the runner-up that is the true token there). Make that true token, at generated
// index P_j of the round, a stop id (its first occurrence in the output). Then A's candidate is
// its P_j accepted drafts + the bonus = the stop, retained P_j + 1; the ladder's is cut after its
// accepted draft P_j = the stop, retained P_j + 1 too: a tie, which keeps A. So the round must be
// a LOSS round won by A with n = P_j (accepted += P_j, bonus += 1), the request's last, the output
// that of ref_generate and the counters those of ref_simulate; the naive rule (raw accepted
// lengths compared before truncation: n_j > P_j) would have picked the ladder, and an engine that
// hands such a tie to the chain (the tie-to-chain fault) fails these checks.
START_TEST(test_stop_in_discarded_chain_suffix) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    engine_options o = ef_hedged();
    int cases = 0;
    for (int i = 0; i < w.n_requests && cases < 4; i++) {
        sg_request r = w.requests[i];
        ck_assert_int_eq(r.n_stop, 0);
        r.arrival_step = 0;
        ref_output full;
        ef_ref(&M, &M.dspark, &r, &full);
        ref_sim_result sim_full;
        ref_sim_options so = {.hedge_cap = 8, .n_positions = 3, .chains = 3, .layout = -1,
                              .positions = {0, 1, 2}};
        ck_assert_int_eq(ref_simulate(&M.target, &M.dspark, &full, r.max_new_tokens, 0.0, &so,
                                      &sim_full), SG_OK);
        round_log free_log;
        spec_counters c_free;
        int n_free;
        run_logged(&r, o, ENGINE_FAULT_NONE, &free_log, &c_free, &n_free);
        ck_assert_int_eq(free_log.n, sim_full.n_rounds);
        const int *gen = full.tokens + full.n_prompt;
        for (int k = 0; k < free_log.n && cases < 4; k++) {
            int j = free_log.r[k].chain;
            if (j < 0) continue;
            int pj = o.positions[j], p = free_log.r[k].anchor, n_j = free_log.r[k].n_accepted;
            ck_assert_int_eq(sim_full.rounds[k].n_a, pj); // A broke at the ladder's branch
            ck_assert_int_gt(n_j, pj);
            int g = p + 1 + pj - full.n_prompt, stop = gen[g], first = 1;
            for (int t = 0; t < g; t++) first &= gen[t] != stop;
            if (!first) continue;
            cases++;
            r.stop = &stop;
            r.n_stop = 1;
            ref_sim_result sim;
            check_alone(&r, &o, &sim); // tokens = ref_generate's, counters = ref_simulate's
            round_log log;
            spec_counters c;
            int n_gen;
            run_logged(&r, o, ENGINE_FAULT_NONE, &log, &c, &n_gen);
            ck_assert_int_eq(n_gen, g + 1);
            ck_assert(counters_equal(&c, &sim.counters));
            // The same rounds up to round k, which is the last, a loss round won by A.
            ck_assert_int_eq(log.n, k + 1);
            for (int t = 0; t < k; t++)
                ck_assert(memcmp(&log.r[t], &free_log.r[t], sizeof log.r[t]) == 0);
            ck_assert_int_eq(log.r[k].anchor, p);
            ck_assert_int_eq(log.r[k].chain, -1);
            ck_assert_int_eq(log.r[k].n_accepted, pj);
            ck_assert_int_eq(log.r[k].retained, pj + 1);
            ck_assert_int_eq(sim.n_rounds, k + 1);
            ck_assert_int_gt(sim.rounds[k].chain_spans, 0); // a hedged round...
            ck_assert_int_eq(sim.rounds[k].winner, 0);      // ...that A won: a loss round
            int wins = 0;
            for (int t = 0; t < k; t++) wins += log.r[t].chain >= 0;
            ck_assert_int_eq(c.chain_wins, wins);
            // The naive rule: the ladder's raw accepted drafts (the stop-free run's round k, the
            // same drafts and verify) against A's (this run's round k): it picks the ladder.
            ck_assert_int_gt(free_log.r[k].n_accepted, log.r[k].n_accepted);
            // An engine that gives this tie to the chain is caught by the checks above.
            round_log bad;
            spec_counters c_bad;
            int n_bad;
            run_logged(&r, o, ENGINE_FAULT_TIE_TO_CHAIN, &bad, &c_bad, &n_bad);
            ck_assert_int_eq(bad.n, k + 1);
            ck_assert_int_ge(bad.r[k].chain, 0);
            ck_assert(!counters_equal(&c_bad, &sim.counters));
            ref_sim_result_free(&sim);
            r.stop = NULL;
            r.n_stop = 0;
        }
        ref_sim_result_free(&sim_full);
        ref_output_free(&full);
    }
    ck_assert_int_ge(cases, 1);
    workload_free(&w);
}
END_TEST

// max_new_tokens 1 and 2 and prompts of one token, hedged and with the anchor-drop layout.
START_TEST(test_short_requests) {
    engine_options o = ef_hedged();
    const int one[1] = {7};
    const int four[4] = {3, 14, 15, 92};
    for (int m = 1; m <= 3; m++) {
        ref_sim_result sim;
        sg_request r = make_req("one", one, 1, m);
        check_alone(&r, &o, &sim);
        ck_assert_int_eq(sim.counters.rounds, m - 1);
        ref_sim_result_free(&sim);
        r = make_req("four", four, 4, m);
        check_alone(&r, &o, &sim);
        ref_sim_result_free(&sim);
    }
    sg_request r = make_req("long", one, 1, 40);
    ref_sim_result sim;
    check_alone(&r, &o, &sim);
    ck_assert_int_gt(sim.counters.hedged_rounds, 0);
    ref_sim_result_free(&sim);
}
END_TEST

static int pages_of(const sg_request *r, int B) {
    return (r->n_prompt + r->max_new_tokens + B + 15) / 16;
}

// A pool as large as the larger of two requests: the second waits for the first, a third that
// takes the whole pool waits for both, and a fourth needing one position more than the pool is
// rejected while the others run.
START_TEST(test_pool_waits_and_rejects) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    int B = M.dspark.cfg.block_size;
    sg_request reqs[4] = {w.requests[0], w.requests[1], w.requests[1], w.requests[0]};
    reqs[0].max_new_tokens = reqs[1].max_new_tokens = 64;
    int pool = pages_of(&reqs[0], B) > pages_of(&reqs[1], B) ? pages_of(&reqs[0], B)
                                                              : pages_of(&reqs[1], B);
    reqs[2].max_new_tokens = 16 * pool - reqs[2].n_prompt - B;     // exactly the pool
    reqs[3].max_new_tokens = 16 * pool + 1 - reqs[3].n_prompt - B; // one position more
    snprintf(reqs[3].id, sizeof reqs[3].id, "too-big");
    sg_workload ww = {.requests = reqs, .n_requests = 4};
    engine_options o = ef_hedged();
    o.pool_pages = pool;
    sg_backend *be;
    sg_engine *e = ef_run(&M, &M.dspark, &o, &ww, 0, -1, &be);
    engine_result x[4];
    for (int i = 0; i < 4; i++) engine_result_of(e, i, &x[i]);
    ck_assert_int_eq(x[3].status, ENGINE_REJECTED);
    ck_assert_msg(strstr(x[3].reason, "never fit") != NULL, "%s", x[3].reason);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(x[i].status, ENGINE_DONE);
        ref_output ro;
        ef_ref(&M, NULL, &reqs[i], &ro);
        ck_assert_int_eq(ro.n_generated, x[i].n_generated);
        ck_assert_int_eq(memcmp(ro.tokens + ro.n_prompt, x[i].tokens, sizeof(int) * ro.n_generated), 0);
        ref_output_free(&ro);
    }
    ck_assert(x[1].waited && x[2].waited && !x[0].waited);
    ck_assert_int_gt(x[1].admitted_step, x[0].admitted_step);
    ck_assert_int_gt(x[2].admitted_step, x[1].admitted_step);
    ef_free(e, be);
    workload_free(&w);
}
END_TEST

// prompt + max_new + B == max_position_embeddings runs, one more is rejected (with and without a
// drafter: B = 0 then).
START_TEST(test_headroom_boundary) {
    int max_pos = M.target.cfg.max_position_embeddings, B = M.dspark.cfg.block_size;
    static int prompt[256];
    for (int i = 0; i < 256; i++) prompt[i] = (i * 37 + 11) % 500;
    for (int with_draft = 0; with_draft < 2; with_draft++) {
        int b = with_draft ? B : 0, max_new = 8;
        sg_request at = make_req("at", prompt, max_pos - max_new - b, max_new);
        sg_request past = make_req("past", prompt, max_pos - max_new - b + 1, max_new);
        sg_request reqs[2] = {past, at};
        sg_workload ww = {.requests = reqs, .n_requests = 2};
        engine_options o = ef_unhedged();
        sg_backend *be;
        sg_engine *e = ef_run(&M, with_draft ? &M.dspark : NULL, &o, &ww, 0, -1, &be);
        engine_result x;
        engine_result_of(e, 0, &x);
        ck_assert_int_eq(x.status, ENGINE_REJECTED);
        ck_assert_msg(strstr(x.reason, "headroom") != NULL, "%s", x.reason);
        engine_result_of(e, 1, &x);
        ck_assert_int_eq(x.status, ENGINE_DONE);
        ck_assert_int_eq(x.n_generated, max_new);
        ef_free(e, be);
    }
}
END_TEST

// Three concurrent greedy requests, hedge cap 8, C = 3, with (a) max_spans 6, (b) max_rows 48
// (3 A spans of 8 rows + one hedged request's 3 × 8), (c) 6 scratch pages (one request's
// chains): at most one request is hedged per round, chains_dropped_capacity stays 0, and the
// tokens and digests equal the unconstrained run's.
START_TEST(test_capacity_limits) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    engine_options base = ef_hedged();
    base.max_seqs = 3;
    sg_backend *b0;
    sg_engine *e0 = ef_run(&M, &M.dspark, &base, &w, 0, 3, &b0);
    spec_counters free_total;
    engine_counters_total(e0, &free_total);
    for (int lim = 0; lim < 3; lim++) {
        engine_options o = base;
        if (lim == 0) o.max_spans = 6;
        if (lim == 1) o.max_rows = 48;
        if (lim == 2) o.scratch_pages = 6;
        sg_backend *be;
        sg_engine *e = ef_run(&M, &M.dspark, &o, &w, 0, 3, &be);
        spec_counters t;
        engine_counters_total(e, &t);
        ck_assert_int_eq(t.chains_dropped_capacity, 0);
        ck_assert_int_gt(t.hedged_rounds, 0);
        ck_assert_int_le(t.hedged_rounds, engine_steps(e)); // one hedged request per round
        ck_assert_int_lt(t.hedged_rounds, free_total.hedged_rounds);
        for (int i = 0; i < 3; i++) {
            engine_result x, y;
            engine_result_of(e, i, &x);
            engine_result_of(e0, i, &y);
            ck_assert_int_eq(x.n_generated, y.n_generated);
            ck_assert_int_eq(memcmp(x.tokens, y.tokens, sizeof(int) * x.n_generated), 0);
            ck_assert(engine_digest_summary(&x) == engine_digest_summary(&y));
        }
        ef_free(e, be);
    }
    ef_free(e0, b0);
    workload_free(&w);
}
END_TEST

// NaN in one target head row and in the Markov head: engine_step fails naming request and
// position; the engine refuses further steps.
START_TEST(test_nan_is_hard_error) {
    int V = M.target.cfg.vocab_size, H = M.target.cfg.hidden_size, r = M.dspark.cfg.markov_rank;
    const int prompt[3] = {5, 6, 7};
    sg_request req = make_req("nan-req", prompt, 3, 16);
    for (int where = 0; where < 2; where++) {
        target_model t = M.target;
        drafter_model d = M.dspark;
        bf16 *copy;
        if (where == 0) {
            copy = sg_calloc((size_t)V * H, sizeof *copy);
            memcpy(copy, M.target.lm_head, (size_t)V * H * sizeof *copy);
            copy[(size_t)42 * H] = f32_to_bf16(NAN);
            t.lm_head = copy;
        } else {
            copy = sg_calloc((size_t)V * r, sizeof *copy);
            memcpy(copy, M.dspark.markov_w2, (size_t)V * r * sizeof *copy);
            for (int i = 0; i < r; i++) copy[(size_t)42 * r + i] = f32_to_bf16(INFINITY);
            d.markov_w2 = copy;
        }
        sg_backend *be = cpu_backend_create();
        sg_engine *e;
        engine_options o = ef_hedged();
        ck_assert_int_eq(engine_create(be, &t, &d, &o, &e), SG_OK);
        ck_assert_int_eq(engine_submit(e, &req, NULL), SG_OK);
        ck_assert_int_eq(engine_run(e), SG_EXIT_FAIL);
        ck_assert_msg(strstr(sg_error(), "nan-req") && strstr(sg_error(), "position") &&
                          strstr(sg_error(), where ? "drafter" : "target logits"),
                      "%s", sg_error());
        ck_assert_int_eq(engine_step(e), SG_EXIT_FAIL);
        engine_destroy(e);
        be->destroy(be);
        free(copy);
    }
}
END_TEST

START_TEST(test_bad_options) {
    sg_backend *be = cpu_backend_create();
    sg_engine *e;
    engine_options o = ef_hedged();
    ck_assert_int_eq(engine_create(be, &M.target, &M.dflash, &o, &e), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "Markov head"));
    ck_assert_int_eq(engine_create(be, &M.target, NULL, &o, &e), SG_EXIT_USAGE);
    o.positions[1] = 0;
    ck_assert_int_eq(engine_create(be, &M.target, &M.dspark, &o, &e), SG_EXIT_USAGE);
    o = ef_hedged();
    o.positions[2] = M.dspark.cfg.block_size; // not below the drafts per round
    ck_assert_int_eq(engine_create(be, &M.target, &M.dspark, &o, &e), SG_EXIT_USAGE);
    o = ef_unhedged();
    o.conf_threshold = 0.5;
    ck_assert_int_eq(engine_create(be, &M.target, &M.dflash, &o, &e), SG_EXIT_USAGE);
    o = ef_unhedged();
    o.max_rows = 7; // one full span of B + 1 = 8 rows does not fit
    ck_assert_int_eq(engine_create(be, &M.target, &M.dspark, &o, &e), SG_EXIT_USAGE);
    o = ef_unhedged();
    o.hedge_auto = 1; // without a cap
    ck_assert_int_eq(engine_create(be, &M.target, &M.dspark, &o, &e), SG_EXIT_USAGE);
    o = ef_unhedged();
    ck_assert_int_eq(engine_create(be, &M.target, &M.dspark, &o, &e), SG_OK);
    const int bad[2] = {1, 100000};
    sg_request r = make_req("bad", bad, 2, 4);
    ck_assert_int_eq(engine_submit(e, &r, NULL), SG_EXIT_USAGE);
    r = make_req("bad", bad, 1, 0);
    ck_assert_int_eq(engine_submit(e, &r, NULL), SG_EXIT_USAGE);
    ck_assert_int_eq(engine_n_requests(e), 0);
    engine_destroy(e);
    be->destroy(be);
}
END_TEST

int main(void) {
    Suite *s = suite_create("engine_edges");
    TCase *tc = tcase_create("edges");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_stops_everywhere);
    tcase_add_test(tc, test_stop_in_discarded_chain_suffix);
    tcase_add_test(tc, test_short_requests);
    tcase_add_test(tc, test_pool_waits_and_rejects);
    tcase_add_test(tc, test_headroom_boundary);
    tcase_add_test(tc, test_capacity_limits);
    tcase_add_test(tc, test_nan_is_hard_error);
    tcase_add_test(tc, test_bad_options);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
