// common/bf16.h: bf16 and f16 conversions (numerics contract, design.md §3).
//
// f32_to_bf16 rounds to nearest even and keeps NaN a NaN; bf16_round(x) is x rounded to the nearest
// bf16 value, returned as float. All activations in ref/ and the CPU backend are floats that hold
// bf16-representable values, produced by bf16_round.
#ifndef SG_BF16_H
#define SG_BF16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t bf16;

static inline float bf16_to_f32(bf16 h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline bf16 f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16)((u >> 16) | 0x0040u); // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);
    return (bf16)(u >> 16);
}

static inline float bf16_round(float f) { return bf16_to_f32(f32_to_bf16(f)); }

// IEEE half to float (exact).
float f16_to_f32(uint16_t h);

#endif
