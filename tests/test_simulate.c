// tests/test_simulate.c: the speculation simulator (ref/simulate.c) on a hand-made drafter whose
// drafts are known in advance, against hand-made truth sequences, with exact counters.
//
// The drafter's backbone weights and the head are zero, so U = 0 and every score row is the Markov
// bias alone. w1 is one-hot (w1[x] = e_x, rank = V), so bias(prev)[v] = w2[v][prev]: the top-1
// successor of x is x+1 (score 4), the runner-up x+5 (score 2), the third x+9 (score 1), all
// mod V; after token 8 the runner-up scores 3.5 (margin 0.5). Chain A from anchor a is a+1, a+2,
// ...; the ladder at P copies a+1 .. a+P, takes (a+P)+5, then continues +1.
// ctest-labels: cpu;unit
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ref/simulate.h"
#include "ref_test_model.h"
#include "testutil.h"

enum { H = 8, NH = 2, NKV = 1, HD = 4, I = 8, V = 32, B = 4, R = V, LOW_CONF = 4 };

typedef struct {
    target_model t;
    drafter_model d;
    layer_weights layer;
    bf16 *zero, *embed, *w1, *w2, *cw;
} toy;

static void toy_build(toy *m) {
    memset(m, 0, sizeof *m);
    qwen3_config c = {.hidden_size = H, .num_hidden_layers = 2, .num_attention_heads = NH,
                      .num_key_value_heads = NKV, .head_dim = HD, .intermediate_size = I,
                      .vocab_size = V, .max_position_embeddings = 128, .rms_norm_eps = 1e-6f,
                      .rope_theta = 10000.0};
    m->zero = sg_calloc((size_t)V * H, sizeof(bf16)); // the largest backbone tensor, all zero
    m->embed = tu_random_bf16((size_t)V * H, 1.0, 1);
    m->t.cfg = c;
    m->t.embed = m->embed;
    m->t.lm_head = m->zero;
    m->t.final_norm = m->zero;
    layer_weights *w = &m->layer;
    w->input_norm = w->post_norm = w->wq = w->wk = w->wv = w->wo = m->zero;
    w->q_norm = w->k_norm = w->w_gate = w->w_up = w->w_down = m->zero;
    drafter_config *dc = &m->d.cfg;
    dc->arch = c;
    dc->arch.num_hidden_layers = 1;
    dc->layout = LAYOUT_ANCHOR_FIRST;
    dc->block_size = B;
    dc->mask_token_id = V - 1;
    dc->n_taps = 1;
    dc->markov_rank = R;
    dc->has_confidence_head = 1;
    dc->confidence_with_markov = 1;
    m->d.fc = m->d.hidden_norm = m->d.final_norm = m->zero;
    m->d.layers = &m->layer;
    m->w1 = sg_calloc((size_t)V * R, sizeof(bf16));
    m->w2 = sg_calloc((size_t)V * R, sizeof(bf16));
    for (int x = 0; x < V; x++) {
        m->w1[x * R + x] = f32_to_bf16(1.0f);
        m->w2[((x + 1) % V) * R + x] = f32_to_bf16(4.0f);
        m->w2[((x + 5) % V) * R + x] = f32_to_bf16(x == 8 ? 3.5f : 2.0f);
        m->w2[((x + 9) % V) * R + x] = f32_to_bf16(1.0f);
    }
    // Confidence sigmoid(cw[H + prev]): high (0.98) except after token LOW_CONF (0.018).
    m->d.conf_width = H + R;
    m->cw = sg_calloc((size_t)(H + R), sizeof(bf16));
    for (int x = 0; x < V; x++) m->cw[H + x] = f32_to_bf16(x == LOW_CONF ? -4.0f : 4.0f);
    m->d.markov_w1 = m->w1;
    m->d.markov_w2 = m->w2;
    m->d.conf_w = m->cw;
}

static void toy_free(toy *m) {
    free(m->zero);
    free(m->embed);
    free(m->w1);
    free(m->w2);
    free(m->cw);
}

// A greedy request: prompt [0], then the generated tokens; taps zero.
static ref_output make_req(const int *gen, int n_gen) {
    ref_output r = {.n_prompt = 1, .n_generated = n_gen, .n_tap_cols = H};
    r.tokens = sg_calloc((size_t)(1 + n_gen), sizeof(int));
    for (int i = 0; i < n_gen; i++) r.tokens[1 + i] = gen[i];
    r.taps = sg_calloc((size_t)n_gen * H, sizeof(float));
    return r;
}

static ref_sim_options no_hedge(void) { return (ref_sim_options){.layout = -1}; }

static ref_sim_options hedge012(void) {
    return (ref_sim_options){.hedge_cap = 8, .positions = {0, 1, 2}, .n_positions = 3,
                             .chains = 3, .layout = -1};
}

// Simulates, checks the counter invariants, returns the result.
static ref_sim_result run(const int *gen, int n_gen, int max_new, const ref_sim_options *o) {
    toy m;
    toy_build(&m);
    ref_output req = make_req(gen, n_gen);
    ref_sim_result r;
    int status = ref_simulate(&m.t, &m.d, &req, max_new, 0.0, o, &r);
    ck_assert_msg(status == SG_OK, "%s", sg_error());
    ck_assert_msg(counters_check(&r.counters, n_gen) == SG_OK, "%s", sg_error());
    free(req.tokens);
    free(req.taps);
    toy_free(&m);
    return r;
}

// rounds, drafted, accepted, bonus, zero-, full-accept.
static void expect_main(const spec_counters *c, int64_t rounds, int64_t drafted, int64_t accepted,
                        int64_t bonus, int64_t zero, int64_t full) {
    ck_assert_int_eq(c->rounds, rounds);
    ck_assert_int_eq(c->drafted, drafted);
    ck_assert_int_eq(c->accepted, accepted);
    ck_assert_int_eq(c->bonus, bonus);
    ck_assert_int_eq(c->zero_accept, zero);
    ck_assert_int_eq(c->full_accept, full);
}

// hedged, chain spans, wins, losses, built, deduped.
static void expect_hedge(const spec_counters *c, int64_t hedged, int64_t spans, int64_t wins,
                         int64_t losses, int64_t built, int64_t deduped) {
    ck_assert_int_eq(c->hedged_rounds, hedged);
    ck_assert_int_eq(c->chain_spans, spans);
    ck_assert_int_eq(c->chain_wins, wins);
    ck_assert_int_eq(c->loss_rounds, losses);
    ck_assert_int_eq(c->chains_built, built);
    ck_assert_int_eq(c->chains_deduped, deduped);
    ck_assert_int_eq(c->chains_dropped_capacity, 0);
}

static const int COUNT11[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

START_TEST(full_accept) {
    ref_sim_options o = no_hedge();
    ref_sim_result r = run(COUNT11, 11, 11, &o);
    // round 1: anchor 1 at 1, drafts 2..5 all right, +6; round 2: anchor 6, drafts 7..10, +11
    expect_main(&r.counters, 2, 8, 8, 2, 0, 2);
    ck_assert_int_eq(r.counters.hist[4], 2);
    expect_hedge(&r.counters, 0, 0, 0, 0, 0, 0);
    ck_assert_int_eq(r.n_rounds, 2);
    ck_assert_int_eq(r.rounds[1].anchor_pos, 6);
    ck_assert_int_eq(r.rounds[1].retained, 5);
    for (int k = 0; k < B; k++) {
        ck_assert_int_eq(r.pos_verified[k], 2);
        ck_assert_int_eq(r.pos_accepted[k], 2);
    }
    ck_assert_int_eq(r.breaks, 0);
    ck_assert_float_eq(r.min_margin_a12, 0.5f); // round 2 drafts after token 8
    ck_assert_float_eq(r.min_margin_a23, 1.0f);
    ck_assert(isinf(r.min_margin_ladder12));
    ref_sim_result_free(&r);
}
END_TEST

// Hedging on a fully accepted request: every ladder verified and beaten by A.
START_TEST(loss_rounds) {
    ref_sim_options o = hedge012();
    ref_sim_result r = run(COUNT11, 11, 11, &o);
    expect_main(&r.counters, 2, 8, 8, 2, 0, 2);
    expect_hedge(&r.counters, 2, 6, 0, 2, 6, 0);
    ck_assert_int_eq(r.rounds[0].winner, 0);
    ck_assert_int_eq(r.rounds[0].chain_spans, 3);
    ck_assert_float_eq(r.min_margin_ladder12, 0.5f); // round 2, ladder at 2 branches after 8
    ck_assert_float_eq(r.min_margin_ladder23, 1.0f);
    ref_sim_result_free(&r);
}
END_TEST

// Nothing accepted; the clamp shrinks the drafts to remaining - 1, down to none.
START_TEST(zero_accept_and_clamp) {
    const int gen[] = {1, 10, 16, 3};
    ref_sim_options o = no_hedge();
    ref_sim_result r = run(gen, 4, 4, &o);
    // remaining 3, 2, 1: drafted 2, 1, 0; each round commits the bonus only
    expect_main(&r.counters, 3, 3, 0, 3, 2, 0);
    ck_assert_int_eq(r.counters.hist[0], 3);
    ck_assert_int_eq(r.rounds[0].drafted, 2);
    ck_assert_int_eq(r.rounds[1].drafted, 1);
    ck_assert_int_eq(r.rounds[2].drafted, 0);
    ck_assert_int_eq(r.breaks, 2);
    ck_assert_int_eq(r.runner_up_right, 0); // runner-ups 6 and 15 are not 10 and 16
    ck_assert_int_eq(r.pos_verified[0], 2);
    ck_assert_int_eq(r.pos_verified[1], 1);
    ck_assert_int_eq(r.pos_accepted[0], 0);
    ref_sim_result_free(&r);
}
END_TEST

// Round 1 breaks at draft 1 where the runner-up 7 is right: the ladder at 1 wins 4 drafts.
// Round 2 (remaining 2): one draft; the ladders at 1 and 2 clamp to A and are deduped.
START_TEST(chain_win_and_dedup) {
    const int gen[] = {1, 2, 7, 8, 9, 10, 11, 12};
    ref_sim_options o = hedge012();
    ref_sim_result r = run(gen, 8, 8, &o);
    expect_main(&r.counters, 2, 5, 5, 2, 0, 2);
    ck_assert_int_eq(r.counters.hist[4], 1);
    ck_assert_int_eq(r.counters.hist[1], 1);
    expect_hedge(&r.counters, 2, 4, 1, 1, 6, 2);
    ck_assert_int_eq(r.rounds[0].n_a, 1);
    ck_assert_int_eq(r.rounds[0].winner, 2); // the ladder at positions[1] = 1
    ck_assert_int_eq(r.rounds[0].n_winner, 4);
    ck_assert_int_eq(r.rounds[0].retained, 5);
    ck_assert_int_eq(r.rounds[1].anchor_pos, 6);
    ck_assert_int_eq(r.rounds[1].drafted, 1);
    ck_assert_int_eq(r.rounds[1].chains_built, 3);
    ck_assert_int_eq(r.rounds[1].chain_spans, 1);
    ck_assert_int_eq(r.rounds[1].winner, 0);
    ck_assert_int_eq(r.breaks, 1);
    ck_assert_int_eq(r.runner_up_right, 1);
    ck_assert_int_eq(r.pos_verified[0], 2);
    ck_assert_int_eq(r.pos_verified[1], 1);
    ck_assert_int_eq(r.pos_accepted[0], 2);
    ck_assert_int_eq(r.pos_accepted[1], 0);
    ref_sim_result_free(&r);
}
END_TEST

// Hedging stops when remaining < 2, and when the first position would not survive the clamp.
START_TEST(eligibility_near_max_new_tokens) {
    ref_sim_options o = hedge012();
    ref_sim_result r = run(COUNT11, 7, 7, &o); // round 2 has remaining 1: no drafts, no chains
    expect_main(&r.counters, 2, 4, 4, 2, 0, 1);
    expect_hedge(&r.counters, 1, 3, 0, 1, 3, 0);
    ck_assert_int_eq(r.rounds[1].drafted, 0);
    ck_assert_int_eq(r.rounds[1].chains_built, 0);
    ref_sim_result_free(&r);

    o = (ref_sim_options){.hedge_cap = 1, .positions = {1, 2}, .n_positions = 2, .chains = 2,
                          .layout = -1};
    r = run(COUNT11, 8, 8, &o); // round 2: remaining 2, P[0] = 1 is not < 1
    expect_main(&r.counters, 2, 5, 5, 2, 0, 2);
    expect_hedge(&r.counters, 1, 2, 0, 1, 2, 0);
    ck_assert_int_eq(r.rounds[1].chains_built, 0);
    ref_sim_result_free(&r);
}
END_TEST

// The truth ends (stop) right after the runner-up: the ladder at 1 would keep 3 tokens but stop
// truncation leaves it 2, equal to A's 2, and A keeps the round.
START_TEST(stop_truncation_per_candidate) {
    const int gen[] = {1, 2, 7};
    ref_sim_options o = hedge012();
    ref_sim_result r = run(gen, 3, 20, &o);
    expect_main(&r.counters, 1, 4, 1, 1, 0, 0);
    expect_hedge(&r.counters, 1, 3, 0, 1, 3, 0);
    ck_assert_int_eq(r.rounds[0].retained, 2);
    ck_assert_int_eq(r.runner_up_right, 1);
    ref_sim_result_free(&r);

    // A accepts all of a truth that stops early: retained = 2 tokens, no bonus, no true token left
    // for a runner-up at the break.
    const int gen2[] = {1, 2, 3};
    r = run(gen2, 3, 20, &o);
    expect_main(&r.counters, 1, 4, 2, 0, 0, 0);
    ck_assert_int_eq(r.counters.hist[2], 1);
    ck_assert_int_eq(r.breaks, 1);
    ck_assert_int_eq(r.runner_up_right, 0);
    ref_sim_result_free(&r);
}
END_TEST

// Equal retained keeps A: the ladders at 1 and 2 also accept exactly one draft.
START_TEST(strictly_longer_rule) {
    const int gen[] = {1, 2, 20, 21, 22, 23, 24, 25, 26, 27};
    ref_sim_options o = hedge012();
    ref_sim_result r = run(gen, 10, 10, &o);
    expect_main(&r.counters, 3, 9, 6, 3, 0, 2);
    expect_hedge(&r.counters, 3, 7, 0, 3, 9, 2);
    ck_assert_int_eq(r.rounds[0].winner, 0);
    ck_assert_int_eq(r.rounds[0].n_winner, 1);
    ck_assert_int_eq(r.rounds[0].retained, 2);
    ck_assert_int_eq(r.runner_up_right, 0);
    ref_sim_result_free(&r);
}
END_TEST

// Drafts after token 4 have confidence 0.018: round 1 (anchor 1) verifies 2, 3, 4 only. A ladder
// is clamped to A's truncated length: the one at 3 equals A in round 1 and is deduped.
START_TEST(confidence_truncation) {
    ref_sim_options o = no_hedge();
    o.conf_threshold = 0.5;
    ref_sim_result r = run(COUNT11, 11, 11, &o);
    expect_main(&r.counters, 3, 7, 7, 3, 0, 2);
    ck_assert_int_eq(r.rounds[0].drafted, 3);
    ck_assert_int_eq(r.rounds[1].anchor_pos, 5);
    ck_assert_int_eq(r.rounds[1].drafted, 4);
    ck_assert_int_eq(r.rounds[2].drafted, 0);
    ref_sim_result_free(&r);

    o = (ref_sim_options){.hedge_cap = 1, .positions = {3}, .n_positions = 1, .chains = 1,
                          .conf_threshold = 0.5, .layout = -1};
    r = run(COUNT11, 11, 11, &o);
    expect_main(&r.counters, 3, 7, 7, 3, 0, 2);
    expect_hedge(&r.counters, 1, 1, 0, 1, 2, 1);
    ck_assert_int_eq(r.rounds[0].chains_built, 1);
    ck_assert_int_eq(r.rounds[0].chain_spans, 0);
    ref_sim_result_free(&r);
}
END_TEST

START_TEST(anchor_drop_layout_override) {
    ref_sim_options o = no_hedge();
    o.layout = LAYOUT_ANCHOR_DROP; // 3 drafts per round
    ref_sim_result r = run(COUNT11, 11, 11, &o);
    expect_main(&r.counters, 3, 7, 7, 3, 0, 3);
    ck_assert_int_eq(r.counters.hist[3], 2);
    ck_assert_int_eq(r.counters.hist[1], 1);
    ck_assert_int_eq(r.pos_verified[3], 0);
    ref_sim_result_free(&r);
}
END_TEST

START_TEST(block_of_one_anchor_first) {
    toy m;
    toy_build(&m);
    m.d.cfg.block_size = 1; // one draft per round
    ref_output req = make_req(COUNT11, 11);
    ref_sim_options o = no_hedge();
    ref_sim_result r;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 11, 0.0, &o, &r), SG_OK);
    ck_assert_int_eq(counters_check(&r.counters, 11), SG_OK);
    expect_main(&r.counters, 5, 5, 5, 5, 0, 5);
    ref_sim_result_free(&r);
    free(req.tokens);
    free(req.taps);
    toy_free(&m);
}
END_TEST

START_TEST(sampled_request_one_token_per_round) {
    toy m;
    toy_build(&m);
    ref_output req = make_req(COUNT11, 5);
    free(req.taps);
    req.taps = NULL;
    ref_sim_options o = hedge012();
    ref_sim_result r;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.7, &o, &r), SG_OK);
    ck_assert_int_eq(counters_check(&r.counters, 5), SG_OK);
    expect_main(&r.counters, 4, 0, 0, 4, 0, 0);
    ck_assert_int_eq(r.counters.hist[0], 4);
    expect_hedge(&r.counters, 0, 0, 0, 0, 0, 0);
    ck_assert_int_eq(r.rounds[3].anchor_pos, 4);
    ref_sim_result_free(&r);
    free(req.tokens);
    toy_free(&m);
}
END_TEST

START_TEST(bad_options_and_requests) {
    toy m;
    toy_build(&m);
    ref_output req = make_req(COUNT11, 5);
    ref_sim_result r;
    ref_sim_options o = hedge012();
    o.positions[2] = 1; // not increasing
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    o = hedge012();
    o.positions[2] = B; // not a draft position
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    o = hedge012();
    o.layout = LAYOUT_ANCHOR_DROP;
    o.positions[2] = B - 1; // a draft position of anchor-first only
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    o = hedge012();
    o.chains = 4;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    o = hedge012();
    o.n_positions = 0;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    o = hedge012();
    o.hedge_cap = 65;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    o = hedge012();
    o.layout = 2;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    o = no_hedge();
    o.conf_threshold = 1.5;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    // hedging needs a Markov head; a threshold needs a confidence head
    o = hedge012();
    m.d.cfg.markov_rank = 0;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "Markov head"));
    m.d.cfg.markov_rank = R;
    m.d.conf_w = NULL;
    o = no_hedge();
    o.conf_threshold = 0.5;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "confidence head"));
    m.d.conf_w = m.cw;
    // more generated tokens than max_new_tokens; taps of the wrong width; a vocabulary mismatch
    o = no_hedge();
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 4, 0.0, &o, &r), SG_EXIT_INPUT);
    req.n_tap_cols = 2 * H;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "target_layer_ids"));
    req.n_tap_cols = H;
    m.t.cfg.vocab_size = V + 1;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_INPUT);
    m.t.cfg.vocab_size = V;
    m.d.cfg.block_size = 1; // anchor-drop: no draft row
    o.layout = LAYOUT_ANCHOR_DROP;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_INPUT);
    ck_assert_ptr_nonnull(strstr(sg_error(), "anchor-drop"));
    m.d.cfg.block_size = B;
    o.layout = -1;
    // a token outside the vocabulary fails its round, with the position named
    req.tokens[3] = V;
    ck_assert_int_eq(ref_simulate(&m.t, &m.d, &req, 8, 0.0, &o, &r), SG_EXIT_USAGE);
    ck_assert_ptr_nonnull(strstr(sg_error(), "anchored at position"));
    free(req.tokens);
    free(req.taps);
    toy_free(&m);
}
END_TEST

// End to end with ref_generate's output (taps recorded with the drafter's layer ids) on random
// models: a tied target mostly repeats its token, and a Markov head biased towards repeating prev
// by 8 competes with U, so rounds accept, break and sometimes win with a ladder. Checks the round
// log's structure against the counters, with hedging off and on.
START_TEST(end_to_end_with_ref_generate) {
    rtm_model tgt, dl;
    rtm_build(&tgt, 1, 100);
    rtm_build(&dl, 0, 200);
    drafter_model d = {0};
    d.cfg.arch = tgt.m.cfg;
    d.cfg.layout = LAYOUT_ANCHOR_FIRST;
    d.cfg.block_size = 5;
    d.cfg.mask_token_id = 63;
    d.cfg.target_layer_ids[0] = 0;
    d.cfg.target_layer_ids[1] = 1;
    d.cfg.n_taps = 2;
    d.cfg.markov_rank = 64;
    d.fc = rtm_random(&dl, 32 * 64, 0.1);
    d.hidden_norm = rtm_norm(&dl, 32);
    d.final_norm = dl.m.final_norm;
    d.layers = dl.m.layers;
    bf16 *w1 = sg_calloc(64 * 64, sizeof *w1), *w2 = sg_calloc(64 * 64, sizeof *w2);
    for (int x = 0; x < 64; x++) {
        w1[x * 64 + x] = f32_to_bf16(1.0f);
        w2[x * 64 + x] = f32_to_bf16(8.0f);
    }
    d.markov_w1 = w1;
    d.markov_w2 = w2;
    const int prompt[] = {3, 17, 40, 9};
    ref_gen_options go = {.max_new_tokens = 40, .tap_ids = d.cfg.target_layer_ids, .n_taps = 2};
    ref_output out;
    ck_assert_int_eq(ref_generate(&tgt.m, prompt, 4, &go, &out), SG_OK);
    for (int hedge = 0; hedge <= 1; hedge++) {
        ref_sim_options o = hedge ? hedge012() : no_hedge();
        ref_sim_result r;
        ck_assert_int_eq(ref_simulate(&tgt.m, &d, &out, 40, 0.0, &o, &r), SG_OK);
        ck_assert_int_eq(counters_check(&r.counters, out.n_generated), SG_OK);
        int p = out.n_prompt;
        for (int i = 0; i < r.n_rounds; i++) {
            const ref_sim_round *x = &r.rounds[i];
            int remaining = 40 - (p + 1 - out.n_prompt);
            ck_assert_int_eq(x->anchor_pos, p);
            ck_assert_int_eq(x->drafted, remaining - 1 < 5 ? remaining - 1 : 5);
            ck_assert_int_le(x->n_a, x->drafted);
            ck_assert_int_eq(x->retained, x->n_winner + 1); // no stop: the bonus always fits
            p += x->retained;
        }
        ck_assert_int_eq(p, out.n_prompt + out.n_generated - 1);
        ck_assert_int_gt(r.counters.accepted, 0);
        ck_assert_int_gt(r.breaks, 0);
        if (hedge) ck_assert_int_gt(r.counters.hedged_rounds, 0);
        ref_sim_result_free(&r);
    }
    ref_output_free(&out);
    free(w1);
    free(w2);
    rtm_free(&tgt);
    rtm_free(&dl);
}
END_TEST

int main(void) {
    Suite *s = suite_create("simulate");
    TCase *tc = tcase_create("simulate");
    tcase_add_test(tc, full_accept);
    tcase_add_test(tc, loss_rounds);
    tcase_add_test(tc, zero_accept_and_clamp);
    tcase_add_test(tc, chain_win_and_dedup);
    tcase_add_test(tc, eligibility_near_max_new_tokens);
    tcase_add_test(tc, stop_truncation_per_candidate);
    tcase_add_test(tc, strictly_longer_rule);
    tcase_add_test(tc, confidence_truncation);
    tcase_add_test(tc, anchor_drop_layout_override);
    tcase_add_test(tc, block_of_one_anchor_first);
    tcase_add_test(tc, sampled_request_one_token_per_round);
    tcase_add_test(tc, bad_options_and_requests);
    tcase_add_test(tc, end_to_end_with_ref_generate);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
