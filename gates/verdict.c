// gates/verdict.c: the verdict of one request against the reference (see verdict.h).
#include "verdict.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"
#include "common/sampler.h"
#include "ref/qwen3.h"

const char *verdict_name(verdict_kind k) {
    static const char *names[VERDICT_KINDS] = {"IDENTICAL", "TIE", "REJECTED", "MISMATCH"};
    return names[k];
}

void verdict_row_top(const float *row, int V, verdict_top *out) {
    int k = V < VERDICT_TOP ? V : VERDICT_TOP;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < VERDICT_TOP; i++) out->ids[i] = -1;
    topk_f32(row, V, k, out->ids, out->vals);
}

double verdict_row_dlogit(const float *a, const float *b, int V) {
    double worst = 0.0;
    for (int v = 0; v < V; v++) {
        double d = fabs((double)a[v] - (double)b[v]);
        if (isnan(d)) return d;
        if (d > worst) worst = d;
    }
    return worst;
}

// Folds row i's |Δlogit| into the running maximum (a NaN sticks).
static void track_dlogit(verdict *out, const float *a, const float *b, int V, int i) {
    double d = verdict_row_dlogit(a, b, V);
    if (isnan(out->max_abs_dlogit)) return;
    if (out->dlogit_pos < 0 || !(d <= out->max_abs_dlogit)) {
        out->max_abs_dlogit = d;
        out->dlogit_pos = i;
    }
}

static void decide(verdict *out, verdict_kind kind, int passed, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void decide(verdict *out, verdict_kind kind, int passed, const char *fmt, ...) {
    out->kind = kind;
    out->passed = passed;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof out->why, fmt, ap);
    va_end(ap);
}

void verdict_judge(const verdict_input *in, verdict *out) {
    memset(out, 0, sizeof *out);
    out->diff = out->tf_fail = out->dlogit_pos = -1;
    out->ref_token = out->eng_token = -1;
    if (in->rejected) {
        decide(out, VERDICT_REJECTED, in->expect_rejected,
               "refused at admission, %s",
               in->expect_rejected ? "as the workload expects" : "but the workload expects it to run");
        return;
    }
    if (in->expect_rejected) {
        decide(out, VERDICT_MISMATCH, 0, "ran, but the workload expects it refused at admission");
        return;
    }
    const size_t V = (size_t)in->V;
    int n = in->n_ref < in->n_eng ? in->n_ref : in->n_eng, d = 0;
    while (d < n && in->ref_tokens[d] == in->eng_tokens[d]) d++;
    int shared = d < n ? d + 1 : n; // rows with a common prefix
    for (int i = 0; in->eng_rows && i < shared; i++)
        track_dlogit(out, in->eng_rows + i * V, in->ref_rows + i * V, in->V, i);
    if (d == n && in->n_ref == in->n_eng) {
        decide(out, VERDICT_IDENTICAL, 1, "identical token ids");
        return;
    }
    out->diff = d;
    if (d < in->n_ref) {
        out->ref_token = in->ref_tokens[d];
        verdict_row_top(in->ref_rows + d * V, in->V, &out->ref_top);
        out->ref_margin = (double)out->ref_top.vals[0] - (double)out->ref_top.vals[1];
    }
    if (d < in->n_eng) {
        out->eng_token = in->eng_tokens[d];
        if (in->eng_rows) verdict_row_top(in->eng_rows + d * V, in->V, &out->eng_top);
    }
    if (d == n) {
        decide(out, VERDICT_MISMATCH, 0,
               "the outputs agree on %d tokens, then the %s output ends (the reference has %d, "
               "the engine %d)",
               d, in->n_eng < in->n_ref ? "engine's" : "reference's", in->n_ref, in->n_eng);
        return;
    }
    const float *ref_row = in->ref_rows + d * V;
    out->tie_margin = (double)ref_row[out->ref_token] - (double)ref_row[out->eng_token];
    const int sampled = in->temperature > 0.0;
    double margin = out->tie_margin;
    char what[96]; // the margin at d against its bound, in words
    if (sampled) {
        out->bound = 4.0 * in->tol / in->temperature;
        margin = out->sample_margin =
            sampler_margin(ref_row, in->V, in->temperature, in->seed, (int64_t)in->n_prompt + d);
        snprintf(what, sizeof what, "sampled: the reference's sampling margin %.4g", margin);
    } else {
        out->bound = in->tol;
        snprintf(what, sizeof what, "the reference's margin %.4g nat", margin);
    }
    const char *bound_name = sampled ? "4 tol/T" : "the tolerance";
    if (!(margin < out->bound)) {
        decide(out, VERDICT_MISMATCH, 0, "%s at %d is not below %s %.4g", what, d, bound_name,
               out->bound);
        return;
    }
    if (!in->tf_rows) {
        decide(out, VERDICT_MISMATCH, 0, "a tie candidate at %d without teacher-forced rows", d);
        return;
    }
    for (int i = d + 1; i < in->n_eng; i++) {
        const float *tf = in->tf_rows + i * V;
        if (in->eng_rows) track_dlogit(out, in->eng_rows + i * V, tf, in->V, i);
        if (out->tf_fail >= 0) continue;
        int64_t pos = (int64_t)in->n_prompt + i;
        double gap;
        int pass;
        if (sampled) {
            pass = sampler_pick(tf, in->V, in->temperature, in->seed, pos) == in->eng_tokens[i];
            gap = sampler_margin(tf, in->V, in->temperature, in->seed, pos);
            pass = pass || gap < out->bound;
        } else {
            gap = (double)tf[argmax_f32(tf, in->V)] - (double)tf[in->eng_tokens[i]];
            pass = gap <= in->tol;
        }
        if (!pass) {
            out->tf_fail = i;
            out->tf_gap = gap;
        }
    }
    if (out->tf_fail >= 0) {
        if (sampled)
            decide(out, VERDICT_MISMATCH, 0,
                   "a tie at the first difference, but at later token %d the reference samples "
                   "another token with sampling margin %.4g, not below 4 tol/T %.4g",
                   out->tf_fail, out->tf_gap, out->bound);
        else
            decide(out, VERDICT_MISMATCH, 0,
                   "a tie at the first difference, but later token %d fails the teacher-forced "
                   "check by %.4g nat",
                   out->tf_fail, out->tf_gap);
        return;
    }
    if (in->identical_only) {
        decide(out, VERDICT_TIE, 0,
               "a TIE (%s is below %s %.4g and every later token passes the teacher-forced "
               "check), but this suite requires every request IDENTICAL",
               what, bound_name, out->bound);
        return;
    }
    decide(out, VERDICT_TIE, 1,
           "%s is below %s %.4g and every later token passes the teacher-forced check", what,
           bound_name, out->bound);
}

int verdict_teacher_rows(const target_model *m, const int *prompt, int n_prompt, const int *tokens,
                         int n, float *rows) {
    const qwen3_config *c = &m->cfg;
    if (n_prompt < 1 || n < 1 || (long)n_prompt + n > c->max_position_embeddings)
        return sg_fail(SG_EXIT_USAGE,
                       "teacher-forced check: a prompt of %d and %d tokens do not fit the target "
                       "(max_position_embeddings %d)",
                       n_prompt, n, c->max_position_embeddings);
    for (int i = 0; i < n_prompt + n; i++) {
        int id = i < n_prompt ? prompt[i] : tokens[i - n_prompt];
        if (id < 0 || id >= c->vocab_size)
            return sg_fail(SG_EXIT_USAGE, "teacher-forced check: token %d at %d is outside the "
                           "vocabulary [0, %d)", id, i, c->vocab_size);
    }
    size_t V = (size_t)c->vocab_size;
    ref_target t;
    ref_target_init(&t, m, n_prompt + n - 1);
    ref_target_forward_tail(&t, prompt, n_prompt, NULL, 0, 1, rows, NULL);
    for (int i = 1; i < n; i++)
        ref_target_forward_tail(&t, tokens + i - 1, 1, NULL, 0, 1, rows + i * V, NULL);
    ref_target_free(&t);
    return SG_OK;
}
