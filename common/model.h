// common/model.h: the weights of a Qwen3 target and of a DSpark/DFlash drafter, loaded from a
// checkpoint folder (config.json + safetensors) and validated against the config.
//
// Contract: every tensor is bf16 in memory with the shape the config implies ([out, in] row-major);
// a missing tensor, a wrong shape or a config the models do not implement is SG_EXIT_INPUT with a
// message naming the folder and tensor. lm_head: the embedding when tie_word_embeddings is true
// (even if lm_head.weight exists), else lm_head.weight, or the embedding when that is absent.
// The drafter uses the target's embedding and head (its own copies are not loaded); its config is
// checked against the target's (config_check_pair) before any tensor is read, and its tensors
// carry no "model." prefix. The confidence bias is read in fp32 from whatever dtype it is stored
// in. On failure the model is left zeroed (nothing to free).
#ifndef SG_MODEL_H
#define SG_MODEL_H

#include "bf16.h"
#include "config.h"
#include "safetensors.h"

typedef struct {
    const bf16 *input_norm; // [H]
    const bf16 *post_norm;  // [H]
    const bf16 *wq;         // [nH*hd, H]
    const bf16 *wk;         // [nKV*hd, H]
    const bf16 *wv;         // [nKV*hd, H]
    const bf16 *wo;         // [H, nH*hd]
    const bf16 *q_norm;     // [hd]
    const bf16 *k_norm;     // [hd]
    const bf16 *w_gate;     // [I, H]
    const bf16 *w_up;       // [I, H]
    const bf16 *w_down;     // [H, I]
} layer_weights;

typedef struct {
    qwen3_config cfg;
    st_archive archive;
    const bf16 *embed;      // [V, H]
    const bf16 *final_norm; // [H]
    const bf16 *lm_head;    // [V, H]; == embed when tied
    layer_weights *layers;  // [L]
} target_model;

typedef struct {
    drafter_config cfg;
    st_archive archive;
    const bf16 *fc;          // [H, n_taps*H]
    const bf16 *hidden_norm; // [H]
    const bf16 *final_norm;  // [H]
    layer_weights *layers;   // [cfg.arch.num_hidden_layers]
    const bf16 *markov_w1;   // [V, r] or NULL
    const bf16 *markov_w2;   // [V, r] or NULL
    // Confidence head (NULL / 0 without one): conf_width = H (+ r with confidence_with_markov).
    const bf16 *conf_w;      // [conf_width]
    float conf_b;            // confidence_head.proj.bias [1], fp32
    int conf_width;
} drafter_model;

int target_model_load(const char *dir, target_model *out);
void target_model_free(target_model *m);
// Loads and validates the drafter against `target` (config_check_pair, then tensors).
int drafter_model_load(const char *dir, const target_model *target, drafter_model *out);
void drafter_model_free(drafter_model *m);

#endif
