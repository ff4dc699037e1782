// common/model.c: loading a Qwen3 target and a DSpark/DFlash drafter from checkpoint folders.
//
// Contract: see model.h. dir/config.json is parsed and validated, the safetensors archive opened
// (st_open_dir), and every tensor fetched as bf16 with exactly the shape the config implies. Any
// failure frees what was loaded, zeroes the model and prefixes the message with the folder.
#include "model.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

// Fetches `prefix` + `suffix` as bf16 with the given shape.
static int get(st_archive *a, const char *prefix, const char *suffix, int ndim, int64_t d0,
               int64_t d1, const bf16 **out) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", prefix, suffix);
    int64_t shape[2] = {d0, d1};
    return st_get_bf16(a, name, ndim, shape, out);
}

// One Qwen3 decoder layer named `prefix` ("model.layers.3." or "layers.3.").
static int load_layer(st_archive *a, const char *prefix, const qwen3_config *c, layer_weights *w) {
    int64_t H = c->hidden_size, I = c->intermediate_size, hd = c->head_dim;
    int64_t q = c->num_attention_heads * hd, kv = c->num_key_value_heads * hd;
    SG_TRY(get(a, prefix, "input_layernorm.weight", 1, H, 0, &w->input_norm));
    SG_TRY(get(a, prefix, "post_attention_layernorm.weight", 1, H, 0, &w->post_norm));
    SG_TRY(get(a, prefix, "self_attn.q_proj.weight", 2, q, H, &w->wq));
    SG_TRY(get(a, prefix, "self_attn.k_proj.weight", 2, kv, H, &w->wk));
    SG_TRY(get(a, prefix, "self_attn.v_proj.weight", 2, kv, H, &w->wv));
    SG_TRY(get(a, prefix, "self_attn.o_proj.weight", 2, H, q, &w->wo));
    SG_TRY(get(a, prefix, "self_attn.q_norm.weight", 1, hd, 0, &w->q_norm));
    SG_TRY(get(a, prefix, "self_attn.k_norm.weight", 1, hd, 0, &w->k_norm));
    SG_TRY(get(a, prefix, "mlp.gate_proj.weight", 2, I, H, &w->w_gate));
    SG_TRY(get(a, prefix, "mlp.up_proj.weight", 2, I, H, &w->w_up));
    SG_TRY(get(a, prefix, "mlp.down_proj.weight", 2, H, I, &w->w_down));
    return SG_OK;
}

// Layers 0..n-1 named `fmt` % i (e.g. "model.layers.%d.").
static int load_layers(st_archive *a, const char *fmt, const qwen3_config *c, int n,
                       layer_weights **out) {
    *out = sg_calloc((size_t)n, sizeof **out);
    for (int i = 0; i < n; i++) {
        char prefix[64];
        snprintf(prefix, sizeof prefix, fmt, i);
        SG_TRY(load_layer(a, prefix, c, &(*out)[i]));
    }
    return SG_OK;
}

static char *config_path(const char *dir) {
    size_t n = strlen(dir) + sizeof "/config.json";
    char *p = sg_calloc(n, 1);
    snprintf(p, n, "%s/config.json", dir);
    return p;
}

static int load_target_tensors(const char *dir, target_model *m) {
    char *path = config_path(dir);
    int status = config_load_target(path, &m->cfg);
    free(path);
    SG_TRY(status);
    SG_TRY(st_open_dir(dir, &m->archive));
    const qwen3_config *c = &m->cfg;
    st_archive *a = &m->archive;
    SG_TRY(get(a, "", "model.embed_tokens.weight", 2, c->vocab_size, c->hidden_size, &m->embed));
    SG_TRY(get(a, "", "model.norm.weight", 1, c->hidden_size, 0, &m->final_norm));
    m->lm_head = m->embed;
    if (!c->tie_word_embeddings && st_find(a, "lm_head.weight"))
        SG_TRY(get(a, "", "lm_head.weight", 2, c->vocab_size, c->hidden_size, &m->lm_head));
    return load_layers(a, "model.layers.%d.", c, c->num_hidden_layers, &m->layers);
}

int target_model_load(const char *dir, target_model *out) {
    memset(out, 0, sizeof *out);
    int status = load_target_tensors(dir, out);
    if (status != SG_OK) {
        target_model_free(out);
        return sg_fail_context(status, "loading the target from %s", dir);
    }
    return SG_OK;
}

void target_model_free(target_model *m) {
    st_close(&m->archive);
    free(m->layers);
    memset(m, 0, sizeof *m);
}

static int load_drafter_tensors(const char *dir, const target_model *target, drafter_model *m) {
    char *path = config_path(dir);
    int status = config_load_drafter(path, &m->cfg);
    if (status == SG_OK) {
        status = config_check_pair(&m->cfg, &target->cfg);
        if (status != SG_OK) sg_fail_context(status, "%s", path);
    }
    free(path);
    SG_TRY(status);
    SG_TRY(st_open_dir(dir, &m->archive));
    const drafter_config *d = &m->cfg;
    const qwen3_config *c = &d->arch;
    st_archive *a = &m->archive;
    int64_t H = c->hidden_size, V = c->vocab_size, r = d->markov_rank;
    SG_TRY(get(a, "", "fc.weight", 2, H, (int64_t)d->n_taps * H, &m->fc));
    SG_TRY(get(a, "", "hidden_norm.weight", 1, H, 0, &m->hidden_norm));
    SG_TRY(get(a, "", "norm.weight", 1, H, 0, &m->final_norm));
    SG_TRY(load_layers(a, "layers.%d.", c, c->num_hidden_layers, &m->layers));
    if (r > 0) {
        SG_TRY(get(a, "", "markov_head.markov_w1.weight", 2, V, r, &m->markov_w1));
        SG_TRY(get(a, "", "markov_head.markov_w2.weight", 2, V, r, &m->markov_w2));
    }
    if (d->has_confidence_head) {
        int64_t width = H + (d->confidence_with_markov ? r : 0);
        if (width > INT_MAX)
            return sg_fail(SG_EXIT_INPUT, "confidence head width %lld is too large",
                           (long long)width);
        SG_TRY(get(a, "", "confidence_head.proj.weight", 2, 1, width, &m->conf_w));
        m->conf_width = (int)width;
        int64_t one = 1;
        SG_TRY(st_get_f32(a, "confidence_head.proj.bias", 1, &one, &m->conf_b));
    }
    return SG_OK;
}

int drafter_model_load(const char *dir, const target_model *target, drafter_model *out) {
    memset(out, 0, sizeof *out);
    int status = load_drafter_tensors(dir, target, out);
    if (status != SG_OK) {
        drafter_model_free(out);
        return sg_fail_context(status, "loading the drafter from %s", dir);
    }
    return SG_OK;
}

void drafter_model_free(drafter_model *m) {
    st_close(&m->archive);
    free(m->layers);
    memset(m, 0, sizeof *m);
}
