// ref/qwen3.c: the plain Qwen3 target forward (dspark-spec.md §1) with a contiguous KV cache and
// tap capture; see ref/qwen3.h. One code path serves prefill chunks and one-row decodes.
#include "qwen3.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ops.h"

void ref_target_init(ref_target *t, const target_model *m, int max_len) {
    const qwen3_config *c = &m->cfg;
    SG_CHECK(max_len >= 1, "ref_target_init max_len %d", max_len);
    size_t kv_dim = (size_t)c->num_key_value_heads * c->head_dim;
    t->model = m;
    rope_table_build(&t->rope, c->rope_theta, c->head_dim, max_len);
    t->max_len = max_len;
    t->len = 0;
    t->k_cache = sg_calloc((size_t)c->num_hidden_layers * max_len * kv_dim, sizeof(float));
    t->v_cache = sg_calloc((size_t)c->num_hidden_layers * max_len * kv_dim, sizeof(float));
}

void ref_target_free(ref_target *t) {
    rope_table_free(&t->rope);
    free(t->k_cache);
    free(t->v_cache);
    memset(t, 0, sizeof *t);
}

void ref_target_forward_tail(ref_target *t, const int *tokens, int n, const int *tap_ids,
                             int n_taps, int n_logits, float *logits, float *taps) {
    const target_model *m = t->model;
    const qwen3_config *c = &m->cfg;
    const int H = c->hidden_size, nH = c->num_attention_heads, nKV = c->num_key_value_heads;
    const int hd = c->head_dim, I = c->intermediate_size, V = c->vocab_size;
    const int q_dim = nH * hd, kv_dim = nKV * hd;
    const float eps = c->rms_norm_eps;
    SG_CHECK(n >= 1 && t->len + n <= t->max_len, "forward of %d rows at len %d, max_len %d", n,
             t->len, t->max_len);
    SG_CHECK(n_logits >= 0 && n_logits <= n, "n_logits %d of %d rows", n_logits, n);
    for (int j = 0; taps && j < n_taps; j++)
        SG_CHECK(tap_ids[j] >= 0 && tap_ids[j] < c->num_hidden_layers, "tap layer %d of %d",
                 tap_ids[j], c->num_hidden_layers);

    float *h = sg_calloc((size_t)n * H, sizeof *h);      // residual stream [n, H]
    float *x = sg_calloc((size_t)n * H, sizeof *x);      // normed input [n, H]
    float *q = sg_calloc((size_t)n * q_dim, sizeof *q);  // [n, nH*hd]
    float *att = sg_calloc((size_t)n * q_dim, sizeof *att); // [n, nH*hd]
    float *gate = sg_calloc((size_t)n * I, sizeof *gate); // [n, I]
    float *up = sg_calloc((size_t)n * I, sizeof *up);     // [n, I]

    for (int i = 0; i < n; i++) {
        SG_CHECK(tokens[i] >= 0 && tokens[i] < V, "token %d out of range [0, %d)", tokens[i], V);
        const bf16 *e = m->embed + (size_t)tokens[i] * H;
        for (int j = 0; j < H; j++) h[(size_t)i * H + j] = bf16_to_f32(e[j]);
    }

    for (int l = 0; l < c->num_hidden_layers; l++) {
        const layer_weights *w = &m->layers[l];
        float *kc = t->k_cache + ((size_t)l * t->max_len + t->len) * kv_dim; // rows len .. len+n-1
        float *vc = t->v_cache + ((size_t)l * t->max_len + t->len) * kv_dim;

        // Attention block: K/V of the new rows go straight into the cache.
        ref_rmsnorm(h, n, H, w->input_norm, eps, x);
        ref_matmul(x, n, H, w->wq, q_dim, q, 0);
        ref_matmul(x, n, H, w->wk, kv_dim, kc, 0);
        ref_matmul(x, n, H, w->wv, kv_dim, vc, 0);
        for (int i = 0; i < n; i++) {
            int pos = t->len + i;
            ref_head_norm_rope(q + (size_t)i * q_dim, nH, hd, w->q_norm, eps, &t->rope, pos);
            ref_head_norm_rope(kc + (size_t)i * kv_dim, nKV, hd, w->k_norm, eps, &t->rope, pos);
        }
        const float *k_layer = t->k_cache + (size_t)l * t->max_len * kv_dim;
        const float *v_layer = t->v_cache + (size_t)l * t->max_len * kv_dim;
        for (int i = 0; i < n; i++) // causal: row i sees positions 0 .. len+i
            ref_attention_row(q + (size_t)i * q_dim, k_layer, v_layer, t->len + i + 1, nH, nKV, hd,
                              att + (size_t)i * q_dim);
        ref_matmul(att, n, q_dim, w->wo, H, x, 0);
        ref_residual_add(h, x, n * H);

        ref_mlp_block(h, n, H, I, w, eps, x, gate, up);

        for (int j = 0; taps && j < n_taps; j++)
            if (tap_ids[j] == l)
                for (int i = 0; i < n; i++)
                    memcpy(taps + ((size_t)i * n_taps + j) * H, h + (size_t)i * H,
                           (size_t)H * sizeof *h);
    }

    if (logits && n_logits > 0) {
        const float *tail = h + (size_t)(n - n_logits) * H;
        ref_rmsnorm(tail, n_logits, H, m->final_norm, eps, x);
        ref_matmul(x, n_logits, H, m->lm_head, V, logits, 1);
    }
    t->len += n;
    free(h);
    free(x);
    free(q);
    free(att);
    free(gate);
    free(up);
}

void ref_target_forward(ref_target *t, const int *tokens, int n, const int *tap_ids, int n_taps,
                        float *logits, float *taps) {
    ref_target_forward_tail(t, tokens, n, tap_ids, n_taps, n, logits, taps);
}
