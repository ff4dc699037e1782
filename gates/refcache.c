// gates/refcache.c: reference decodes shared between suites (see refcache.h).
#include "refcache.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

struct ref_cache_entry {
    sg_request key;     // owned copies of prompt and stop
    ref_output out;
    ref_cache_entry *next;
};

void ref_cache_init(ref_cache *c, const target_model *target, const drafter_model *draft) {
    memset(c, 0, sizeof *c);
    c->target = target;
    c->draft = draft;
}

static int same_ids(const int *a, int na, const int *b, int nb) {
    return na == nb && (na == 0 || memcmp(a, b, (size_t)na * sizeof *a) == 0);
}

static int same_decode(const sg_request *a, const sg_request *b) {
    return same_ids(a->prompt, a->n_prompt, b->prompt, b->n_prompt) &&
           a->max_new_tokens == b->max_new_tokens &&
           same_ids(a->stop, a->n_stop, b->stop, b->n_stop) &&
           a->temperature == b->temperature && a->seed == b->seed && a->ignore_eos == b->ignore_eos;
}

static int *copy_ids(const int *ids, int n) {
    int *out = sg_calloc((size_t)(n > 0 ? n : 1), sizeof *out);
    if (n > 0) memcpy(out, ids, (size_t)n * sizeof *out);
    return out;
}

int ref_cache_get(ref_cache *c, const sg_request *r, const ref_output **out) {
    for (ref_cache_entry *e = c->entries; e; e = e->next)
        if (same_decode(&e->key, r)) {
            c->hits++;
            *out = &e->out;
            return SG_OK;
        }
    const drafter_model *d = c->draft;
    ref_gen_options g = {.max_new_tokens = r->max_new_tokens, .stop = r->stop, .n_stop = r->n_stop,
                         .ignore_eos = r->ignore_eos, .temperature = r->temperature,
                         .seed = r->seed, .tap_ids = d ? d->cfg.target_layer_ids : NULL,
                         .n_taps = d ? d->cfg.n_taps : 0, .keep_logits = 1};
    ref_cache_entry *e = sg_calloc(1, sizeof *e);
    int st = ref_generate(c->target, r->prompt, r->n_prompt, &g, &e->out);
    if (st != SG_OK) {
        free(e);
        return sg_fail_context(st, "reference decode of request %s", r->id);
    }
    e->key = *r;
    e->key.prompt = copy_ids(r->prompt, r->n_prompt);
    e->key.stop = copy_ids(r->stop, r->n_stop);
    e->next = c->entries;
    c->entries = e;
    c->misses++;
    *out = &e->out;
    return SG_OK;
}

void ref_cache_free(ref_cache *c) {
    while (c->entries) {
        ref_cache_entry *e = c->entries;
        c->entries = e->next;
        free(e->key.prompt);
        free(e->key.stop);
        ref_output_free(&e->out);
        free(e);
    }
}
