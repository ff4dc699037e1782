// tests/ref_test_model.h: a small random Qwen3 target built in memory (no files), for ref/ tests.
//
// Geometry: H 32, 2 layers, 4 query heads, 2 KV heads, head_dim 12 (4·12 = 48 ≠ 32, as in
// Qwen3-4B), I 48, V 64, max_position_embeddings 64, eps 1e-6, theta 1e4, no EOS ids. Weights
// ~ N(0, 0.05²), embedding ~ N(0, 0.1²), norm weights 1 + N(0, 0.1²). Tied: lm_head is the
// embedding.
#ifndef SG_REF_TEST_MODEL_H
#define SG_REF_TEST_MODEL_H

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/model.h"
#include "testutil.h"

#define RTM_MAX_BUFS 40

typedef struct {
    target_model m;
    bf16 *bufs[RTM_MAX_BUFS]; // everything allocated, freed by rtm_free
    int n_bufs;
    uint64_t seed;
} rtm_model;

static inline bf16 *rtm_random(rtm_model *t, size_t n, double scale) {
    SG_CHECK(t->n_bufs < RTM_MAX_BUFS, "too many test buffers");
    return t->bufs[t->n_bufs++] = tu_random_bf16(n, scale, t->seed++);
}

static inline bf16 *rtm_norm(rtm_model *t, size_t n) {
    bf16 *w = rtm_random(t, n, 0.1);
    for (size_t i = 0; i < n; i++) w[i] = f32_to_bf16(1.0f + bf16_to_f32(w[i]));
    return w;
}

static inline void rtm_build(rtm_model *t, int tied, uint64_t seed) {
    memset(t, 0, sizeof *t);
    t->seed = seed;
    qwen3_config *c = &t->m.cfg;
    c->hidden_size = 32;
    c->num_hidden_layers = 2;
    c->num_attention_heads = 4;
    c->num_key_value_heads = 2;
    c->head_dim = 12;
    c->intermediate_size = 48;
    c->vocab_size = 64;
    c->max_position_embeddings = 64;
    c->rms_norm_eps = 1e-6f;
    c->rope_theta = 10000.0;
    c->tie_word_embeddings = tied;
    size_t H = 32, qd = 48, kvd = 24, I = 48, V = 64;
    t->m.embed = rtm_random(t, V * H, 0.1);
    t->m.final_norm = rtm_norm(t, H);
    t->m.lm_head = tied ? t->m.embed : rtm_random(t, V * H, 0.05);
    t->m.layers = sg_calloc((size_t)c->num_hidden_layers, sizeof *t->m.layers);
    for (int l = 0; l < c->num_hidden_layers; l++) {
        layer_weights *w = &t->m.layers[l];
        w->input_norm = rtm_norm(t, H);
        w->post_norm = rtm_norm(t, H);
        w->wq = rtm_random(t, qd * H, 0.05);
        w->wk = rtm_random(t, kvd * H, 0.05);
        w->wv = rtm_random(t, kvd * H, 0.05);
        w->wo = rtm_random(t, H * qd, 0.05);
        w->q_norm = rtm_norm(t, 12);
        w->k_norm = rtm_norm(t, 12);
        w->w_gate = rtm_random(t, I * H, 0.05);
        w->w_up = rtm_random(t, I * H, 0.05);
        w->w_down = rtm_random(t, H * I, 0.05);
    }
}

static inline void rtm_free(rtm_model *t) {
    for (int i = 0; i < t->n_bufs; i++) free(t->bufs[i]);
    free(t->m.layers);
    memset(t, 0, sizeof *t);
}

#endif
