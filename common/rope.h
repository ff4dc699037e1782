// common/rope.h: RoPE cos/sin tables, built once and shared by every implementation.
//
// inv_freq[i] = theta^(-2i/hd) (computed in double, rounded to fp32); angle = fp32(pos · inv_freq[i]);
// cos and sin of that fp32 angle (computed in double) rounded to bf16. Row pos holds hd/2 entries.
#ifndef SG_ROPE_H
#define SG_ROPE_H

#include "bf16.h"

typedef struct {
    int head_dim;
    int max_pos;
    bf16 *cos; // [max_pos, head_dim/2]
    bf16 *sin; // [max_pos, head_dim/2]
} rope_table;

void rope_table_build(rope_table *t, double theta, int head_dim, int max_pos);
void rope_table_free(rope_table *t);

#endif
