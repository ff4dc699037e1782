// ref/markov.h: the DSpark Markov head, greedy chain A, hedge ladders and the confidence head
// (dspark-spec.md §3, §5), for the oracle.
//
// Contract (design.md §3):
// - bias(prev) [V] = bf16(w2 · w1[prev]): one ref_matmul row, fp32 accumulation, rounded to bf16;
// - score_k(v) = U[k, v] + bias(prev_k)[v], summed in fp32; without a Markov head (markov_rank 0,
//   DFlash) the score row is U's draft row itself;
// - chain A: prev_0 = anchor, d_k = argmax score_k (ties to the lowest id), prev_(k+1) = d_k; the
//   exact top-3 of every score row is kept (top-1 bit-identical to argmax_f32, runner-up = top-2);
// - ladder at branch P: A's prefix d_0 .. d_(P-1), A's runner-up at P, then greedy over the SAME U;
// - confidence c_k = sigmoid(w · [h_k ; w1[prev_k]] + b) (width H + r with confidence_with_markov,
//   else H): the dot product in double over ascending index plus b, the sigmoid in double.
#ifndef SG_REF_MARKOV_H
#define SG_REF_MARKOV_H

#include "common/model.h"

typedef struct {
    int anchor;                   // prev_0
    int n;                        // drafts
    int branch;                   // -1: chain A; else the position holding A's runner-up
    int tokens[SG_MAX_BLOCK];     // d_0 .. d_(n-1)
    int top_ids[SG_MAX_BLOCK][3]; // exact top-3 of each score row (id -1 when V < 3)
    float top_vals[SG_MAX_BLOCK][3]; // their fp32 scores (-INFINITY when V < 3)
} ref_chain;

// bias [V] = bf16(w2 · w1[prev]). Needs a Markov head.
void ref_markov_bias(const drafter_model *d, int prev, float *bias);
// score [V] = u_row + bias(prev) in fp32, or u_row without a Markov head.
void ref_markov_scores(const drafter_model *d, const float *u_row, int prev, float *score);
// Chain A over the n draft rows U [n, V] (n <= SG_MAX_BLOCK).
void ref_markov_chain(const drafter_model *d, const float *U, int n, int anchor, ref_chain *out);
// The ladder branching at `branch` (0 <= branch < a->n) from chain A over the same U.
void ref_markov_ladder(const drafter_model *d, const float *U, const ref_chain *a, int branch,
                       ref_chain *out);
// c = sigmoid(w · [h ; w1[prev]] + b) for one final-normed hidden row h [H]. Needs the head.
double ref_confidence(const drafter_model *d, const float *h, int prev);
// Chain A's drafts kept by static-threshold truncation: the first k with c_k < threshold
// (c_k from hidden rows [a->n, H] aligned with the draft rows), or a->n if none.
int ref_confidence_cut(const drafter_model *d, const float *hidden, const ref_chain *a,
                       double threshold);
// Score margins of position k: top-1 minus top-2 (which 0) or top-2 minus top-3 (which 1).
float ref_chain_margin(const ref_chain *c, int k, int which);

#endif
