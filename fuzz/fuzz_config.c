// fuzz/fuzz_config.c: libFuzzer target for config.json parsing.
//
// Contract checked: config_parse_target and config_parse_drafter on any bytes either refuse them
// with a message or give a config; a parsed drafter then goes through config_check_pair against a
// fixed valid Qwen3-4B target (and against the input itself parsed as a target, when it parses),
// and a drafter that passes has 1..SG_MAX_TAPS strictly increasing taps below the target's layers
// and at least one draft per round. Nothing crashes, leaks or reads outside the input.
#include <stdint.h>
#include <string.h>

#include "common/config.h"
#include "common/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char target_json[] =
    "{\"hidden_size\": 2560, \"num_hidden_layers\": 36, \"num_attention_heads\": 32, "
    "\"num_key_value_heads\": 8, \"head_dim\": 128, \"intermediate_size\": 9728, "
    "\"vocab_size\": 151936, \"max_position_embeddings\": 40960, \"rms_norm_eps\": 1e-6, "
    "\"rope_theta\": 1000000, \"tie_word_embeddings\": true, \"eos_token_id\": 151645}";

static void check_pair(drafter_config d, const qwen3_config *target) {
    if (config_check_pair(&d, target) != SG_OK) return;
    SG_CHECK(d.n_taps >= 1 && d.n_taps <= SG_MAX_TAPS, "n_taps %d", d.n_taps);
    for (int i = 0; i < d.n_taps; i++)
        SG_CHECK(d.target_layer_ids[i] < target->num_hidden_layers &&
                     (i == 0 ? d.target_layer_ids[0] >= 0 :
                               d.target_layer_ids[i] > d.target_layer_ids[i - 1]),
                 "tap %d = %d", i, d.target_layer_ids[i]);
    SG_CHECK(drafter_num_drafts(&d) >= 1, "no drafts");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static qwen3_config fixed;
    static int ready;
    if (!ready) {
        SG_CHECK(config_parse_target(target_json, strlen(target_json), "fixed", &fixed) == SG_OK,
                 "%s", sg_error());
        ready = 1;
    }
    const char *json = (const char *)data;
    qwen3_config target;
    int target_ok = config_parse_target(json, size, "fuzz-input", &target) == SG_OK;
    drafter_config d;
    if (config_parse_drafter(json, size, "fuzz-input", &d) != SG_OK) return 0;
    check_pair(d, &fixed);
    if (target_ok) check_pair(d, &target);
    return 0;
}
