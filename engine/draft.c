// engine/draft.c: the draft side of a round (dspark-spec.md §2-3, §5): the drafter forwards over
// every drafting request's pending context and block (packed into batches of at most max_rows
// rows; an over-long context is ingested first in context-only chunks), chain A by the batched
// Markov loop with the exact top-2 at every position, the confidence cut (c_k from the
// final-normed hidden rows on the host, as ref/ computes it: double dot product, then sigmoid),
// the clamp to remaining - 1, and the ladders of the hedged requests: ladder_force, then one
// batched Markov loop over n_hedged × C rows over the same U. The whole loop runs on the device
// from one upload of its index arrays (runner-ups never leave it); the chain matrix of every chain
// then comes back in ONE download (and, with --conf-threshold only, the hidden rows in one more).
// Phase timing (engine.h): the drafter, Markov and ladder phases and their work, when on.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engine_internal.h"

// Context-only drafter call over k pending rows of r starting at row `off` of its pending buffer.
static void ingest_context(sg_engine *e, eng_req *r, int off, int k) {
    int p = r->draft_len + k, anchor = 0;
    fwd_draft_batch b;
    fwd_stage_draft(&e->dw, &e->d, 1, &k, &p, &anchor, &r->seq, 0,
                    r->pending + (size_t)off * e->tap_w, &b);
    fwd_drafter_forward(&e->d, &e->dw, &e->dkc, &b, NULL, NULL);
    r->draft_len = p;
    if (eng_timing(e)) e->o.timing->drafter_ctx_rows += k; // fc, K and V only: no full forward
}

// One drafter batch over reqs[g0 .. g1): context rows gathered in request order, then the blocks.
static void draft_group(sg_engine *e, const int *reqs, const int *off, int g0, int g1) {
    const sg_backend *be = e->be;
    int n = g1 - g0, at = 0;
    int *ctx = sg_calloc((size_t)n, sizeof *ctx), *p = sg_calloc((size_t)n, sizeof *p);
    int *anchor = sg_calloc((size_t)n, sizeof *anchor), *tab = sg_calloc((size_t)n, sizeof *tab);
    for (int i = 0; i < n; i++) {
        eng_req *r = &e->reqs[reqs[g0 + i]];
        ctx[i] = r->n_pending - off[g0 + i];
        p[i] = eng_anchor_pos(r);
        SG_CHECK(r->draft_len + ctx[i] == p[i], "drafter context %d + %d ends before anchor %d",
                 r->draft_len, ctx[i], p[i]);
        anchor[i] = r->tokens[p[i]];
        tab[i] = r->seq;
        be->copy(be->ctx, e->ctx_taps + (size_t)at * e->tap_w,
                 r->pending + (size_t)off[g0 + i] * e->tap_w,
                 (size_t)ctx[i] * e->tap_w * sizeof(bf16));
        at += ctx[i];
    }
    fwd_draft_batch b;
    fwd_stage_draft(&e->dw, &e->d, n, ctx, p, anchor, tab, 1, e->ctx_taps, &b);
    fwd_drafter_forward(&e->d, &e->dw, &e->dkc, &b, e->U + (size_t)g0 * e->B * e->V,
                        e->hidden + (size_t)g0 * e->B * e->H);
    engine_timing *tm = eng_timing(e);
    if (tm) {
        tm->drafter_forwards++;
        tm->drafter_ctx_rows += at;
        tm->drafter_blk_rows += (int64_t)n * e->B;
        for (int i = 0; i < n; i++) tm->drafter_keys += p[i] + e->B;
    }
    for (int i = 0; i < n; i++) {
        eng_req *r = &e->reqs[reqs[g0 + i]];
        r->draft_len = p[i];
        r->n_pending = 0;
        kv_pages_commit(&e->dkp, r->seq, r->draft_len);
    }
    free(ctx);
    free(p);
    free(anchor);
    free(tab);
}

static void draft_forwards(sg_engine *e, const int *reqs, int n) {
    int R = e->o.max_rows, B = e->B;
    int *off = sg_calloc((size_t)n, sizeof *off);
    for (int i = 0; i < n; i++) {
        eng_req *r = &e->reqs[reqs[i]];
        while (r->n_pending - off[i] + B > R) {
            int k = eng_min(R, r->n_pending - off[i] - (R - B));
            ingest_context(e, r, off[i], k);
            off[i] += k;
        }
    }
    int g0 = 0, rows = 0;
    for (int i = 0; i < n; i++) {
        int need = e->reqs[reqs[i]].n_pending - off[i] + B;
        if (rows + need > R) {
            draft_group(e, reqs, off, g0, i);
            g0 = i;
            rows = 0;
        }
        rows += need;
    }
    draft_group(e, reqs, off, g0, n);
    free(off);
}

// Runs the Markov loop over m chain rows whose index entries (device e->mk [6, max_chains]:
// chain, u_row, start, limit, a_row, branch) start at entry `off`; ladders are forced first.
// live_steps / row_steps: the steps with a live row and the live (row, step) pairs (timing only).
static void markov_loop(sg_engine *e, int off, int m, int ladders, int live_steps, int row_steps) {
    const sg_backend *be = e->be;
    engine_timing *tm = eng_timing(e);
    if (tm) {
        *(ladders ? &tm->ladder_steps : &tm->markov_steps) += live_steps;
        *(ladders ? &tm->ladder_row_steps : &tm->markov_row_steps) += row_steps;
    }
    const int32_t *mk = e->mk + off;
    size_t MC = (size_t)e->max_chains;
    if (ladders)
        be->ladder_force(be->ctx, e->chain_tok, e->B + 1, e->top_ids, m, mk, mk + 4 * MC,
                         mk + 5 * MC);
    for (int s = 0; s < e->n_drafts; s++)
        be->markov_step(be->ctx, e->U, e->V, e->d.markov_w1, e->d.markov_w2,
                        e->dm->cfg.markov_rank, m, mk, mk + MC, mk + 2 * MC, mk + 3 * MC, s,
                        e->chain_tok, e->B + 1, e->top_ids, NULL);
}

// c_k = sigmoid(w · [h_k ; w1[prev_k]] + b) in double; the first k with c_k < threshold.
static int confidence_cut(const sg_engine *e, const bf16 *hid, const int32_t *chain) {
    const drafter_model *dm = e->dm;
    int H = e->H, r = dm->cfg.markov_rank;
    for (int k = 0; k < e->n_drafts; k++) {
        const bf16 *h = hid + (size_t)(e->first_row + k) * H;
        double z = 0.0;
        for (int i = 0; i < H; i++)
            z += (double)bf16_to_f32(dm->conf_w[i]) * (double)bf16_to_f32(h[i]);
        if (dm->cfg.confidence_with_markov)
            for (int i = 0; i < r; i++)
                z += (double)bf16_to_f32(dm->conf_w[H + i]) *
                     (double)bf16_to_f32(dm->markov_w1[(size_t)chain[k] * r + i]);
        z += (double)dm->conf_b;
        if (1.0 / (1.0 + exp(-z)) < e->o.conf_threshold) return k;
    }
    return e->n_drafts;
}

static int check_chain(const sg_engine *e, const eng_req *r, const int32_t *row) {
    for (int k = 1; k <= e->n_drafts; k++)
        if (row[k] < 0)
            return sg_fail(SG_EXIT_FAIL, "request %s: the drafter's scores for the draft at "
                           "position %d hold a NaN or Inf", r->req.id, eng_anchor_pos(r) + k);
    return SG_OK;
}

int eng_draft(sg_engine *e, const int *reqs, const int *hedge, int n, eng_draft_req *out,
              int32_t *host_tok) {
    const sg_backend *be = e->be;
    int W = e->B + 1, MC = e->max_chains, C = e->n_chains;
    int64_t t = eng_phase_start(e);
    draft_forwards(e, reqs, n);
    eng_phase_end(e, ENGINE_PHASE_DRAFTER, t);
    t = eng_phase_start(e);
    // Index entries of every chain row: chain A of reqs[i] at row i, the ladders from row n on.
    int32_t *idx = sg_calloc((size_t)6 * MC, sizeof *idx); // chain, u_row, start, limit, a, branch
    memset(host_tok, 0, (size_t)n * W * sizeof *host_tok);
    int m = 0, ladder_row_steps = 0, ladder_steps = 0;
    for (int i = 0; i < n; i++) {
        const eng_req *r = &e->reqs[reqs[i]];
        int u = i * e->B + e->first_row;
        host_tok[(size_t)i * W] = r->tokens[eng_anchor_pos(r)];
        idx[i] = i;
        idx[MC + i] = u;
        idx[2 * MC + i] = 0;
        idx[3 * MC + i] = e->n_drafts;
        out[i] = (eng_draft_req){.req = reqs[i], .hedged = hedge[i] ? C : 0, .chain0 = n + m};
        for (int j = 0; j < out[i].hedged; j++, m++) {
            int c = n + m;
            idx[c] = c;
            idx[MC + c] = u;
            idx[2 * MC + c] = e->o.positions[j] + 1;
            idx[3 * MC + c] = e->n_drafts;
            idx[4 * MC + c] = i;
            idx[5 * MC + c] = e->o.positions[j];
            ladder_row_steps += e->n_drafts - e->o.positions[j] - 1;
            ladder_steps = e->n_drafts - e->o.positions[0] - 1; // P is increasing: j = 0 is longest
        }
    }
    be->upload(be->ctx, e->chain_tok, host_tok, (size_t)n * W * sizeof *host_tok);
    be->upload(be->ctx, e->mk, idx, (size_t)6 * MC * sizeof *idx);
    free(idx);
    markov_loop(e, 0, n, 0, e->n_drafts, n * e->n_drafts);
    eng_phase_end(e, ENGINE_PHASE_MARKOV, t);
    if (m > 0) {
        t = eng_phase_start(e);
        markov_loop(e, n, m, 1, ladder_steps, ladder_row_steps);
        eng_phase_end(e, ENGINE_PHASE_LADDER, t);
    }
    eng_download(e, ENGINE_D2H_SPANS, host_tok, e->chain_tok,
                 (size_t)(n + m) * W * sizeof *host_tok);
    bf16 *hid = NULL;
    if (e->o.conf_threshold > 0.0) {
        hid = sg_calloc((size_t)n * e->B * e->H, sizeof *hid);
        eng_download(e, ENGINE_D2H_CONF, hid, e->hidden, (size_t)n * e->B * e->H * sizeof *hid);
    }
    int st = SG_OK;
    for (int i = 0; i < n && st == SG_OK; i++) {
        const eng_req *r = &e->reqs[reqs[i]];
        const int32_t *a = host_tok + (size_t)i * W;
        st = check_chain(e, r, a);
        int len = eng_min(e->n_drafts, eng_remaining(r) - 1);
        if (st == SG_OK && hid) len = eng_min(len, confidence_cut(e, hid + (size_t)i * e->B * e->H, a));
        out[i].len = len;
    }
    free(hid);
    for (int i = 0; i < n && st == SG_OK; i++)
        for (int j = 0; j < out[i].hedged && st == SG_OK; j++)
            st = check_chain(e, &e->reqs[reqs[i]], host_tok + (size_t)(out[i].chain0 + j) * W);
    return st;
}
