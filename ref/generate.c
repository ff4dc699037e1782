// ref/generate.c: plain decoding with the reference target (greedy or seeded sampling, stop ids,
// EOS, max_new_tokens, taps, margins); see ref/generate.h.
#include "generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/sampler.h"
#include "qwen3.h"

static int validate(const target_model *m, const int *prompt, int n_prompt,
                    const ref_gen_options *o) {
    const qwen3_config *c = &m->cfg;
    if (c->vocab_size < 2)
        return sg_fail(SG_EXIT_INPUT, "generate: vocab_size %d; margins need at least 2 tokens",
                       c->vocab_size);
    if (n_prompt < 1 || !prompt)
        return sg_fail(SG_EXIT_USAGE, "generate: the prompt is empty; give at least one token id");
    for (int i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= c->vocab_size)
            return sg_fail(SG_EXIT_USAGE,
                           "generate: prompt token %d (index %d) is outside the vocabulary "
                           "[0, %d)",
                           prompt[i], i, c->vocab_size);
    if (o->max_new_tokens < 1)
        return sg_fail(SG_EXIT_USAGE, "generate: max_new_tokens is %d; it must be at least 1",
                       o->max_new_tokens);
    if ((long)n_prompt + o->max_new_tokens > c->max_position_embeddings)
        return sg_fail(SG_EXIT_USAGE,
                       "generate: prompt (%d tokens) + max_new_tokens (%d) exceeds the target's "
                       "max_position_embeddings %d; shorten the prompt or lower max_new_tokens",
                       n_prompt, o->max_new_tokens, c->max_position_embeddings);
    if (!(o->temperature >= 0.0) || isinf(o->temperature))
        return sg_fail(SG_EXIT_USAGE, "generate: temperature %g must be finite and >= 0",
                       o->temperature);
    if (o->n_stop < 0 || (o->n_stop > 0 && !o->stop))
        return sg_fail(SG_EXIT_USAGE, "generate: %d stop ids but no stop array", o->n_stop);
    if (o->n_taps < 0 || o->n_taps > SG_MAX_TAPS || (o->n_taps > 0 && !o->tap_ids))
        return sg_fail(SG_EXIT_USAGE, "generate: n_taps %d must be in [0, %d] with tap_ids given",
                       o->n_taps, SG_MAX_TAPS);
    for (int j = 0; j < o->n_taps; j++)
        if (o->tap_ids[j] < 0 || o->tap_ids[j] >= c->num_hidden_layers)
            return sg_fail(SG_EXIT_USAGE, "generate: tap layer %d is outside [0, %d)",
                           o->tap_ids[j], c->num_hidden_layers);
    return SG_OK;
}

static int contains(const int *ids, int n, int id) {
    for (int i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

int ref_generate(const target_model *m, const int *prompt, int n_prompt, const ref_gen_options *o,
                 ref_output *out) {
    memset(out, 0, sizeof *out);
    SG_TRY(validate(m, prompt, n_prompt, o));
    const qwen3_config *c = &m->cfg;
    const int V = c->vocab_size, max_new = o->max_new_tokens;
    const int cols = o->n_taps * c->hidden_size;
    const int max_fed = n_prompt + max_new - 1; // the last token is never fed

    out->n_prompt = n_prompt;
    out->n_tap_cols = cols;
    out->tokens = sg_calloc((size_t)n_prompt + max_new, sizeof *out->tokens);
    out->margins = sg_calloc((size_t)max_new, sizeof *out->margins);
    if (cols > 0) out->taps = sg_calloc((size_t)max_fed * cols, sizeof *out->taps);
    if (o->keep_logits) out->logits = sg_calloc((size_t)max_new * V, sizeof *out->logits);
    memcpy(out->tokens, prompt, (size_t)n_prompt * sizeof *prompt);

    ref_target t;
    ref_target_init(&t, m, max_fed);
    float *row = sg_calloc((size_t)V, sizeof *row); // logits of the row choosing the next token
    ref_target_forward_tail(&t, prompt, n_prompt, o->tap_ids, o->n_taps, 1, row, out->taps);

    int status = SG_OK;
    for (int i = 0;; i++) {
        int pos = n_prompt + i; // absolute position of the token being chosen
        int bad;
        if (first_nonfinite_f32(row, V, &bad)) {
            status = sg_fail(SG_EXIT_FAIL,
                             "generate: non-finite logit at position %d (token id %d is %g): the "
                             "logits row choosing that position holds NaN or Inf; check the "
                             "target's weights",
                             pos, bad, (double)row[bad]);
            break;
        }
        int ids[2];
        float vals[2];
        topk_f32(row, V, 2, ids, vals);
        int tok = o->temperature > 0.0 ? sampler_pick(row, V, o->temperature, o->seed, pos)
                                       : argmax_f32(row, V);
        out->margins[i] = vals[0] - vals[1];
        if (o->keep_logits) memcpy(out->logits + (size_t)i * V, row, (size_t)V * sizeof *row);
        out->tokens[pos] = tok;
        out->n_generated = i + 1;
        if (contains(o->stop, o->n_stop, tok)) {
            out->reason = STOP_ID;
            break;
        }
        if (!o->ignore_eos && contains(c->eos_ids, c->n_eos, tok)) {
            out->reason = STOP_EOS;
            break;
        }
        if (i + 1 == max_new) {
            out->reason = STOP_MAX_NEW;
            break;
        }
        ref_target_forward_tail(&t, &tok, 1, o->tap_ids, o->n_taps, 1, row,
                                cols > 0 ? out->taps + (size_t)pos * cols : NULL);
    }
    free(row);
    ref_target_free(&t);
    if (status != SG_OK) ref_output_free(out);
    return status;
}

void ref_output_free(ref_output *out) {
    free(out->tokens);
    free(out->margins);
    free(out->taps);
    free(out->logits);
    memset(out, 0, sizeof *out);
}
