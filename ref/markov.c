// ref/markov.c: Markov head, chain A, ladders and confidence head (see markov.h for the contract).
#include "markov.h"

#include <math.h>
#include <stdlib.h>

#include "common/error.h"
#include "common/sampler.h"
#include "ops.h"

void ref_markov_bias(const drafter_model *d, int prev, float *bias) {
    int r = d->cfg.markov_rank, V = d->cfg.arch.vocab_size;
    SG_CHECK(r > 0 && d->markov_w1 && d->markov_w2, "Markov bias without a Markov head");
    SG_CHECK(prev >= 0 && prev < V, "Markov prev token %d outside [0, %d)", prev, V);
    float *w1row = sg_calloc((size_t)r, sizeof *w1row); // [1, r]
    for (int i = 0; i < r; i++) w1row[i] = bf16_to_f32(d->markov_w1[(size_t)prev * r + i]);
    ref_matmul(w1row, 1, r, d->markov_w2, V, bias, 0);
    free(w1row);
}

void ref_markov_scores(const drafter_model *d, const float *u_row, int prev, float *score) {
    int V = d->cfg.arch.vocab_size;
    if (d->cfg.markov_rank == 0) {
        for (int v = 0; v < V; v++) score[v] = u_row[v];
        return;
    }
    ref_markov_bias(d, prev, score);
    for (int v = 0; v < V; v++) score[v] = u_row[v] + score[v];
}

// Greedy drafting of positions from .. c->n - 1; positions before `from` are fixed.
static void extend_greedy(const drafter_model *d, const float *U, ref_chain *c, int from) {
    int V = d->cfg.arch.vocab_size, k3 = V < 3 ? V : 3;
    float *score = sg_calloc((size_t)V, sizeof *score);
    for (int k = from; k < c->n; k++) {
        int prev = k == 0 ? c->anchor : c->tokens[k - 1];
        ref_markov_scores(d, U + (size_t)k * V, prev, score);
        for (int j = 0; j < 3; j++) {
            c->top_ids[k][j] = -1;
            c->top_vals[k][j] = -INFINITY;
        }
        topk_f32(score, V, k3, c->top_ids[k], c->top_vals[k]);
        SG_CHECK(c->top_ids[k][0] == argmax_f32(score, V), "top-1 differs from argmax at %d", k);
        c->tokens[k] = c->top_ids[k][0];
    }
    free(score);
}

void ref_markov_chain(const drafter_model *d, const float *U, int n, int anchor, ref_chain *out) {
    SG_CHECK(n >= 0 && n <= SG_MAX_BLOCK, "chain of %d drafts", n);
    out->anchor = anchor;
    out->n = n;
    out->branch = -1;
    extend_greedy(d, U, out, 0);
}

void ref_markov_ladder(const drafter_model *d, const float *U, const ref_chain *a, int branch,
                       ref_chain *out) {
    SG_CHECK(a->branch == -1 && branch >= 0 && branch < a->n, "ladder at %d of a chain of %d",
             branch, a->n);
    SG_CHECK(a->top_ids[branch][1] >= 0, "no runner-up at position %d (vocabulary < 2)", branch);
    *out = *a; // prefix d_0 .. d_(P-1) and the score row at P (same prev, same U row)
    out->branch = branch;
    out->tokens[branch] = a->top_ids[branch][1];
    extend_greedy(d, U, out, branch + 1);
}

double ref_confidence(const drafter_model *d, const float *h, int prev) {
    int H = d->cfg.arch.hidden_size, r = d->cfg.markov_rank;
    int with_markov = d->cfg.confidence_with_markov;
    SG_CHECK(d->conf_w && d->conf_width == H + (with_markov ? r : 0),
             "confidence head missing or of width %d", d->conf_width);
    double z = 0.0;
    for (int i = 0; i < H; i++) z += (double)bf16_to_f32(d->conf_w[i]) * (double)h[i];
    if (with_markov)
        for (int i = 0; i < r; i++)
            z += (double)bf16_to_f32(d->conf_w[H + i]) *
                 (double)bf16_to_f32(d->markov_w1[(size_t)prev * r + i]);
    z += (double)d->conf_b;
    return 1.0 / (1.0 + exp(-z));
}

int ref_confidence_cut(const drafter_model *d, const float *hidden, const ref_chain *a,
                       double threshold) {
    int H = d->cfg.arch.hidden_size;
    for (int k = 0; k < a->n; k++) {
        int prev = k == 0 ? a->anchor : a->tokens[k - 1];
        if (ref_confidence(d, hidden + (size_t)k * H, prev) < threshold) return k;
    }
    return a->n;
}

float ref_chain_margin(const ref_chain *c, int k, int which) {
    SG_CHECK(k >= 0 && k < c->n && (which == 0 || which == 1), "margin %d at %d of %d", which, k,
             c->n);
    return c->top_vals[k][which] - c->top_vals[k][which + 1];
}
