// tests/test_engine_rounds.c: batch and path invariance and determinism of the engine's rounds on
// the CPU backend, checked through the per-position digests (tiny fixture):
// - a request's digests are equal alone and inside the concurrent workload's mixed batches
//   (greedy spans, chain spans, sampled one-row spans, prefills of arriving requests);
// - prefill chunking and drafter context chunking (max_rows 16) change nothing;
// - a position's logits and taps are equal from a verify span and from a prefill (a second
//   request whose prompt is the first's prompt plus part of its output);
// - reruns give equal counters; the auto controller (fake clock) decodes the same tokens and
//   digests, books windows, and is deterministic.
// ctest-labels: cpu;unit
#include <string.h>

#include "engine_fixture.h"

static ef_models M;
static void setup(void) { ef_open_set(&M, "tiny"); }
static void teardown(void) { ef_close(&M); }

static void assert_same_request(sg_engine *a, int ia, sg_engine *b, int ib, const char *what) {
    engine_result x, y;
    engine_result_of(a, ia, &x);
    engine_result_of(b, ib, &y);
    ck_assert_msg(x.n_generated == y.n_generated &&
                      memcmp(x.tokens, y.tokens, sizeof(int) * x.n_generated) == 0 &&
                      memcmp(x.digest_logits, y.digest_logits, 8 * (size_t)x.n_generated) == 0 &&
                      memcmp(x.digest_taps, y.digest_taps, 8 * (size_t)x.n_generated) == 0,
                  "%s: request %d differs", what, ia);
}

START_TEST(test_alone_equals_batched) {
    sg_workload w;
    ef_workload(&M, "concurrent", &w);
    engine_options o = ef_hedged();
    sg_backend *bb;
    sg_engine *all = ef_run(&M, &M.dspark, &o, &w, 0, -1, &bb);
    for (int i = 0; i < w.n_requests; i++) {
        sg_backend *be;
        sg_engine *one = ef_run(&M, &M.dspark, &o, &w, i, i + 1, &be);
        assert_same_request(all, i, one, 0, "alone vs batched");
        ef_free(one, be);
    }
    // Chunked prefill (prompts up to 60 rows in forwards of 16) and chunked drafter context.
    engine_options small = o;
    small.max_rows = 16;
    small.max_seqs = 2;
    sg_backend *bs;
    sg_engine *chunked = ef_run(&M, &M.dspark, &small, &w, 0, -1, &bs);
    for (int i = 0; i < w.n_requests; i++) assert_same_request(all, i, chunked, i, "chunked");
    // Determinism: a rerun gives the same counters.
    sg_backend *br;
    sg_engine *again = ef_run(&M, &M.dspark, &o, &w, 0, -1, &br);
    for (int i = 0; i < w.n_requests; i++) {
        engine_result x, y;
        engine_result_of(all, i, &x);
        engine_result_of(again, i, &y);
        ck_assert(counters_equal(&x.counters, &y.counters));
        assert_same_request(all, i, again, i, "rerun");
    }
    ef_free(again, br);
    ef_free(chunked, bs);
    ef_free(all, bb);
    workload_free(&w);
}
END_TEST

// Request X decodes 40 tokens (verify spans); request Y's prompt is X's prompt plus X's first 20
// generated tokens, so Y's prefill recomputes those positions: Y's first token has the digest of
// X's token 20, and Y's later tokens X's later ones.
START_TEST(test_prefill_equals_span) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    sg_request x = w.requests[2];
    x.max_new_tokens = 40;
    engine_options o = ef_hedged();
    sg_workload wx = {.requests = &x, .n_requests = 1};
    sg_backend *bx;
    sg_engine *ex = ef_run(&M, &M.dspark, &o, &wx, 0, 1, &bx);
    engine_result rx;
    engine_result_of(ex, 0, &rx);
    ck_assert_int_eq(rx.n_generated, 40);
    int k = 20, prompt[128];
    memcpy(prompt, x.prompt, sizeof(int) * (size_t)x.n_prompt);
    memcpy(prompt + x.n_prompt, rx.tokens, sizeof(int) * (size_t)k);
    sg_request y = x;
    y.prompt = prompt;
    y.n_prompt = x.n_prompt + k;
    y.max_new_tokens = 40 - k;
    sg_workload wy = {.requests = &y, .n_requests = 1};
    sg_backend *by;
    sg_engine *ey = ef_run(&M, &M.dspark, &o, &wy, 0, 1, &by);
    engine_result ry;
    engine_result_of(ey, 0, &ry);
    ck_assert_int_eq(ry.n_generated, 40 - k);
    ck_assert_int_eq(memcmp(ry.tokens, rx.tokens + k, sizeof(int) * (size_t)(40 - k)), 0);
    ck_assert_int_eq(memcmp(ry.digest_logits, rx.digest_logits + k, 8 * (size_t)(40 - k)), 0);
    ck_assert_int_eq(memcmp(ry.digest_taps, rx.digest_taps + k, 8 * (size_t)(40 - k)), 0);
    ck_assert(rx.digest_logits[k] != rx.digest_logits[k + 1]);
    ef_free(ey, by);
    ef_free(ex, bx);
    workload_free(&w);
}
END_TEST

static double fake_now;
static double fake_clock(void *ctx) {
    (void)ctx;
    fake_now += 0.001; // every reading advances 1 ms: deterministic
    return fake_now;
}

START_TEST(test_auto_mode) {
    sg_workload w;
    ef_workload(&M, "tiny_pool", &w);
    engine_options o = ef_hedged(), u = ef_unhedged();
    o.hedge_auto = 1;
    o.clock = fake_clock;
    o.pool_pages = u.pool_pages = 12; // requests wait: more than 64 rounds
    sg_backend *b1, *b2, *bu;
    fake_now = 0;
    sg_engine *e1 = ef_run(&M, &M.dspark, &o, &w, 0, -1, &b1);
    fake_now = 0;
    sg_engine *e2 = ef_run(&M, &M.dspark, &o, &w, 0, -1, &b2);
    sg_engine *eu = ef_run(&M, &M.dspark, &u, &w, 0, -1, &bu);
    const auto_controller *a = engine_auto(e1);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_null(engine_auto(eu));
    ck_assert_int_ge(a->windows_done, 1); // 72 rounds: C = 0's first window was booked
    ck_assert_int_eq(a->hist[0].n, 1);
    spec_counters t1, t2;
    engine_counters_total(e1, &t1);
    engine_counters_total(e2, &t2);
    ck_assert(counters_equal(&t1, &t2));
    ck_assert_int_gt(t1.hedged_rounds, 0); // C = 1 ran after the first window
    for (int i = 0; i < w.n_requests; i++) assert_same_request(e1, i, eu, i, "auto vs unhedged");
    ef_free(e1, b1);
    ef_free(e2, b2);
    ef_free(eu, bu);
    workload_free(&w);
}
END_TEST

int main(void) {
    Suite *s = suite_create("engine_rounds");
    TCase *tc = tcase_create("invariance");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_alone_equals_batched);
    tcase_add_test(tc, test_prefill_equals_span);
    tcase_add_test(tc, test_auto_mode);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
