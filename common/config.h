// common/config.h: config.json of the Qwen3 target and of the drafters (DSpark flat schema, z-lab
// DFlash nested schema), parsed with cJSON, validated, and checked against each other.
//
// Contract (design.md §8, dspark-spec.md §1-3):
// - head_dim is read from the config, never derived from hidden/heads;
// - rope_theta is accepted at top level or inside rope_parameters;
// - refused with SG_EXIT_INPUT and a message: non-null rope_scaling, use_sliding_window true,
//   attention_bias true, hidden_act other than silu, quantization_config, a missing or
//   out-of-range required field;
// - layout: flat schema (ids at top level) is anchor-first, nested dflash_config is anchor-drop;
// - required: hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, head_dim,
//   intermediate_size, vocab_size, max_position_embeddings (positive integers), rms_norm_eps,
//   rope_theta (positive); heads divisible by kv heads; head_dim even. tie_word_embeddings defaults
//   to false; eos_token_id is an int, a list (at most SG_MAX_EOS) or absent;
// - drafter: mask_token_id and block_size required (B in 1..SG_MAX_BLOCK, >= 2 for anchor-drop);
//   markov_rank absent/0 = no Markov head, else markov_head_type must be "vanilla";
//   confidence_head_with_markov needs markov_rank > 0; a config with both dflash_config and
//   top-level ids is ambiguous and refused;
// - config_check_pair fills the default target_layer_ids when the drafter has none (z-lab rule:
//   m = drafter layers; m = 1 gives [L / 2], else round-half-even(1 + i*(L-4)/(m-1))), and reports
//   every disagreement with the target (hidden, heads, kv heads, head_dim, vocab, rope_theta) in
//   one message; then ids strictly increasing and < L, mask_token_id < vocab, block size for the
//   (possibly overridden) layout. On failure the drafter config is left unchanged.
#ifndef SG_CONFIG_H
#define SG_CONFIG_H

#include <stddef.h>

#define SG_MAX_EOS 8
#define SG_MAX_TAPS 16
#define SG_MAX_BLOCK 64

typedef struct {
    int hidden_size;
    int num_hidden_layers;
    int num_attention_heads;
    int num_key_value_heads;
    int head_dim;
    int intermediate_size;
    int vocab_size;
    int max_position_embeddings;
    float rms_norm_eps;
    double rope_theta;
    int tie_word_embeddings;
    int eos_ids[SG_MAX_EOS]; // from eos_token_id (int or list); n_eos may be 0
    int n_eos;
} qwen3_config;

typedef enum { LAYOUT_ANCHOR_FIRST, LAYOUT_ANCHOR_DROP } block_layout;
typedef enum { DRAFT_SCHEMA_DSPARK, DRAFT_SCHEMA_DFLASH } draft_schema;

typedef struct {
    qwen3_config arch; // the backbone's own dims; arch.num_hidden_layers = drafter layers
    draft_schema schema;
    block_layout layout; // from the schema; --block-layout overrides
    int block_size;      // B
    int mask_token_id;
    int target_layer_ids[SG_MAX_TAPS];
    int n_taps;      // 0 until config_check_pair fills the default when the config has no ids
    int markov_rank; // 0 = no Markov head (DFlash)
    int has_confidence_head;    // enable_confidence_head
    int confidence_with_markov; // confidence input is [h ; w1[prev]] (H + r) instead of [h] (H)
} drafter_config;

// Parse from a buffer (what the fuzzer drives); `name` appears in error messages.
int config_parse_target(const char *json, size_t len, const char *name, qwen3_config *out);
int config_parse_drafter(const char *json, size_t len, const char *name, drafter_config *out);
// Load a config.json file.
int config_load_target(const char *path, qwen3_config *out);
int config_load_drafter(const char *path, drafter_config *out);
// Validate a drafter against its target; fills default taps. Message names each disagreement.
int config_check_pair(drafter_config *draft, const qwen3_config *target);
// Number of draft tokens per round: B (anchor-first) or B - 1 (anchor-drop).
int drafter_num_drafts(const drafter_config *d);

const char *block_layout_name(block_layout layout);
// "anchor-first" | "anchor-drop"; anything else is SG_EXIT_USAGE (it comes from --block-layout).
int block_layout_parse(const char *name, block_layout *out);

#endif
