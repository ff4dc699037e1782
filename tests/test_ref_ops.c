// tests/test_ref_ops.c: ref/ops.c against direct fp64 computations on seeded random inputs.
// ctest-labels: cpu;unit
//
// Method: the fp64 expectation applies the contract's bf16 roundings to exact (double) values. Each
// fp32 step of the implementation has a known worst-case error bound; an output is compared
// bitwise with the expectation whenever rounding the whole interval [exact − bound, exact + bound]
// gives one bf16 value ("unambiguous"), which is then the only value a correct implementation can
// produce. Ambiguous elements (the exact value lies within the bound of a bf16 rounding boundary)
// are skipped and counted; a test requires them to be rare, so it keeps its strength. fp32 outputs
// (logits) are compared against the standard bound K·2⁻²⁴·Σ|x·w| of an fp32 dot product.
#include <math.h>
#include <stdlib.h>

#include "common/error.h"
#include "ref/ops.h"
#include "testutil.h"

#define U32 0x1.0p-24 // fp32 unit roundoff

// v rounded to the nearest bf16 value, ties to even, straight from double (no float step); for
// values in the normal fp32 range.
static float bf16_of_double(double v) {
    if (v == 0) return 0.0f;
    int e;
    double m = frexp(v, &e); // |m| in [0.5, 1): 8 significant bits are m·2⁸ rounded
    return (float)ldexp(nearbyint(ldexp(m, 8)), e - 8);
}

// bf16 rounding of a value known only to within ±err (err = 0: exact): the rounded value, and
// *amb is incremented when the interval straddles a rounding boundary.
static float r16(double v, double err, int *amb) {
    if (err > 0 && bf16_of_double(v - err) != bf16_of_double(v + err)) (*amb)++;
    return bf16_of_double(v);
}

// n floats with bf16 values ~ N(0, scale²).
static float *rand_act(size_t n, double scale, uint64_t seed) {
    bf16 *b = tu_random_bf16(n, scale, seed);
    float *x = sg_calloc(n, sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = bf16_to_f32(b[i]);
    free(b);
    return x;
}

// n bf16 norm weights 1 + N(0, 0.1²).
static bf16 *rand_norm(size_t n, uint64_t seed) {
    bf16 *w = tu_random_bf16(n, 0.1, seed);
    for (size_t i = 0; i < n; i++) w[i] = f32_to_bf16(1.0f + bf16_to_f32(w[i]));
    return w;
}

// M = 1, 3, 7; K = 37 (odd); N = 300: more than one 256-row weight block, not a multiple of it.
START_TEST(test_matmul) {
    const int Ms[] = {1, 3, 7}, K = 37, N = 300;
    bf16 *w = tu_random_bf16((size_t)N * K, 1.0, 11);
    for (int t = 0; t < 3; t++) {
        int M = Ms[t], amb = 0, unrounded = 0;
        float *x = rand_act((size_t)M * K, 1.0, 100 + t);
        float *y = sg_calloc((size_t)M * N, sizeof *y);
        float *yf = sg_calloc((size_t)M * N, sizeof *yf);
        ref_matmul(x, M, K, w, N, y, 0);
        ref_matmul(x, M, K, w, N, yf, 1);
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                double exact = 0, mag = 0; // bf16 products are exact in double
                for (int k = 0; k < K; k++) {
                    double p = (double)x[m * K + k] * bf16_to_f32(w[(size_t)n * K + k]);
                    exact += p;
                    mag += fabs(p);
                }
                double bound = 1.01 * K * U32 * mag;
                float got = yf[m * N + n];
                ck_assert_msg(fabs(got - exact) <= bound, "fp32 y[%d,%d] %.9g vs %.9g (bound %g)",
                              m, n, got, exact, bound);
                if (got != bf16_round(got)) unrounded++;
                int before = amb;
                float want = r16(exact, bound, &amb);
                if (amb == before)
                    ck_assert_msg(y[m * N + n] == want, "bf16 y[%d,%d] %.9g vs %.9g", m, n,
                                  y[m * N + n], want);
                ck_assert(y[m * N + n] == bf16_round(y[m * N + n]));
            }
        ck_assert_int_le(amb, M * N / 20); // worst-case bound: cancellation makes some ambiguous
        ck_assert_int_gt(unrounded, M * N / 2); // keep_fp32 really keeps fp32
        free(x);
        free(y);
        free(yf);
    }
    free(w);
}
END_TEST

// fp64 RMSNorm of one row with the contract's two roundings. ok[i] = 0 where the first rounding
// is ambiguous. single (may be NULL) receives bf16(x·r·w), the one-rounding variant the contract
// rules out.
static void rmsnorm_expect(const float *x, int D, const bf16 *w, float eps, float *y, int *ok,
                           float *single) {
    double ss = 0;
    for (int i = 0; i < D; i++) ss += (double)x[i] * x[i];
    double r = 1.0 / sqrt(ss / D + eps);
    double rel = (D + 8) * U32; // fp32 sum of squares, division, sqrtf, reciprocal, product
    for (int i = 0; i < D; i++) {
        int amb = 0;
        float a = r16(x[i] * r, fabs(x[i] * r) * rel, &amb);
        y[i] = r16((double)a * bf16_to_f32(w[i]), 0, &amb); // bf16·bf16 is exact in double
        ok[i] = !amb;
        if (single) single[i] = bf16_of_double(x[i] * r * bf16_to_f32(w[i]));
    }
}

START_TEST(test_rmsnorm) {
    const int M = 6, D = 64;
    const float eps = 1e-6f;
    float *x = rand_act((size_t)M * D, 2.0, 21);
    for (int i = 0; i < D; i++) x[5 * D + i] = 0.0f; // an all-zero row: eps keeps it finite
    bf16 *w = rand_norm(D, 22);
    float *y = sg_calloc((size_t)M * D, sizeof *y);
    float want[64], single[64];
    int ok[64];
    ref_rmsnorm(x, M, D, w, eps, y);
    int skipped = 0, double_rounding_matters = 0;
    for (int m = 0; m < M; m++) {
        rmsnorm_expect(x + m * D, D, w, eps, want, ok, single);
        for (int i = 0; i < D; i++) {
            if (!ok[i]) {
                skipped++;
                continue;
            }
            ck_assert_msg(y[m * D + i] == want[i], "y[%d,%d] %.9g vs %.9g", m, i, y[m * D + i],
                          want[i]);
            if (single[i] != want[i]) double_rounding_matters++;
        }
    }
    ck_assert_int_le(skipped, M * D / 50);
    ck_assert_int_gt(double_rounding_matters, 0); // the data exercises the intermediate rounding
    for (int i = 0; i < D; i++) ck_assert(y[5 * D + i] == 0.0f);
    // In place (y aliases x) gives the same values.
    ref_rmsnorm(x, M, D, w, eps, x);
    for (int i = 0; i < M * D; i++) ck_assert(x[i] == y[i]);
    free(x);
    free(y);
    free(w);
}
END_TEST

START_TEST(test_head_norm_rope) {
    const int nH = 3, hd = 12, half = 6, positions[] = {0, 1, 37, 49};
    const float eps = 1e-6f;
    rope_table rope;
    rope_table_build(&rope, 10000.0, hd, 50);
    bf16 *w = rand_norm(hd, 31);
    int skipped = 0, compared = 0, double_rounding_matters = 0;
    for (int t = 0; t < 4; t++) {
        int pos = positions[t];
        float *x = rand_act((size_t)nH * hd, 1.5, 300 + t);
        float *out = sg_calloc((size_t)nH * hd, sizeof *out);
        for (int i = 0; i < nH * hd; i++) out[i] = x[i];
        ref_head_norm_rope(out, nH, hd, w, eps, &rope, pos);
        for (int h = 0; h < nH; h++) {
            float n[12];
            int ok[12];
            rmsnorm_expect(x + h * hd, hd, w, eps, n, ok, NULL);
            for (int d = 0; d < half; d++) {
                if (!ok[d] || !ok[d + half]) {
                    skipped++;
                    continue;
                }
                double c = bf16_to_f32(rope.cos[pos * half + d]);
                double s = bf16_to_f32(rope.sin[pos * half + d]);
                int amb = 0; // products and sums of bf16 values are exact in double
                float lo = r16(r16(n[d] * c, 0, &amb) - r16(n[d + half] * s, 0, &amb), 0, &amb);
                float hi = r16(r16(n[d + half] * c, 0, &amb) + r16(n[d] * s, 0, &amb), 0, &amb);
                ck_assert_msg(out[h * hd + d] == lo, "pos %d head %d d %d: %.9g vs %.9g", pos, h,
                              d, out[h * hd + d], lo);
                ck_assert_msg(out[h * hd + d + half] == hi, "pos %d head %d d %d: %.9g vs %.9g",
                              pos, h, d + half, out[h * hd + d + half], hi);
                if (pos == 0) ck_assert(lo == n[d] && hi == n[d + half]); // identity at 0
                double_rounding_matters += bf16_of_double(n[d] * c - n[d + half] * s) != lo;
                double_rounding_matters += bf16_of_double(n[d + half] * c + n[d] * s) != hi;
                compared++;
            }
        }
        free(x);
        free(out);
    }
    ck_assert_int_le(skipped, 4 * nH * half / 20);
    ck_assert_int_ge(compared, 60);
    ck_assert_int_gt(double_rounding_matters, 0); // each product is rounded before the sum
    free(w);
    rope_table_free(&rope);
}
END_TEST

// GQA: 4 query heads over 2 KV heads (head h reads KV head h / 2); 1, 5 and 40 keys.
START_TEST(test_attention_row) {
    const int nH = 4, nKV = 2, hd = 8, key_counts[] = {1, 5, 40};
    int amb = 0, compared = 0;
    for (int t = 0; t < 3; t++) {
        int nk = key_counts[t];
        float *q = rand_act((size_t)nH * hd, 1.0, 400 + t);
        float *k = rand_act((size_t)nk * nKV * hd, 1.0, 410 + t);
        float *v = rand_act((size_t)nk * nKV * hd, 1.0, 420 + t);
        float out[32];
        ref_attention_row(q, k, v, nk, nH, nKV, hd, out);
        for (int h = 0; h < nH; h++) {
            int g = h / (nH / nKV);
            double s[40], mx = -INFINITY, sum = 0, ds = 0;
            for (int j = 0; j < nk; j++) {
                double dot = 0, mag = 0;
                for (int d = 0; d < hd; d++) {
                    double p = (double)q[h * hd + d] * k[(j * nKV + g) * hd + d];
                    dot += p;
                    mag += fabs(p);
                }
                s[j] = dot / sqrt(hd);
                ds = fmax(ds, (hd + 4) * U32 * mag / sqrt(hd)); // fp32 dot and scale
                mx = fmax(mx, s[j]);
            }
            double spread = 0;
            for (int j = 0; j < nk; j++) {
                sum += exp(s[j] - mx);
                spread = fmax(spread, mx - s[j]);
            }
            // Relative error of each fp32 probability: scores, max, expf, the sum, the division.
            double dp = 4 * ds + 2 * spread * U32 + (nk + 8) * U32;
            for (int d = 0; d < hd; d++) {
                double o = 0, mag = 0;
                for (int j = 0; j < nk; j++) {
                    double p = exp(s[j] - mx) / sum, vv = v[(j * nKV + g) * hd + d];
                    o += p * vv;
                    mag += p * fabs(vv);
                }
                int before = amb;
                float want = r16(o, 2 * mag * (dp + (nk + 2) * U32), &amb);
                if (amb == before) {
                    ck_assert_msg(out[h * hd + d] == want, "keys %d head %d d %d: %.9g vs %.9g",
                                  nk, h, d, out[h * hd + d], want);
                    compared++;
                }
            }
        }
        if (nk == 1) // one key: the probability is exactly 1 and the output is v itself
            for (int h = 0; h < nH; h++)
                for (int d = 0; d < hd; d++)
                    ck_assert(out[h * hd + d] == v[(h / 2) * hd + d]);
        free(q);
        free(k);
        free(v);
    }
    ck_assert_int_ge(compared, 3 * nH * hd * 9 / 10);
}
END_TEST

START_TEST(test_swiglu) {
    const int n = 500;
    float *gate = rand_act(n, 3.0, 51), *up = rand_act(n, 1.0, 52);
    gate[0] = 0.0f;
    gate[1] = -100.0f; // expf(100) overflows to inf: silu is -0, not NaN
    gate[2] = 100.0f;
    float *out = sg_calloc(n, sizeof *out);
    ref_swiglu(gate, up, n, out);
    int amb = 0, compared = 0, double_rounding_matters = 0;
    for (int i = 3; i < n; i++) { // 0..2 are the edge cases, checked below
        double g = gate[i], s = g / (1.0 + exp(-g));
        int before = amb;
        float a = r16(s, fabs(s) * 6 * U32, &amb); // expf, the add and the division
        float want = r16((double)a * up[i], 0, &amb);
        if (amb != before) continue;
        ck_assert_msg(out[i] == want, "out[%d] %.9g vs %.9g (gate %g up %g)", i, out[i], want,
                      gate[i], up[i]);
        double_rounding_matters += bf16_of_double(s * up[i]) != want;
        compared++;
    }
    ck_assert_int_ge(compared, n - 10);
    ck_assert_int_gt(double_rounding_matters, 0); // silu is rounded before the product
    ck_assert(out[0] == 0.0f && out[1] == 0.0f && !isnan(out[1]));
    ck_assert(out[2] == bf16_round(100.0f * up[2]));
    // In place (out aliases gate).
    ref_swiglu(gate, up, n, gate);
    for (int i = 0; i < n; i++) ck_assert(gate[i] == out[i]);
    free(gate);
    free(up);
    free(out);
}
END_TEST

START_TEST(test_residual_add) {
    const int n = 300;
    float *h = rand_act(n, 1.0, 61), *x = rand_act(n, 0.5, 62), *h0 = rand_act(n, 1.0, 61);
    ref_residual_add(h, x, n);
    for (int i = 0; i < n; i++) { // bf16 + bf16 is exact in double
        int amb = 0;
        ck_assert(h[i] == r16((double)h0[i] + x[i], 0, &amb));
        ck_assert_int_eq(amb, 0);
    }
    // Round to nearest, ties to even: 1 + 2⁻⁸ is the midpoint of 1 and 1 + 2⁻⁷.
    float a[4] = {1.0f, 1.0f, 1.0f + 0x1p-7f, 3.0f}, b[4] = {0x1p-8f, 0x3p-9f, 0x1p-8f, 0x1p-7f};
    ref_residual_add(a, b, 4);
    ck_assert(a[0] == 1.0f);             // tie, down to the even 1
    ck_assert(a[1] == 1.0f + 0x1p-7f);   // above the midpoint
    ck_assert(a[2] == 1.0f + 0x1p-6f);   // tie, up to the even neighbour
    ck_assert(a[3] == 3.0f);             // 3 + 2⁻⁷: midpoint of 3 and 3 + 2⁻⁶, tie down to even
    free(h);
    free(x);
    free(h0);
}
END_TEST

int main(void) {
    Suite *s = suite_create("ref_ops");
    TCase *tc = tcase_create("ops");
    tcase_add_test(tc, test_matmul);
    tcase_add_test(tc, test_rmsnorm);
    tcase_add_test(tc, test_head_norm_rope);
    tcase_add_test(tc, test_attention_row);
    tcase_add_test(tc, test_swiglu);
    tcase_add_test(tc, test_residual_add);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
