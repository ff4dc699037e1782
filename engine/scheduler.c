// engine/scheduler.c: continuous batching: arrivals, admission (draft-headroom rule, worst-case
// KV reservation in the target's and the drafter's pools, waiting, rejection), prefill of newly
// admitted requests packed into forwards of at most max_rows rows, and retirement of finished
// requests (see engine.h for the contract).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/sampler.h"
#include "engine_internal.h"

static void reject(eng_req *r, const char *why) {
    r->status = ENGINE_REJECTED;
    snprintf(r->reason, sizeof r->reason, "%s", why);
}

// Moves arrived requests (arrival_step <= step) into the queue, by (arrival_step, index).
static void take_arrivals(sg_engine *e) {
    for (;;) {
        int best = -1;
        for (int i = 0; i < e->n_reqs; i++) {
            const eng_req *r = &e->reqs[i];
            if (r->arrived || r->req.arrival_step > e->step) continue;
            if (best < 0 || r->req.arrival_step < e->reqs[best].req.arrival_step) best = i;
        }
        if (best < 0) return;
        e->reqs[best].arrived = 1;
        e->queue[e->n_queue++] = best;
    }
}

// The draft-headroom rule: prompt + max_new_tokens + B within both models' max positions.
static int headroom_ok(const sg_engine *e, const eng_req *r, char *why, size_t size) {
    long need = (long)r->req.n_prompt + r->req.max_new_tokens + e->B;
    int tmax = e->tm->cfg.max_position_embeddings;
    int dmax = e->dm ? e->dm->cfg.arch.max_position_embeddings : tmax;
    if (need <= tmax && need <= dmax) return 1;
    snprintf(why, size,
             "draft headroom: prompt %d + max_new_tokens %d + block %d = %ld positions exceed "
             "max_position_embeddings (target %d, drafter %d); shorten the request",
             r->req.n_prompt, r->req.max_new_tokens, e->B, need, tmax, dmax);
    return 0;
}

static void admit_one(sg_engine *e, int idx, int seq) {
    eng_req *r = &e->reqs[idx];
    r->status = ENGINE_RUNNING;
    r->seq = seq;
    r->admit_order = e->admit_counter++;
    r->admitted_step = e->step;
    kv_cache_upload_seq_table(&e->kc, &e->kp, seq);
    if (e->dm) {
        int dseq = -1;
        int got = kv_pages_reserve(&e->dkp, kv_pages_positions_needed(r->req.n_prompt,
                                                                      r->req.max_new_tokens,
                                                                      e->B),
                                   &dseq);
        // The drafter's pool mirrors the target's: same sizes, same reservation sequence.
        SG_CHECK(got == KV_RESERVED && dseq == seq, "drafter pool out of step (%d, %d vs %d)",
                 got, dseq, seq);
        kv_cache_upload_seq_table(&e->dkc, &e->dkp, seq);
    }
    if (e->speculate && r->req.temperature == 0.0) {
        r->pending_cap = r->req.n_prompt > e->B + 1 ? r->req.n_prompt : e->B + 1;
        void *p = NULL;
        SG_CHECK(be_alloc(e->be, (size_t)r->pending_cap * e->tap_w * sizeof(bf16),
                          "pending drafter context", &p) == SG_OK,
                 "%s", sg_error());
        r->pending = p;
    }
    e->running[e->n_running++] = idx;
}

int eng_admit(sg_engine *e) {
    take_arrivals(e);
    while (e->n_queue > 0) {
        int idx = e->queue[0];
        eng_req *r = &e->reqs[idx];
        char why[256];
        int ok = headroom_ok(e, r, why, sizeof why);
        if (ok) {
            int seq = -1;
            int positions = kv_pages_positions_needed(r->req.n_prompt, r->req.max_new_tokens,
                                                      e->B);
            kv_reserve_result got = kv_pages_reserve(&e->kp, positions, &seq);
            if (got == KV_WAIT) {
                r->waited = 1;
                return SG_OK; // first come, first served: everything behind it waits too
            }
            if (got == KV_NEVER) {
                snprintf(why, sizeof why, "%s", sg_error());
                ok = 0;
            } else {
                admit_one(e, idx, seq);
            }
        }
        if (!ok) reject(r, why);
        memmove(e->queue, e->queue + 1, (size_t)(e->n_queue - 1) * sizeof *e->queue);
        e->n_queue--;
    }
    return SG_OK;
}

void eng_finish(sg_engine *e, int idx) {
    eng_req *r = &e->reqs[idx];
    kv_pages_release(&e->kp, r->seq);
    if (e->dm) kv_pages_release(&e->dkp, r->seq);
    if (r->pending) e->be->free(e->be->ctx, r->pending);
    r->pending = NULL;
    r->n_pending = 0;
    r->status = ENGINE_DONE;
    int k = 0;
    while (k < e->n_running && e->running[k] != idx) k++;
    SG_CHECK(k < e->n_running, "finishing request %d that is not running", idx);
    memmove(e->running + k, e->running + k + 1, (size_t)(e->n_running - k - 1) * sizeof(int));
    e->n_running--;
}

void eng_push_pending(sg_engine *e, eng_req *r, const bf16 *rows, int n) {
    SG_CHECK(r->pending && r->n_pending + n <= r->pending_cap, "pending context %d + %d of %d",
             r->n_pending, n, r->pending_cap);
    e->be->copy(e->be->ctx, r->pending + (size_t)r->n_pending * e->tap_w, rows,
                (size_t)n * e->tap_w * sizeof(bf16));
    r->n_pending += n;
}

// A prompt segment [from, to) of request req inside a prefill batch starting at row `row`.
typedef struct {
    int req, from, to, row;
} segment;

// Runs one prefill batch of segments; requests whose prompt ends in it take their first token.
// Its results (ids and logits digests of those last prompt rows, tap digests of every row) come in
// ONE download (eng_results); its copies are recorded in e->xfer.prefill.
static int prefill_batch(sg_engine *e, const segment *seg, int n_seg, int rows, int32_t *tok,
                         int32_t *pos, int32_t *tab) {
    int32_t *lrows = sg_calloc((size_t)n_seg, sizeof *lrows);
    int *lreq = sg_calloc((size_t)n_seg, sizeof *lreq);
    int n_logits = 0;
    for (int s = 0; s < n_seg; s++)
        if (seg[s].to == e->reqs[seg[s].req].req.n_prompt) {
            lrows[n_logits] = seg[s].row + seg[s].to - seg[s].from - 1;
            lreq[n_logits++] = seg[s].req;
        }
    memset(&e->xfer_round, 0, sizeof e->xfer_round);
    fwd_batch b;
    fwd_stage_target(&e->tw, rows, tok, pos, tab, n_logits, lrows, &b);
    fwd_target_forward(&e->t, &e->tw, &e->kc, &b, e->logits, e->tap_w ? e->taps : NULL);
    for (int s = 0; s < n_seg; s++) {
        eng_req *r = &e->reqs[seg[s].req];
        if (r->pending) eng_push_pending(e, r, e->taps + (size_t)seg[s].row * e->tap_w,
                                         seg[s].to - seg[s].from);
    }
    int st = SG_OK;
    if (n_logits > 0) {
        uint64_t *res = sg_calloc((size_t)(n_logits + rows) * sizeof(uint64_t) +
                                      (size_t)n_logits * sizeof(int32_t), 1);
        uint64_t *dl, *dt;
        int32_t *ids;
        float *row = sg_calloc((size_t)e->V, sizeof *row);
        eng_results(e, ENGINE_D2H_PREFILL, n_logits, rows, res, &dl, &dt, &ids);
        for (int i = 0; i < n_logits && st == SG_OK; i++) {
            eng_req *r = &e->reqs[lreq[i]];
            int p = r->req.n_prompt - 1;
            if (ids[i] < 0) {
                st = sg_fail(SG_EXIT_FAIL, "request %s: the target logits row at position %d "
                             "(choosing the token at %d) holds a NaN or Inf", r->req.id, p, p + 1);
                break;
            }
            int token = ids[i];
            if (r->req.temperature > 0.0) {
                eng_download(e, ENGINE_D2H_SAMPLED, row, e->logits + (size_t)i * e->V,
                             (size_t)e->V * sizeof *row);
                token = sampler_pick(row, e->V, r->req.temperature, r->req.seed, p + 1);
            }
            kv_pages_commit(&e->kp, r->seq, r->req.n_prompt);
            if (eng_commit_token(e, r, token, dl[i], dt ? dt[lrows[i]] : 0)) eng_finish(e, lreq[i]);
        }
        free(res);
        free(row);
    }
    e->xfer.prefills++;
    eng_d2h_add(&e->xfer.prefill, &e->xfer_round);
    free(lrows);
    free(lreq);
    return st;
}

int eng_prefill(sg_engine *e, const int *new_reqs, int n) {
    int R = e->o.max_rows;
    int *list = sg_calloc((size_t)n, sizeof *list); // finishing requests edit e->running
    memcpy(list, new_reqs, (size_t)n * sizeof *list);
    int32_t *tok = sg_calloc((size_t)R, sizeof *tok), *pos = sg_calloc((size_t)R, sizeof *pos);
    int32_t *tab = sg_calloc((size_t)R, sizeof *tab);
    segment *seg = sg_calloc((size_t)R, sizeof *seg);
    int rows = 0, n_seg = 0, st = SG_OK;
    for (int i = 0; i < n && st == SG_OK; i++) {
        eng_req *r = &e->reqs[list[i]];
        for (int from = 0; from < r->req.n_prompt && st == SG_OK;) {
            int take = eng_min(r->req.n_prompt - from, R - rows);
            seg[n_seg++] = (segment){.req = list[i], .from = from, .to = from + take, .row = rows};
            for (int k = 0; k < take; k++, rows++) {
                tok[rows] = r->req.prompt[from + k];
                pos[rows] = from + k;
                tab[rows] = r->seq;
            }
            from += take;
            if (rows == R) {
                st = prefill_batch(e, seg, n_seg, rows, tok, pos, tab);
                rows = n_seg = 0;
            }
        }
    }
    if (st == SG_OK && rows > 0) st = prefill_batch(e, seg, n_seg, rows, tok, pos, tab);
    free(list);
    free(tok);
    free(pos);
    free(tab);
    free(seg);
    return st;
}
