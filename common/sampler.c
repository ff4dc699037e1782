// common/sampler.c: argmax/top-k with the project's tie rule and the seeded sampler (sampler.h).
#include "sampler.h"

#include <math.h>

#include "error.h"

// a ranks before b: larger value, then lower id.
static int ranks_before(float va, int a, float vb, int b) { return va > vb || (va == vb && a < b); }

int argmax_f32(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i; // strict: an equal value keeps the lower id
    return best;
}

void topk_f32(const float *x, int n, int k, int *ids, float *vals) {
    SG_CHECK(k >= 1 && k <= 8 && k <= n, "topk k=%d n=%d", k, n);
    int best[8];
    int filled = 0;
    for (int i = 0; i < n; i++) {
        if (filled == k && !ranks_before(x[i], i, x[best[k - 1]], best[k - 1])) continue;
        int j = filled < k ? filled++ : k - 1;
        while (j > 0 && ranks_before(x[i], i, x[best[j - 1]], best[j - 1])) {
            best[j] = best[j - 1];
            j--;
        }
        best[j] = i;
    }
    for (int j = 0; j < k; j++) {
        ids[j] = best[j];
        if (vals) vals[j] = x[best[j]];
    }
}

int first_nonfinite_f32(const float *x, int n, int *index) {
    for (int i = 0; i < n; i++)
        if (!isfinite(x[i])) {
            *index = i;
            return 1;
        }
    return 0;
}

// splitmix64 finaliser of seed and position, kept to its top 53 bits.
double sampler_uniform(uint64_t seed, int64_t pos) {
    uint64_t z = seed * 0x9e3779b97f4a7c15ull ^ ((uint64_t)pos + 0x632be59bd9b4e019ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

// Walks the CDF of softmax(logits / T) in ascending ids until it passes u (scaled by the total);
// returns the token and, through margin, u's distance to the bucket's edges in probability.
static int sampler_walk(const float *logits, int n, double temperature, uint64_t seed, int64_t pos,
                        double *margin) {
    SG_CHECK(temperature > 0 && n >= 1, "sampler needs temperature > 0 (got %g)", temperature);
    double max = logits[argmax_f32(logits, n)];
    double total = 0;
    for (int i = 0; i < n; i++) total += exp(((double)logits[i] - max) / temperature);
    double target = sampler_uniform(seed, pos) * total, cumulative = 0;
    for (int i = 0; i < n; i++) {
        double below = cumulative;
        cumulative += exp(((double)logits[i] - max) / temperature);
        if (target < cumulative) {
            *margin = fmin(target - below, cumulative - target) / total;
            return i;
        }
    }
    // Rounding left target at the very top: the last token with non-zero probability.
    *margin = 0;
    for (int i = n - 1; i > 0; i--)
        if (exp(((double)logits[i] - max) / temperature) > 0) return i;
    return 0;
}

int sampler_pick(const float *logits, int n, double temperature, uint64_t seed, int64_t pos) {
    double margin;
    return sampler_walk(logits, n, temperature, seed, pos, &margin);
}

double sampler_margin(const float *logits, int n, double temperature, uint64_t seed, int64_t pos) {
    double margin;
    sampler_walk(logits, n, temperature, seed, pos, &margin);
    return margin;
}
