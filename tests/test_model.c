// tests/test_model.c: target and drafter loading from tiny synthetic checkpoints written with the
// safetensors writer and config.json files built from the real configs' key sets: tied, untied and
// sharded targets, DSpark and DFlash drafters, and the failures (missing tensor, wrong shape,
// drafter that does not match its target, missing config).
// ctest-labels: cpu;unit
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/file.h"
#include "common/model.h"
#include "testutil.h"

#define TARGET_JSON "tests/data/configs/qwen3-4b.config.json"
#define DSPARK_JSON "tests/data/configs/dspark_qwen3_4b_block7.config.json"
#define DFLASH_JSON "tests/data/configs/qwen3-4b-dflash-b16.config.json"

// Tiny geometry: heads * head_dim (12) != hidden (8), as in Qwen3-4B.
enum { H = 8, L = 2, NH = 2, NKV = 1, HD = 6, I = 16, V = 11, R = 3 };
#define TINY_DIMS                                                                                  \
    "\"hidden_size\": 8, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": "   \
    "6, "                                                                                          \
    "\"intermediate_size\": 16, \"vocab_size\": 11, \"max_position_embeddings\": 64, "             \
    "\"eos_token_id\": [9, 10]"

static void assert_message(const char *a, const char *b) {
    const char *needles[] = {a, b};
    for (int i = 0; i < 2; i++)
        if (needles[i])
            ck_assert_msg(strstr(sg_error(), needles[i]), "message '%s' lacks '%s'", sg_error(),
                          needles[i]);
}

// Writes dir/config.json: the real config at `base` with the keys of the JSON object `overrides`
// replaced (a key written "-name" removes name).
static void write_config(const char *dir, const char *base, const char *overrides) {
    char *text;
    size_t len;
    ck_assert_int_eq(file_read_all(base, &text, &len), SG_OK);
    cJSON *root = cJSON_Parse(text);
    free(text);
    cJSON *over = cJSON_Parse(overrides);
    ck_assert_ptr_nonnull(root);
    ck_assert_msg(over != NULL, "bad overrides %s", overrides);
    for (cJSON *e = over->child; e; e = e->next) {
        const char *key = e->string[0] == '-' ? e->string + 1 : e->string;
        cJSON_DeleteItemFromObjectCaseSensitive(root, key);
        if (e->string[0] != '-') cJSON_AddItemToObject(root, key, cJSON_Duplicate(e, 1));
    }
    cJSON_Delete(over);
    char *out = cJSON_Print(root);
    cJSON_Delete(root);
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    tu_write_file(path, out, strlen(out));
    free(out);
}

// What to break in a checkpoint: a tensor left out, or one written one row too tall.
typedef struct {
    const char *omit;
    const char *reshape;
} breakage;

static uint64_t name_seed(const char *name) {
    uint64_t h = 1469598103934665603ull;
    for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ull;
    return h;
}

// The values every test tensor holds: seeded by its name.
static bf16 *values_of(const char *name, size_t n) {
    return tu_random_bf16(n, 0.5, name_seed(name));
}

static void add(st_writer *w, const breakage *b, const char *name, int ndim, int64_t d0,
                int64_t d1) {
    if (b->omit && strcmp(b->omit, name) == 0) return;
    int64_t shape[2] = {d0, d1};
    if (b->reshape && strcmp(b->reshape, name) == 0) shape[0]++;
    size_t n = (size_t)shape[0] * (size_t)(ndim == 2 ? shape[1] : 1);
    bf16 *x = values_of(name, n);
    st_writer_add(w, name, ST_BF16, ndim, shape, x);
    free(x);
}

// A 1-d F32 tensor with the given values.
static void add_f32(st_writer *w, const breakage *b, const char *name, int64_t n,
                    const float *values) {
    if (b->omit && strcmp(b->omit, name) == 0) return;
    st_writer_add(w, name, ST_F32, 1, &n, values);
}

static void add_layer(st_writer *w, const breakage *b, const char *fmt, int layer) {
    static const struct {
        const char *suffix;
        int ndim;
        int64_t d0, d1;
    } t[] = {
        {"input_layernorm.weight", 1, H, 0},         {"post_attention_layernorm.weight", 1, H, 0},
        {"self_attn.q_proj.weight", 2, NH * HD, H},  {"self_attn.k_proj.weight", 2, NKV * HD, H},
        {"self_attn.v_proj.weight", 2, NKV * HD, H}, {"self_attn.o_proj.weight", 2, H, NH * HD},
        {"self_attn.q_norm.weight", 1, HD, 0},       {"self_attn.k_norm.weight", 1, HD, 0},
        {"mlp.gate_proj.weight", 2, I, H},           {"mlp.up_proj.weight", 2, I, H},
        {"mlp.down_proj.weight", 2, H, I},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char name[128];
        snprintf(name, sizeof name, fmt, layer);
        strncat(name, t[i].suffix, sizeof name - strlen(name) - 1);
        add(w, b, name, t[i].ndim, t[i].d0, t[i].d1);
    }
}

// A tiny target checkpoint in a fresh folder.
static void make_target(char *dir, size_t size, int tied, int with_lm_head, int shards,
                        const breakage *b) {
    tu_tmpdir(dir, size);
    char over[512];
    snprintf(over, sizeof over,
             "{" TINY_DIMS ", \"num_hidden_layers\": %d, "
             "\"tie_word_embeddings\": %s}",
             L, tied ? "true" : "false");
    write_config(dir, TARGET_JSON, over);
    st_writer *w = st_writer_new();
    add(w, b, "model.embed_tokens.weight", 2, V, H);
    for (int l = 0; l < L; l++) add_layer(w, b, "model.layers.%d.", l);
    add(w, b, "model.norm.weight", 1, H, 0);
    if (with_lm_head) add(w, b, "lm_head.weight", 2, V, H);
    ck_assert_int_eq(st_writer_save_dir(w, dir, shards), SG_OK);
    st_writer_free(w);
}

static const breakage intact = {NULL, NULL};

static void assert_values(const bf16 *got, const char *name, size_t n) {
    bf16 *want = values_of(name, n);
    ck_assert_msg(memcmp(got, want, n * sizeof *want) == 0, "%s: wrong values", name);
    free(want);
}

static void load_target_ok(const char *dir, target_model *m) {
    ck_assert_msg(target_model_load(dir, m) == SG_OK, "%s", sg_error());
}

START_TEST(test_tied_target) {
    char dir[256];
    make_target(dir, sizeof dir, 1, 1, 1, &intact); // tied wins even when lm_head.weight exists
    target_model m;
    load_target_ok(dir, &m);
    ck_assert_int_eq(m.cfg.hidden_size, H);
    ck_assert_int_eq(m.cfg.num_attention_heads * m.cfg.head_dim, 12);
    ck_assert_int_eq(m.cfg.n_eos, 2);
    ck_assert_ptr_eq(m.lm_head, m.embed);
    assert_values(m.embed, "model.embed_tokens.weight", V * H);
    assert_values(m.final_norm, "model.norm.weight", H);
    assert_values(m.layers[1].wq, "model.layers.1.self_attn.q_proj.weight", NH * HD * H);
    assert_values(m.layers[0].wo, "model.layers.0.self_attn.o_proj.weight", H * NH * HD);
    assert_values(m.layers[1].k_norm, "model.layers.1.self_attn.k_norm.weight", HD);
    assert_values(m.layers[0].w_down, "model.layers.0.mlp.down_proj.weight", H * I);
    assert_values(m.layers[1].post_norm, "model.layers.1.post_attention_layernorm.weight", H);
    target_model_free(&m);
    ck_assert_ptr_null(m.layers);
}
END_TEST

START_TEST(test_untied_target) {
    char dir[256];
    make_target(dir, sizeof dir, 0, 1, 1, &intact);
    target_model m;
    load_target_ok(dir, &m);
    ck_assert_ptr_ne(m.lm_head, m.embed);
    assert_values(m.lm_head, "lm_head.weight", V * H);
    target_model_free(&m);
    // Untied without lm_head.weight: the embedding stands in (dspark-spec.md §1).
    make_target(dir, sizeof dir, 0, 0, 1, &intact);
    load_target_ok(dir, &m);
    ck_assert_ptr_eq(m.lm_head, m.embed);
    target_model_free(&m);
}
END_TEST

START_TEST(test_sharded_target) {
    char dir[256];
    make_target(dir, sizeof dir, 0, 1, 3, &intact);
    target_model m;
    load_target_ok(dir, &m);
    ck_assert_int_eq(m.archive.n_files, 3);
    assert_values(m.layers[1].w_up, "model.layers.1.mlp.up_proj.weight", I * H);
    assert_values(m.lm_head, "lm_head.weight", V * H);
    target_model_free(&m);
}
END_TEST

START_TEST(test_target_failures) {
    char dir[256];
    target_model m;
    breakage missing = {"model.layers.1.mlp.down_proj.weight", NULL};
    make_target(dir, sizeof dir, 1, 0, 1, &missing);
    ck_assert_int_eq(target_model_load(dir, &m), SG_EXIT_INPUT);
    assert_message(dir, "'model.layers.1.mlp.down_proj.weight' not found");
    assert_message("loading the target from", NULL);
    ck_assert_ptr_null(m.layers);

    breakage tall = {NULL, "model.layers.0.self_attn.q_proj.weight"};
    make_target(dir, sizeof dir, 1, 0, 2, &tall);
    ck_assert_int_eq(target_model_load(dir, &m), SG_EXIT_INPUT);
    assert_message("'model.layers.0.self_attn.q_proj.weight' has shape [13, 8], expected [12, 8]",
                   dir);

    breakage bad_head = {NULL, "lm_head.weight"};
    make_target(dir, sizeof dir, 0, 1, 1, &bad_head);
    ck_assert_int_eq(target_model_load(dir, &m), SG_EXIT_INPUT);
    assert_message("'lm_head.weight' has shape [12, 8], expected [11, 8]", NULL);

    make_target(dir, sizeof dir, 1, 0, 1, &intact);
    write_config(dir, TARGET_JSON, "{\"rope_scaling\": {\"type\": \"yarn\"}}");
    ck_assert_int_eq(target_model_load(dir, &m), SG_EXIT_INPUT);
    assert_message("config.json: rope_scaling is set", dir);

    tu_tmpdir(dir, sizeof dir);
    ck_assert_int_eq(target_model_load(dir, &m), SG_EXIT_INPUT);
    assert_message("config.json: cannot open", dir);
}
END_TEST

// A DSpark drafter (flat schema, Markov head, confidence head over [h ; w1[prev]]) with 2 layers;
// hidden_norm stored as F32 and the confidence bias as F32 to exercise conversion.
static void make_dspark(char *dir, size_t size, const char *extra, const breakage *b) {
    tu_tmpdir(dir, size);
    char over[1024];
    snprintf(over, sizeof over,
             "{" TINY_DIMS ", \"num_hidden_layers\": 2, \"target_layer_ids\": [0, 1], "
             "\"mask_token_id\": 10, \"markov_rank\": %d%s}",
             R, extra);
    write_config(dir, DSPARK_JSON, over);
    st_writer *w = st_writer_new();
    add(w, b, "fc.weight", 2, H, 2 * H);
    float hn[H];
    for (int i = 0; i < H; i++) hn[i] = 1.0f + 0.25f * (float)i;
    add_f32(w, b, "hidden_norm.weight", H, hn);
    add(w, b, "norm.weight", 1, H, 0);
    for (int l = 0; l < 2; l++) add_layer(w, b, "layers.%d.", l);
    add(w, b, "markov_head.markov_w1.weight", 2, V, R);
    add(w, b, "markov_head.markov_w2.weight", 2, V, R);
    add(w, b, "confidence_head.proj.weight", 2, 1, H + R);
    float bias = 0.123456789f;
    add_f32(w, b, "confidence_head.proj.bias", 1, &bias);
    add(w, b, "embed_tokens.weight", 2, V, H); // frozen copies, present but not loaded
    add(w, b, "lm_head.weight", 2, V, H);
    ck_assert_int_eq(st_writer_save_dir(w, dir, 1), SG_OK);
    st_writer_free(w);
}

START_TEST(test_dspark_drafter) {
    char tdir[256], ddir[256];
    make_target(tdir, sizeof tdir, 1, 0, 1, &intact);
    target_model t;
    load_target_ok(tdir, &t);
    make_dspark(ddir, sizeof ddir, "", &intact);
    drafter_model d;
    ck_assert_msg(drafter_model_load(ddir, &t, &d) == SG_OK, "%s", sg_error());
    ck_assert_int_eq(d.cfg.layout, LAYOUT_ANCHOR_FIRST);
    ck_assert_int_eq(d.cfg.n_taps, 2);
    ck_assert_int_eq(d.cfg.markov_rank, R);
    assert_values(d.fc, "fc.weight", H * 2 * H);
    for (int i = 0; i < H; i++) ck_assert_float_eq(bf16_to_f32(d.hidden_norm[i]), 1.0f + 0.25f * i);
    assert_values(d.layers[1].wk, "layers.1.self_attn.k_proj.weight", NKV * HD * H);
    assert_values(d.markov_w1, "markov_head.markov_w1.weight", V * R);
    assert_values(d.markov_w2, "markov_head.markov_w2.weight", V * R);
    ck_assert_int_eq(d.conf_width, H + R);
    assert_values(d.conf_w, "confidence_head.proj.weight", H + R);
    ck_assert_float_eq(d.conf_b, 0.123456789f); // kept in fp32, not rounded to bf16
    drafter_model_free(&d);
    ck_assert_ptr_null(d.layers);

    // Confidence head over [h] only: width H, so the stored [1, H+R] weight is refused.
    make_dspark(ddir, sizeof ddir, ", \"confidence_head_with_markov\": false", &intact);
    ck_assert_int_eq(drafter_model_load(ddir, &t, &d), SG_EXIT_INPUT);
    assert_message("'confidence_head.proj.weight' has shape [1, 11], expected [1, 8]", ddir);
    // Without a confidence head nor Markov head, those tensors are not needed.
    make_dspark(ddir, sizeof ddir, ", \"enable_confidence_head\": false, \"-markov_rank\": 0",
                &intact);
    ck_assert_msg(drafter_model_load(ddir, &t, &d) == SG_OK, "%s", sg_error());
    ck_assert_ptr_null(d.markov_w1);
    ck_assert_ptr_null(d.conf_w);
    drafter_model_free(&d);
    target_model_free(&t);
}
END_TEST

START_TEST(test_dspark_failures) {
    char tdir[256], ddir[256];
    make_target(tdir, sizeof tdir, 1, 0, 1, &intact);
    target_model t;
    load_target_ok(tdir, &t);
    drafter_model d;
    breakage no_w2 = {"markov_head.markov_w2.weight", NULL};
    make_dspark(ddir, sizeof ddir, "", &no_w2);
    ck_assert_int_eq(drafter_model_load(ddir, &t, &d), SG_EXIT_INPUT);
    assert_message("loading the drafter from", "'markov_head.markov_w2.weight' not found");
    breakage wide_fc = {NULL, "fc.weight"};
    make_dspark(ddir, sizeof ddir, "", &wide_fc);
    ck_assert_int_eq(drafter_model_load(ddir, &t, &d), SG_EXIT_INPUT);
    assert_message("'fc.weight' has shape [9, 16], expected [8, 16]", NULL);
    breakage no_bias = {"confidence_head.proj.bias", NULL};
    make_dspark(ddir, sizeof ddir, "", &no_bias);
    ck_assert_int_eq(drafter_model_load(ddir, &t, &d), SG_EXIT_INPUT);
    assert_message("'confidence_head.proj.bias' not found", ddir);
    breakage no_norm = {"layers.0.input_layernorm.weight", NULL};
    make_dspark(ddir, sizeof ddir, "", &no_norm);
    ck_assert_int_eq(drafter_model_load(ddir, &t, &d), SG_EXIT_INPUT);
    assert_message("'layers.0.input_layernorm.weight' not found", NULL);

    // A drafter for another target: every disagreement named, with the folder.
    make_dspark(ddir, sizeof ddir, ", \"hidden_size\": 16, \"vocab_size\": 12", &intact);
    ck_assert_int_eq(drafter_model_load(ddir, &t, &d), SG_EXIT_INPUT);
    assert_message(ddir, "hidden_size 16 vs 8");
    assert_message("vocab_size 12 vs 11", NULL);
    // Tap ids beyond the target's layers.
    make_dspark(ddir, sizeof ddir, ", \"target_layer_ids\": [0, 2]", &intact);
    ck_assert_int_eq(drafter_model_load(ddir, &t, &d), SG_EXIT_INPUT);
    assert_message("config.json: drafter config: target_layer_ids", "id 2 at index 1");
    ck_assert_ptr_null(d.layers);
    target_model_free(&t);
}
END_TEST

START_TEST(test_dflash_drafter) {
    char tdir[256], ddir[256];
    make_target(tdir, sizeof tdir, 0, 1, 2, &intact);
    target_model t;
    load_target_ok(tdir, &t);
    // z-lab schema, one layer, no ids: the default rule gives [L / 2] = [1]; fc is [H, H].
    tu_tmpdir(ddir, sizeof ddir);
    write_config(ddir, DFLASH_JSON,
                 "{" TINY_DIMS ", \"num_hidden_layers\": 1, "
                 "\"dflash_config\": {\"mask_token_id\": 10}}");
    st_writer *w = st_writer_new();
    add(w, &intact, "fc.weight", 2, H, H);
    add(w, &intact, "hidden_norm.weight", 1, H, 0);
    add(w, &intact, "norm.weight", 1, H, 0);
    add_layer(w, &intact, "layers.%d.", 0);
    ck_assert_int_eq(st_writer_save_dir(w, ddir, 1), SG_OK);
    st_writer_free(w);
    drafter_model d;
    ck_assert_msg(drafter_model_load(ddir, &t, &d) == SG_OK, "%s", sg_error());
    ck_assert_int_eq(d.cfg.schema, DRAFT_SCHEMA_DFLASH);
    ck_assert_int_eq(d.cfg.layout, LAYOUT_ANCHOR_DROP);
    ck_assert_int_eq(drafter_num_drafts(&d.cfg), 15);
    ck_assert_int_eq(d.cfg.n_taps, 1);
    ck_assert_int_eq(d.cfg.target_layer_ids[0], 1);
    ck_assert_int_eq(d.cfg.mask_token_id, 10);
    ck_assert_ptr_null(d.markov_w1);
    ck_assert_ptr_null(d.conf_w);
    assert_values(d.layers[0].w_gate, "layers.0.mlp.gate_proj.weight", I * H);
    drafter_model_free(&d);

    // With the real ids [1, 9, 17, 25, 33] the tiny 2-layer target is refused.
    write_config(ddir, DFLASH_JSON,
                 "{" TINY_DIMS ", \"num_hidden_layers\": 1, \"dflash_config\": {\"mask_token_id\": "
                 "10, \"target_layer_ids\": [1, 9, 17, 25, 33]}}");
    ck_assert_int_eq(drafter_model_load(ddir, &t, &d), SG_EXIT_INPUT);
    assert_message(ddir, "below the target's 2 layers");
    target_model_free(&t);
}
END_TEST

int main(void) {
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, test_tied_target);
    tcase_add_test(tc, test_untied_target);
    tcase_add_test(tc, test_sharded_target);
    tcase_add_test(tc, test_target_failures);
    tcase_add_test(tc, test_dspark_drafter);
    tcase_add_test(tc, test_dspark_failures);
    tcase_add_test(tc, test_dflash_drafter);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
