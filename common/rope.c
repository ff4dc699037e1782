// common/rope.c: RoPE table construction (see rope.h for the exact recipe).
#include "rope.h"

#include <math.h>
#include <stdlib.h>

#include "error.h"

void rope_table_build(rope_table *t, double theta, int head_dim, int max_pos) {
    SG_CHECK(head_dim > 0 && head_dim % 2 == 0 && max_pos > 0, "head_dim %d max_pos %d", head_dim,
             max_pos);
    int half = head_dim / 2;
    t->head_dim = head_dim;
    t->max_pos = max_pos;
    t->cos = sg_calloc((size_t)max_pos * half, sizeof(bf16));
    t->sin = sg_calloc((size_t)max_pos * half, sizeof(bf16));
    for (int i = 0; i < half; i++) {
        float inv_freq = (float)pow(theta, -2.0 * i / head_dim);
        for (int pos = 0; pos < max_pos; pos++) {
            float angle = (float)pos * inv_freq;
            t->cos[(size_t)pos * half + i] = f32_to_bf16((float)cos((double)angle));
            t->sin[(size_t)pos * half + i] = f32_to_bf16((float)sin((double)angle));
        }
    }
}

void rope_table_free(rope_table *t) {
    free(t->cos);
    free(t->sin);
    t->cos = t->sin = NULL;
}
