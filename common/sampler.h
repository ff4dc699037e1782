// common/sampler.h: argmax/top-k over logits rows and the seeded sampler of design.md §7.
//
// Order: value descending, then token id ascending (ties go to the lowest id). The sampler draws
// u = hash(seed, absolute position) as a 53-bit uniform in [0, 1), forms softmax(logits / T) in
// double over ascending ids, and inverts the CDF. Same seed and position, same token, everywhere.
#ifndef SG_SAMPLER_H
#define SG_SAMPLER_H

#include <stdint.h>

int argmax_f32(const float *x, int n);
// The k best ids in order (k <= n, k <= 8); values too if `vals` is not NULL.
void topk_f32(const float *x, int n, int k, int *ids, float *vals);
// 0 if every value is finite, else the index of the first NaN or Inf.
int first_nonfinite_f32(const float *x, int n, int *index);
double sampler_uniform(uint64_t seed, int64_t pos);
// temperature > 0; pos is the absolute position of the token being chosen.
int sampler_pick(const float *logits, int n, double temperature, uint64_t seed, int64_t pos);
// How far u lies inside the picked token's CDF bucket: min(u - CDF(k-1), CDF(k) - u), in
// probability. Logits that differ by at most d (d <= T/2) move every CDF edge by at most
// e^(2d/T) - 1 <= 4d/T, so another implementation picks the same token whenever this margin
// exceeds 4d/T.
double sampler_margin(const float *logits, int n, double temperature, uint64_t seed, int64_t pos);

#endif
