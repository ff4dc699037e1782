// ref/ops.c: the numerics contract (design.md §3) as plain CPU operations; see ref/ops.h.
//
// Every loop runs in ascending index order with fp32 accumulators, and every bf16 rounding named by
// the contract is an explicit bf16_round, so the code reads as the specification.
#include "ops.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "common/error.h"

// Rows of w converted to fp32 at a time: 256 rows of a 9728-wide weight are 10 MB of scratch.
#define REF_MATMUL_BLOCK 256

void ref_matmul(const float *x, int M, int K, const bf16 *w, int N, float *y, int keep_fp32) {
    SG_CHECK(M >= 1 && K >= 1 && N >= 1, "ref_matmul shape M %d K %d N %d", M, K, N);
    int rows = N < REF_MATMUL_BLOCK ? N : REF_MATMUL_BLOCK;
    float *wf = sg_calloc((size_t)rows * K, sizeof *wf); // [rows, K]
    for (int n0 = 0; n0 < N; n0 += rows) {
        int nb = N - n0 < rows ? N - n0 : rows;
        const bf16 *src = w + (size_t)n0 * K;
        for (size_t i = 0; i < (size_t)nb * K; i++) wf[i] = bf16_to_f32(src[i]);
        // y[:, n0:n0+nb] = x[M, K] · wf[nb, K]ᵀ
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nb, K, 1.0f, x, K, wf, K, 0.0f,
                    y + n0, N);
    }
    free(wf);
    if (!keep_fp32)
        for (size_t i = 0; i < (size_t)M * N; i++) y[i] = bf16_round(y[i]);
}

// One row: ss = Σ x[i]² in fp32 (ascending i); r = 1.0f / sqrtf(ss / D + eps) (fp32 division and
// sqrtf, both correctly rounded); y[i] = bf16(bf16(x[i] · r) · w[i]).
static void rmsnorm_row(const float *x, int D, const bf16 *w, float eps, float *y) {
    float ss = 0.0f;
    for (int i = 0; i < D; i++) ss += x[i] * x[i];
    float r = 1.0f / sqrtf(ss / (float)D + eps);
    for (int i = 0; i < D; i++) y[i] = bf16_round(bf16_round(x[i] * r) * bf16_to_f32(w[i]));
}

void ref_rmsnorm(const float *x, int M, int D, const bf16 *w, float eps, float *y) {
    for (int m = 0; m < M; m++) rmsnorm_row(x + (size_t)m * D, D, w, eps, y + (size_t)m * D);
}

void ref_head_norm_rope(float *x, int n_heads, int head_dim, const bf16 *w, float eps,
                        const rope_table *rope, int pos) {
    SG_CHECK(rope->head_dim == head_dim && pos >= 0 && pos < rope->max_pos,
             "rope table hd %d max_pos %d for head_dim %d pos %d", rope->head_dim, rope->max_pos,
             head_dim, pos);
    int half = head_dim / 2;
    const bf16 *cs = rope->cos + (size_t)pos * half, *sn = rope->sin + (size_t)pos * half;
    for (int h = 0; h < n_heads; h++) {
        float *xh = x + (size_t)h * head_dim;
        rmsnorm_row(xh, head_dim, w, eps, xh);
        for (int d = 0; d < half; d++) {
            float c = bf16_to_f32(cs[d]), s = bf16_to_f32(sn[d]);
            float a = xh[d], b = xh[d + half];
            xh[d] = bf16_round(bf16_round(a * c) - bf16_round(b * s));
            xh[d + half] = bf16_round(bf16_round(b * c) + bf16_round(a * s));
        }
    }
}

// Per query head h (KV head g = h / (nH / nKV)):
//   s[j] = (Σ_d q[d]·k[j][d]) · (1.0f / sqrtf(hd))            fp32, d ascending
//   p[j] = expf(s[j] − max_j s) / Σ_j expf(s[j] − max_j s)     fp32, j ascending, not rounded
//   out[d] = bf16(Σ_j p[j]·v[j][d])                            fp32, j ascending
void ref_attention_row(const float *q, const float *k, const float *v, int n_keys, int n_heads,
                       int n_kv_heads, int head_dim, float *out) {
    SG_CHECK(n_keys >= 1 && n_kv_heads >= 1 && n_heads % n_kv_heads == 0,
             "attention n_keys %d heads %d kv heads %d", n_keys, n_heads, n_kv_heads);
    int group = n_heads / n_kv_heads;
    size_t kv_stride = (size_t)n_kv_heads * head_dim;
    float scale = 1.0f / sqrtf((float)head_dim);
    float *p = sg_calloc((size_t)n_keys, sizeof *p);
    for (int h = 0; h < n_heads; h++) {
        const float *qh = q + (size_t)h * head_dim;
        size_t off = (size_t)(h / group) * head_dim;
        float mx = -INFINITY;
        for (int j = 0; j < n_keys; j++) {
            const float *kj = k + j * kv_stride + off;
            float dot = 0.0f;
            for (int d = 0; d < head_dim; d++) dot += qh[d] * kj[d];
            p[j] = dot * scale;
            if (p[j] > mx) mx = p[j];
        }
        float sum = 0.0f;
        for (int j = 0; j < n_keys; j++) {
            p[j] = expf(p[j] - mx);
            sum += p[j];
        }
        for (int j = 0; j < n_keys; j++) p[j] /= sum;
        float *oh = out + (size_t)h * head_dim;
        for (int d = 0; d < head_dim; d++) {
            float acc = 0.0f;
            for (int j = 0; j < n_keys; j++) acc += p[j] * v[j * kv_stride + off + d];
            oh[d] = bf16_round(acc);
        }
    }
    free(p);
}

// silu(g) = g / (1.0f + expf(−g)) in fp32.
void ref_swiglu(const float *gate, const float *up, int n, float *out) {
    for (int i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = bf16_round(bf16_round(g / (1.0f + expf(-g))) * up[i]);
    }
}

void ref_residual_add(float *h, const float *x, int n) {
    for (int i = 0; i < n; i++) h[i] = bf16_round(h[i] + x[i]);
}

void ref_mlp_block(float *h, int M, int H, int inter, const layer_weights *w, float eps, float *x,
                   float *gate, float *up) {
    ref_rmsnorm(h, M, H, w->post_norm, eps, x);
    ref_matmul(x, M, H, w->w_gate, inter, gate, 0);
    ref_matmul(x, M, H, w->w_up, inter, up, 0);
    ref_swiglu(gate, up, M * inter, gate);
    ref_matmul(gate, M, inter, w->w_down, H, x, 0);
    ref_residual_add(h, x, M * H);
}
