// engine/cpu_backend.c: every op of the backend boundary in plain C on host memory (see
// cpu_backend.h for the reduction orders, backend.h for each op's meaning and rounding points).
//
// The gemm converts x and a block of w rows to fp32 (zero-padded to a multiple of 8) and runs the
// 8-lane dot product, four w rows at a time; dot1 and dot4 compute each element identically, so an
// element's bits depend only on its x row, its w row and K — never on M, N or the blocking.
#include "cpu_backend.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

// Four fp32 lanes (one SSE register); a dot product keeps 8 lanes as two of them.
typedef float v4f __attribute__((vector_size(16)));

typedef struct {
    float *xf; // gemm: x in fp32 [M, K8]
    size_t xf_cap;
    float *wf; // gemm: a block of w rows in fp32 [NB, K8]
    size_t wf_cap;
    float *scores; // attention: one head's scores [n_keys], then its fp32 output [head_dim]
    size_t scores_cap;
    bf16 *gu; // gemm_swiglu: the gate and up products [2, M, N]
    size_t gu_cap;
    bf16 *bias; // markov_step: one bias row [V]
    float *score_row; // markov_step: one score row [V]
    size_t markov_cap;
} cpu_ctx;

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return p;
    free(p);
    *cap = need;
    return sg_calloc(need, elem);
}

// ---- memory ----

static void *cpu_alloc(void *ctx, size_t bytes) {
    (void)ctx;
    return calloc(1, bytes);
}

static void cpu_free(void *ctx, void *p) {
    (void)ctx;
    free(p);
}

static void cpu_memcpy(void *ctx, void *dst, const void *src, size_t bytes) {
    (void)ctx;
    if (bytes) memcpy(dst, src, bytes);
}

// ---- gemm ----

static inline v4f load4(const float *p) {
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

// Lanes 0-3 in lo, 4-7 in hi.
static inline float combine8(v4f lo, v4f hi) {
    return ((lo[0] + lo[1]) + (lo[2] + lo[3])) + ((hi[0] + hi[1]) + (hi[2] + hi[3]));
}

// x, w [K8] fp32, K8 a multiple of 8: the one reduction order of every gemm element.
static float dot1(const float *x, const float *w, size_t K8) {
    v4f lo = {0}, hi = {0};
    for (size_t k = 0; k < K8; k += 8) {
        lo += load4(x + k) * load4(w + k);
        hi += load4(x + k + 4) * load4(w + k + 4);
    }
    return combine8(lo, hi);
}

// Four elements at once: out[j] = dot1(x, w + j*K8, K8) bit for bit.
static void dot4(const float *x, const float *w, size_t K8, float out[4]) {
    v4f l0 = {0}, h0 = {0}, l1 = {0}, h1 = {0}, l2 = {0}, h2 = {0}, l3 = {0}, h3 = {0};
    const float *w0 = w, *w1 = w + K8, *w2 = w + 2 * K8, *w3 = w + 3 * K8;
    for (size_t k = 0; k < K8; k += 8) {
        v4f xl = load4(x + k), xh = load4(x + k + 4);
        l0 += xl * load4(w0 + k);
        h0 += xh * load4(w0 + k + 4);
        l1 += xl * load4(w1 + k);
        h1 += xh * load4(w1 + k + 4);
        l2 += xl * load4(w2 + k);
        h2 += xh * load4(w2 + k + 4);
        l3 += xl * load4(w3 + k);
        h3 += xh * load4(w3 + k + 4);
    }
    out[0] = combine8(l0, h0);
    out[1] = combine8(l1, h1);
    out[2] = combine8(l2, h2);
    out[3] = combine8(l3, h3);
}

// rows [n, K] bf16 → dst [n, K8] fp32, zero-padded.
static void to_f32_padded(const bf16 *src, int n, int K, size_t K8, float *dst) {
    for (int i = 0; i < n; i++) {
        const bf16 *s = src + (size_t)i * K;
        float *d = dst + (size_t)i * K8;
        for (int k = 0; k < K; k++) d[k] = bf16_to_f32(s[k]);
        for (size_t k = (size_t)K; k < K8; k++) d[k] = 0.0f;
    }
}

static void cpu_gemm(void *vctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                     int out_f32) {
    cpu_ctx *c = vctx;
    SG_CHECK(M >= 1 && K >= 1 && N >= 1, "gemm shape M %d K %d N %d", M, K, N);
    size_t K8 = ((size_t)K + 7) / 8 * 8;
    // w rows per block: about 128 KB of fp32, a multiple of 4, at least 4.
    int NB = (int)((128u * 1024u) / (K8 * sizeof(float))) / 4 * 4;
    if (NB < 4) NB = 4;
    if (NB > N) NB = N;
    c->xf = grow(c->xf, &c->xf_cap, (size_t)M * K8, sizeof(float));
    c->wf = grow(c->wf, &c->wf_cap, (size_t)NB * K8, sizeof(float));
    to_f32_padded(x, M, K, K8, c->xf);
    float *yf = out_f32 ? y : NULL;
    bf16 *yb = out_f32 ? NULL : y;
    for (int n0 = 0; n0 < N; n0 += NB) {
        int nb = N - n0 < NB ? N - n0 : NB;
        to_f32_padded(w + (size_t)n0 * K, nb, K, K8, c->wf);
        for (int m = 0; m < M; m++) {
            const float *xr = c->xf + (size_t)m * K8;
            size_t o = (size_t)m * N + n0;
            int n = 0;
            for (; n + 4 <= nb; n += 4) {
                float r[4];
                dot4(xr, c->wf + (size_t)n * K8, K8, r);
                for (int j = 0; j < 4; j++) {
                    if (yf) yf[o + n + j] = r[j];
                    else yb[o + n + j] = f32_to_bf16(r[j]);
                }
            }
            for (; n < nb; n++) {
                float r = dot1(xr, c->wf + (size_t)n * K8, K8);
                if (yf) yf[o + n] = r;
                else yb[o + n] = f32_to_bf16(r);
            }
        }
    }
}

static void cpu_gemm_group(void *vctx, const bf16 *x, int M, int K, int n, const bf16 *const *w,
                           const int *N, bf16 *const *y) {
    SG_CHECK(n >= 1 && n <= BE_GEMM_GROUP_MAX, "gemm group of %d products", n);
    for (int p = 0; p < n; p++) cpu_gemm(vctx, x, M, K, w[p], N[p], y[p], 0);
}

static void cpu_gemm_swiglu(void *vctx, const bf16 *x, int M, int K, const bf16 *w_gate,
                            const bf16 *w_up, int N, bf16 *out) {
    cpu_ctx *c = vctx;
    size_t n = (size_t)M * N;
    c->gu = grow(c->gu, &c->gu_cap, 2 * n, sizeof(bf16));
    bf16 *g = c->gu, *u = c->gu + n;
    cpu_gemm(vctx, x, M, K, w_gate, N, g, 0);
    cpu_gemm(vctx, x, M, K, w_up, N, u, 0);
    for (size_t i = 0; i < n; i++) {
        float gv = bf16_to_f32(g[i]);
        out[i] = f32_to_bf16(bf16_round(gv / (1.0f + expf(-gv))) * bf16_to_f32(u[i]));
    }
}

// ---- norms, RoPE ----

// y [D] = bf16(bf16(x·r)·w); y may alias x. The sum of squares in backend.h's order: 32 lanes,
// lane l adding x[i]² for the i of the 8-element groups i / 8 ≡ l (mod 32) in ascending i (a
// warp's 16-byte loads on the GPU), then the butterfly s[l] += s[l ^ o] for o = 16, 8, 4, 2, 1
// (its xor shuffles), lane 0's value.
static void rmsnorm_row(const bf16 *x, int D, const bf16 *w, float eps, bf16 *y) {
    float s[32] = {0}, t[32];
    for (int i = 0; i < D; i++) {
        float v = bf16_to_f32(x[i]);
        s[i / 8 % 32] += v * v;
    }
    for (int o = 16; o >= 1; o /= 2) {
        for (int l = 0; l < 32; l++) t[l] = s[l] + s[l ^ o];
        memcpy(s, t, sizeof s);
    }
    float ss = s[0];
    float r = 1.0f / sqrtf(ss / (float)D + eps);
    for (int i = 0; i < D; i++)
        y[i] = f32_to_bf16(bf16_round(bf16_to_f32(x[i]) * r) * bf16_to_f32(w[i]));
}

static void cpu_rmsnorm(void *ctx, const bf16 *x, int M, int D, const bf16 *w, float eps,
                        bf16 *y) {
    (void)ctx;
    for (int m = 0; m < M; m++) rmsnorm_row(x + (size_t)m * D, D, w, eps, y + (size_t)m * D);
}

// Every head of x [rows, n_heads*head_dim] RMSNorm'd with w, then rotated at pos[i] (in place).
static void head_norm_rope(bf16 *x, int rows, int n_heads, int head_dim, const bf16 *w, float eps,
                           const bf16 *cos, const bf16 *sin, const int32_t *pos) {
    int half = head_dim / 2;
    for (int i = 0; i < rows; i++) {
        SG_CHECK(pos[i] >= 0, "qk_norm_rope_store: row %d at position %d", i, pos[i]);
        const bf16 *cs = cos + (size_t)pos[i] * half, *sn = sin + (size_t)pos[i] * half;
        for (int h = 0; h < n_heads; h++) {
            bf16 *xh = x + ((size_t)i * n_heads + h) * head_dim;
            rmsnorm_row(xh, head_dim, w, eps, xh);
            for (int d = 0; d < half; d++) {
                float cv = bf16_to_f32(cs[d]), sv = bf16_to_f32(sn[d]);
                float a = bf16_to_f32(xh[d]), b = bf16_to_f32(xh[d + half]);
                xh[d] = f32_to_bf16(bf16_round(a * cv) - bf16_round(b * sv));
                xh[d + half] = f32_to_bf16(bf16_round(b * cv) + bf16_round(a * sv));
            }
        }
    }
}

// ---- paged KV ----

// The KV row of position t of sequence s in a layer pool [n_pages, page_size, kv_dim].
static size_t kv_row(const be_paging *pg, int32_t s, int32_t t) {
    int32_t page = pg->page_tables[(size_t)s * pg->table_stride + t / pg->page_size];
    SG_CHECK(page >= 0, "sequence %d has no page for position %d", s, t);
    return ((size_t)page * pg->page_size + (size_t)(t % pg->page_size)) *
           ((size_t)pg->n_kv_heads * pg->head_dim);
}

static void cpu_qk_norm_rope_store(void *ctx, const be_paging *pg, bf16 *k_pages, bf16 *v_pages,
                                   const int32_t *row_table, const int32_t *pos, int rows,
                                   bf16 *q, int nq, int n_heads, const bf16 *q_norm, bf16 *k,
                                   const bf16 *v, const bf16 *k_norm, float eps, const bf16 *cos,
                                   const bf16 *sin) {
    (void)ctx;
    SG_CHECK(nq >= 0 && nq <= rows, "qk_norm_rope_store: %d query rows of %d", nq, rows);
    int hd = pg->head_dim;
    head_norm_rope(q, nq, n_heads, hd, q_norm, eps, cos, sin, pos + (rows - nq));
    head_norm_rope(k, rows, pg->n_kv_heads, hd, k_norm, eps, cos, sin, pos);
    size_t kvd = (size_t)pg->n_kv_heads * hd;
    for (int i = 0; i < rows; i++) {
        size_t at = kv_row(pg, row_table[i], pos[i]);
        memcpy(k_pages + at, k + (size_t)i * kvd, kvd * sizeof(bf16));
        memcpy(v_pages + at, v + (size_t)i * kvd, kvd * sizeof(bf16));
    }
}

static void cpu_attention(void *vctx, const be_paging *pg, const bf16 *k_pages,
                          const bf16 *v_pages, const int32_t *row_table, const int32_t *n_keys,
                          const bf16 *q, int rows, int n_heads, bf16 *out) {
    cpu_ctx *c = vctx;
    int hd = pg->head_dim, nKV = pg->n_kv_heads;
    SG_CHECK(nKV >= 1 && n_heads % nKV == 0, "attention heads %d kv heads %d", n_heads, nKV);
    int group = n_heads / nKV;
    float scale = 1.0f / sqrtf((float)hd);
    size_t qd = (size_t)n_heads * hd;
    for (int i = 0; i < rows; i++) {
        int nk = n_keys[i];
        SG_CHECK(nk >= 1, "attention row %d sees %d keys", i, nk);
        c->scores = grow(c->scores, &c->scores_cap, (size_t)nk + (size_t)hd, sizeof(float));
        float *p = c->scores;
        for (int h = 0; h < n_heads; h++) {
            const bf16 *qh = q + (size_t)i * qd + (size_t)h * hd;
            size_t off = (size_t)(h / group) * hd;
            float mx = -INFINITY;
            for (int j = 0; j < nk; j++) {
                const bf16 *kj = k_pages + kv_row(pg, row_table[i], j) + off;
                float dot = 0.0f;
                for (int d = 0; d < hd; d++) dot += bf16_to_f32(qh[d]) * bf16_to_f32(kj[d]);
                p[j] = dot * scale;
                if (p[j] > mx) mx = p[j];
            }
            float sum = 0.0f;
            for (int j = 0; j < nk; j++) {
                p[j] = expf(p[j] - mx);
                sum += p[j];
            }
            for (int j = 0; j < nk; j++) p[j] /= sum;
            bf16 *oh = out + (size_t)i * qd + (size_t)h * hd;
            // out[d] = Σ_j p[j]·v[j][d], j ascending: whole V rows accumulated into acc [hd].
            float *acc = p + nk;
            for (int d = 0; d < hd; d++) acc[d] = 0.0f;
            for (int j = 0; j < nk; j++) {
                const bf16 *vj = v_pages + kv_row(pg, row_table[i], j) + off;
                for (int d = 0; d < hd; d++) acc[d] += p[j] * bf16_to_f32(vj[d]);
            }
            for (int d = 0; d < hd; d++) oh[d] = f32_to_bf16(acc[d]);
        }
    }
}

// ---- elementwise ----

static void cpu_embed(void *ctx, const bf16 *table, int H, const int32_t *ids, int rows,
                      bf16 *out) {
    (void)ctx;
    for (int i = 0; i < rows; i++)
        memcpy(out + (size_t)i * H, table + (size_t)ids[i] * H, (size_t)H * sizeof(bf16));
}

static void cpu_add(void *ctx, bf16 *h, const bf16 *x, size_t n) {
    (void)ctx;
    for (size_t i = 0; i < n; i++) h[i] = f32_to_bf16(bf16_to_f32(h[i]) + bf16_to_f32(x[i]));
}

static void cpu_add_rmsnorm(void *ctx, bf16 *h, const bf16 *x, int M, int D, const bf16 *w,
                            float eps, bf16 *y) {
    cpu_add(ctx, h, x, (size_t)M * D);
    cpu_rmsnorm(ctx, h, M, D, w, eps, y);
}

// ---- selection ----

// Exact top-2 of x [n]: value descending, then id ascending. Returns 0 on a NaN or Inf.
static int top2_row(const float *x, int n, int32_t ids[2], float vals[2]) {
    int b0 = -1, b1 = -1;
    for (int i = 0; i < n; i++) {
        float v = x[i];
        if (!isfinite(v)) return 0;
        if (b0 < 0 || v > x[b0]) { // strict: an equal value keeps the lower id first
            b1 = b0;
            b0 = i;
        } else if (b1 < 0 || v > x[b1]) {
            b1 = i;
        }
    }
    ids[0] = b0;
    ids[1] = b1;
    vals[0] = x[b0];
    vals[1] = b1 >= 0 ? x[b1] : -INFINITY;
    return 1;
}

static void cpu_top2(void *ctx, const float *x, int rows, int n, size_t row_stride, int32_t *ids,
                     float *vals) {
    (void)ctx;
    SG_CHECK(n >= 2, "top-2 over %d values", n);
    for (int i = 0; i < rows; i++) {
        int32_t id[2];
        float v[2];
        if (!top2_row(x + (size_t)i * row_stride, n, id, v)) {
            id[0] = id[1] = -1;
            v[0] = v[1] = NAN;
        }
        ids[2 * i] = id[0];
        ids[2 * i + 1] = id[1];
        if (vals) {
            vals[2 * i] = v[0];
            vals[2 * i + 1] = v[1];
        }
    }
}

static void cpu_argmax(void *ctx, const float *x, int rows, int n, size_t row_stride,
                       int32_t *ids) {
    (void)ctx;
    for (int i = 0; i < rows; i++) {
        int32_t id[2];
        float v[2];
        ids[i] = top2_row(x + (size_t)i * row_stride, n, id, v) ? id[0] : -1;
    }
}

static void cpu_markov_step(void *vctx, const float *U, int V, const bf16 *w1, const bf16 *w2,
                            int r, int rows, const int32_t *chain_row, const int32_t *u_row,
                            const int32_t *start, const int32_t *limit, int s, int32_t *tokens,
                            int tok_stride, int32_t *top_ids, float *top_vals) {
    cpu_ctx *c = vctx;
    SG_CHECK(V >= 2, "markov step over %d values", V);
    if ((size_t)V > c->markov_cap) {
        free(c->bias);
        free(c->score_row);
        c->markov_cap = (size_t)V;
        c->bias = sg_calloc((size_t)V, sizeof(bf16));
        c->score_row = sg_calloc((size_t)V, sizeof(float));
    }
    for (int i = 0; i < rows; i++) {
        int k = start[i] + s;
        if (k >= limit[i]) continue;
        SG_CHECK(k + 1 < tok_stride, "markov step %d beyond the chain width %d", k, tok_stride);
        int32_t *tok = tokens + (size_t)chain_row[i] * tok_stride;
        const float *u = U + (size_t)(u_row[i] + k) * V;
        const float *score = u;
        size_t at = ((size_t)chain_row[i] * (tok_stride - 1) + k) * 2;
        if (tok[k] < 0) { // an earlier NaN / Inf: the chain stays marked
            top_ids[at] = top_ids[at + 1] = tok[k + 1] = -1;
            if (top_vals) top_vals[at] = top_vals[at + 1] = NAN;
            continue;
        }
        if (r > 0) {
            SG_CHECK(tok[k] < V, "markov prev token %d", tok[k]);
            cpu_gemm(vctx, w1 + (size_t)tok[k] * r, 1, r, w2, V, c->bias, 0);
            for (int v = 0; v < V; v++) c->score_row[v] = u[v] + bf16_to_f32(c->bias[v]);
            score = c->score_row;
        }
        int32_t id[2];
        float val[2];
        if (!top2_row(score, V, id, val)) {
            id[0] = id[1] = -1;
            val[0] = val[1] = NAN;
        }
        top_ids[at] = id[0];
        top_ids[at + 1] = id[1];
        if (top_vals) {
            top_vals[at] = val[0];
            top_vals[at + 1] = val[1];
        }
        tok[k + 1] = id[0];
    }
}

static void cpu_ladder_force(void *ctx, int32_t *tokens, int tok_stride, const int32_t *top_ids,
                             int rows, const int32_t *chain_row, const int32_t *a_row,
                             const int32_t *branch) {
    (void)ctx;
    for (int i = 0; i < rows; i++) {
        int P = branch[i];
        SG_CHECK(P >= 0 && P + 1 < tok_stride, "ladder branch %d, chain width %d", P, tok_stride);
        int32_t *dst = tokens + (size_t)chain_row[i] * tok_stride;
        const int32_t *src = tokens + (size_t)a_row[i] * tok_stride;
        memmove(dst, src, (size_t)(P + 1) * sizeof *dst);
        dst[P + 1] = top_ids[((size_t)a_row[i] * (tok_stride - 1) + P) * 2 + 1];
    }
}

// ---- data movement ----

static void cpu_page_copy(void *ctx, void *base, int n_groups, size_t group_stride,
                          size_t page_bytes, const int32_t *src, const int32_t *dst, int n) {
    (void)ctx;
    for (int g = 0; g < n_groups; g++) {
        char *b = (char *)base + (size_t)g * group_stride;
        for (int i = 0; i < n; i++)
            memcpy(b + (size_t)dst[i] * page_bytes, b + (size_t)src[i] * page_bytes, page_bytes);
    }
}

static void cpu_copy_rows(void *ctx, void *dst, size_t dst_stride, const int32_t *dst_idx,
                          const void *src, size_t src_stride, const int32_t *src_idx, int rows,
                          size_t row_bytes) {
    (void)ctx;
    for (int i = 0; i < rows; i++) {
        size_t si = src_idx ? (size_t)src_idx[i] : (size_t)i;
        size_t di = dst_idx ? (size_t)dst_idx[i] : (size_t)i;
        memmove((char *)dst + di * dst_stride, (const char *)src + si * src_stride, row_bytes);
    }
}

static void cpu_digest(void *ctx, const void *x, int rows, int n, int elem_bytes,
                       size_t row_stride, uint64_t *digests) {
    (void)ctx;
    for (int i = 0; i < rows; i++)
        digests[i] = be_digest((const char *)x + (size_t)i * row_stride, n, elem_bytes);
}

static void cpu_destroy(sg_backend *be) {
    cpu_ctx *c = be->ctx;
    free(c->xf);
    free(c->wf);
    free(c->scores);
    free(c->gu);
    free(c->bias);
    free(c->score_row);
    free(c);
    free(be);
}

sg_backend *cpu_backend_create(void) {
    sg_backend *be = sg_calloc(1, sizeof *be);
    be->name = "cpu";
    be->ctx = sg_calloc(1, sizeof(cpu_ctx));
    be->alloc = cpu_alloc;
    be->free = cpu_free;
    be->upload = cpu_memcpy;
    be->download = cpu_memcpy;
    be->copy = cpu_memcpy;
    be->embed = cpu_embed;
    be->gemm = cpu_gemm;
    be->gemm_group = cpu_gemm_group;
    be->rmsnorm = cpu_rmsnorm;
    be->add_rmsnorm = cpu_add_rmsnorm;
    be->qk_norm_rope_store = cpu_qk_norm_rope_store;
    be->attention = cpu_attention;
    be->gemm_swiglu = cpu_gemm_swiglu;
    be->add = cpu_add;
    be->argmax = cpu_argmax;
    be->top2 = cpu_top2;
    be->markov_step = cpu_markov_step;
    be->ladder_force = cpu_ladder_force;
    be->page_copy = cpu_page_copy;
    be->copy_rows = cpu_copy_rows;
    be->digest = cpu_digest;
    be->destroy = cpu_destroy;
    return be;
}
