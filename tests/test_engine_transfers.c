// tests/test_engine_transfers.c: the device-to-host copies of the engine's rounds (engine.h,
// engine_transfer_stats) on the CPU backend, seen from both sides: the engine's own record and a
// counting wrapper around the backend's download. Every round makes exactly ONE copy of the
// drafted span tokens (chain A and every ladder; none when no request drafts) and ONE copy of the
// verify results (ids and digests of every row), with the bytes those hold; the confidence cut's
// hidden rows and the sampled requests' logits rows are copied only when used; a step without
// admissions makes no other copy. Every prefill forward that ends a prompt makes exactly ONE copy
// of its results (ids and logits digests of the prompts it ends, tap digests of every row), in its
// own record (engine_transfers.prefill), and one more per sampled request only; with the rounds'
// copies these are all the backend sees. Tokens and digests are those of an unwrapped run.
// ctest-labels: cpu;unit
#include <string.h>

#include "engine_fixture.h"

static ef_models M;
static void setup(void) { ef_open_set(&M, "tiny"); }
static void teardown(void) { ef_close(&M); }

// The counting wrapper: the CPU backend's table with download counted (ctx stays the CPU's).
static void (*cpu_download)(void *ctx, void *dst, const void *src, size_t bytes);
static int64_t be_copies, be_bytes;

static void counting_download(void *ctx, void *dst, const void *src, size_t bytes) {
    be_copies++;
    be_bytes += (int64_t)bytes;
    cpu_download(ctx, dst, src, bytes);
}

typedef struct {
    int n_generated;
    spec_counters c;
} snap;

static void take(sg_engine *e, snap *s) {
    for (int i = 0; i < engine_n_requests(e); i++) {
        engine_result r;
        engine_result_of(e, i, &r);
        s[i] = (snap){.n_generated = r.n_generated, .c = r.counters};
    }
}

// What one step's round must have copied, from the requests' counters before and after it;
// *ran: a round ran; *ladders: ladders built in it.
static void expected_round(const sg_workload *w, const drafter_model *d, const engine_options *o,
                           const snap *pre, const snap *post, engine_d2h *x, int *ran,
                           int64_t *ladders) {
    memset(x, 0, sizeof *x);
    int speculate = d && !o->plain, B = d ? d->cfg.block_size : 0;
    int n_drafts = d && d->cfg.layout == LAYOUT_ANCHOR_FIRST ? B : B - 1;
    int64_t rows = 0, n_draft = 0, V = M.target.cfg.vocab_size;
    *ran = 0;
    *ladders = 0;
    for (int i = 0; i < w->n_requests; i++) {
        const spec_counters *a = &pre[i].c, *b = &post[i].c;
        if (b->rounds == a->rounds) continue;
        *ran = 1;
        const sg_request *r = &w->requests[i];
        int64_t before = post[i].n_generated - (b->emitted - a->emitted); // generated at the round
        int64_t len = b->drafted - a->drafted, rem = r->max_new_tokens - before;
        rows += (len + 1) * (1 + (b->chain_spans - a->chain_spans));
        *ladders += b->chains_built - a->chains_built;
        if (speculate && r->temperature == 0.0 && (rem - 1 < n_drafts ? rem - 1 : n_drafts) > 0)
            n_draft++;
        if (r->temperature > 0.0) {
            x->copies[ENGINE_D2H_SAMPLED]++;
            x->bytes[ENGINE_D2H_SAMPLED] += V * (int64_t)sizeof(float);
        }
    }
    if (!*ran) return;
    x->copies[ENGINE_D2H_RESULTS] = 1;
    x->bytes[ENGINE_D2H_RESULTS] = rows * (int64_t)((d ? 2 : 1) * sizeof(uint64_t) + 4);
    if (n_draft > 0) {
        x->copies[ENGINE_D2H_SPANS] = 1;
        x->bytes[ENGINE_D2H_SPANS] = (n_draft + *ladders) * (B + 1) * (int64_t)sizeof(int32_t);
        if (o->conf_threshold > 0.0) {
            x->copies[ENGINE_D2H_CONF] = 1;
            x->bytes[ENGINE_D2H_CONF] =
                n_draft * B * M.target.cfg.hidden_size * (int64_t)sizeof(bf16);
        }
    }
}

typedef struct {
    int rounds, hedged, sampled, admitting, chunked;
} seen;

// Checks the prefill record's growth (from `was` to `now`) in a step that admitted n_adm requests
// (n_samp sampled) with P prompt rows in all, R rows a forward. Greedy packing fills forwards to R
// rows, so there are ⌈P/R⌉; each ending a prompt makes ONE results copy. Its size is exact when one
// forward holds every prompt or one request is alone: then only the last forward ends a prompt.
// Returns the forwards run.
static int64_t check_prefill(const engine_transfers *was, const engine_transfers *now, int taps,
                             int64_t n_adm, int64_t n_samp, int64_t P, int64_t R, int64_t V) {
    int64_t fwd = (P + R - 1) / R, dc[ENGINE_D2H_KINDS], db[ENGINE_D2H_KINDS];
    for (int k = 0; k < ENGINE_D2H_KINDS; k++) {
        dc[k] = now->prefill.copies[k] - was->prefill.copies[k];
        db[k] = now->prefill.bytes[k] - was->prefill.bytes[k];
        if (k != ENGINE_D2H_PREFILL && k != ENGINE_D2H_SAMPLED) ck_assert_int_eq(dc[k], 0);
    }
    ck_assert_int_eq(now->prefills - was->prefills, fwd);
    ck_assert_int_eq(dc[ENGINE_D2H_SAMPLED], n_samp);
    ck_assert_int_eq(db[ENGINE_D2H_SAMPLED], n_samp * V * (int64_t)sizeof(float));
    ck_assert_int_ge(dc[ENGINE_D2H_PREFILL], 1);
    ck_assert_int_le(dc[ENGINE_D2H_PREFILL], fwd < n_adm ? fwd : n_adm);
    if (fwd == 1 || n_adm == 1) {
        int64_t last_rows = P - (fwd - 1) * R;
        ck_assert_int_eq(dc[ENGINE_D2H_PREFILL], 1);
        ck_assert_int_eq(db[ENGINE_D2H_PREFILL],
                         n_adm * (int64_t)(sizeof(uint64_t) + sizeof(int32_t)) +
                             (taps ? last_rows * (int64_t)sizeof(uint64_t) : 0));
    }
    return fwd;
}

// Runs w step by step on the counting backend, checking every round's record; then compares the
// tokens and digests with an unwrapped run.
static seen run_checked(const sg_workload *w, const drafter_model *d, const engine_options *o) {
    sg_backend *cpu = cpu_backend_create();
    sg_backend view = *cpu;
    cpu_download = cpu->download;
    view.download = counting_download;
    sg_engine *e = NULL;
    ck_assert_msg(engine_create(&view, &M.target, d, o, &e) == SG_OK, "%s", sg_error());
    for (int i = 0; i < w->n_requests; i++)
        ck_assert_msg(engine_submit(e, &w->requests[i], NULL) == SG_OK, "%s", sg_error());
    snap *pre = sg_calloc((size_t)w->n_requests, sizeof *pre);
    snap *post = sg_calloc((size_t)w->n_requests, sizeof *post);
    engine_d2h sum = {0};
    seen n = {0};
    int64_t R = o->max_rows ? o->max_rows : ENGINE_DEFAULT_MAX_ROWS;
    engine_transfers t;
    engine_transfer_stats(e, &t);
    while (!engine_finished(e)) {
        int step = engine_steps(e);
        take(e, pre);
        int64_t c0 = be_copies, b0 = be_bytes;
        engine_transfers was = t;
        ck_assert_msg(engine_step(e) == SG_OK, "%s", sg_error());
        take(e, post);
        engine_transfer_stats(e, &t);
        engine_d2h want;
        int ran, admitted = 0;
        int64_t ladders, n_adm = 0, n_samp = 0, P = 0;
        expected_round(w, d, o, pre, post, &want, &ran, &ladders);
        for (int i = 0; i < w->n_requests; i++) {
            engine_result r;
            engine_result_of(e, i, &r);
            if (r.admitted_step != step) continue;
            admitted = 1;
            n_adm++;
            n_samp += w->requests[i].temperature > 0.0;
            P += w->requests[i].n_prompt;
        }
        // The prefill's copies, then the round's, are every copy the backend saw in the step.
        int64_t pre_copies = engine_d2h_copies(&t.prefill) - engine_d2h_copies(&was.prefill);
        int64_t pre_bytes = 0;
        for (int k = 0; k < ENGINE_D2H_KINDS; k++)
            pre_bytes += t.prefill.bytes[k] - was.prefill.bytes[k];
        if (admitted) {
            n.chunked += check_prefill(&was, &t, d != NULL, n_adm, n_samp, P, R,
                                       M.target.cfg.vocab_size) > 1;
        } else {
            ck_assert_int_eq(t.prefills, was.prefills);
            ck_assert_int_eq(pre_copies, 0);
        }
        if (!ran) {
            ck_assert_int_eq(be_copies - c0, pre_copies);
            continue;
        }
        n.rounds++;
        ck_assert_int_eq(t.rounds, n.rounds);
        for (int k = 0; k < ENGINE_D2H_KINDS; k++) {
            ck_assert_msg(t.last.copies[k] == want.copies[k] && t.last.bytes[k] == want.bytes[k],
                          "step %d, kind %d: %lld copies of %lld bytes, want %lld of %lld", step,
                          k, (long long)t.last.copies[k], (long long)t.last.bytes[k],
                          (long long)want.copies[k], (long long)want.bytes[k]);
            sum.copies[k] += want.copies[k];
            sum.bytes[k] += want.bytes[k];
        }
        ck_assert_int_le(t.last.copies[ENGINE_D2H_SPANS], 1);
        ck_assert_int_eq(t.last.copies[ENGINE_D2H_RESULTS], 1);
        int64_t round_bytes = 0;
        for (int k = 0; k < ENGINE_D2H_KINDS; k++) round_bytes += t.last.bytes[k];
        ck_assert_int_eq(be_copies - c0, pre_copies + engine_d2h_copies(&t.last));
        ck_assert_int_eq(be_bytes - b0, pre_bytes + round_bytes);
        n.admitting += admitted;
        n.hedged += ladders > 0;
        n.sampled += want.copies[ENGINE_D2H_SAMPLED] > 0;
    }
    engine_transfer_stats(e, &t);
    ck_assert(memcmp(&t.total, &sum, sizeof sum) == 0);
    // One results copy per prefill forward at most, and at least one.
    ck_assert_int_le(t.prefill.copies[ENGINE_D2H_PREFILL], t.prefills);
    ck_assert_int_ge(t.prefill.copies[ENGINE_D2H_PREFILL], 1);
    ck_assert_int_ge(t.prefills, 1);
    // The same tokens and digests as a run on the plain CPU backend.
    sg_backend *bp;
    sg_engine *ep = ef_run(&M, d, o, w, 0, -1, &bp);
    for (int i = 0; i < w->n_requests; i++) {
        engine_result x, y;
        engine_result_of(e, i, &x);
        engine_result_of(ep, i, &y);
        ck_assert_int_eq(x.n_generated, y.n_generated);
        ck_assert(engine_digest_summary(&x) == engine_digest_summary(&y));
    }
    ef_free(ep, bp);
    free(pre);
    free(post);
    engine_destroy(e);
    cpu->destroy(cpu);
    return n;
}

// Hedged greedy requests, a sampled one and arrivals: one span copy holds chain A and every
// ladder, one result copy every row; the sampled request's row comes alone.
START_TEST(test_hedged_rounds) {
    sg_workload w;
    ef_workload(&M, "concurrent", &w);
    engine_options o = ef_hedged();
    seen n = run_checked(&w, &M.dspark, &o);
    ck_assert_int_gt(n.rounds, 10);
    ck_assert_int_gt(n.hedged, 0);
    ck_assert_int_gt(n.sampled, 0);
    ck_assert_int_gt(n.admitting, 0);
    ck_assert_int_gt(n.rounds, n.admitting);
    workload_free(&w);
}
END_TEST

// The confidence cut adds one copy of the hidden rows per drafting round, and nothing else.
START_TEST(test_confidence_rounds) {
    sg_workload w;
    ef_workload(&M, "sequential", &w);
    engine_options o = ef_hedged();
    o.conf_threshold = 0.5;
    seen n = run_checked(&w, &M.dspark, &o);
    ck_assert_int_gt(n.rounds, 5);
    workload_free(&w);
}
END_TEST

// Without drafting there is no span copy: one result copy per round (12 bytes a row without
// taps, 20 with the drafter's taps recorded under plain).
START_TEST(test_plain_rounds) {
    sg_workload w;
    ef_workload(&M, "concurrent", &w);
    engine_options o = ef_unhedged();
    seen n = run_checked(&w, NULL, &o);
    ck_assert_int_gt(n.rounds, 10);
    o.max_rows = 16; // prompts prefilled in chunks: several forwards, fewer ending a prompt
    n = run_checked(&w, NULL, &o);
    ck_assert_int_gt(n.chunked, 0);
    o.max_rows = 0;
    o.plain = 1;
    n = run_checked(&w, &M.dspark, &o);
    ck_assert_int_gt(n.rounds, 10);
    workload_free(&w);
}
END_TEST

int main(void) {
    Suite *s = suite_create("engine_transfers");
    TCase *tc = tcase_create("transfers");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_hedged_rounds);
    tcase_add_test(tc, test_confidence_rounds);
    tcase_add_test(tc, test_plain_rounds);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
