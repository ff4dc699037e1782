// tests/test_engine_vs_ref.c: the engine (engine/engine.c on the CPU backend) against the oracle
// ref/ on the tiny fixture set (and the small set when it has been generated):
// - every request of every workload: the engine's tokens equal ref_generate's (greedy and
//   sampled); requests the workload expects rejected are rejected with a reason, the others run;
// - hedged (H_cap 8, P 0,1,2), unhedged and plain runs give identical tokens and digests;
// - a request decoded alone gives exactly ref_simulate's counters, hedge on and off, with the
//   DSpark drafter (anchor-first), its anchor-drop override, the DFlash drafter, and a confidence
//   threshold; the hedge gate sees hedged rounds, chain wins and loss rounds.
// ctest-labels: cpu;unit
#include <string.h>

#include "common/counters.h"
#include "engine_fixture.h"
#include "ref/simulate.h"

static ef_models M;

static void setup_tiny(void) { ef_open_set(&M, "tiny"); }
static void setup_small(void) { ef_open_set(&M, "small"); }
static void teardown(void) { ef_close(&M); }

// Runs a workload hedged, unhedged and plain; checks each request against ref/.
static void check_suite(const ef_models *m, const char *suite, int pool_pages, int *waited,
                        spec_counters *hedged_total) {
    sg_workload w;
    ef_workload(m, suite, &w);
    engine_options oh = ef_hedged(), ou = ef_unhedged(), op = ef_unhedged();
    op.plain = 1;
    oh.pool_pages = ou.pool_pages = op.pool_pages = pool_pages;
    sg_backend *bh, *bu, *bp;
    sg_engine *eh = ef_run(m, &m->dspark, &oh, &w, 0, -1, &bh);
    sg_engine *eu = ef_run(m, &m->dspark, &ou, &w, 0, -1, &bu);
    sg_engine *ep = ef_run(m, &m->dspark, &op, &w, 0, -1, &bp);
    ef_same_results(eh, eu, EF_DIGESTS, suite);
    ef_same_results(eh, ep, EF_DIGESTS, suite);
    for (int i = 0; i < w.n_requests; i++) {
        const sg_request *r = &w.requests[i];
        engine_result x;
        engine_result_of(eh, i, &x);
        *waited += x.waited;
        if (r->expect_rejected) {
            ck_assert_msg(x.status == ENGINE_REJECTED && x.reason[0], "%s/%s: not rejected",
                          suite, r->id);
            continue;
        }
        ck_assert_msg(x.status == ENGINE_DONE, "%s/%s: status %d (%s)", suite, r->id, x.status,
                      x.reason);
        ref_output ro;
        ef_ref(m, NULL, r, &ro);
        ck_assert_msg(ro.n_generated == x.n_generated &&
                          memcmp(ro.tokens + ro.n_prompt, x.tokens,
                                 sizeof(int) * x.n_generated) == 0,
                      "%s/%s: engine tokens differ from ref/", suite, r->id);
        ck_assert_int_eq((int)ro.reason + 1, (int)x.stop); // STOP_MAX_NEW.. = ENGINE_STOP_MAX_NEW..
        ref_output_free(&ro);
        ck_assert_msg(counters_check(&x.counters, x.n_generated) == SG_OK, "%s/%s: %s", suite,
                      r->id, sg_error());
        counters_add(hedged_total, &x.counters);
        engine_result p;
        engine_result_of(ep, i, &p);
        ck_assert_int_eq(p.counters.rounds, p.n_generated - 1); // plain: one token per round
    }
    ef_free(eh, bh);
    ef_free(eu, bu);
    ef_free(ep, bp);
    workload_free(&w);
}

START_TEST(test_workloads_match_ref) {
    static const char *suites[] = {"sequential", "concurrent", "capture_shape", "draft_headroom"};
    spec_counters total = {0};
    int waited = 0;
    for (int s = 0; s < 4; s++) check_suite(&M, suites[s], 0, &waited, &total);
    ck_assert_int_eq(waited, 0);
    // A pool of 12 pages of 16: the largest request fits, not all at once; requests wait.
    check_suite(&M, "tiny_pool", 12, &waited, &total);
    ck_assert_int_gt(waited, 0);
    // The hedge gate on the fixture: hedged rounds, chain wins (copy-back ran), loss rounds.
    ck_assert_int_gt(total.hedged_rounds, 0);
    ck_assert_int_gt(total.chain_wins, 0);
    ck_assert_int_gt(total.loss_rounds, 0);
    ck_assert_int_eq(total.chains_dropped_capacity, 0);
    ck_assert_msg(counters_check(&total, -1) == SG_OK, "%s", sg_error());
}
END_TEST

// One request alone through the engine and through ref_simulate: equal counters.
static void alone_vs_sim(const ef_models *m, const drafter_model *d, const sg_workload *w, int i,
                         const engine_options *o, int layout) {
    const sg_request *r = &w->requests[i];
    sg_backend *be;
    sg_engine *e = ef_run(m, d, o, w, i, i + 1, &be);
    engine_result x;
    engine_result_of(e, 0, &x);
    ref_output ro;
    ef_ref(m, r->temperature > 0 ? NULL : d, r, &ro);
    ref_sim_options so = {.hedge_cap = o->hedge_cap, .n_positions = o->n_positions,
                          .chains = o->chains < 0 ? o->n_positions : o->chains,
                          .conf_threshold = o->conf_threshold, .layout = layout};
    memcpy(so.positions, o->positions, sizeof(int) * (size_t)o->n_positions);
    ref_sim_result sim;
    ck_assert_msg(ref_simulate(&m->target, d, &ro, r->max_new_tokens, r->temperature, &so,
                               &sim) == SG_OK, "%s", sg_error());
    char a[512], b[512];
    counters_format(&x.counters, a, sizeof a);
    counters_format(&sim.counters, b, sizeof b);
    ck_assert_msg(counters_equal(&x.counters, &sim.counters),
                  "request %s (hedge %d, layout %d, conf %g): engine %s\n simulator %s", r->id,
                  o->hedge_cap, layout, o->conf_threshold, a, b);
    ref_sim_result_free(&sim);
    ref_output_free(&ro);
    ef_free(e, be);
}

START_TEST(test_alone_matches_simulator) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    engine_options hedged = ef_hedged(), plain = ef_unhedged(), drop = ef_hedged();
    drop.layout = LAYOUT_ANCHOR_DROP;
    engine_options drop_off = ef_unhedged();
    drop_off.layout = LAYOUT_ANCHOR_DROP;
    engine_options conf = ef_hedged();
    conf.conf_threshold = 0.5;
    for (int i = 0; i < w.n_requests; i++) {
        alone_vs_sim(&M, &M.dspark, &w, i, &hedged, -1);
        alone_vs_sim(&M, &M.dspark, &w, i, &plain, -1);
        alone_vs_sim(&M, &M.dspark, &w, i, &drop, LAYOUT_ANCHOR_DROP);
        alone_vs_sim(&M, &M.dspark, &w, i, &drop_off, LAYOUT_ANCHOR_DROP);
        alone_vs_sim(&M, &M.dspark, &w, i, &conf, -1);
        alone_vs_sim(&M, &M.dflash, &w, i, &plain, -1);
    }
    workload_free(&w);
    // The concurrent suite's requests alone (stop ids, a sampled request, clamped budgets).
    ef_workload(&M, "concurrent", &w);
    for (int i = 0; i < w.n_requests; i++) alone_vs_sim(&M, &M.dspark, &w, i, &hedged, -1);
    workload_free(&w);
}
END_TEST

int main(void) {
    Suite *s = suite_create("engine_vs_ref");
    // Both fixture sets: the committed tiny one and the small one generated at build time.
    void (*setups[])(void) = {setup_tiny, setup_small};
    const char *names[] = {"tiny", "small"};
    for (int i = 0; i < 2; i++) {
        TCase *tc = tcase_create(names[i]);
        tcase_add_checked_fixture(tc, setups[i], teardown);
        tcase_set_timeout(tc, 600);
        tcase_add_test(tc, test_workloads_match_ref);
        tcase_add_test(tc, test_alone_matches_simulator);
        suite_add_tcase(s, tc);
    }
    return tu_run(s);
}
