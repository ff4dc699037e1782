// tests/test_config.c: config.json parsing of the three real configs (Qwen3-4B, DSpark block 7,
// DFlash block 16), every refusal with its message, the pair check, the default tap rule and the
// block layout helpers.
// ctest-labels: cpu;unit
#include <check.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/error.h"
#include "common/file.h"
#include "testutil.h"

#define TARGET_JSON "tests/data/configs/qwen3-4b.config.json"
#define DSPARK_JSON "tests/data/configs/dspark_qwen3_4b_block7.config.json"
#define DFLASH_JSON "tests/data/configs/qwen3-4b-dflash-b16.config.json"

static void assert_message(const char *a, const char *b) {
    const char *needles[] = {a, b};
    for (int i = 0; i < 2; i++)
        if (needles[i])
            ck_assert_msg(strstr(sg_error(), needles[i]), "message '%s' lacks '%s'", sg_error(),
                          needles[i]);
}

// The config at `path` with top-level `key` set to the JSON `value` (NULL: key removed).
static char *mutated(const char *path, const char *key, const char *value) {
    char *text;
    size_t len;
    ck_assert_int_eq(file_read_all(path, &text, &len), SG_OK);
    cJSON *root = cJSON_Parse(text);
    free(text);
    ck_assert_ptr_nonnull(root);
    cJSON_DeleteItemFromObjectCaseSensitive(root, key);
    if (value) {
        cJSON *item = cJSON_Parse(value);
        ck_assert_ptr_nonnull(item);
        cJSON_AddItemToObject(root, key, item);
    }
    char *out = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return out;
}

static int parse_target_with(const char *key, const char *value, qwen3_config *c) {
    char *json = mutated(TARGET_JSON, key, value);
    int status = config_parse_target(json, strlen(json), "target.json", c);
    free(json);
    return status;
}

static int parse_drafter_with(const char *path, const char *key, const char *value,
                              drafter_config *d) {
    char *json = mutated(path, key, value);
    int status = config_parse_drafter(json, strlen(json), "drafter.json", d);
    free(json);
    return status;
}

static void expect_target_refused(const char *key, const char *value, const char *needle) {
    qwen3_config c;
    ck_assert_msg(parse_target_with(key, value, &c) == SG_EXIT_INPUT, "%s = %s accepted", key,
                  value ? value : "(removed)");
    assert_message("target.json: ", needle);
}

static void expect_drafter_refused(const char *path, const char *key, const char *value,
                                   const char *needle) {
    drafter_config d;
    ck_assert_msg(parse_drafter_with(path, key, value, &d) == SG_EXIT_INPUT, "%s = %s accepted",
                  key, value ? value : "(removed)");
    assert_message("drafter.json: ", needle);
}

static void load_target(qwen3_config *c) {
    ck_assert_int_eq(config_load_target(TARGET_JSON, c), SG_OK);
}

START_TEST(test_qwen3_4b) {
    qwen3_config c;
    load_target(&c);
    ck_assert_int_eq(c.hidden_size, 2560);
    ck_assert_int_eq(c.num_hidden_layers, 36);
    ck_assert_int_eq(c.num_attention_heads, 32);
    ck_assert_int_eq(c.num_key_value_heads, 8);
    ck_assert_int_eq(c.head_dim, 128); // read, not 2560 / 32
    ck_assert_int_eq(c.intermediate_size, 9728);
    ck_assert_int_eq(c.vocab_size, 151936);
    ck_assert_int_eq(c.max_position_embeddings, 40960);
    ck_assert_float_eq(c.rms_norm_eps, 1e-6f);
    ck_assert_double_eq(c.rope_theta, 1e6);
    ck_assert_int_eq(c.tie_word_embeddings, 1);
    ck_assert_int_eq(c.n_eos, 1);
    ck_assert_int_eq(c.eos_ids[0], 151645);
}
END_TEST

START_TEST(test_dspark_block7) {
    drafter_config d;
    ck_assert_int_eq(config_load_drafter(DSPARK_JSON, &d), SG_OK);
    ck_assert_int_eq(d.schema, DRAFT_SCHEMA_DSPARK);
    ck_assert_int_eq(d.layout, LAYOUT_ANCHOR_FIRST);
    ck_assert_int_eq(d.block_size, 7);
    ck_assert_int_eq(drafter_num_drafts(&d), 7);
    ck_assert_int_eq(d.mask_token_id, 151669);
    ck_assert_int_eq(d.markov_rank, 256);
    ck_assert_int_eq(d.has_confidence_head, 1);
    ck_assert_int_eq(d.confidence_with_markov, 1);
    ck_assert_int_eq(d.arch.num_hidden_layers, 5);
    ck_assert_int_eq(d.arch.tie_word_embeddings, 0);
    ck_assert_double_eq(d.arch.rope_theta, 1e6); // from rope_parameters
    const int want[5] = {1, 9, 17, 25, 33};
    ck_assert_int_eq(d.n_taps, 5);
    ck_assert_mem_eq(d.target_layer_ids, want, sizeof want);
    qwen3_config t;
    load_target(&t);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_OK);
    ck_assert_mem_eq(d.target_layer_ids, want, sizeof want);
}
END_TEST

START_TEST(test_dflash_b16) {
    drafter_config d;
    ck_assert_int_eq(config_load_drafter(DFLASH_JSON, &d), SG_OK);
    ck_assert_int_eq(d.schema, DRAFT_SCHEMA_DFLASH);
    ck_assert_int_eq(d.layout, LAYOUT_ANCHOR_DROP);
    ck_assert_int_eq(d.block_size, 16);
    ck_assert_int_eq(drafter_num_drafts(&d), 15);
    ck_assert_int_eq(d.mask_token_id, 151669);
    ck_assert_int_eq(d.markov_rank, 0);
    ck_assert_int_eq(d.has_confidence_head, 0);
    ck_assert_int_eq(d.n_taps, 5);
    ck_assert_int_eq(d.target_layer_ids[4], 33);
    qwen3_config t;
    load_target(&t);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_OK);
}
END_TEST

START_TEST(test_target_variants_accepted) {
    qwen3_config c;
    ck_assert_int_eq(parse_target_with("eos_token_id", "[151645, 151643]", &c), SG_OK);
    ck_assert_int_eq(c.n_eos, 2);
    ck_assert_int_eq(c.eos_ids[1], 151643);
    ck_assert_int_eq(parse_target_with("eos_token_id", NULL, &c), SG_OK);
    ck_assert_int_eq(c.n_eos, 0);
    ck_assert_int_eq(parse_target_with("eos_token_id", "null", &c), SG_OK);
    ck_assert_int_eq(c.n_eos, 0);
    ck_assert_int_eq(parse_target_with("tie_word_embeddings", NULL, &c), SG_OK);
    ck_assert_int_eq(c.tie_word_embeddings, 0); // default false
    ck_assert_int_eq(parse_target_with("hidden_act", NULL, &c), SG_OK);
    // rope_theta inside rope_parameters only, or in both places when they agree.
    char *json = mutated(TARGET_JSON, "rope_theta", NULL);
    cJSON *root = cJSON_Parse(json);
    free(json);
    cJSON_AddItemToObject(root, "rope_parameters",
                          cJSON_Parse("{\"rope_type\": \"default\", \"rope_theta\": 5e5}"));
    json = cJSON_PrintUnformatted(root);
    ck_assert_int_eq(config_parse_target(json, strlen(json), "t", &c), SG_OK);
    ck_assert_double_eq(c.rope_theta, 5e5);
    free(json);
    cJSON_AddItemToObject(root, "rope_theta", cJSON_CreateNumber(5e5));
    json = cJSON_PrintUnformatted(root);
    ck_assert_int_eq(config_parse_target(json, strlen(json), "t", &c), SG_OK);
    free(json);
    cJSON_ReplaceItemInObjectCaseSensitive(root, "rope_theta", cJSON_CreateNumber(1e4));
    json = cJSON_PrintUnformatted(root);
    ck_assert_int_eq(config_parse_target(json, strlen(json), "t.json", &c), SG_EXIT_INPUT);
    assert_message("t.json: rope_theta 10000 disagrees with rope_parameters.rope_theta 500000",
                   NULL);
    free(json);
    cJSON_Delete(root);
    ck_assert_int_eq(parse_target_with("rope_parameters", "{\"rope_type\": \"default\"}", &c),
                     SG_OK);
    ck_assert_double_eq(c.rope_theta, 1e6);
}
END_TEST

START_TEST(test_target_refusals) {
    expect_target_refused("rope_scaling", "{\"type\": \"yarn\", \"factor\": 4}",
                          "rope_scaling is set");
    expect_target_refused("rope_parameters", "{\"rope_type\": \"yarn\", \"rope_theta\": 1e6}",
                          "rope_type is yarn");
    expect_target_refused("rope_parameters", "[1]", "rope_parameters must be an object");
    expect_target_refused("use_sliding_window", "true", "use_sliding_window is true");
    expect_target_refused("attention_bias", "true", "attention_bias is true");
    expect_target_refused("attention_bias", "1", "'attention_bias' must be true or false");
    expect_target_refused("hidden_act", "\"gelu\"", "hidden_act is gelu");
    expect_target_refused("quantization_config", "{\"quant_method\": \"fp8\"}",
                          "quantization_config is present");
    expect_target_refused("head_dim", NULL, "required field 'head_dim' is missing");
    expect_target_refused("vocab_size", NULL, "required field 'vocab_size' is missing");
    expect_target_refused("hidden_size", "0", "'hidden_size' must be an integer in [1, ");
    expect_target_refused("intermediate_size", "-5", "'intermediate_size' must be an integer");
    expect_target_refused("num_hidden_layers", "2.5", "'num_hidden_layers' must be an integer");
    expect_target_refused("hidden_size", "\"2560\"", "'hidden_size' must be an integer");
    expect_target_refused("max_position_embeddings", "1e12",
                          "'max_position_embeddings' must be an integer");
    expect_target_refused("num_key_value_heads", "5",
                          "num_key_value_heads 5 does not divide num_attention_heads 32");
    expect_target_refused("head_dim", "127", "head_dim 127 is odd");
    expect_target_refused("rms_norm_eps", "-1", "'rms_norm_eps' must be a positive number");
    expect_target_refused("rms_norm_eps", "1e-300", "rms_norm_eps 1e-300 is not a positive float");
    expect_target_refused("rope_theta", NULL, "'rope_theta' is missing");
    expect_target_refused("rope_theta", "0", "'rope_theta' must be a positive number");
    expect_target_refused("tie_word_embeddings", "\"yes\"",
                          "'tie_word_embeddings' must be true or false");
    expect_target_refused("eos_token_id", "[1, 2, 3, 4, 5, 6, 7, 8, 9]", "lists 9 ids, at most 8");
    expect_target_refused("eos_token_id", "151936",
                          "eos_token_id must be a token id in [0, vocab_size 151936)");
    expect_target_refused("eos_token_id", "[1, \"2\"]", "eos_token_id must be a token id");

    qwen3_config c;
    const char *bad[] = {"{\"hidden_size\": ", "[]", "{} x", ""};
    const char *needle[] = {"not valid JSON", "not a JSON object", "not valid JSON",
                            "not valid JSON"};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(config_parse_target(bad[i], strlen(bad[i]), "t.json", &c), SG_EXIT_INPUT);
        assert_message("t.json: ", needle[i]);
    }
    ck_assert_int_eq(config_load_target("tests/data/configs/no-such.json", &c), SG_EXIT_INPUT);
    assert_message("no-such.json", "cannot open");
}
END_TEST

START_TEST(test_drafter_refusals) {
    expect_drafter_refused(DSPARK_JSON, "mask_token_id", NULL, "'mask_token_id' is missing");
    expect_drafter_refused(DSPARK_JSON, "block_size", NULL, "'block_size' is missing");
    expect_drafter_refused(DSPARK_JSON, "block_size", "0",
                           "'block_size' must be an integer in [1, 64]");
    expect_drafter_refused(DSPARK_JSON, "block_size", "65",
                           "'block_size' must be an integer in [1, 64]");
    expect_drafter_refused(DFLASH_JSON, "block_size", "1",
                           "block_size 1 must be in [2, 64] for layout anchor-drop");
    expect_drafter_refused(DSPARK_JSON, "markov_rank", "-1", "'markov_rank' must be an integer");
    expect_drafter_refused(DSPARK_JSON, "markov_head_type", "\"gated\"",
                           "markov_head_type is gated");
    expect_drafter_refused(DSPARK_JSON, "markov_rank", "0",
                           "confidence_head_with_markov is true but markov_rank is 0");
    expect_drafter_refused(DSPARK_JSON, "target_layer_ids", "[]",
                           "target_layer_ids must be a list of 1 to 16 layer ids");
    expect_drafter_refused(DSPARK_JSON, "target_layer_ids",
                           "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]",
                           "target_layer_ids must be a list of 1 to 16");
    expect_drafter_refused(DSPARK_JSON, "target_layer_ids", "[1, -9]",
                           "target_layer_ids must hold non-negative integers");
    expect_drafter_refused(DSPARK_JSON, "dflash_config",
                           "{\"mask_token_id\": 1, \"target_layer_ids\": [1]}", "ambiguous");
    expect_drafter_refused(DFLASH_JSON, "dflash_config", "7", "dflash_config must be an object");
    expect_drafter_refused(DFLASH_JSON, "dflash_config", "{\"target_layer_ids\": [1]}",
                           "'mask_token_id' is missing");
    expect_drafter_refused(DSPARK_JSON, "use_sliding_window", "true", "use_sliding_window");
    expect_drafter_refused(DSPARK_JSON, "head_dim", NULL, "'head_dim' is missing");

    // Without a confidence head, confidence_head_with_markov is moot; with_markov is then off.
    drafter_config d;
    char *json = mutated(DSPARK_JSON, "enable_confidence_head", "false");
    ck_assert_int_eq(config_parse_drafter(json, strlen(json), "d", &d), SG_OK);
    ck_assert_int_eq(d.confidence_with_markov, 0);
    free(json);
    ck_assert_int_eq(parse_drafter_with(DSPARK_JSON, "markov_rank", "null", &d), SG_EXIT_INPUT);
    ck_assert_int_eq(parse_drafter_with(DFLASH_JSON, "markov_rank", "64", &d), SG_OK);
    ck_assert_int_eq(d.markov_rank, 64);
    ck_assert_int_eq(d.layout, LAYOUT_ANCHOR_DROP);
}
END_TEST

START_TEST(test_pair_mismatch_names_everything) {
    qwen3_config t;
    load_target(&t);
    char *json = mutated(DSPARK_JSON, "hidden_size", "2048");
    cJSON *root = cJSON_Parse(json);
    free(json);
    cJSON_ReplaceItemInObjectCaseSensitive(root, "vocab_size", cJSON_CreateNumber(152000));
    cJSON_ReplaceItemInObjectCaseSensitive(root, "num_attention_heads", cJSON_CreateNumber(16));
    cJSON_ReplaceItemInObjectCaseSensitive(root, "num_key_value_heads", cJSON_CreateNumber(4));
    cJSON_ReplaceItemInObjectCaseSensitive(root, "head_dim", cJSON_CreateNumber(64));
    cJSON_ReplaceItemInObjectCaseSensitive(root, "rope_parameters",
                                           cJSON_Parse("{\"rope_theta\": 10000}"));
    json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    drafter_config d;
    ck_assert_msg(config_parse_drafter(json, strlen(json), "d", &d) == SG_OK, "%s", sg_error());
    free(json);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_EXIT_INPUT);
    const char *needles[] = {"hidden_size 2048 vs 2560",    "num_attention_heads 16 vs 32",
                             "num_key_value_heads 4 vs 8",  "head_dim 64 vs 128",
                             "vocab_size 152000 vs 151936", "rope_theta 10000 vs 1e+06"};
    for (int i = 0; i < 6; i++) assert_message("does not match the target", needles[i]);

    // One disagreement alone names only that field.
    ck_assert_int_eq(parse_drafter_with(DSPARK_JSON, "head_dim", "64", &d), SG_OK);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_EXIT_INPUT);
    assert_message("head_dim 64 vs 128", NULL);
    ck_assert_ptr_null(strstr(sg_error(), "hidden_size"));
}
END_TEST

START_TEST(test_pair_ids_mask_block) {
    qwen3_config t;
    load_target(&t);
    drafter_config d;
    ck_assert_int_eq(parse_drafter_with(DSPARK_JSON, "target_layer_ids", "[1, 9, 9]", &d), SG_OK);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_EXIT_INPUT);
    assert_message("strictly increasing", "id 9 at index 2");
    ck_assert_int_eq(parse_drafter_with(DSPARK_JSON, "target_layer_ids", "[9, 1]", &d), SG_OK);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_EXIT_INPUT);
    ck_assert_int_eq(parse_drafter_with(DSPARK_JSON, "target_layer_ids", "[1, 36]", &d), SG_OK);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_EXIT_INPUT);
    assert_message("below the target's 36 layers", "id 36");
    ck_assert_int_eq(parse_drafter_with(DSPARK_JSON, "target_layer_ids", "[35]", &d), SG_OK);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_OK);
    ck_assert_int_eq(d.n_taps, 1);
    ck_assert_int_eq(parse_drafter_with(DSPARK_JSON, "mask_token_id", "151936", &d), SG_OK);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_EXIT_INPUT);
    assert_message("mask_token_id 151936 is not below vocab_size 151936", NULL);
    // --block-layout may override the layout after parsing: the pair check re-checks B.
    ck_assert_int_eq(parse_drafter_with(DSPARK_JSON, "block_size", "1", &d), SG_OK);
    ck_assert_int_eq(config_check_pair(&d, &t), SG_OK);
    d.layout = LAYOUT_ANCHOR_DROP;
    ck_assert_int_eq(config_check_pair(&d, &t), SG_EXIT_INPUT);
    assert_message("block_size 1 must be in [2, 64] for layout anchor-drop", NULL);
}
END_TEST

// The drafter without ids, with `layers` layers, checked against a target of `target_layers`.
static int default_taps_for(int layers, int target_layers, drafter_config *d) {
    char *json = mutated(DSPARK_JSON, "target_layer_ids", NULL);
    cJSON *root = cJSON_Parse(json);
    free(json);
    cJSON_ReplaceItemInObjectCaseSensitive(root, "num_hidden_layers", cJSON_CreateNumber(layers));
    json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    ck_assert_int_eq(config_parse_drafter(json, strlen(json), "d", d), SG_OK);
    free(json);
    ck_assert_int_eq(d->n_taps, 0);
    qwen3_config t;
    load_target(&t);
    t.num_hidden_layers = target_layers;
    return config_check_pair(d, &t);
}

START_TEST(test_default_taps) {
    drafter_config d;
    ck_assert_int_eq(default_taps_for(5, 36, &d), SG_OK);
    const int l36m5[5] = {1, 9, 17, 25, 33};
    ck_assert_int_eq(d.n_taps, 5);
    ck_assert_mem_eq(d.target_layer_ids, l36m5, sizeof l36m5);
    ck_assert_int_eq(default_taps_for(1, 36, &d), SG_OK);
    ck_assert_int_eq(d.n_taps, 1);
    ck_assert_int_eq(d.target_layer_ids[0], 18);
    // L = 10, m = 5: 1 + i*6/4 = 1, 2.5, 4, 5.5, 7; half to even gives 2 and 6 (not 3 and 6).
    ck_assert_int_eq(default_taps_for(5, 10, &d), SG_OK);
    const int l10m5[5] = {1, 2, 4, 6, 7};
    ck_assert_mem_eq(d.target_layer_ids, l10m5, sizeof l10m5);
    // L = 7, m = 3: 1, 2.5 -> 2, 4.
    ck_assert_int_eq(default_taps_for(3, 7, &d), SG_OK);
    const int l7m3[3] = {1, 2, 4};
    ck_assert_mem_eq(d.target_layer_ids, l7m3, sizeof l7m3);
    // L = 5, m = 3: 1, 1.5 -> 2, 2: not strictly increasing; refused and left unfilled.
    ck_assert_int_eq(default_taps_for(3, 5, &d), SG_EXIT_INPUT);
    assert_message("(default rule)", "strictly increasing");
    ck_assert_int_eq(d.n_taps, 0);
    ck_assert_int_eq(default_taps_for(17, 36, &d), SG_EXIT_INPUT);
    assert_message("more than 16 taps", "add target_layer_ids");
}
END_TEST

START_TEST(test_block_layout_helpers) {
    block_layout l;
    ck_assert_int_eq(block_layout_parse("anchor-drop", &l), SG_OK);
    ck_assert_int_eq(l, LAYOUT_ANCHOR_DROP);
    ck_assert_str_eq(block_layout_name(l), "anchor-drop");
    ck_assert_int_eq(block_layout_parse("anchor-first", &l), SG_OK);
    ck_assert_int_eq(l, LAYOUT_ANCHOR_FIRST);
    ck_assert_str_eq(block_layout_name(l), "anchor-first");
    ck_assert_int_eq(block_layout_parse("anchor", &l), SG_EXIT_USAGE);
    assert_message("unknown block layout 'anchor'", "anchor-first or anchor-drop");
    drafter_config d = {.layout = LAYOUT_ANCHOR_DROP, .block_size = 16};
    ck_assert_int_eq(drafter_num_drafts(&d), 15);
    d.layout = LAYOUT_ANCHOR_FIRST;
    ck_assert_int_eq(drafter_num_drafts(&d), 16);
}
END_TEST

int main(void) {
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("config");
    tcase_add_test(tc, test_qwen3_4b);
    tcase_add_test(tc, test_dspark_block7);
    tcase_add_test(tc, test_dflash_b16);
    tcase_add_test(tc, test_target_variants_accepted);
    tcase_add_test(tc, test_target_refusals);
    tcase_add_test(tc, test_drafter_refusals);
    tcase_add_test(tc, test_pair_mismatch_names_everything);
    tcase_add_test(tc, test_pair_ids_mask_block);
    tcase_add_test(tc, test_default_taps);
    tcase_add_test(tc, test_block_layout_helpers);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
