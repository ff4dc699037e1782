// tests/test_cpu_backend.c: every op of the CPU backend against a direct fp64 computation on seeded
// random inputs (tolerances stated per test), its rounding points, and bitwise batch invariance of
// gemm (a row alone vs inside M in {1,2,7,8,9,32,33}) and of paged attention (a query alone vs in
// a batch with other sequences' rows).
// ctest-labels: cpu;unit
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rope.h"
#include "common/sampler.h"
#include "engine/cpu_backend.h"
#include "testutil.h"

static sg_backend *be;

static void setup(void) { be = cpu_backend_create(); }
static void teardown(void) { be->destroy(be); }

// Device copy of host data, and back.
static void *dev(const void *host, size_t bytes) {
    void *p = be->alloc(be->ctx, bytes);
    ck_assert_ptr_nonnull(p);
    if (host) be->upload(be->ctx, p, host, bytes);
    return p;
}
static void get(void *host, const void *d, size_t bytes) { be->download(be->ctx, host, d, bytes); }
static void dfree(void *p) { be->free(be->ctx, p); }

static double f(bf16 x) { return bf16_to_f32(x); }

// ---- gemm ----

// |y - exact| <= 1e-5·Σ|x·w| (fp32 accumulation of K <= 200 terms), bf16 output adds 2^-8·|exact|;
// the bf16 output is the fp32 output rounded (one rounding point).
START_TEST(test_gemm_vs_fp64) {
    int M = 5, K = 75, N = 37;
    bf16 *x = tu_random_bf16((size_t)M * K, 1.0, 1), *w = tu_random_bf16((size_t)N * K, 0.1, 2);
    bf16 *dx = dev(x, (size_t)M * K * 2), *dw = dev(w, (size_t)N * K * 2);
    float *dyf = dev(NULL, (size_t)M * N * 4);
    bf16 *dyb = dev(NULL, (size_t)M * N * 2);
    be->gemm(be->ctx, dx, M, K, dw, N, dyf, 1);
    be->gemm(be->ctx, dx, M, K, dw, N, dyb, 0);
    float yf[5 * 37];
    bf16 yb[5 * 37];
    get(yf, dyf, sizeof yf);
    get(yb, dyb, sizeof yb);
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double exact = 0, mag = 0;
            for (int k = 0; k < K; k++) {
                exact += f(x[m * K + k]) * f(w[n * K + k]);
                mag += fabs(f(x[m * K + k]) * f(w[n * K + k]));
            }
            ck_assert_double_le(fabs(yf[m * N + n] - exact), 1e-5 * mag);
            ck_assert_double_le(fabs(f(yb[m * N + n]) - exact), 0x1p-8 * fabs(exact) + 1e-5 * mag);
            ck_assert_uint_eq(yb[m * N + n], f32_to_bf16(yf[m * N + n]));
        }
    dfree(dx);
    dfree(dw);
    dfree(dyf);
    dfree(dyb);
    free(x);
    free(w);
}
END_TEST

// gemm_group: each product's bits are those of its own gemm call (n = 1, 2, 3; K % 8 != 0).
START_TEST(test_gemm_group_is_gemms) {
    const int M = 5, K = 75, N[3] = {37, 8, 3};
    bf16 *x = tu_random_bf16((size_t)M * K, 1.0, 3), *dx = dev(x, (size_t)M * K * 2);
    const bf16 *dw[3];
    bf16 *dy[3], *dref[3];
    for (int p = 0; p < 3; p++) {
        bf16 *w = tu_random_bf16((size_t)N[p] * K, 0.1, 4 + p);
        dw[p] = dev(w, (size_t)N[p] * K * 2);
        dy[p] = dev(NULL, (size_t)M * N[p] * 2);
        dref[p] = dev(NULL, (size_t)M * N[p] * 2);
        be->gemm(be->ctx, dx, M, K, dw[p], N[p], dref[p], 0);
        free(w);
    }
    for (int n = 1; n <= 3; n++) {
        be->gemm_group(be->ctx, dx, M, K, n, dw, N, dy);
        for (int p = 0; p < n; p++) {
            bf16 got[5 * 37], ref[5 * 37];
            get(got, dy[p], (size_t)M * N[p] * 2);
            get(ref, dref[p], (size_t)M * N[p] * 2);
            ck_assert_int_eq(memcmp(got, ref, (size_t)M * N[p] * 2), 0);
        }
    }
    for (int p = 0; p < 3; p++) {
        dfree((void *)dw[p]);
        dfree(dy[p]);
        dfree(dref[p]);
    }
    dfree(dx);
    free(x);
}
END_TEST

// Row i computed alone (M = 1) equals, bit for bit, row i computed at any place inside a batch of
// M rows, for fp32 and bf16 outputs, K not a multiple of 8 and N not a multiple of 4.
START_TEST(test_gemm_batch_invariance) {
    const int Ms[] = {1, 2, 7, 8, 9, 32, 33};
    int Kmax = 33, N = 37;
    int Ks[] = {75, 200, 3};
    for (int ki = 0; ki < 3; ki++) {
        int K = Ks[ki];
        bf16 *x = tu_random_bf16((size_t)Kmax * K, 1.0, 10 + ki);
        bf16 *w = tu_random_bf16((size_t)N * K, 0.1, 20 + ki);
        bf16 *dw = dev(w, (size_t)N * K * 2);
        float *alone = sg_calloc((size_t)Kmax * N, sizeof *alone);
        for (int i = 0; i < Kmax; i++) {
            bf16 *dx = dev(x + (size_t)i * K, (size_t)K * 2);
            float *dy = dev(NULL, (size_t)N * 4);
            be->gemm(be->ctx, dx, 1, K, dw, N, dy, 1);
            get(alone + (size_t)i * N, dy, (size_t)N * 4);
            dfree(dx);
            dfree(dy);
        }
        for (int mi = 0; mi < 7; mi++) {
            int M = Ms[mi];
            for (int shift = 0; shift < 3; shift++) {
                // rows shift, shift+1, ... (mod 33) in a batch of M
                bf16 *xb = sg_calloc((size_t)M * K, sizeof *xb);
                for (int r = 0; r < M; r++)
                    memcpy(xb + (size_t)r * K, x + (size_t)((r + shift * 5) % Kmax) * K,
                           (size_t)K * 2);
                bf16 *dx = dev(xb, (size_t)M * K * 2);
                float *dyf = dev(NULL, (size_t)M * N * 4);
                bf16 *dyb = dev(NULL, (size_t)M * N * 2);
                be->gemm(be->ctx, dx, M, K, dw, N, dyf, 1);
                be->gemm(be->ctx, dx, M, K, dw, N, dyb, 0);
                float *yf = sg_calloc((size_t)M * N, sizeof *yf);
                bf16 *yb = sg_calloc((size_t)M * N, sizeof *yb);
                get(yf, dyf, (size_t)M * N * 4);
                get(yb, dyb, (size_t)M * N * 2);
                for (int r = 0; r < M; r++) {
                    const float *ref = alone + (size_t)((r + shift * 5) % Kmax) * N;
                    ck_assert_int_eq(memcmp(yf + (size_t)r * N, ref, (size_t)N * 4), 0);
                    for (int n = 0; n < N; n++)
                        ck_assert_uint_eq(yb[(size_t)r * N + n], f32_to_bf16(ref[n]));
                }
                dfree(dx);
                dfree(dyf);
                dfree(dyb);
                free(xb);
                free(yf);
                free(yb);
            }
        }
        dfree(dw);
        free(alone);
        free(x);
        free(w);
    }
}
END_TEST

// ---- norms, RoPE ----

// Two bf16 roundings: |y - x·r·w| <= 2^-7·|x·r·w| (r in fp64 from the fp64 mean).
START_TEST(test_rmsnorm_vs_fp64) {
    int M = 3, D = 40;
    bf16 *x = tu_random_bf16((size_t)M * D, 2.0, 3), *w = tu_random_bf16(D, 1.0, 4);
    bf16 *dx = dev(x, (size_t)M * D * 2), *dw = dev(w, (size_t)D * 2);
    bf16 *dy = dev(NULL, (size_t)M * D * 2);
    be->rmsnorm(be->ctx, dx, M, D, dw, 1e-6f, dy);
    be->rmsnorm(be->ctx, dx, M, D, dw, 1e-6f, dx); // in place gives the same
    bf16 y[120], y2[120];
    get(y, dy, sizeof y);
    get(y2, dx, sizeof y2);
    ck_assert_int_eq(memcmp(y, y2, sizeof y), 0);
    for (int m = 0; m < M; m++) {
        double ss = 0;
        for (int i = 0; i < D; i++) ss += f(x[m * D + i]) * f(x[m * D + i]);
        double r = 1.0 / sqrt(ss / D + 1e-6);
        for (int i = 0; i < D; i++) {
            double exact = f(x[m * D + i]) * r * f(w[i]);
            ck_assert_double_le(fabs(f(y[m * D + i]) - exact), 0x1p-7 * fabs(exact) + 1e-30);
        }
    }
    dfree(dx);
    dfree(dw);
    dfree(dy);
    free(x);
    free(w);
}
END_TEST

// One head's norm then rotate-half at position p with the bf16 tables, against fp64. Tolerance:
// 2^-6·(|a·c| + |b·s|) + 2^-7·|norm| per output (norm roundings, products and sum rounded).
static void check_head_norm_rope(const bf16 *xh, const bf16 *w, const bf16 *y, int hd,
                                 const rope_table *rt, int p) {
    int half = hd / 2;
    double ss = 0, n[64];
    ck_assert_int_le(hd, 64);
    for (int d = 0; d < hd; d++) ss += f(xh[d]) * f(xh[d]);
    double r = 1.0 / sqrt(ss / hd + 1e-6);
    for (int d = 0; d < hd; d++) n[d] = f(xh[d]) * r * f(w[d]);
    for (int d = 0; d < half; d++) {
        double c = f(rt->cos[p * half + d]), s = f(rt->sin[p * half + d]);
        double lo = n[d] * c - n[d + half] * s, hi = n[d + half] * c + n[d] * s;
        double tol = 0x1p-6 * (fabs(n[d] * c) + fabs(n[d + half] * s) + fabs(n[d + half] * c) +
                               fabs(n[d] * s)) +
                     0x1p-7 * (fabs(n[d]) + fabs(n[d + half]));
        ck_assert_double_le(fabs(f(y[d]) - lo), tol);
        ck_assert_double_le(fabs(f(y[d + half]) - hi), tol);
    }
}

// The queries of the last two of three rows and every row's key head normed and rotated at the
// row's own position (against fp64); the rotated keys and the values land bit for bit in the
// rows' page slots (one sequence over shuffled pages of 4), and nothing else is written.
START_TEST(test_qk_norm_rope_store) {
    enum { ROWS = 3, NQ = 2, NH = 2, HD = 12, PS = 4, NP = 10, QD = NH * HD };
    rope_table rt;
    rope_table_build(&rt, 10000.0, HD, 64);
    bf16 *q = tu_random_bf16((size_t)NQ * QD, 1.5, 5), *qw = tu_random_bf16(HD, 1.0, 6);
    bf16 *k = tu_random_bf16((size_t)ROWS * HD, 1.5, 7), *kw = tu_random_bf16(HD, 1.0, 8);
    bf16 *v = tu_random_bf16((size_t)ROWS * HD, 1.0, 9);
    static const int32_t table[NP] = {3, 7, 0, 9, 1, 8, 2, 6, 4, 5};
    int32_t pos[ROWS] = {0, 37, 5}, seq[ROWS] = {0, 0, 0};
    bf16 *dq = dev(q, sizeof(bf16) * NQ * QD), *dqw = dev(qw, HD * 2), *dkw = dev(kw, HD * 2);
    bf16 *dk = dev(k, sizeof(bf16) * ROWS * HD), *dv = dev(v, sizeof(bf16) * ROWS * HD);
    bf16 *dkp = dev(NULL, sizeof(bf16) * NP * PS * HD);
    bf16 *dvp = dev(NULL, sizeof(bf16) * NP * PS * HD);
    bf16 *dc = dev(rt.cos, (size_t)64 * HD), *ds = dev(rt.sin, (size_t)64 * HD);
    int32_t *dp = dev(pos, sizeof pos), *dseq = dev(seq, sizeof seq);
    int32_t *dtab = dev(table, sizeof table);
    be_paging pg = {.page_size = PS, .n_kv_heads = 1, .head_dim = HD, .page_tables = dtab,
                    .table_stride = NP};
    be->qk_norm_rope_store(be->ctx, &pg, dkp, dvp, dseq, dp, ROWS, dq, NQ, NH, dqw, dk, dv, dkw,
                           1e-6f, dc, ds);
    bf16 yq[NQ * QD], yk[ROWS * HD], kp[NP * PS * HD], vp[NP * PS * HD];
    get(yq, dq, sizeof yq);
    get(yk, dk, sizeof yk);
    get(kp, dkp, sizeof kp);
    get(vp, dvp, sizeof vp);
    for (int j = 0; j < NQ; j++)
        for (int h = 0; h < NH; h++)
            check_head_norm_rope(q + j * QD + h * HD, qw, yq + j * QD + h * HD, HD, &rt,
                                 pos[ROWS - NQ + j]);
    int written = 0;
    for (int i = 0; i < ROWS; i++) {
        check_head_norm_rope(k + i * HD, kw, yk + i * HD, HD, &rt, pos[i]);
        size_t at = ((size_t)table[pos[i] / PS] * PS + pos[i] % PS) * HD;
        ck_assert_mem_eq(kp + at, yk + i * HD, HD * 2);
        ck_assert_mem_eq(vp + at, v + i * HD, HD * 2);
    }
    for (size_t e = 0; e < (size_t)NP * PS * HD; e++) written += kp[e] != 0 || vp[e] != 0;
    ck_assert_int_le(written, ROWS * HD); // the three slots only (a value may be zero)
    void *bufs[] = {dq, dqw, dkw, dk, dv, dkp, dvp, dc, ds, dp, dseq, dtab};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) dfree(bufs[i]);
    free(q);
    free(qw);
    free(k);
    free(kw);
    free(v);
    rope_table_free(&rt);
}
END_TEST

// ---- paged attention ----

// Two sequences over shuffled pages of 4 positions; 4 query heads over 2 KV heads, head_dim 6.
enum { PS = 4, NPAGES = 12, NKV = 2, HD = 6, NH = 4, KVD = NKV * HD, QD = NH * HD, TS = 5 };
static const int32_t tables[2 * TS] = {7, 2, 10, 0, 5, 3, 11, 1, 8, -1};

typedef struct {
    bf16 *kp, *vp; // device pools
    int32_t *dtab;
    be_paging pg;
    bf16 k[2][20 * KVD], v[2][20 * KVD]; // host copies of each sequence's rows by position
} attn_fixture;

// Positions 0 .. 19 (seq 0) and 0 .. 15 (seq 1) uploaded into their page slots.
static void attn_fixture_init(attn_fixture *a, uint64_t seed) {
    a->kp = dev(NULL, (size_t)NPAGES * PS * KVD * 2);
    a->vp = dev(NULL, (size_t)NPAGES * PS * KVD * 2);
    a->dtab = dev(tables, sizeof tables);
    a->pg = (be_paging){.page_size = PS, .n_kv_heads = NKV, .head_dim = HD,
                        .page_tables = a->dtab, .table_stride = TS};
    for (int s = 0; s < 2; s++) {
        int n = s == 0 ? 20 : 16;
        bf16 *k = tu_random_bf16((size_t)n * KVD, 1.0, seed + 2 * s);
        bf16 *v = tu_random_bf16((size_t)n * KVD, 1.0, seed + 2 * s + 1);
        memcpy(a->k[s], k, (size_t)n * KVD * 2);
        memcpy(a->v[s], v, (size_t)n * KVD * 2);
        for (int t = 0; t < n; t++) {
            size_t at = ((size_t)tables[s * TS + t / PS] * PS + t % PS) * KVD;
            be->upload(be->ctx, a->kp + at, k + t * KVD, KVD * 2);
            be->upload(be->ctx, a->vp + at, v + t * KVD, KVD * 2);
        }
        free(k);
        free(v);
    }
}

static void attn_fixture_free(attn_fixture *a) {
    dfree(a->kp);
    dfree(a->vp);
    dfree(a->dtab);
}

// Runs attention for rows (seq[i], n_keys[i]) with queries q [rows, QD]; out [rows, QD].
static void run_attention(attn_fixture *a, int rows, const int32_t *seq, const int32_t *nk,
                          const bf16 *q, bf16 *out) {
    int32_t *ds = dev(seq, (size_t)rows * 4), *dn = dev(nk, (size_t)rows * 4);
    bf16 *dq = dev(q, (size_t)rows * QD * 2), *dout = dev(NULL, (size_t)rows * QD * 2);
    be->attention(be->ctx, &a->pg, a->kp, a->vp, ds, dn, dq, rows, NH, dout);
    get(out, dout, (size_t)rows * QD * 2);
    dfree(ds);
    dfree(dn);
    dfree(dq);
    dfree(dout);
}

// K/V rows land in the page the table names; out vs fp64 softmax: |out - exact| <= 2^-8·|exact|
// + 1e-4 (bf16 output rounding, fp32 scores).
START_TEST(test_attention_vs_fp64) {
    attn_fixture a;
    attn_fixture_init(&a, 100);
    bf16 pool[NPAGES * PS * KVD];
    get(pool, a.kp, sizeof pool);
    for (int t = 0; t < 20; t++) // position t of seq 0 is row t%PS of page tables[t/PS]
        ck_assert_int_eq(memcmp(pool + (tables[t / PS] * PS + t % PS) * KVD, a.k[0] + t * KVD,
                                KVD * 2), 0);
    int rows = 4;
    int32_t seq[4] = {0, 1, 0, 1}, nk[4] = {20, 16, 1, 9};
    bf16 *q = tu_random_bf16((size_t)rows * QD, 1.0, 7), out[4 * QD];
    run_attention(&a, rows, seq, nk, q, out);
    for (int i = 0; i < rows; i++)
        for (int h = 0; h < NH; h++) {
            int g = h / (NH / NKV);
            double s[20], mx = -INFINITY, sum = 0;
            for (int j = 0; j < nk[i]; j++) {
                double dot = 0;
                for (int d = 0; d < HD; d++)
                    dot += f(q[i * QD + h * HD + d]) * f(a.k[seq[i]][j * KVD + g * HD + d]);
                s[j] = dot / sqrt((double)HD);
                if (s[j] > mx) mx = s[j];
            }
            for (int j = 0; j < nk[i]; j++) sum += (s[j] = exp(s[j] - mx));
            for (int d = 0; d < HD; d++) {
                double exact = 0;
                for (int j = 0; j < nk[i]; j++)
                    exact += s[j] / sum * f(a.v[seq[i]][j * KVD + g * HD + d]);
                ck_assert_double_le(fabs(f(out[i * QD + h * HD + d]) - exact),
                                    0x1p-8 * fabs(exact) + 1e-4);
            }
        }
    free(q);
    attn_fixture_free(&a);
}
END_TEST

// A query alone equals, bit for bit, the same query inside a batch with other sequences' rows.
START_TEST(test_attention_batch_invariance) {
    attn_fixture a;
    attn_fixture_init(&a, 200);
    bf16 *q = tu_random_bf16((size_t)6 * QD, 1.0, 8);
    int32_t seq[6] = {1, 0, 0, 1, 0, 1}, nk[6] = {16, 3, 20, 11, 12, 1};
    bf16 batch[6 * QD], alone[QD];
    run_attention(&a, 6, seq, nk, q, batch);
    for (int i = 0; i < 6; i++) {
        run_attention(&a, 1, seq + i, nk + i, q + i * QD, alone);
        ck_assert_int_eq(memcmp(alone, batch + i * QD, QD * 2), 0);
    }
    free(q);
    attn_fixture_free(&a);
}
END_TEST

// gemm_swiglu is gemm_group's gate and up, then the SwiGLU of backend.h in fp32, bit for bit.
START_TEST(test_gemm_swiglu_is_gemms) {
    enum { M = 3, K = 40, N = 7 };
    bf16 *x = tu_random_bf16(M * K, 1.0, 21), *wg = tu_random_bf16(N * K, 0.3, 22);
    bf16 *wu = tu_random_bf16(N * K, 0.2, 23);
    bf16 *dx = dev(x, sizeof(bf16) * M * K), *dwg = dev(wg, sizeof(bf16) * N * K);
    bf16 *dwu = dev(wu, sizeof(bf16) * N * K), *dout = dev(NULL, sizeof(bf16) * M * N);
    bf16 *dgate = dev(NULL, sizeof(bf16) * M * N), *dup = dev(NULL, sizeof(bf16) * M * N);
    be->gemm_swiglu(be->ctx, dx, M, K, dwg, dwu, N, dout);
    const bf16 *w[] = {dwg, dwu};
    const int Ns[] = {N, N};
    bf16 *const y[] = {dgate, dup};
    be->gemm_group(be->ctx, dx, M, K, 2, w, Ns, y);
    bf16 out[M * N], gate[M * N], up[M * N];
    get(out, dout, sizeof out);
    get(gate, dgate, sizeof gate);
    get(up, dup, sizeof up);
    for (int i = 0; i < M * N; i++) {
        float gv = bf16_to_f32(gate[i]);
        float want = bf16_round(gv / (1.0f + expf(-gv))) * bf16_to_f32(up[i]);
        ck_assert_uint_eq(out[i], f32_to_bf16(want));
    }
    void *bufs[] = {dx, dwg, dwu, dout, dgate, dup};
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++) dfree(bufs[i]);
    free(x);
    free(wg);
    free(wu);
}
END_TEST

// ---- elementwise ----

// gemm_swiglu with K = 1 and x = 1 (so gate = g, up = u exactly): two roundings,
// |out - silu(g)·u| <= 2^-7·|silu(g)·u|; add: one, 2^-8·|h + x|.
START_TEST(test_swiglu_add_embed) {
    size_t n = 64;
    bf16 *g = tu_random_bf16(n, 3.0, 9), *u = tu_random_bf16(n, 1.0, 10), one = f32_to_bf16(1.0f);
    bf16 *dg = dev(g, n * 2), *du = dev(u, n * 2), *dout = dev(NULL, n * 2), *done = dev(&one, 2);
    be->gemm_swiglu(be->ctx, done, 1, 1, dg, du, (int)n, dout);
    bf16 out[64];
    get(out, dout, sizeof out);
    for (size_t i = 0; i < n; i++) {
        double exact = f(g[i]) / (1.0 + exp(-f(g[i]))) * f(u[i]);
        ck_assert_double_le(fabs(f(out[i]) - exact), 0x1p-7 * fabs(exact) + 1e-30);
    }
    dfree(done);
    be->add(be->ctx, dg, du, n);
    get(out, dg, sizeof out);
    for (size_t i = 0; i < n; i++) {
        double exact = f(g[i]) + f(u[i]);
        ck_assert_double_le(fabs(f(out[i]) - exact), 0x1p-8 * fabs(exact) + 1e-30);
    }
    // embed: rows of the table by id
    int32_t ids[3] = {5, 0, 5};
    int32_t *dids = dev(ids, sizeof ids);
    bf16 *demb = dev(NULL, 3 * 8 * 2), emb[24];
    be->embed(be->ctx, du, 8, dids, 3, demb); // u as a [8, 8] table
    get(emb, demb, sizeof emb);
    for (int i = 0; i < 3; i++) ck_assert_int_eq(memcmp(emb + i * 8, u + ids[i] * 8, 16), 0);
    dfree(dg);
    dfree(du);
    dfree(dout);
    dfree(dids);
    dfree(demb);
    free(g);
    free(u);
}
END_TEST

// ---- selection ----

// top-1 == argmax == common argmax_f32; ties to the lowest id; runner-up exact; NaN/Inf → -1.
START_TEST(test_argmax_top2) {
    enum { R = 6, N = 50, S = 56 };
    float x[R * S];
    uint64_t st = 11;
    for (int i = 0; i < R * S; i++) x[i] = (float)tu_normal(&st);
    x[1 * S + 7] = x[1 * S + 3] = 9.0f; // tie at the top: 3 then 7
    for (int j = 0; j < N; j++) x[2 * S + j] = 1.0f; // all equal: 0 then 1
    x[3 * S + 40] = 9.0f;
    x[3 * S + 12] = x[3 * S + 30] = 8.0f; // tie for second: 12
    x[4 * S + 9] = NAN;
    x[5 * S + 49] = INFINITY;
    float *dx = dev(x, sizeof x);
    int32_t *dids = dev(NULL, R * 2 * 4), *darg = dev(NULL, R * 4);
    float *dvals = dev(NULL, R * 2 * 4);
    be->top2(be->ctx, dx, R, N, S, dids, dvals);
    be->argmax(be->ctx, dx, R, N, S, darg);
    int32_t ids[R * 2], arg[R];
    float vals[R * 2];
    get(ids, dids, sizeof ids);
    get(arg, darg, sizeof arg);
    get(vals, dvals, sizeof vals);
    for (int i = 0; i < 4; i++) {
        int k[2];
        float kv[2];
        topk_f32(x + i * S, N, 2, k, kv);
        ck_assert_int_eq(arg[i], argmax_f32(x + i * S, N));
        ck_assert_int_eq(ids[2 * i], arg[i]);
        ck_assert_int_eq(ids[2 * i + 1], k[1]);
        ck_assert(vals[2 * i] == kv[0] && vals[2 * i + 1] == kv[1]);
    }
    ck_assert(ids[2] == 3 && ids[3] == 7);
    ck_assert(ids[4] == 0 && ids[5] == 1);
    ck_assert(ids[6] == 40 && ids[7] == 12);
    ck_assert(arg[4] == -1 && arg[5] == -1 && ids[8] == -1 && ids[10] == -1);
    dfree(dx);
    dfree(dids);
    dfree(darg);
    dfree(dvals);
}
END_TEST

// Markov step and ladder against the definition recomputed on the host: bias = bf16(w2·w1[prev])
// within 2^-8 of fp64 and equal to the gemm of the same row; score = U + bias in fp32; tokens and
// runner-ups from topk_f32. Chain 0 = A (from step 0); chain 1 = ladder at P = 1; chain 2 = ladder
// at P = 2 over a second request's U rows; also r = 0 (no head): tokens are argmax of U.
START_TEST(test_markov_step_ladder) {
    enum { V = 40, r = 6, B = 4, W = B + 1 };
    bf16 *w1 = tu_random_bf16(V * r, 1.0, 12), *w2 = tu_random_bf16(V * r, 1.0, 13);
    float U[2 * B * V];
    uint64_t st = 14;
    for (int i = 0; i < 2 * B * V; i++) U[i] = (float)tu_normal(&st);
    bf16 *dw1 = dev(w1, V * r * 2), *dw2 = dev(w2, V * r * 2);
    float *dU = dev(U, sizeof U);
    int32_t tokens[4 * W] = {0};
    tokens[0] = 3;     // chain 0 (A of request 0), anchor 3
    tokens[3 * W] = 9; // chain 3 (A of request 1), anchor 9
    int32_t *dtok = dev(tokens, sizeof tokens), *dtop = dev(NULL, 4 * B * 2 * 4);
    float *dtv = dev(NULL, 4 * B * 2 * 4);
    // Chains A: rows {chain 0, u 0}, {chain 3, u B}, start 0, limit B.
    int32_t crow[2] = {0, 3}, urow[2] = {0, B}, start[2] = {0, 0}, lim[2] = {B, B};
    int32_t *dc = dev(crow, 8), *du = dev(urow, 8), *ds = dev(start, 8), *dl = dev(lim, 8);
    for (int s = 0; s < B; s++)
        be->markov_step(be->ctx, dU, V, dw1, dw2, r, 2, dc, du, ds, dl, s, dtok, W, dtop, dtv);
    // Ladders: chain 1 from A0 at P 1, chain 2 from A3 at P 2.
    int32_t lrow[2] = {1, 2}, arow[2] = {0, 3}, br[2] = {1, 2};
    int32_t *dlr = dev(lrow, 8), *dar = dev(arow, 8), *dbr = dev(br, 8);
    be->ladder_force(be->ctx, dtok, W, dtop, 2, dlr, dar, dbr);
    int32_t lurow[2] = {0, B}, lstart[2] = {2, 3};
    int32_t *dlu = dev(lurow, 8), *dls = dev(lstart, 8);
    for (int s = 0; s < B; s++)
        be->markov_step(be->ctx, dU, V, dw1, dw2, r, 2, dlr, dlu, dls, dl, s, dtok, W, dtop, dtv);
    int32_t top[4 * B * 2];
    float tv[4 * B * 2];
    get(tokens, dtok, sizeof tokens);
    get(top, dtop, sizeof top);
    get(tv, dtv, sizeof tv);

    // Host recomputation of one step.
    bf16 *db = dev(NULL, V * 2);
    bf16 bias[V];
    float score[V];
    // chain c, u base, from step k0: expected tokens
    int32_t expect[4 * W] = {0};
    int chain_u[4] = {0, 0, B, B};
    expect[0] = 3;
    expect[3 * W] = 9;
    const int order[4] = {0, 3, 1, 2}; // chains A first: the ladders copy them
    for (int oi = 0; oi < 4; oi++) {
        int c = order[oi], k0 = 0;
        if (c == 1 || c == 2) { // ladder: A's prefix then A's runner-up at P
            int a = c == 1 ? 0 : 3, P = c == 1 ? 1 : 2;
            for (int k = 0; k <= P; k++) expect[c * W + k] = expect[a * W + k];
            expect[c * W + P + 1] = top[(a * B + P) * 2 + 1];
            k0 = P + 1;
        }
        for (int k = k0; k < B; k++) {
            int prev = expect[c * W + k];
            bf16 *dx = dev(w1 + prev * r, r * 2);
            be->gemm(be->ctx, dx, 1, r, dw2, V, db, 0);
            dfree(dx);
            get(bias, db, sizeof bias);
            for (int v = 0; v < V; v++) {
                double exact = 0;
                for (int j = 0; j < r; j++) exact += f(w2[v * r + j]) * f(w1[prev * r + j]);
                ck_assert_double_le(fabs(f(bias[v]) - exact), 0x1p-8 * fabs(exact) + 1e-5);
                score[v] = U[(chain_u[c] + k) * V + v] + bf16_to_f32(bias[v]);
            }
            int ids[2];
            float vals[2];
            topk_f32(score, V, 2, ids, vals);
            expect[c * W + k + 1] = ids[0];
            ck_assert_int_eq(top[(c * B + k) * 2], ids[0]);
            ck_assert_int_eq(top[(c * B + k) * 2 + 1], ids[1]);
            ck_assert(tv[(c * B + k) * 2] == vals[0] && tv[(c * B + k) * 2 + 1] == vals[1]);
        }
    }
    ck_assert_int_eq(memcmp(tokens, expect, sizeof tokens), 0);
    ck_assert_int_ne(tokens[1 * W + 2], tokens[0 * W + 2]); // the ladder took the runner-up

    // r = 0: the score row is U itself.
    be->markov_step(be->ctx, dU, V, NULL, NULL, 0, 1, dc, du, ds, dl, 0, dtok, W, dtop, NULL);
    get(tokens, dtok, sizeof tokens);
    ck_assert_int_eq(tokens[1], argmax_f32(U, V));

    void *all[] = {dw1, dw2, dU, dtok, dtop, dtv, dc, du, ds, dl, dlr, dar, dbr, dlu, dls, db};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) dfree(all[i]);
    free(w1);
    free(w2);
}
END_TEST

// ---- data movement, digest ----

START_TEST(test_page_copy_copy_rows) {
    // 2 groups (layers) of 5 pages of 6 bytes.
    unsigned char host[2 * 5 * 6];
    for (int i = 0; i < 60; i++) host[i] = (unsigned char)i;
    unsigned char *d = dev(host, sizeof host);
    int32_t src[2] = {4, 0}, dst[2] = {1, 3};
    int32_t *ds = dev(src, 8), *dd = dev(dst, 8);
    be->page_copy(be->ctx, d, 2, 30, 6, ds, dd, 2);
    unsigned char out[60];
    get(out, d, sizeof out);
    for (int g = 0; g < 2; g++)
        for (int p = 0; p < 5; p++) {
            int from = p == 1 ? 4 : p == 3 ? 0 : p;
            ck_assert_int_eq(memcmp(out + g * 30 + p * 6, host + g * 30 + from * 6, 6), 0);
        }
    // copy_rows: gather rows 2, 0 of a [3, stride 6] source (4 bytes each) into rows 1, 0 of a
    // stride-5 destination.
    unsigned char *dst_rows = dev(NULL, 10);
    int32_t si[2] = {2, 0}, di[2] = {1, 0};
    int32_t *dsi = dev(si, 8), *ddi = dev(di, 8);
    be->copy_rows(be->ctx, dst_rows, 5, ddi, d, 6, dsi, 2, 4);
    unsigned char rows[10];
    get(rows, dst_rows, 10);
    ck_assert_int_eq(memcmp(rows + 5, out + 12, 4), 0);
    ck_assert_int_eq(memcmp(rows, out, 4), 0);
    dfree(d);
    dfree(ds);
    dfree(dd);
    dfree(dst_rows);
    dfree(dsi);
    dfree(ddi);
}
END_TEST

// The op equals be_digest; one flipped bit, swapped elements or the element width change it.
START_TEST(test_digest) {
    float x[2][16];
    uint64_t st = 15;
    for (int i = 0; i < 32; i++) x[i / 16][i % 16] = (float)tu_normal(&st);
    memcpy(x[1], x[0], sizeof x[0]);
    float *dx = dev(x, sizeof x);
    uint64_t *dd = dev(NULL, 16), dg[2];
    be->digest(be->ctx, dx, 2, 16, 4, 64, dd);
    get(dg, dd, sizeof dg);
    ck_assert(dg[0] == dg[1] && dg[0] == be_digest(x[0], 16, 4));
    uint64_t base = dg[0];
    uint32_t u;
    memcpy(&u, &x[1][5], 4);
    u ^= 1;
    memcpy(&x[1][5], &u, 4);
    ck_assert(be_digest(x[1], 16, 4) != base);
    memcpy(x[1], x[0], sizeof x[0]);
    float t = x[1][2];
    x[1][2] = x[1][3];
    x[1][3] = t;
    ck_assert(be_digest(x[1], 16, 4) != base);
    ck_assert(be_digest(x[0], 32, 2) != base);
    ck_assert(be_digest(x[0], 15, 4) != base);
    dfree(dx);
    dfree(dd);
}
END_TEST

int main(void) {
    Suite *s = suite_create("cpu_backend");
    TCase *tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_gemm_vs_fp64);
    tcase_add_test(tc, test_gemm_batch_invariance);
    tcase_add_test(tc, test_gemm_group_is_gemms);
    tcase_add_test(tc, test_gemm_swiglu_is_gemms);
    tcase_add_test(tc, test_rmsnorm_vs_fp64);
    tcase_add_test(tc, test_qk_norm_rope_store);
    tcase_add_test(tc, test_attention_vs_fp64);
    tcase_add_test(tc, test_attention_batch_invariance);
    tcase_add_test(tc, test_swiglu_add_embed);
    tcase_add_test(tc, test_argmax_top2);
    tcase_add_test(tc, test_markov_step_ladder);
    tcase_add_test(tc, test_page_copy_copy_rows);
    tcase_add_test(tc, test_digest);
    suite_add_tcase(s, tc);
    return tu_run(s);
}
