// engine/round.c: one speculative round over the running batch (dspark-spec.md §4-5): hedge
// selection within the verify capacity, drafting (draft.c), one verify forward over all chain-A
// spans in batch order and then the chain spans (scratch pages, first partial page copied in),
// dedup of chains equal to A or an earlier chain, acceptance per span, stop truncation per
// candidate before the winner is chosen (strictly longer wins; ties keep A, then the earlier
// chain), copy-back of a winning chain's pages, commit of tokens and digests, the drafter context
// update and the KV commit; counters by counters_book_round. Also the test hooks of engine.h
// (observers, the draft override and the negative-control faults), inert without options.hooks,
// and the phase timing (engine.h engine_timing: eng_clock; the verify and accept phases, the
// round), inert without options.timing.
// Transfers: every device-to-host copy goes through eng_download and is counted by kind; a round's
// common path is one copy of the span tokens (draft.c) and one of the verify results (verify,
// through eng_results, which the prefill forwards of scheduler.c share).
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "common/sampler.h"
#include "engine_internal.h"

void eng_download(sg_engine *e, engine_d2h_kind kind, void *dst_host, const void *src_dev,
                  size_t bytes) {
    e->be->download(e->be->ctx, dst_host, src_dev, bytes);
    e->xfer_round.copies[kind]++;
    e->xfer_round.bytes[kind] += (int64_t)bytes;
}

void eng_d2h_add(engine_d2h *sum, const engine_d2h *d) {
    for (int k = 0; k < ENGINE_D2H_KINDS; k++) {
        sum->copies[k] += d->copies[k];
        sum->bytes[k] += d->bytes[k];
    }
}

void eng_results(sg_engine *e, engine_d2h_kind kind, int n_logits, int n_taps, uint64_t *host,
                 uint64_t **dl, uint64_t **dt, int32_t **ids) {
    const sg_backend *be = e->be;
    if (!e->tap_w) n_taps = 0;
    SG_CHECK(n_logits <= e->o.max_rows && n_taps <= e->o.max_rows, "results of %d, %d rows",
             n_logits, n_taps);
    size_t n_dig = (size_t)n_logits + n_taps;
    int32_t *ids_dev = (int32_t *)(e->dig + n_dig);
    be->argmax(be->ctx, e->logits, n_logits, e->V, (size_t)e->V, ids_dev);
    be->digest(be->ctx, e->logits, n_logits, e->V, 4, (size_t)e->V * sizeof(float), e->dig);
    if (n_taps > 0)
        be->digest(be->ctx, e->taps, n_taps, e->tap_w, 2, (size_t)e->tap_w * sizeof(bf16),
                   e->dig + n_logits);
    eng_download(e, kind, host, e->dig, n_dig * sizeof(uint64_t) + n_logits * sizeof(int32_t));
    *dl = host;
    *dt = e->tap_w ? host + n_logits : NULL;
    *ids = (int32_t *)(host + n_dig);
}

int64_t eng_clock(const sg_engine *e) {
    eng_sync(e); // flushes recorded ops first (graphs), then waits for the device
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// Starts and ends a round's transfer record (e->xfer_round → e->xfer.last, summed into total).
static void xfer_begin(sg_engine *e) { memset(&e->xfer_round, 0, sizeof e->xfer_round); }

static void xfer_end(sg_engine *e) {
    engine_transfers *x = &e->xfer;
    x->rounds++;
    x->last = e->xfer_round;
    eng_d2h_add(&x->total, &e->xfer_round);
}

int eng_is_stop(const sg_engine *e, const eng_req *r, int token, engine_stop *why) {
    for (int i = 0; i < r->req.n_stop; i++)
        if (r->req.stop[i] == token) {
            if (why) *why = ENGINE_STOP_ID;
            return 1;
        }
    const qwen3_config *c = &e->tm->cfg;
    for (int i = 0; !r->req.ignore_eos && i < c->n_eos; i++)
        if (c->eos_ids[i] == token) {
            if (why) *why = ENGINE_STOP_EOS;
            return 1;
        }
    return 0;
}

// The commit hook: the logits row that chose a token is the row of the current forward whose
// digest the position records (prefill and verify both digest their logits rows into the first
// entries of e->dig, row for row beside e->logits [max_rows, V]; what follows them is never
// reached, since the search stops at the first match), so it is found by that digest.
static void hook_commit(sg_engine *e, const eng_req *r, int token, uint64_t dig_logits) {
    int R = e->o.max_rows, at = 0;
    uint64_t *dig = sg_calloc((size_t)R, sizeof *dig);
    eng_download(e, ENGINE_D2H_HOOKS, dig, e->dig, (size_t)R * sizeof *dig);
    while (at < R && dig[at] != dig_logits) at++;
    SG_CHECK(at < R, "request %s: no logits row with the committed digest", r->req.id);
    float *row = sg_calloc((size_t)e->V, sizeof *row);
    eng_download(e, ENGINE_D2H_HOOKS, row, e->logits + (size_t)at * e->V,
                 (size_t)e->V * sizeof *row);
    e->o.hooks->commit(e->o.hooks->ctx, (int)(r - e->reqs), r->n_generated, token, row, e->V);
    free(row);
    free(dig);
}

// Negates n bf16 values at device address x (a fault's corruption).
static void negate_rows(sg_engine *e, bf16 *x, size_t n) {
    bf16 *h = sg_calloc(n, sizeof *h);
    eng_download(e, ENGINE_D2H_HOOKS, h, x, n * sizeof *h);
    for (size_t i = 0; i < n; i++) h[i] ^= 0x8000;
    e->be->upload(e->be->ctx, x, h, n * sizeof *h);
    free(h);
}

// ENGINE_FAULT_CORRUPT_KV: negates the K and V rows of committed position pos in every layer.
static void corrupt_kv_row(sg_engine *e, const eng_req *r, int pos) {
    const kv_cache *kc = &e->kc;
    int ps = kc->page_size;
    size_t at = ((size_t)kv_pages_table(&e->kp, r->seq)[pos / ps] * ps + pos % ps) * kc->kv_dim;
    for (int l = 0; l < kc->n_layers; l++) {
        negate_rows(e, kv_cache_k(kc, l) + at, (size_t)kc->kv_dim);
        negate_rows(e, kv_cache_v(kc, l) + at, (size_t)kc->kv_dim);
    }
}

static int fault_is(const sg_engine *e, engine_fault f) {
    return e->o.hooks && e->o.hooks->fault == f;
}

int eng_commit_token(sg_engine *e, eng_req *r, int token, uint64_t dig_logits, uint64_t dig_taps) {
    SG_CHECK(r->n_generated < r->req.max_new_tokens, "request %s past max_new_tokens", r->req.id);
    if (e->o.hooks && e->o.hooks->commit) hook_commit(e, r, token, dig_logits);
    r->dig_logits[r->n_generated] = dig_logits;
    r->dig_taps[r->n_generated] = dig_taps;
    r->tokens[r->req.n_prompt + r->n_generated++] = token;
    engine_stop why;
    if (eng_is_stop(e, r, token, &why)) r->stop = why;
    else if (r->n_generated == r->req.max_new_tokens) r->stop = ENGINE_STOP_MAX_NEW;
    return r->stop != ENGINE_STOP_NONE;
}

// One verified span of a request: chain A (chain -1) or ladder j, `len` drafts after the anchor.
typedef struct {
    int req;    // request index
    int row;    // first row in the verify batch
    int len;    // drafts (rows = len + 1)
    int chain;  // -1: chain A; else the ladder index j
    int slot;   // chain slot (ladders)
    const int32_t *drafts; // [len]
} span;

// The candidate of a span: accepted drafts n, then the bonus token, cut after the first stop token
// and at the request's remaining budget. Returns retained; *n_acc = n.
static int candidate(const sg_engine *e, const eng_req *r, const span *s, const int32_t *ids,
                     int *n_acc) {
    int n = 0;
    while (n < s->len && s->drafts[n] == ids[s->row + n]) n++;
    *n_acc = n;
    int retained = eng_min(n + 1, eng_remaining(r));
    for (int k = 0; k < retained; k++)
        if (eng_is_stop(e, r, k < n ? s->drafts[k] : ids[s->row + n], NULL)) return k + 1;
    return retained;
}

// Hedge selection (dspark-spec.md §5.1, §5.3): eligible greedy requests in batch order, at most
// min(H_cap, ⌊(max_spans − N)/C⌋, ⌊(max_rows − rows_a)/(C·(B+1))⌋, ⌊slots/C⌋).
static int select_hedged(const sg_engine *e, const int *dreq, int n_draft, int n_spans,
                         int rows_a, int *hedge) {
    int C = e->n_chains;
    memset(hedge, 0, (size_t)(n_draft > 0 ? n_draft : 1) * sizeof *hedge);
    if (C == 0 || e->o.hedge_cap == 0) return 0;
    int limit = e->o.hedge_cap;
    limit = eng_min(limit, (e->o.max_spans - n_spans) / C);
    limit = eng_min(limit, (e->o.max_rows - rows_a) / (C * (e->B + 1)));
    limit = eng_min(limit, e->chain_slots / C);
    int n = 0;
    for (int i = 0; i < n_draft && n < limit; i++) {
        const eng_req *r = &e->reqs[dreq[i]];
        int rem = eng_remaining(r);
        if (rem >= 2 && e->o.positions[0] < eng_min(e->n_drafts, rem - 1)) {
            hedge[i] = 1;
            n++;
        }
    }
    return n;
}

typedef struct {
    int n_run, n_draft, rows, n_spans;
    int *run;             // running requests (batch order)
    int *dreq, *hedge;    // drafting requests, hedge flags
    eng_draft_req *drafts;
    int32_t *host_tok;    // [max_chains, B+1]
    span *spans;          // A spans (n_run) then chain spans
    int32_t *tok, *pos, *tab; // verify batch [max_rows]
    uint64_t *res;        // host copy of the verify results (verify's layout)
    int32_t *ids;         // into res: [rows] argmax (or sampled) ids
    uint64_t *dl, *dt;    // into res: [rows] logits and tap digests (dt NULL without taps)
} round_state;

static void round_free(round_state *s) {
    void *all[] = {s->run, s->dreq, s->hedge, s->drafts, s->host_tok, s->spans, s->tok, s->pos,
                   s->tab, s->res};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
}

static void add_rows(round_state *s, const eng_req *r, span *sp, int row_table) {
    int p = eng_anchor_pos(r);
    sp->row = s->rows;
    for (int k = 0; k <= sp->len; k++, s->rows++) {
        s->tok[s->rows] = k == 0 ? r->tokens[p] : sp->drafts[k - 1];
        s->pos[s->rows] = p + k;
        s->tab[s->rows] = row_table;
    }
}

// Builds the verify batch: A spans in batch order, then the non-duplicate chain spans (their
// tables and first-page copies made ready). Counts built and deduped chains.
static void build_batch(sg_engine *e, round_state *s) {
    int W = e->B + 1, d = 0;
    for (int i = 0; i < s->n_run; i++) {
        const eng_req *r = &e->reqs[s->run[i]];
        span *sp = &s->spans[s->n_spans++];
        *sp = (span){.req = s->run[i], .chain = -1};
        if (d < s->n_draft && s->dreq[d] == s->run[i]) {
            sp->len = s->drafts[d].len;
            sp->drafts = s->host_tok + (size_t)d * W + 1;
            d++;
        }
        add_rows(s, r, sp, r->seq);
    }
    int slot = 0, n_copy = 0;
    int32_t *src = sg_calloc((size_t)e->chain_slots + 1, sizeof *src);
    int32_t *dst = sg_calloc((size_t)e->chain_slots + 1, sizeof *dst);
    int32_t *table = sg_calloc((size_t)e->kp.table_stride, sizeof *table);
    for (int i = 0; i < s->n_draft; i++) {
        const eng_draft_req *dr = &s->drafts[i];
        eng_req *r = &e->reqs[dr->req];
        const int32_t *a = s->host_tok + (size_t)i * W + 1;
        size_t bytes = (size_t)dr->len * sizeof(int32_t);
        int first_chain = s->n_spans;
        for (int j = 0; j < dr->hedged; j++) {
            const int32_t *c = s->host_tok + (size_t)(dr->chain0 + j) * W + 1;
            int dup = memcmp(c, a, bytes) == 0;
            for (int k = first_chain; k < s->n_spans && !dup; k++)
                dup = memcmp(c, s->spans[k].drafts, bytes) == 0;
            r->counters.chains_built++;
            if (dup) {
                r->counters.chains_deduped++;
                continue;
            }
            span *sp = &s->spans[s->n_spans++];
            *sp = (span){.req = dr->req, .len = dr->len, .chain = j, .slot = slot++, .drafts = c};
            int p = eng_anchor_pos(r);
            n_copy += kv_pages_chain_table(&e->kp, r->seq, sp->slot, p, dr->len + 1, table,
                                           src + n_copy, dst + n_copy);
            kv_cache_upload_chain_table(&e->kc, sp->slot, table);
            add_rows(s, r, sp, e->o.max_seqs + sp->slot);
        }
    }
    kv_cache_copy_pages(&e->kc, src, dst, n_copy);
    free(src);
    free(dst);
    free(table);
}

// The verify forward, then the per-row results of its n rows packed on the device and fetched in
// ONE download (eng_results): logits digests [n], tap digests [n] (with taps), argmax ids [n].
static int verify(sg_engine *e, round_state *s) {
    int n = s->rows;
    fwd_batch b;
    fwd_stage_target(&e->tw, n, s->tok, s->pos, s->tab, n, NULL, &b);
    fwd_target_forward(&e->t, &e->tw, &e->kc, &b, e->logits, e->tap_w ? e->taps : NULL);
    eng_results(e, ENGINE_D2H_RESULTS, n, n, s->res, &s->dl, &s->dt, &s->ids);
    engine_timing *tm = eng_timing(e);
    if (tm) {
        tm->verify_forwards++;
        tm->verify_rows += n;
        tm->verify_spans += s->n_spans;
        for (int k = 0; k < s->n_spans; k++)
            tm->verify_keys += s->pos[s->spans[k].row + s->spans[k].len] + 1;
    }
    for (int i = 0; i < s->rows; i++)
        if (s->ids[i] < 0) {
            int k = 0;
            while (!(s->spans[k].row <= i && i <= s->spans[k].row + s->spans[k].len)) k++;
            return sg_fail(SG_EXIT_FAIL, "request %s: the target logits row at position %d "
                           "(choosing the token at %d%s) holds a NaN or Inf",
                           e->reqs[s->spans[k].req].req.id, s->pos[i], s->pos[i] + 1,
                           s->spans[k].chain >= 0 ? ", hedge chain span" : "");
        }
    // Sampled requests pick from their one row with the shared sampler.
    float *row = NULL;
    for (int k = 0; k < s->n_run; k++) {
        const eng_req *r = &e->reqs[s->spans[k].req];
        if (r->req.temperature == 0.0) continue;
        if (!row) row = sg_calloc((size_t)e->V, sizeof *row);
        int at = s->spans[k].row;
        eng_download(e, ENGINE_D2H_SAMPLED, row, e->logits + (size_t)at * e->V,
                     (size_t)e->V * sizeof *row);
        s->ids[at] = sampler_pick(row, e->V, r->req.temperature, r->req.seed, s->pos[at] + 1);
    }
    free(row);
    return SG_OK;
}

// Accepts every span of request k's group, picks the winner, commits. Returns tokens committed.
static int accept_request(sg_engine *e, round_state *s, int k, int first_chain, int n_chain) {
    const span *a = &s->spans[k];
    eng_req *r = &e->reqs[a->req];
    const span *win = a;
    int n_win, best = candidate(e, r, a, s->ids, &n_win);
    int tie_to_chain = fault_is(e, ENGINE_FAULT_TIE_TO_CHAIN);
    for (int c = first_chain; c < first_chain + n_chain; c++) {
        int n, retained = candidate(e, r, &s->spans[c], s->ids, &n);
        // Strictly longer only: ties keep A, then the earlier chain (except under the tie fault).
        if (retained > best || (tie_to_chain && retained == best)) {
            if (retained == best) e->o.hooks->faults_injected++;
            best = retained;
            n_win = n;
            win = &s->spans[c];
        }
    }
    spec_counters *ct = &r->counters;
    ct->chain_spans += n_chain;
    if (n_chain > 0) {
        ct->hedged_rounds++;
        if (win != a) ct->chain_wins++;
        else ct->loss_rounds++;
    }
    counters_book_round(ct, n_win, best, a->len);
    int p = eng_anchor_pos(r);
    engine_hooks *hk = e->o.hooks;
    if (hk && hk->round)
        hk->round(hk->ctx, a->req, (int)ct->rounds, p, a->len, win->chain, n_win, best);
    if (win != a && fault_is(e, ENGINE_FAULT_SKIP_COPY_BACK)) {
        hk->faults_injected++;
    } else if (win != a) {
        int32_t src[SG_MAX_BLOCK + 2], dst[SG_MAX_BLOCK + 2];
        int nc = kv_pages_chain_copy_back(&e->kp, r->seq, win->slot, p, win->len + 1, src, dst);
        kv_cache_copy_pages(&e->kc, src, dst, nc);
    }
    kv_pages_commit(&e->kp, r->seq, p + best);
    int done = 0;
    for (int j = 0; j < best && !done; j++) {
        int token = j < n_win ? win->drafts[j] : s->ids[win->row + n_win];
        if (j < n_win && fault_is(e, ENGINE_FAULT_FLIP_DRAFT) && hk->faults_injected == 0) {
            token = (token + 1) % e->V;
            hk->faults_injected++;
        }
        done = eng_commit_token(e, r, token, s->dl[win->row + j], e->tap_w ? s->dt[win->row + j] : 0);
    }
    SG_CHECK(done || r->n_generated < r->req.max_new_tokens, "request %s overran", r->req.id);
    if (!done && fault_is(e, ENGINE_FAULT_CORRUPT_KV) && hk->faults_injected == 0) {
        corrupt_kv_row(e, r, p);
        hk->faults_injected++;
    }
    if (done) {
        eng_finish(e, a->req);
    } else if (r->pending) {
        eng_push_pending(e, r, e->taps + (size_t)win->row * e->tap_w, best);
        if (win != a && fault_is(e, ENGINE_FAULT_CORRUPT_TAP)) {
            negate_rows(e, r->pending + (size_t)(r->n_pending - 1) * e->tap_w,
                        (size_t)e->tap_w);
            hk->faults_injected++;
        }
    }
    return best;
}

int eng_round(sg_engine *e) {
    int n = e->n_running, R = e->o.max_rows, W = e->B + 1;
    round_state s = {0};
    s.n_run = n;
    s.run = sg_calloc((size_t)n, sizeof *s.run);
    memcpy(s.run, e->running, (size_t)n * sizeof *s.run);
    s.dreq = sg_calloc((size_t)n, sizeof *s.dreq);
    s.hedge = sg_calloc((size_t)n, sizeof *s.hedge);
    s.drafts = sg_calloc((size_t)n, sizeof *s.drafts);
    s.host_tok = sg_calloc((size_t)(e->max_chains > 0 ? e->max_chains : 1) * W, sizeof *s.host_tok);
    s.spans = sg_calloc((size_t)n + e->chain_slots, sizeof *s.spans);
    s.tok = sg_calloc((size_t)R, sizeof *s.tok);
    s.pos = sg_calloc((size_t)R, sizeof *s.pos);
    s.tab = sg_calloc((size_t)R, sizeof *s.tab);
    s.res = sg_calloc((size_t)R * (2 * sizeof(uint64_t) + sizeof(int32_t)), 1); // verify's layout
    xfer_begin(e);
    int64_t t_round = eng_phase_start(e);

    int rows_a = 0;
    for (int i = 0; i < n; i++) {
        const eng_req *r = &e->reqs[s.run[i]];
        int len = eng_min(e->n_drafts, eng_remaining(r) - 1);
        if (e->speculate && r->req.temperature == 0.0 && len > 0) {
            s.dreq[s.n_draft++] = s.run[i];
            rows_a += len + 1;
        } else {
            rows_a += 1;
        }
    }
    e->n_chains = 0;
    if (e->speculate && e->o.hedge_cap > 0)
        e->n_chains = e->o.hedge_auto ? ac_begin(&e->ac) : e->o.chains;
    select_hedged(e, s.dreq, s.n_draft, n, rows_a, s.hedge);
    int st = SG_OK;
    if (s.n_draft > 0) st = eng_draft(e, s.dreq, s.hedge, s.n_draft, s.drafts, s.host_tok);
    if (st == SG_OK && e->o.hooks && e->o.hooks->draft)
        for (int i = 0; i < s.n_draft; i++) {
            const eng_draft_req *dr = &s.drafts[i];
            int32_t *a = s.host_tok + (size_t)i * W + 1;
            e->o.hooks->draft(e->o.hooks->ctx, dr->req, eng_anchor_pos(&e->reqs[dr->req]), a,
                              dr->len);
            for (int k = 0; k < dr->len; k++)
                SG_CHECK(a[k] >= 0 && a[k] < e->V, "draft override: id %d outside [0, %d)", a[k],
                         e->V);
        }
    if (st == SG_OK) {
        int64_t t = eng_phase_start(e);
        build_batch(e, &s);
        SG_CHECK(s.rows <= R && s.n_spans <= e->o.max_spans, "verify batch of %d rows, %d spans",
                 s.rows, s.n_spans);
        st = verify(e, &s);
        eng_phase_end(e, ENGINE_PHASE_VERIFY, t);
    }
    int committed = 0;
    int64_t t_accept = eng_phase_start(e);
    for (int k = 0, c = n; st == SG_OK && k < n; k++) {
        int first = c;
        while (c < s.n_spans && s.spans[c].req == s.spans[k].req) c++;
        committed += accept_request(e, &s, k, first, c - first);
    }
    eng_phase_end(e, ENGINE_PHASE_ACCEPT, t_accept);
    if (eng_timing(e)) {
        e->o.timing->rounds++;
        e->o.timing->round_ns += eng_clock(e) - t_round;
    }
    if (st == SG_OK && e->o.hedge_auto && e->speculate) ac_end(&e->ac, e->n_chains, committed);
    xfer_end(e);
    round_free(&s);
    return st;
}
