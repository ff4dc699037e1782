// common/config.c: config.json of the Qwen3 target and of the DSpark / DFlash drafters.
//
// Contract: see config.h. Every message starts with the config's name (its path) and says what is
// wrong and how to fix it. Required integers must be exact JSON integers; nothing is derived
// (head_dim in particular). What the models here do not implement is refused, not ignored.
#include "config.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "file.h"

static const cJSON *get(const cJSON *obj, const char *key) {
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

// Absent or JSON null.
static int is_unset(const cJSON *item) { return !item || cJSON_IsNull(item); }

// An integer field in [lo, hi]. def == NULL: required; else the value used when absent or null.
static int read_int(const cJSON *obj, const char *key, const char *name, int lo, int hi,
                    const int *def, int *out) {
    const cJSON *item = get(obj, key);
    if (is_unset(item)) {
        if (!def)
            return sg_fail(SG_EXIT_INPUT, "%s: required field '%s' is missing: add it", name, key);
        *out = *def;
        return SG_OK;
    }
    double v = cJSON_IsNumber(item) ? item->valuedouble : NAN;
    if (!(v >= lo && v <= hi) || v != floor(v))
        return sg_fail(SG_EXIT_INPUT, "%s: field '%s' must be an integer in [%d, %d]", name, key,
                       lo, hi);
    *out = (int)v;
    return SG_OK;
}

// A boolean field; absent or null gives def.
static int read_bool(const cJSON *obj, const char *key, const char *name, int def, int *out) {
    const cJSON *item = get(obj, key);
    if (is_unset(item)) {
        *out = def;
        return SG_OK;
    }
    if (!cJSON_IsBool(item))
        return sg_fail(SG_EXIT_INPUT, "%s: field '%s' must be true or false", name, key);
    *out = cJSON_IsTrue(item);
    return SG_OK;
}

// A positive finite number; required.
static int read_positive(const cJSON *obj, const char *key, const char *name, double *out) {
    const cJSON *item = get(obj, key);
    if (is_unset(item))
        return sg_fail(SG_EXIT_INPUT, "%s: required field '%s' is missing: add it", name, key);
    if (!cJSON_IsNumber(item) || !isfinite(item->valuedouble) || !(item->valuedouble > 0))
        return sg_fail(SG_EXIT_INPUT, "%s: field '%s' must be a positive number", name, key);
    *out = item->valuedouble;
    return SG_OK;
}

// rope_theta at top level or in rope_parameters (both: they must agree); refuses scaled RoPE.
static int read_rope(const cJSON *root, const char *name, double *theta) {
    if (!is_unset(get(root, "rope_scaling")))
        return sg_fail(SG_EXIT_INPUT,
                       "%s: rope_scaling is set; sparkgate implements plain RoPE only (set "
                       "rope_scaling to null or use a checkpoint without it)",
                       name);
    const cJSON *params = get(root, "rope_parameters");
    if (!is_unset(params)) {
        if (!cJSON_IsObject(params))
            return sg_fail(SG_EXIT_INPUT, "%s: rope_parameters must be an object", name);
        const cJSON *type = get(params, "rope_type");
        if (!is_unset(type) && (!cJSON_IsString(type) || strcmp(type->valuestring, "default") != 0))
            return sg_fail(SG_EXIT_INPUT,
                           "%s: rope_parameters.rope_type is %s; sparkgate implements plain RoPE "
                           "only (rope_type \"default\")",
                           name, cJSON_IsString(type) ? type->valuestring : "not a string");
    }
    int top = !is_unset(get(root, "rope_theta"));
    int nested = !is_unset(params) && !is_unset(get(params, "rope_theta"));
    if (!top && !nested)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: required field 'rope_theta' is missing (at top level or in "
                       "rope_parameters): add it",
                       name);
    double top_theta = 0, nested_theta = 0;
    if (top) SG_TRY(read_positive(root, "rope_theta", name, &top_theta));
    if (nested) SG_TRY(read_positive(params, "rope_theta", name, &nested_theta));
    if (top && nested && top_theta != nested_theta)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: rope_theta %g disagrees with rope_parameters.rope_theta %g: keep one",
                       name, top_theta, nested_theta);
    *theta = top ? top_theta : nested_theta;
    return SG_OK;
}

// eos_token_id: an int, a list of ints (at most SG_MAX_EOS), or absent/null.
static int read_eos(const cJSON *root, const char *name, qwen3_config *c) {
    const cJSON *eos = get(root, "eos_token_id");
    c->n_eos = 0;
    if (is_unset(eos)) return SG_OK;
    if (cJSON_IsArray(eos) && cJSON_GetArraySize(eos) > SG_MAX_EOS)
        return sg_fail(SG_EXIT_INPUT, "%s: eos_token_id lists %d ids, at most %d supported", name,
                       cJSON_GetArraySize(eos), SG_MAX_EOS);
    const cJSON *first = cJSON_IsArray(eos) ? eos->child : eos;
    for (const cJSON *e = first; e; e = cJSON_IsArray(eos) ? e->next : NULL) {
        double v = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!(v >= 0 && v < c->vocab_size) || v != floor(v))
            return sg_fail(SG_EXIT_INPUT,
                           "%s: eos_token_id must be a token id in [0, vocab_size %d) or a list of "
                           "them",
                           name, c->vocab_size);
        c->eos_ids[c->n_eos++] = (int)v;
    }
    return SG_OK;
}

// The Qwen3 fields of a config object (target or drafter backbone).
static int parse_arch(const cJSON *root, const char *name, qwen3_config *c) {
    memset(c, 0, sizeof *c);
    if (!cJSON_IsObject(root)) return sg_fail(SG_EXIT_INPUT, "%s: not a JSON object", name);
    SG_TRY(read_int(root, "hidden_size", name, 1, INT_MAX, NULL, &c->hidden_size));
    SG_TRY(read_int(root, "num_hidden_layers", name, 1, INT_MAX, NULL, &c->num_hidden_layers));
    SG_TRY(read_int(root, "num_attention_heads", name, 1, INT_MAX, NULL, &c->num_attention_heads));
    SG_TRY(read_int(root, "num_key_value_heads", name, 1, INT_MAX, NULL, &c->num_key_value_heads));
    SG_TRY(read_int(root, "head_dim", name, 1, INT_MAX, NULL, &c->head_dim));
    SG_TRY(read_int(root, "intermediate_size", name, 1, INT_MAX, NULL, &c->intermediate_size));
    SG_TRY(read_int(root, "vocab_size", name, 1, INT_MAX, NULL, &c->vocab_size));
    SG_TRY(read_int(root, "max_position_embeddings", name, 1, INT_MAX, NULL,
                    &c->max_position_embeddings));
    if (c->num_attention_heads % c->num_key_value_heads != 0)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: num_key_value_heads %d does not divide num_attention_heads %d", name,
                       c->num_key_value_heads, c->num_attention_heads);
    if (c->head_dim % 2 != 0)
        return sg_fail(SG_EXIT_INPUT, "%s: head_dim %d is odd; rotate-half RoPE needs it even",
                       name, c->head_dim);
    double eps = 0;
    SG_TRY(read_positive(root, "rms_norm_eps", name, &eps));
    c->rms_norm_eps = (float)eps;
    if (!(c->rms_norm_eps > 0) || !isfinite(c->rms_norm_eps))
        return sg_fail(SG_EXIT_INPUT, "%s: rms_norm_eps %g is not a positive float", name, eps);
    SG_TRY(read_rope(root, name, &c->rope_theta));
    SG_TRY(read_bool(root, "tie_word_embeddings", name, 0, &c->tie_word_embeddings));
    SG_TRY(read_eos(root, name, c));

    int flag = 0;
    SG_TRY(read_bool(root, "use_sliding_window", name, 0, &flag));
    if (flag)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: use_sliding_window is true; sparkgate implements full attention only",
                       name);
    SG_TRY(read_bool(root, "attention_bias", name, 0, &flag));
    if (flag)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: attention_bias is true; the Qwen3 models here have no biases", name);
    const cJSON *act = get(root, "hidden_act");
    if (!is_unset(act) && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0))
        return sg_fail(SG_EXIT_INPUT,
                       "%s: hidden_act is %s; sparkgate implements silu (SwiGLU) only", name,
                       cJSON_IsString(act) ? act->valuestring : "not a string");
    if (!is_unset(get(root, "quantization_config")))
        return sg_fail(SG_EXIT_INPUT,
                       "%s: quantization_config is present; sparkgate loads unquantized "
                       "BF16/F16/F32 checkpoints only",
                       name);
    return SG_OK;
}

// Parses JSON text of exactly len bytes (only whitespace may follow the value).
static int parse_json(const char *json, size_t len, const char *name, cJSON **out) {
    const char *end = NULL;
    *out = cJSON_ParseWithLengthOpts(json, len, &end, 0);
    int ok = *out != NULL;
    for (size_t i = ok ? (size_t)(end - json) : len; i < len && ok; i++)
        ok = json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r';
    if (ok) return SG_OK;
    cJSON_Delete(*out);
    *out = NULL;
    return sg_fail(SG_EXIT_INPUT, "%s: not valid JSON", name);
}

int config_parse_target(const char *json, size_t len, const char *name, qwen3_config *out) {
    cJSON *root;
    SG_TRY(parse_json(json, len, name, &root));
    int status = parse_arch(root, name, out);
    cJSON_Delete(root);
    return status;
}

// B in 1..SG_MAX_BLOCK; anchor-drop drafts B - 1 tokens, so it needs B >= 2.
static int check_block(const drafter_config *d, const char *name) {
    int lo = d->layout == LAYOUT_ANCHOR_DROP ? 2 : 1;
    if (d->block_size < lo || d->block_size > SG_MAX_BLOCK)
        return sg_fail(SG_EXIT_INPUT, "%s: block_size %d must be in [%d, %d] for layout %s", name,
                       d->block_size, lo, SG_MAX_BLOCK, block_layout_name(d->layout));
    return SG_OK;
}

static int parse_drafter_fields(const cJSON *root, const char *name, drafter_config *d) {
    SG_TRY(parse_arch(root, name, &d->arch));
    // The schema decides where the ids live and the layout; architectures is not consulted.
    const cJSON *nested = get(root, "dflash_config");
    const cJSON *src = root;
    d->schema = DRAFT_SCHEMA_DSPARK;
    d->layout = LAYOUT_ANCHOR_FIRST;
    if (!is_unset(nested)) {
        if (!cJSON_IsObject(nested))
            return sg_fail(SG_EXIT_INPUT, "%s: dflash_config must be an object", name);
        if (get(root, "target_layer_ids") || get(root, "mask_token_id"))
            return sg_fail(SG_EXIT_INPUT,
                           "%s: has both a nested dflash_config and top-level target_layer_ids or "
                           "mask_token_id, so its schema (and block layout) is ambiguous: keep one",
                           name);
        src = nested;
        d->schema = DRAFT_SCHEMA_DFLASH;
        d->layout = LAYOUT_ANCHOR_DROP;
    }
    SG_TRY(read_int(src, "mask_token_id", name, 0, INT_MAX, NULL, &d->mask_token_id));
    const cJSON *ids = get(src, "target_layer_ids");
    d->n_taps = 0;
    if (!is_unset(ids)) {
        int n = cJSON_IsArray(ids) ? cJSON_GetArraySize(ids) : -1;
        if (n < 1 || n > SG_MAX_TAPS)
            return sg_fail(SG_EXIT_INPUT,
                           "%s: target_layer_ids must be a list of 1 to %d layer ids", name,
                           SG_MAX_TAPS);
        for (const cJSON *e = ids->child; e; e = e->next) {
            double v = cJSON_IsNumber(e) ? e->valuedouble : NAN;
            if (!(v >= 0 && v <= INT_MAX) || v != floor(v))
                return sg_fail(SG_EXIT_INPUT,
                               "%s: target_layer_ids must hold non-negative integers", name);
            d->target_layer_ids[d->n_taps++] = (int)v;
        }
    }
    SG_TRY(read_int(root, "block_size", name, 1, SG_MAX_BLOCK, NULL, &d->block_size));
    SG_TRY(check_block(d, name));
    static const int zero = 0;
    SG_TRY(read_int(root, "markov_rank", name, 0, INT_MAX, &zero, &d->markov_rank));
    const cJSON *type = get(root, "markov_head_type");
    if (d->markov_rank > 0 && !is_unset(type) &&
        (!cJSON_IsString(type) || strcmp(type->valuestring, "vanilla") != 0))
        return sg_fail(SG_EXIT_INPUT,
                       "%s: markov_head_type is %s; sparkgate implements the \"vanilla\" Markov "
                       "head only",
                       name, cJSON_IsString(type) ? type->valuestring : "not a string");
    int with_markov = 0;
    SG_TRY(read_bool(root, "enable_confidence_head", name, 0, &d->has_confidence_head));
    SG_TRY(read_bool(root, "confidence_head_with_markov", name, 0, &with_markov));
    d->confidence_with_markov = d->has_confidence_head && with_markov;
    if (d->confidence_with_markov && d->markov_rank == 0)
        return sg_fail(SG_EXIT_INPUT,
                       "%s: confidence_head_with_markov is true but markov_rank is 0: the "
                       "confidence head reads the Markov head's w1 rows",
                       name);
    return SG_OK;
}

int config_parse_drafter(const char *json, size_t len, const char *name, drafter_config *out) {
    memset(out, 0, sizeof *out);
    cJSON *root;
    SG_TRY(parse_json(json, len, name, &root));
    int status = parse_drafter_fields(root, name, out);
    cJSON_Delete(root);
    return status;
}

int config_load_target(const char *path, qwen3_config *out) {
    char *json;
    size_t len;
    SG_TRY(file_read_all(path, &json, &len));
    int status = config_parse_target(json, len, path, out);
    free(json);
    return status;
}

int config_load_drafter(const char *path, drafter_config *out) {
    char *json;
    size_t len;
    SG_TRY(file_read_all(path, &json, &len));
    int status = config_parse_drafter(json, len, path, out);
    free(json);
    return status;
}

// z-lab's rule for drafters without ids: m = 1 gives [L / 2]; else round(1 + i*(L-4)/(m-1)),
// rounding half to even like Python's round.
static void default_taps(int n_target_layers, int m, int *ids) {
    if (m == 1) {
        ids[0] = n_target_layers / 2;
        return;
    }
    for (int i = 0; i < m; i++)
        ids[i] = (int)nearbyint(1.0 + (double)i * (n_target_layers - 4) / (m - 1));
}

int config_check_pair(drafter_config *d, const qwen3_config *t) {
    const char *name = "drafter config";
    char msg[1024];
    int used = 0;
#define SG_PAIR_INT(field)                                                                         \
    if (d->arch.field != t->field)                                                                 \
        used += snprintf(msg + used, sizeof msg - (size_t)used, "%s" #field " %d vs %d",           \
                         used ? "; " : "", d->arch.field, t->field);
    SG_PAIR_INT(hidden_size)
    SG_PAIR_INT(num_attention_heads)
    SG_PAIR_INT(num_key_value_heads)
    SG_PAIR_INT(head_dim)
    SG_PAIR_INT(vocab_size)
#undef SG_PAIR_INT
    if (d->arch.rope_theta != t->rope_theta)
        used += snprintf(msg + used, sizeof msg - (size_t)used, "%srope_theta %g vs %g",
                         used ? "; " : "", d->arch.rope_theta, t->rope_theta);
    if (used)
        return sg_fail(SG_EXIT_INPUT,
                       "the drafter does not match the target (drafter vs target): %s; use the "
                       "drafter trained for this target",
                       msg);
    SG_TRY(check_block(d, name));
    if (d->mask_token_id >= t->vocab_size)
        return sg_fail(SG_EXIT_INPUT, "%s: mask_token_id %d is not below vocab_size %d", name,
                       d->mask_token_id, t->vocab_size);
    int ids[SG_MAX_TAPS], n = d->n_taps;
    if (n == 0) {
        n = d->arch.num_hidden_layers;
        if (n > SG_MAX_TAPS)
            return sg_fail(SG_EXIT_INPUT,
                           "%s: no target_layer_ids, and the default rule gives one per drafter "
                           "layer (%d), more than %d taps: add target_layer_ids",
                           name, n, SG_MAX_TAPS);
        default_taps(t->num_hidden_layers, n, ids);
    } else {
        memcpy(ids, d->target_layer_ids, sizeof ids);
    }
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->num_hidden_layers || (i > 0 && ids[i] <= ids[i - 1]))
            return sg_fail(SG_EXIT_INPUT,
                           "%s: target_layer_ids%s must be strictly increasing layer ids below the "
                           "target's %d layers (id %d at index %d)",
                           name, d->n_taps ? "" : " (default rule)", t->num_hidden_layers, ids[i],
                           i);
    }
    memcpy(d->target_layer_ids, ids, sizeof ids);
    d->n_taps = n;
    return SG_OK;
}

int drafter_num_drafts(const drafter_config *d) {
    return d->layout == LAYOUT_ANCHOR_DROP ? d->block_size - 1 : d->block_size;
}

const char *block_layout_name(block_layout layout) {
    return layout == LAYOUT_ANCHOR_DROP ? "anchor-drop" : "anchor-first";
}

int block_layout_parse(const char *name, block_layout *out) {
    if (strcmp(name, "anchor-first") == 0)
        *out = LAYOUT_ANCHOR_FIRST;
    else if (strcmp(name, "anchor-drop") == 0)
        *out = LAYOUT_ANCHOR_DROP;
    else
        return sg_fail(SG_EXIT_USAGE, "unknown block layout '%s': use anchor-first or anchor-drop",
                       name);
    return SG_OK;
}
