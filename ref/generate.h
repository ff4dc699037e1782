// ref/generate.h: plain decoding with the reference target: greedy or seeded sampling, stop ids,
// EOS and max_new_tokens. The oracle every gate compares against.
//
// Contract: the prompt is prefilled in one forward; each later token is one one-row decode. The
// first generated token comes from the prompt's last row. Greedy: argmax_f32 (ties to the lowest
// id); sampled (temperature > 0): sampler_pick at the chosen token's absolute position
// n_prompt + i. Generation stops after a stop id (STOP_ID) or an EOS id of the target config unless
// ignore_eos (STOP_EOS), the token kept in the output (a stop id wins when it is both), or at
// max_new_tokens (STOP_MAX_NEW). A NaN or Inf in a logits row is a hard error: SG_EXIT_FAIL, the
// message names the position being chosen and the token id holding it, no output is returned.
// Bad requests are SG_EXIT_USAGE: empty prompt, prompt ids outside [0, V), max_new_tokens < 1,
// n_prompt + max_new_tokens > max_position_embeddings, a negative or non-finite temperature, tap
// layers outside [0, L). On failure *out is left empty (nothing to free).
#ifndef SG_REF_GENERATE_H
#define SG_REF_GENERATE_H

#include <stdint.h>

#include "common/model.h"

typedef enum { STOP_MAX_NEW, STOP_ID, STOP_EOS } stop_reason;

typedef struct {
    int max_new_tokens;
    const int *stop;
    int n_stop;
    int ignore_eos; // 0: the target config's eos ids also stop
    double temperature; // 0 = greedy
    uint64_t seed;
    const int *tap_ids; // record taps of these layers for every fed position (NULL: none)
    int n_taps;
    int keep_logits; // record the fp32 logits row that chose each generated token
} ref_gen_options;

typedef struct {
    int n_prompt;
    int n_generated;
    int *tokens;     // [n_prompt + n_generated]
    float *margins;  // [n_generated] top-1 minus top-2 of the row that chose each token
    float *taps;     // [n_prompt + n_generated - 1, n_taps*H] (the last token is never fed)
    int n_tap_cols;  // n_taps*H
    float *logits;   // [n_generated, V] when keep_logits
    stop_reason reason;
} ref_output;

int ref_generate(const target_model *m, const int *prompt, int n_prompt, const ref_gen_options *o,
                 ref_output *out);
void ref_output_free(ref_output *out);

#endif
