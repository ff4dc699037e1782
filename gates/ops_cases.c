// gates/ops_cases.c: the cases of the bring-up tool (ops_internal.h): seeded inputs, the buffers
// of a case, and every op of the backend table as a make/run pair: make builds the case at a size
// (tiny, small, qwen3) from the rng, run issues the op for rows r0 .. r0+nr-1 only; the op table
// below writes each op's rule against the twin next to its reason. Most ops share the twin's
// reduction order and rounding points and must equal it bitwise; gemm (and markov_step, whose bias
// is a gemm) may reduce K in the backend's own order (design.md §3), so they are held to the order
// rule (TOL_REL below) with S computed here by their bound hooks.
//
// Contract: make and the rng depend on the seed only, so a seed replays a case; run touches only
// the buffers it is given; a bound hook reads the case's host inputs and the twin's outputs only.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ops_internal.h"

// The order rule's tolerance (ops_internal.h) for the ops whose CUDA reduction order over K is
// the backend's own (gemm, gemm_logits; markov_step through its bias): per element
//   |got − twin| <= TOL_REL·S + (bf16 output: 1 bf16 ULP of max(|got|, |twin|)) [+ markov's
//   intermediate roundings],  S = Σ_k |x_k·w_k| (in double, on the host).
// Two fp32 summation orders of the same K products differ by a small multiple of u·S (u = 2^-24;
// the rounding errors have random signs, so in practice a few u even at K = 12800, and the worst
// case depth·u·S is not approached); a bf16 output may round the other way on top (1 bf16 ULP).
// TOL_REL ≈ 170 u is far above any order effect, yet one term dropped or doubled at K = 2560
// moves an element by ~S/K ≈ 4e-4·S and fails.
#define TOL_REL 1e-5
#define TEXT_OF(x) #x
#define TEXT(x) TEXT_OF(x) // TEXT(TOL_REL): "1e-5", for the reasons below

// ---- seeded inputs ----

static uint64_t rnext(rng *r) {
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static double runif(rng *r) { return (double)(rnext(r) >> 11) * 0x1p-53; }  // [0, 1)
static double rsym(rng *r, double a) { return (2.0 * runif(r) - 1.0) * a; } // [-a, a)
static int rbelow(rng *r, int n) { return (int)(rnext(r) % (uint64_t)n); }

// Four 16-bit uniforms per draw (large weights are filled fast; bf16 keeps 8 bits anyway).
void ops_fill_bf16(bf16 *x, size_t n, double a, rng *r) {
    for (size_t i = 0; i < n; i += 4) {
        uint64_t u = rnext(r);
        for (size_t j = 0; j < 4 && i + j < n; j++, u >>= 16)
            x[i + j] = f32_to_bf16((float)(((double)(u & 0xffff) * 0x1p-15 - 1.0) * a));
    }
}
static void fill_f32(float *x, size_t n, double a, rng *r) {
    for (size_t i = 0; i < n; i++) x[i] = (float)rsym(r, a);
}
static void fill_bytes(unsigned char *x, size_t n, rng *r) {
    for (size_t i = 0; i < n; i++) x[i] = (unsigned char)rnext(r);
}
// A random permutation of 0 .. n-1.
static void permute(int32_t *p, int n, rng *r) {
    for (int i = 0; i < n; i++) p[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = rbelow(r, i + 1);
        int32_t t = p[i];
        p[i] = p[j];
        p[j] = t;
    }
}

// ---- cases ----

static void *add_buf(ops_case *c, const char *name, role_t role, elem_t t, size_t n, size_t row) {
    SG_CHECK(c->nbuf < OPS_MAX_BUF, "too many buffers in op case %s", c->def->name);
    ops_buf *b = &c->buf[c->nbuf++];
    *b = (ops_buf){.name = name, .role = role, .type = t, .n = n, .row = row};
    if (role != R_OUT) b->host = sg_calloc(n ? n : 1, esize(t));
    return b->host;
}

void ops_case_free(ops_case *c) {
    for (int i = 0; i < c->nbuf; i++) free(c->buf[i].host);
    c->nbuf = 0;
}

#define BF(d, i) ((bf16 *)(d)[i])
#define F32(d, i) ((float *)(d)[i])
#define I32(d, i) ((int32_t *)(d)[i])
#define U8(d, i) ((unsigned char *)(d)[i])
#define OPT_I32(d, i, off) ((d)[i] ? (int32_t *)(d)[i] + (off) : NULL)

// ---- copy (and the memory entries) ----

static void make_copy(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 9, 33};
    static const size_t rb[] = {7, 100, 65536};
    c->rows = rows[size];
    c->z[0] = rb[size];
    fill_bytes(add_buf(c, "src", R_IN, E_U8, c->rows * rb[size], rb[size]), c->rows * rb[size], r);
    add_buf(c, "dst", R_OUT, E_U8, c->rows * rb[size], rb[size]);
    snprintf(c->shape, sizeof c->shape, "rows=%d bytes=%zu", c->rows, rb[size]);
    c->bytes = 2.0 * c->rows * rb[size];
}
static void run_copy(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    size_t rb = c->z[0];
    be->copy(be->ctx, U8(d, 1) + r0 * rb, U8(d, 0) + r0 * rb, (size_t)nr * rb);
}

// ---- embed ----

static void make_embed(ops_case *c, int size, rng *r) {
    static const int V[] = {11, 500, 151936}, H[] = {8, 96, 2560}, rows[] = {3, 9, 33};
    int v = V[size], h = H[size];
    c->rows = rows[size];
    c->p[0] = h;
    ops_fill_bf16(add_buf(c, "table", R_IN, E_BF16, (size_t)v * h, 0), (size_t)v * h, 1.0, r);
    int32_t *ids = add_buf(c, "ids", R_IN, E_I32, c->rows, 1);
    for (int i = 0; i < c->rows; i++) ids[i] = rbelow(r, v);
    ids[c->rows - 1] = ids[0]; // a repeated id
    add_buf(c, "out", R_OUT, E_BF16, (size_t)c->rows * h, h);
    snprintf(c->shape, sizeof c->shape, "rows=%d V=%d H=%d", c->rows, v, h);
    c->bytes = 4.0 * c->rows * h;
}
static void run_embed(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    int H = c->p[0];
    be->embed(be->ctx, BF(d, 0), H, I32(d, 1) + r0, nr, BF(d, 2) + (size_t)r0 * H);
}

// ---- gemm (bf16 out) and gemm_logits (fp32 out) ----

// p: K, N, out_f32.
static void make_gemm_shape(ops_case *c, int M, int K, int N, int f32, int ref_rows, const char *w,
                            rng *r) {
    c->rows = M;
    c->ref_rows = ref_rows;
    c->sweep = M >= 2048;
    c->p[0] = K;
    c->p[1] = N;
    c->p[2] = f32;
    ops_fill_bf16(add_buf(c, "x", R_IN, E_BF16, (size_t)M * K, K), (size_t)M * K, 1.0, r);
    ops_fill_bf16(add_buf(c, "w", R_IN, E_BF16, (size_t)N * K, 0), (size_t)N * K, 0.05, r);
    ops_buf *y = &c->buf[c->nbuf];
    add_buf(c, "y", R_OUT, f32 ? E_F32 : E_BF16, (size_t)M * N, N);
    y->logits = f32;
    snprintf(c->shape, sizeof c->shape, "%s%sM=%d K=%d N=%d%s", w ? w : "", w ? " " : "", M, K, N,
             ref_rows ? " (ref: first rows)" : "");
    c->flops = 2.0 * M * (double)N * K;
    c->bytes = 2.0 * ((double)M * K + (double)N * K) + (double)M * N * (f32 ? 4 : 2);
}

// Qwen3-4B's bf16-out products (target and drafter; markov_w2 is a Markov step's bias, w2 [V, r]
// of the DSpark drafter at rank 256, dspark-spec.md §3), at M = 2048 with the sweep.
const ops_weight ops_qwen3_weights[] = {
    {"q_proj", 4096, 2560},    {"k_proj", 1024, 2560}, {"o_proj", 2560, 4096},
    {"gate_proj", 9728, 2560}, {"down_proj", 2560, 9728}, {"fc", 2560, 12800},
    {"markov_w2", 151936, 256}};

static void make_gemm(ops_case *c, int size, rng *r) {
    if (size == TINY)
        make_gemm_shape(c, 3, 20, 5, 0, 0, NULL, r); // K % 8 != 0: unaligned path
    else if (size == SMALL) // gemm_tiled's K split over 2 blocks: 4 segments, the last partial
        make_gemm_shape(c, 33, 1000, 77, 0, 0, NULL, r);
    else {
        int i = c->p[11]; // which weight (set by the case list)
        make_gemm_shape(c, 2048, ops_qwen3_weights[i].K, ops_qwen3_weights[i].N, 0, 3,
                        ops_qwen3_weights[i].name, r);
    }
}
static void make_gemm_logits(ops_case *c, int size, rng *r) {
    if (size == TINY)
        make_gemm_shape(c, 2, 16, 37, 1, 0, NULL, r);
    else if (size == SMALL)
        make_gemm_shape(c, 9, 96, 1000, 1, 0, NULL, r);
    else
        make_gemm_shape(c, 2048, 2560, 151936, 1, 2, "lm_head", r);
}
// The order rule's S of `rows` rows of y = x·wᵀ (x [rows, K], w [N, K]): S[m][n] =
// Σ_k |x[m][k]|·|w[n][k]| in double (each |x|·|w| is exact in fp32).
static void gemm_S(const bf16 *x, const bf16 *w, int K, int N, size_t rows, double *S) {
    float *ax = sg_calloc(rows * K, sizeof *ax), *aw = sg_calloc((size_t)K, sizeof *aw);
    for (size_t i = 0; i < rows * K; i++) ax[i] = fabsf(bf16_to_f32(x[i]));
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < K; k++) aw[k] = fabsf(bf16_to_f32(w[(size_t)n * K + k]));
        for (size_t m = 0; m < rows; m++) {
            const float *xr = ax + m * K;
            double s[4] = {0, 0, 0, 0};
            for (int k = 0; k < K; k++) s[k & 3] += (double)(xr[k] * aw[k]);
            S[m * N + n] = (s[0] + s[1]) + (s[2] + s[3]);
        }
    }
    free(ax);
    free(aw);
}

// y (buffer 2) by the order rule; extra stays 0: the bf16 output's rounding is the rule's own ULP
// term.
static int gemm_bound(const ops_case *c, int bi, unsigned char *const *twin, size_t count,
                      double *S, double *extra) {
    (void)twin;
    (void)extra;
    if (bi != 2) return 0;
    gemm_S(c->buf[0].host, c->buf[1].host, c->p[0], c->p[1], count / (size_t)c->p[1], S);
    return 1;
}

static void run_gemm(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    int K = c->p[0], N = c->p[1], f32 = c->p[2];
    size_t es = f32 ? 4 : 2;
    be->gemm(be->ctx, BF(d, 0) + (size_t)r0 * K, nr, K, BF(d, 1), N,
             (char *)d[2] + (size_t)r0 * N * es, f32);
}

// ---- gemm_group: products sharing x; their bits must be those of single gemm calls ----

// p: K, n, N[0 .. n-1] at p[2 ..]. Buffers: x, w[0 .. n-1], y[0 .. n-1]. tiny: K % 8 != 0 (the
// products one by one); small: 17 rows in one launch, each row alone in another kernel shape;
// qwen3: q/k/v at 80 rows (one launch of the tiled kernel) vs each row alone (one launch of the
// split kernel), bitwise.
static void make_gemm_group(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 17, 80}, K[] = {20, 200, 2560}, n[] = {3, 2, 3};
    static const int N[][BE_GEMM_GROUP_MAX] = {{5, 3, 9}, {77, 16, 0}, {4096, 1024, 1024}};
    static const char *const wname[] = {"w0", "w1", "w2"}, *const yname[] = {"y0", "y1", "y2"};
    int k = K[size];
    c->rows = rows[size];
    c->p[0] = k;
    c->p[1] = n[size];
    ops_fill_bf16(add_buf(c, "x", R_IN, E_BF16, (size_t)c->rows * k, k), (size_t)c->rows * k,
                  1.0, r);
    double wn = 0;
    for (int p = 0; p < n[size]; p++) {
        c->p[2 + p] = N[size][p];
        wn += N[size][p];
        ops_fill_bf16(add_buf(c, wname[p], R_IN, E_BF16, (size_t)N[size][p] * k, 0),
                      (size_t)N[size][p] * k, 0.05, r);
    }
    for (int p = 0; p < n[size]; p++)
        add_buf(c, yname[p], R_OUT, E_BF16, (size_t)c->rows * N[size][p], N[size][p]);
    int len = snprintf(c->shape, sizeof c->shape, "%sM=%d K=%d N=", size == QWEN3 ? "q/k/v " : "",
                       c->rows, k);
    for (int p = 0; p < n[size]; p++)
        len += snprintf(c->shape + len, sizeof c->shape - (size_t)len, "%s%d", p ? "+" : "",
                        N[size][p]);
    c->flops = 2.0 * c->rows * wn * k;
    c->bytes = 2.0 * ((double)c->rows * k + wn * k + (double)c->rows * wn);
}

static int gemm_group_bound(const ops_case *c, int bi, unsigned char *const *twin, size_t count,
                            double *S, double *extra) {
    (void)twin;
    (void)extra;
    int n = c->p[1], p = bi - 1 - n;
    if (p < 0) return 0;
    gemm_S(c->buf[0].host, c->buf[1 + p].host, c->p[0], c->p[2 + p],
           count / (size_t)c->p[2 + p], S);
    return 1;
}

static void run_gemm_group(const sg_backend *be, const ops_case *c, void *const *d, int r0,
                           int nr) {
    int K = c->p[0], n = c->p[1], N[BE_GEMM_GROUP_MAX];
    const bf16 *w[BE_GEMM_GROUP_MAX];
    bf16 *y[BE_GEMM_GROUP_MAX];
    for (int p = 0; p < n; p++) {
        N[p] = c->p[2 + p];
        w[p] = BF(d, 1 + p);
        y[p] = BF(d, 1 + n + p) + (size_t)r0 * N[p];
    }
    be->gemm_group(be->ctx, BF(d, 0) + (size_t)r0 * K, nr, K, n, w, N, y);
}

// ---- rmsnorm ----

// p: D, in place.
static void make_rmsnorm(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 9, 33}, D[] = {8, 3000, 2560};
    c->rows = rows[size];
    int n = D[size];
    c->p[0] = n;
    c->p[1] = size == SMALL; // y aliases x (the engine's final norm does this)
    c->eps = 1e-6f;
    ops_fill_bf16(add_buf(c, "x", c->p[1] ? R_INOUT : R_IN, E_BF16, (size_t)c->rows * n, n),
                  (size_t)c->rows * n, 3.0, r);
    ops_fill_bf16(add_buf(c, "w", R_IN, E_BF16, n, 0), n, 1.5, r);
    if (!c->p[1]) add_buf(c, "y", R_OUT, E_BF16, (size_t)c->rows * n, n);
    snprintf(c->shape, sizeof c->shape, "rows=%d D=%d%s", c->rows, n, c->p[1] ? " in place" : "");
    c->bytes = 4.0 * c->rows * n;
}
static void run_rmsnorm(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    int D = c->p[0];
    bf16 *x = BF(d, 0) + (size_t)r0 * D;
    be->rmsnorm(be->ctx, x, nr, D, BF(d, 1), c->eps, c->p[1] ? x : BF(d, 2) + (size_t)r0 * D);
}

// ---- add_rmsnorm ----

// p: D, y aliases x. Buffers: h (in place), x, w, y. tiny: D % 8 != 0 (element by element);
// small: y over x; qwen3: the 16-byte path.
static void make_add_rmsnorm(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 9, 33}, D[] = {12, 3000, 2560};
    c->rows = rows[size];
    int n = D[size];
    c->p[0] = n;
    c->p[1] = size == SMALL; // y aliases x (the engine writes the norm over the layer's output)
    c->eps = 1e-6f;
    size_t all = (size_t)c->rows * n;
    ops_fill_bf16(add_buf(c, "h", R_INOUT, E_BF16, all, n), all, 3.0, r);
    ops_fill_bf16(add_buf(c, "x", c->p[1] ? R_INOUT : R_IN, E_BF16, all, n), all, 1.0, r);
    ops_fill_bf16(add_buf(c, "w", R_IN, E_BF16, n, 0), n, 1.5, r);
    if (!c->p[1]) add_buf(c, "y", R_OUT, E_BF16, all, n);
    snprintf(c->shape, sizeof c->shape, "rows=%d D=%d%s", c->rows, n, c->p[1] ? " y over x" : "");
    c->bytes = 8.0 * c->rows * n;
}
static void run_add_rmsnorm(const sg_backend *be, const ops_case *c, void *const *d, int r0,
                            int nr) {
    int D = c->p[0];
    bf16 *x = BF(d, 1) + (size_t)r0 * D;
    be->add_rmsnorm(be->ctx, BF(d, 0) + (size_t)r0 * D, x, nr, D, BF(d, 2), c->eps,
                    c->p[1] ? x : BF(d, 3) + (size_t)r0 * D);
}

// ---- paged KV: qk_norm_rope_store and attention ----

// p: page_size, n_kv_heads, head_dim, n_pages, n_seq, table_stride, n_heads. The query heads per
// KV head are 3, 1 and 4 (with SG_CUDA_ATT_TEAMS=4, CUDA attention blocks of 3, 1 and 4 heads
// sharing their K/V tiles).
static const int kv_geom[N_SIZES][7] = {
    {4, 1, 6, 10, 2, 4, 3},         // tiny: head_dim 6 (not whole 16-byte pieces)
    {16, 4, 160, 64, 3, 20, 4},     // small: head_dim 160 (two output dims per thread), no GQA
    {16, 8, 128, 310, 3, 100, 32}}; // Qwen3-4B: 32 query heads over 8 KV heads

static int32_t *make_tables(ops_case *c, rng *r) {
    int n_pages = c->p[3], n_seq = c->p[4], stride = c->p[5];
    int32_t *perm = sg_calloc((size_t)n_pages, sizeof *perm);
    permute(perm, n_pages, r);
    int32_t *t = add_buf(c, "page_tables", R_IN, E_I32, (size_t)n_seq * stride, 0);
    for (int i = 0; i < n_seq * stride; i++) t[i] = perm[i]; // distinct pages, shuffled
    free(perm);
    return t;
}

static be_paging paging_of(const ops_case *c, void *const *d, int table_buf) {
    be_paging pg = {.page_size = c->p[0],
                    .n_kv_heads = c->p[1],
                    .head_dim = c->p[2],
                    .page_tables = I32(d, table_buf),
                    .table_stride = c->p[5]};
    return pg;
}

// p (after the paging geometry): max_pos (the RoPE tables' length), nq (rows with a query: the
// last nq, as a drafter's block rows after its context rows).
static void make_qk_norm_rope_store(ops_case *c, int size, rng *r) {
    memcpy(c->p, kv_geom[size], sizeof kv_geom[size]);
    static const int rows[] = {3, 9, 33}, nq[] = {2, 9, 26};
    c->rows = rows[size];
    int hd = c->p[2], nH = c->p[6], span = c->p[5] * c->p[0]; // positions per sequence
    c->p[7] = span;
    c->p[8] = nq[size];
    c->eps = 1e-6f;
    size_t kvd = (size_t)c->p[1] * hd, pool = (size_t)c->p[3] * c->p[0] * kvd;
    size_t qd = (size_t)nH * hd, half = (size_t)hd / 2, nqe = (size_t)c->p[8] * qd;
    ops_fill_bf16(add_buf(c, "k_pages", R_INOUT, E_BF16, pool, 0), pool, 1.0, r);
    ops_fill_bf16(add_buf(c, "v_pages", R_INOUT, E_BF16, pool, 0), pool, 1.0, r);
    make_tables(c, r);
    int32_t *rt = add_buf(c, "row_table", R_IN, E_I32, c->rows, 1);
    int32_t *pos = add_buf(c, "pos", R_IN, E_I32, c->rows, 1);
    for (int i = 0; i < c->rows; i++) {
        int dup;
        do { // distinct (sequence, position) pairs: no two rows write one slot
            rt[i] = rbelow(r, c->p[4]);
            pos[i] = rbelow(r, span);
            dup = 0;
            for (int j = 0; j < i; j++) dup |= rt[j] == rt[i] && pos[j] == pos[i];
        } while (dup);
    }
    // q holds fewer rows than the case: compared whole (row 0).
    ops_fill_bf16(add_buf(c, "q", R_INOUT, E_BF16, nqe, 0), nqe, 2.0, r);
    ops_fill_bf16(add_buf(c, "q_norm", R_IN, E_BF16, hd, 0), hd, 1.5, r);
    ops_fill_bf16(add_buf(c, "k", R_INOUT, E_BF16, c->rows * kvd, kvd), c->rows * kvd, 2.0, r);
    ops_fill_bf16(add_buf(c, "v", R_IN, E_BF16, c->rows * kvd, kvd), c->rows * kvd, 1.0, r);
    ops_fill_bf16(add_buf(c, "k_norm", R_IN, E_BF16, hd, 0), hd, 1.5, r);
    ops_fill_bf16(add_buf(c, "cos", R_IN, E_BF16, span * half, 0), span * half, 1.0, r);
    ops_fill_bf16(add_buf(c, "sin", R_IN, E_BF16, span * half, 0), span * half, 1.0, r);
    snprintf(c->shape, sizeof c->shape, "rows=%d (%d with q) page=%d heads=%d kv_heads=%d hd=%d",
             c->rows, c->p[8], c->p[0], nH, c->p[1], hd);
    c->bytes = 4.0 * nqe + 10.0 * c->rows * kvd;
}
static void run_qk_norm_rope_store(const sg_backend *be, const ops_case *c, void *const *d, int r0,
                                   int nr) {
    be_paging pg = paging_of(c, d, 2);
    int first_q = c->rows - c->p[8]; // the case's first row with a query
    int nq = r0 + nr - first_q;      // the query rows of rows r0 .. r0 + nr - 1: a suffix of them
    nq = nq < 0 ? 0 : nq > nr ? nr : nq;
    size_t kvd = (size_t)c->p[1] * c->p[2], qd = (size_t)c->p[6] * c->p[2];
    bf16 *q = BF(d, 5) + (size_t)(r0 + nr - nq - first_q) * qd;
    be->qk_norm_rope_store(be->ctx, &pg, BF(d, 0), BF(d, 1), I32(d, 3) + r0, I32(d, 4) + r0, nr,
                           q, nq, c->p[6], BF(d, 6), BF(d, 7) + r0 * kvd, BF(d, 8) + r0 * kvd,
                           BF(d, 9), c->eps, BF(d, 10), BF(d, 11));
}

static void make_attention(ops_case *c, int size, rng *r) {
    memcpy(c->p, kv_geom[size], sizeof kv_geom[size]);
    static const int rows[] = {3, 9, 24};
    c->rows = rows[size];
    int nH = c->p[6], hd = c->p[2];
    size_t kvd = (size_t)c->p[1] * hd, pool = (size_t)c->p[3] * c->p[0] * kvd;
    size_t qd = (size_t)nH * hd;
    ops_fill_bf16(add_buf(c, "k_pages", R_IN, E_BF16, pool, 0), pool, 1.5, r);
    ops_fill_bf16(add_buf(c, "v_pages", R_IN, E_BF16, pool, 0), pool, 1.0, r);
    make_tables(c, r);
    int32_t *rt = add_buf(c, "row_table", R_IN, E_I32, c->rows, 1);
    int32_t *nk = add_buf(c, "n_keys", R_IN, E_I32, c->rows, 1);
    int span = c->p[5] * c->p[0];
    double keys = 0;
    for (int i = 0; i < c->rows; i++) {
        // Runs of three rows: a span of one sequence (consecutive n_keys, as a verify span or a
        // prefill chunk), then a new sequence at a random length (a decode row).
        if (i % 3 != 0 && nk[i - 1] < span) {
            rt[i] = rt[i - 1];
            nk[i] = nk[i - 1] + 1;
        } else {
            rt[i] = rbelow(r, c->p[4]);
            nk[i] = i == 0 ? 1 : 1 + rbelow(r, span); // row 0 sees only itself
        }
        keys += nk[i];
    }
    ops_fill_bf16(add_buf(c, "q", R_IN, E_BF16, c->rows * qd, qd), c->rows * qd, 1.5, r);
    add_buf(c, "out", R_OUT, E_BF16, c->rows * qd, qd);
    snprintf(c->shape, sizeof c->shape, "rows=%d heads=%d/%d hd=%d keys<=%d page=%d", c->rows, nH,
             c->p[1], hd, span, c->p[0]);
    c->flops = 4.0 * keys * nH * hd;
    c->bytes = 4.0 * keys * kvd; // K and V read once per KV head group (lower bound)
}
static void run_attention(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    be_paging pg = paging_of(c, d, 2);
    size_t qd = (size_t)c->p[6] * c->p[2];
    be->attention(be->ctx, &pg, BF(d, 0), BF(d, 1), I32(d, 3) + r0, I32(d, 4) + r0,
                  BF(d, 5) + r0 * qd, nr, c->p[6], BF(d, 6) + r0 * qd);
}

// ---- swiglu, add ----

// p: H (elements per row), in place.
// ---- gemm_swiglu: gate and up products and their SwiGLU ----

// p: K, N. Buffers: x, w_gate, w_up, out. tiny: K % 8 != 0 (the unfused path); small: 16 rows
// (the fused path's 16-column tiles); qwen3: gate/up at 80 rows (the unfused path: gemm_tiled
// and the SwiGLU kernel) vs each row alone (one fused launch), bitwise; the twin runs the first 8
// rows.
static void make_gemm_swiglu(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 16, 80}, K[] = {20, 200, 2560}, N[] = {5, 77, 9728};
    int k = K[size], n = N[size];
    c->rows = rows[size];
    c->ref_rows = size == QWEN3 ? 8 : 0;
    c->p[0] = k;
    c->p[1] = n;
    ops_fill_bf16(add_buf(c, "x", R_IN, E_BF16, (size_t)c->rows * k, k), (size_t)c->rows * k,
                  1.0, r);
    ops_fill_bf16(add_buf(c, "w_gate", R_IN, E_BF16, (size_t)n * k, 0), (size_t)n * k, 0.1, r);
    ops_fill_bf16(add_buf(c, "w_up", R_IN, E_BF16, (size_t)n * k, 0), (size_t)n * k, 0.05, r);
    add_buf(c, "out", R_OUT, E_BF16, (size_t)c->rows * n, n);
    snprintf(c->shape, sizeof c->shape, "%sM=%d K=%d N=%d%s", size == QWEN3 ? "gate/up " : "",
             c->rows, k, n, c->ref_rows ? " (ref: first rows)" : "");
    c->flops = 4.0 * c->rows * n * k;
    c->bytes = 2.0 * (2.0 * n * k + (double)c->rows * (k + n));
}
static void run_gemm_swiglu(const sg_backend *be, const ops_case *c, void *const *d, int r0,
                            int nr) {
    int K = c->p[0], N = c->p[1];
    be->gemm_swiglu(be->ctx, BF(d, 0) + (size_t)r0 * K, nr, K, BF(d, 1), BF(d, 2), N,
                    BF(d, 3) + (size_t)r0 * N);
}

// out (buffer 3): the order rule carried through the SwiGLU. Each side's g and u are its own
// gemm's, within TOL_REL·S_g (S_u) of the exact products plus one bf16 rounding that may go the
// other way: dg = TOL_REL·S_g + ulp(|g| + TOL_REL·S_g), du likewise; |silu'| <= 1.1, so silu(g)
// rounded moves by ds = 1.1·dg + ulp(|silu(g)| + 1.1·dg), and the product by |u|·ds +
// (|silu(g)| + ds)·du. S = 1.1·|u|·S_g + |silu(g)|·S_u (the order terms), extra the rest; the
// output's own rounding is the rule's ULP term. g, u exact in double from the host inputs.
static int gemm_swiglu_bound(const ops_case *c, int bi, unsigned char *const *twin, size_t count,
                             double *S, double *extra) {
    (void)twin;
    if (bi != 3) return 0;
    int K = c->p[0], N = c->p[1];
    size_t rows = count / (size_t)N;
    const bf16 *x = c->buf[0].host, *wg = c->buf[1].host, *wu = c->buf[2].host;
    double *Sg = sg_calloc(count, sizeof *Sg), *Su = sg_calloc(count, sizeof *Su);
    gemm_S(x, wg, K, N, rows, Sg);
    gemm_S(x, wu, K, N, rows, Su);
    for (size_t m = 0; m < rows; m++)
        for (int n = 0; n < N; n++) {
            double g = 0, u = 0;
            for (int k = 0; k < K; k++) {
                double xv = bf16_to_f32(x[m * K + k]);
                g += xv * bf16_to_f32(wg[(size_t)n * K + k]);
                u += xv * bf16_to_f32(wu[(size_t)n * K + k]);
            }
            size_t i = m * N + n;
            double silu = g / (1.0 + exp(-g));
            double dg = TOL_REL * Sg[i] + ops_ulp(fabs(g) + TOL_REL * Sg[i], 8);
            double du = TOL_REL * Su[i] + ops_ulp(fabs(u) + TOL_REL * Su[i], 8);
            double ds = 1.1 * dg + ops_ulp(fabs(silu) + 1.1 * dg, 8);
            S[i] = 1.1 * fabs(u) * Sg[i] + fabs(silu) * Su[i];
            extra[i] = fabs(u) * (ds - 1.1 * TOL_REL * Sg[i]) +
                       (fabs(silu) + ds) * du - fabs(silu) * TOL_REL * Su[i];
        }
    free(Sg);
    free(Su);
    return 1;
}

static void make_add(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 9, 33}, H[] = {8, 96, 2560};
    c->rows = rows[size];
    c->p[0] = H[size];
    size_t n = (size_t)c->rows * H[size];
    ops_fill_bf16(add_buf(c, "h", R_INOUT, E_BF16, n, H[size]), n, 4.0, r);
    ops_fill_bf16(add_buf(c, "x", R_IN, E_BF16, n, H[size]), n, 1.0, r);
    snprintf(c->shape, sizeof c->shape, "rows=%d n=%d", c->rows, H[size]);
    c->bytes = 6.0 * n;
}
static void run_add(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    size_t h = (size_t)c->p[0];
    be->add(be->ctx, BF(d, 0) + r0 * h, BF(d, 1) + r0 * h, nr * h);
}

// ---- argmax, top2 ----

// p: n, stride. Rows with exact ties, ±0, a NaN and an Inf.
static void make_rows_f32(ops_case *c, int size, rng *r) {
    static const int rows[] = {6, 9, 9}, n[] = {7, 1000, 151936}, stride[] = {9, 1003, 151936};
    c->rows = rows[size];
    c->p[0] = n[size];
    c->p[1] = stride[size];
    size_t st = (size_t)stride[size];
    float *x = add_buf(c, "x", R_IN, E_F32, c->rows * st, st);
    fill_f32(x, c->rows * st, 10.0, r);
    int N = n[size];
    // Row 1: the maximum twice (the lower id wins), row 2: a NaN, row 3: +Inf, row 4: only
    // zeros of both signs (ties), row 5: the top-2 values equal (ids ascending).
    float *r1 = x + st;
    int a = rbelow(r, N / 2), b = N / 2 + rbelow(r, N - N / 2);
    r1[a] = r1[b] = 11.0f;
    x[2 * st + rbelow(r, N)] = NAN;
    x[3 * st + rbelow(r, N)] = INFINITY;
    for (int i = 0; i < N; i++) x[4 * st + i] = (i & 1) ? -0.0f : 0.0f;
    float *r5 = x + 5 * st;
    r5[N - 1] = 12.0f;
    r5[N - 2] = 12.0f;
    c->bytes = 4.0 * c->rows * N;
}
static void make_argmax(ops_case *c, int size, rng *r) {
    make_rows_f32(c, size, r);
    add_buf(c, "ids", R_OUT, E_I32, c->rows, 1);
    snprintf(c->shape, sizeof c->shape, "rows=%d n=%d stride=%d", c->rows, c->p[0], c->p[1]);
}
static void run_argmax(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    size_t st = (size_t)c->p[1];
    be->argmax(be->ctx, F32(d, 0) + r0 * st, nr, c->p[0], st, I32(d, 1) + r0);
}
static void make_top2(ops_case *c, int size, rng *r) {
    make_rows_f32(c, size, r);
    add_buf(c, "ids", R_OUT, E_I32, 2 * (size_t)c->rows, 2);
    add_buf(c, "vals", R_OUT, E_F32, 2 * (size_t)c->rows, 2);
    c->buf[c->nbuf - 1].absent = size == SMALL; // vals may be NULL
    snprintf(c->shape, sizeof c->shape, "rows=%d n=%d stride=%d%s", c->rows, c->p[0], c->p[1],
             size == SMALL ? " vals=NULL" : "");
}
static void run_top2(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    size_t st = (size_t)c->p[1];
    be->top2(be->ctx, F32(d, 0) + r0 * st, nr, c->p[0], st, I32(d, 1) + 2 * r0,
             d[2] ? F32(d, 2) + 2 * r0 : NULL);
}

// ---- Markov loop: markov_step, ladder_force ----

// bias[v] of markov_step in double: Σ_j w1[prev][j]·w2[v][j], and S = Σ_j |w1[prev][j]·w2[v][j]|.
static double markov_bias(const bf16 *w1, const bf16 *w2, int rk, int prev, int v, double *S) {
    double b = 0, s = 0;
    for (int j = 0; j < rk; j++) {
        double t = (double)bf16_to_f32(w1[(size_t)prev * rk + j]) *
                   (double)bf16_to_f32(w2[(size_t)v * rk + j]);
        b += t;
        s += fabs(t);
    }
    if (S) *S = s;
    return b;
}

// The order rule's allowance for markov_step's intermediate roundings at a score U + bias (b the
// exact bias): one bf16 ULP of the bias (two fp32 sums within TOL_REL·S of b may round to bf16
// either way), then one fp32 ULP of the score (U plus either bf16 bias rounds on its own).
static double markov_extra(double u, double b, double S) {
    double e = ops_ulp(fabs(b) + TOL_REL * S, 8);
    return e + ops_ulp(fabs(u + b) + TOL_REL * S + e, 24);
}

// Plants a clear winner and runner-up into the score row u (its row of U) of a chain at token
// prev: with T = max U + Σ_j |w1[prev][j]|·max|w2| (no other score exceeds it), score[a] = T + 2m
// and score[b] = T + m, m = 1 + 16 × the order rule's allowance at the row's largest |bias| and S
// (both at most Σ_j |w1[prev][j]|·max|w2|), so a bias in another gemm order cannot flip a top-2 id
// or order: ids compare exactly, values within the rule. edges: the winner at id 0 and the runner-up
// at V - 1, in the first and the last column tile of the bias's gemm, whatever order the backend
// takes the tiles in (a tile mapping that skips either one shows as a wrong id or value); else both
// at random ids.
static void plant_top2(float *u, int V, const bf16 *w1, const bf16 *w2, int rk, double w2max,
                       int prev, int edges, rng *r) {
    double umax = -INFINITY, bmax = 0;
    for (int v = 0; v < V; v++) umax = fmax(umax, u[v]);
    for (int j = 0; j < rk; j++) bmax += fabsf(bf16_to_f32(w1[(size_t)prev * rk + j])) * w2max;
    double T = umax + bmax, m = 1.0 + 16.0 * (TOL_REL * bmax + markov_extra(T, bmax, bmax));
    int a = rbelow(r, V), b = rbelow(r, V - 1);
    b += b >= a;
    if (edges) {
        a = 0;
        b = V - 1;
    }
    u[a] = (float)(T + 2 * m - (rk ? markov_bias(w1, w2, rk, prev, a, NULL) : 0));
    u[b] = (float)(T + m - (rk ? markov_bias(w1, w2, rk, prev, b, NULL) : 0));
}

// p: V, r, tok_stride, s, n_chains. Each row of the call reads its own U row, with a planted
// top-2 (plant_top2; row 0's at the edges of the vocabulary); a chain marked by an earlier NaN, a
// NaN score and a skipped row.
static void make_markov(ops_case *c, int size, rng *r) {
    static const int V[] = {16, 1000, 151936}, R[] = {0, 20, 256}, rows[] = {3, 6, 9};
    int v = V[size], rk = R[size], ts = 8, s = 2, nch = rows[size] + 1, nu = ts - 1 + rows[size];
    c->rows = rows[size];
    c->p[0] = v;
    c->p[1] = rk;
    c->p[2] = ts;
    c->p[3] = s;
    c->p[4] = nch;
    float *U = add_buf(c, "U", R_IN, E_F32, (size_t)nu * v, 0);
    fill_f32(U, (size_t)nu * v, 5.0, r);
    bf16 *w1 = add_buf(c, "w1", R_IN, E_BF16, (size_t)v * (rk ? rk : 1), 0);
    bf16 *w2 = add_buf(c, "w2", R_IN, E_BF16, (size_t)v * (rk ? rk : 1), 0);
    c->buf[1].absent = c->buf[2].absent = rk == 0; // no Markov head: w1, w2 NULL
    double w2max = 0;
    if (rk) {
        ops_fill_bf16(w1, (size_t)v * rk, 1.0, r);
        ops_fill_bf16(w2, (size_t)v * rk, 0.3, r);
        for (size_t i = 0; i < (size_t)v * rk; i++) w2max = fmax(w2max, fabsf(bf16_to_f32(w2[i])));
    }
    int32_t *chain = add_buf(c, "chain_row", R_IN, E_I32, c->rows, 1);
    int32_t *urow = add_buf(c, "u_row", R_IN, E_I32, c->rows, 1);
    int32_t *start = add_buf(c, "start", R_IN, E_I32, c->rows, 1);
    int32_t *limit = add_buf(c, "limit", R_IN, E_I32, c->rows, 1);
    int32_t *tok = add_buf(c, "tokens", R_INOUT, E_I32, (size_t)nch * ts, 0);
    int32_t *tid = add_buf(c, "top_ids", R_INOUT, E_I32, (size_t)nch * (ts - 1) * 2, 0);
    float *tval = add_buf(c, "top_vals", R_INOUT, E_F32, (size_t)nch * (ts - 1) * 2, 0);
    int32_t *perm = sg_calloc((size_t)nch, sizeof *perm);
    int32_t *uperm = sg_calloc((size_t)nch, sizeof *uperm);
    permute(perm, nch, r);
    permute(uperm, c->rows, r);
    for (int i = 0; i < c->rows; i++) {
        chain[i] = perm[i];
        start[i] = rbelow(r, 4);
        limit[i] = ts - 1;
        urow[i] = ts - 1 + uperm[i] - (start[i] + s); // U row ts-1+uperm[i] at k = start + s
    }
    free(perm);
    free(uperm);
    limit[c->rows - 1] = start[c->rows - 1] + s; // skipped: k == limit
    for (int i = 0; i < nch * ts; i++) tok[i] = rbelow(r, v);
    for (int i = 0; i < nch * (ts - 1) * 2; i++) {
        tid[i] = rbelow(r, v);
        tval[i] = (float)rsym(r, 1.0);
    }
    tok[(size_t)chain[1] * ts + start[1] + s] = -1; // a chain marked by an earlier NaN
    for (int i = 0; i < c->rows; i++) {
        int k = start[i] + s, prev = tok[(size_t)chain[i] * ts + k];
        if (prev >= 0)
            plant_top2(U + (size_t)(urow[i] + k) * v, v, w1, w2, rk, w2max, prev, i == 0, r);
    }
    if (c->rows > 3) U[(size_t)(urow[2] + start[2] + s) * v + rbelow(r, v)] = NAN; // a NaN score
    snprintf(c->shape, sizeof c->shape, "rows=%d V=%d rank=%d", c->rows, v, rk);
    c->flops = 2.0 * c->rows * (double)v * rk;
    c->bytes = 2.0 * (double)v * rk + 4.0 * c->rows * v;
}

// The order rule for top_vals at the ids the twin chose (row by row as markov_step walks them):
// S = Σ_j |w1[prev][j]·w2[v][j]|, extra = markov_extra. Without a Markov head (score = U) and
// where no score was taken (skipped rows, marked chains, NaN rows: ids -1) S and extra stay 0:
// exact. tokens and top_ids: the ULP rule, i.e. exact.
static int markov_bound(const ops_case *c, int bi, unsigned char *const *twin, size_t count,
                        double *S, double *extra) {
    if (bi != 9) return 0;
    int V = c->p[0], rk = c->p[1], ts = c->p[2], s = c->p[3];
    const float *U = c->buf[0].host;
    const bf16 *w1 = c->buf[1].host, *w2 = c->buf[2].host;
    const int32_t *chain = c->buf[3].host, *urow = c->buf[4].host, *start = c->buf[5].host,
                  *limit = c->buf[6].host, *tok = c->buf[7].host, *ids = (int32_t *)twin[8];
    for (int i = 0; i < c->rows && rk > 0; i++) {
        int k = start[i] + s, prev = tok[(size_t)chain[i] * ts + k];
        if (k >= limit[i] || prev < 0) continue;
        size_t at = ((size_t)chain[i] * (ts - 1) + k) * 2;
        for (size_t j = at; j < at + 2 && j < count; j++) {
            int v = ids[j];
            if (v < 0 || v >= V) continue;
            double b = markov_bias(w1, w2, rk, prev, v, &S[j]);
            extra[j] = markov_extra(U[(size_t)(urow[i] + k) * V + v], b, S[j]);
        }
    }
    return 1;
}

static void run_markov(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    be->markov_step(be->ctx, F32(d, 0), c->p[0], d[1], d[2], c->p[1], nr, I32(d, 3) + r0,
                    I32(d, 4) + r0, I32(d, 5) + r0, I32(d, 6) + r0, c->p[3], I32(d, 7), c->p[2],
                    I32(d, 8), F32(d, 9));
}

// p: tok_stride, n_chains.
static void make_ladder(ops_case *c, int size, rng *r) {
    static const int nA[] = {1, 3, 16}, rows[] = {2, 9, 48}, ts[] = {4, 8, 8};
    int t = ts[size], nch = nA[size] + rows[size];
    c->rows = rows[size];
    c->p[0] = t;
    c->p[1] = nch;
    int32_t *tok = add_buf(c, "tokens", R_INOUT, E_I32, (size_t)nch * t, 0);
    int32_t *tid = add_buf(c, "top_ids", R_IN, E_I32, (size_t)nch * (t - 1) * 2, 0);
    for (int i = 0; i < nch * t; i++) tok[i] = rbelow(r, 1000);
    for (int i = 0; i < nch * (t - 1) * 2; i++) tid[i] = rbelow(r, 1000);
    int32_t *ch = add_buf(c, "chain_row", R_IN, E_I32, c->rows, 1);
    int32_t *a = add_buf(c, "a_row", R_IN, E_I32, c->rows, 1);
    int32_t *br = add_buf(c, "branch", R_IN, E_I32, c->rows, 1);
    for (int i = 0; i < c->rows; i++) {
        ch[i] = nA[size] + i;
        a[i] = rbelow(r, nA[size]);
        br[i] = rbelow(r, t - 1);
    }
    snprintf(c->shape, sizeof c->shape, "ladders=%d chains_A=%d width=%d", c->rows, nA[size], t);
}
static void run_ladder(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    be->ladder_force(be->ctx, I32(d, 0), c->p[0], I32(d, 1), nr, I32(d, 2) + r0, I32(d, 3) + r0,
                     I32(d, 4) + r0);
}

// ---- page_copy, copy_rows ----

// p: n_groups; z: group_stride, page_bytes.
static void make_page_copy(ops_case *c, int size, rng *r) {
    static const int groups[] = {2, 3, 36}, pages[] = {6, 12, 64}, n[] = {2, 4, 8};
    static const size_t pb[] = {6, 1024, 16 * 1024 * 2}, extra[] = {1, 4, 0};
    c->rows = n[size];
    c->p[0] = groups[size];
    c->z[1] = pb[size];
    c->z[0] = pages[size] * pb[size] + extra[size]; // the 1-, 4- and 16-byte paths
    size_t total = c->z[0] * groups[size];
    fill_bytes(add_buf(c, "pool", R_INOUT, E_U8, total, 0), total, r);
    int32_t *src = add_buf(c, "src", R_IN, E_I32, c->rows, 1);
    int32_t *dst = add_buf(c, "dst", R_IN, E_I32, c->rows, 1);
    int32_t *perm = sg_calloc((size_t)pages[size], sizeof *perm);
    permute(perm, pages[size], r);
    for (int i = 0; i < c->rows; i++) { // disjoint sources and destinations
        src[i] = perm[i];
        dst[i] = perm[c->rows + i];
    }
    free(perm);
    snprintf(c->shape, sizeof c->shape, "pages=%d groups=%d page_bytes=%zu", c->rows, groups[size],
             pb[size]);
    c->bytes = 2.0 * c->rows * groups[size] * (double)pb[size];
}
static void run_page_copy(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    be->page_copy(be->ctx, d[0], c->p[0], c->z[0], c->z[1], I32(d, 1) + r0, I32(d, 2) + r0, nr);
}

// z: dst_stride, src_stride, row_bytes; p: dst rows, src rows.
static void make_copy_rows(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 9, 24}, nd[] = {3, 9, 64}, ns[] = {3, 40, 48};
    static const size_t dstr[] = {10, 200, 25600}, sstr[] = {8, 512, 25600}, rb[] = {6, 192, 25600};
    c->rows = rows[size];
    c->z[0] = dstr[size];
    c->z[1] = sstr[size];
    c->z[2] = rb[size];
    fill_bytes(add_buf(c, "dst", R_INOUT, E_U8, nd[size] * dstr[size], 0), nd[size] * dstr[size],
               r);
    fill_bytes(add_buf(c, "src", R_IN, E_U8, ns[size] * sstr[size], 0), ns[size] * sstr[size], r);
    int32_t *di = add_buf(c, "dst_idx", R_IN, E_I32, c->rows, 1);
    int32_t *si = add_buf(c, "src_idx", R_IN, E_I32, c->rows, 1);
    c->buf[2].absent = size != QWEN3; // tiny: no indexes; small: a gather (src_idx only)
    c->buf[3].absent = size == TINY;
    int32_t *perm = sg_calloc((size_t)nd[size], sizeof *perm);
    permute(perm, nd[size], r);
    for (int i = 0; i < c->rows; i++) {
        di[i] = perm[i]; // distinct destinations
        si[i] = rbelow(r, ns[size]);
    }
    free(perm);
    snprintf(c->shape, sizeof c->shape, "rows=%d bytes=%zu%s%s", c->rows, rb[size],
             c->buf[2].absent ? "" : " dst_idx", c->buf[3].absent ? "" : " src_idx");
    c->bytes = 2.0 * c->rows * (double)rb[size];
}
static void run_copy_rows(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    size_t ds = c->z[0], ss = c->z[1];
    // Without an index list, row i of the call is row i of the buffer: offset the buffer instead.
    unsigned char *dst = U8(d, 0) + (d[2] ? 0 : r0 * ds);
    const unsigned char *src = U8(d, 1) + (d[3] ? 0 : r0 * ss);
    be->copy_rows(be->ctx, dst, ds, OPT_I32(d, 2, r0), src, ss, OPT_I32(d, 3, r0), nr, c->z[2]);
}

// ---- digest ----

// p: n, stride (elements), elem_bytes.
static void make_digest_e(ops_case *c, int size, int es, rng *r) {
    static const int rows[] = {3, 9, 33}, n4[] = {7, 1000, 151936}, n2[] = {7, 1000, 12800};
    c->rows = rows[size];
    int n = es == 4 ? n4[size] : n2[size], st = n + (size == TINY ? 1 : 0);
    c->p[0] = n;
    c->p[1] = st;
    c->p[2] = es;
    size_t tot = (size_t)c->rows * st;
    if (es == 4) {
        float *x = add_buf(c, "x", R_IN, E_F32, tot, st);
        fill_f32(x, tot, 20.0, r);
        x[0] = -0.0f;
        x[1] = NAN;
    } else {
        bf16 *x = add_buf(c, "x", R_IN, E_BF16, tot, st);
        ops_fill_bf16(x, tot, 20.0, r);
        x[0] = 0x8000; // -0
    }
    add_buf(c, "digests", R_OUT, E_U64, c->rows, 1);
    snprintf(c->shape, sizeof c->shape, "rows=%d n=%d %s", c->rows, n, es == 4 ? "fp32" : "bf16");
    c->bytes = (double)es * c->rows * n;
}
static void make_digest(ops_case *c, int size, rng *r) { make_digest_e(c, size, 4, r); }
static void make_digest_bf16(ops_case *c, int size, rng *r) { make_digest_e(c, size, 2, r); }
static void run_digest(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    size_t es = (size_t)c->p[2], st = (size_t)c->p[1];
    be->digest(be->ctx, (const char *)d[0] + r0 * st * es, nr, c->p[0], (int)es, st * es,
               (uint64_t *)d[1] + r0);
}

// ---- the op list: tolerances against the twin, with their reasons ----

// The rule fields of a row: EXACT, the ULP rule at 0 ULP on no differing element (bitwise);
// ORDER(bound), the order rule at TOL_REL with the op's bound hook (integer outputs stay exact).
#define EXACT 0, 0, 0, NULL
#define ORDER(bound) 0, 0, TOL_REL, bound
#define EXACT_SAME_ORDER "same reduction order and rounding points as the CPU twin: bitwise equal"
#define ORDER_RULE                                                                                \
    "its own K order (design.md §3: invariant within a backend, a tolerance across): |d| <= "      \
    TEXT(TOL_REL) "*S"
#define ORDER_REASON                                                                              \
    "; two fp32 orders of the same products differ by a few 2^-24*S (" TEXT(TOL_REL) "*S is "      \
    "~170*2^-24*S), one term dropped or doubled at K=2560 is ~4e-4*S"
const op_def ops_op_defs[] = {
    {"copy", "alloc free upload download copy", EXACT, "bytes are moved, not computed", make_copy,
     run_copy},
    {"embed", "embed", EXACT, "a gather: bitwise equal", make_embed, run_embed},
    {"gemm", "gemm", ORDER(gemm_bound),
     ORDER_RULE " + 1 bf16 ulp of max(|got|,|twin|) (the output may round the other way), "
                "S = sum_k |x*w| in double" ORDER_REASON,
     make_gemm, run_gemm},
    {"gemm_logits", "gemm", ORDER(gemm_bound),
     ORDER_RULE " (fp32 logits), S = sum_k |x*w| in double" ORDER_REASON
                "; an argmax differing within both values' allowances is a near tie (reported)",
     make_gemm_logits, run_gemm},
    {"gemm_group", "gemm_group", ORDER(gemm_group_bound),
     ORDER_RULE " + 1 bf16 ulp per product, as gemm; within the backend each row alone (another "
                "kernel shape, or the products one by one) must match bitwise",
     make_gemm_group, run_gemm_group},
    {"rmsnorm", "rmsnorm", EXACT, EXACT_SAME_ORDER " (sequential Σx², IEEE 1/sqrt)", make_rmsnorm,
     run_rmsnorm},
    {"add_rmsnorm", "add_rmsnorm", EXACT,
     EXACT_SAME_ORDER " (add's rounding, then rmsnorm's: the bits of the two ops)",
     make_add_rmsnorm, run_add_rmsnorm},
    {"qk_norm_rope_store", "qk_norm_rope_store", EXACT,
     EXACT_SAME_ORDER "; the keys and values are moved into pages: bitwise equal",
     make_qk_norm_rope_store, run_qk_norm_rope_store},
    {"attention", "attention", EXACT,
     EXACT_SAME_ORDER " (keys in ascending position; expf is glibc's algorithm on the device)",
     make_attention, run_attention},
    {"gemm_swiglu", "gemm_swiglu", ORDER(gemm_swiglu_bound),
     ORDER_RULE " carried through the SwiGLU (|silu'| <= 1.1, each rounding may go the other "
                "way; expf is glibc's algorithm on the device); within the backend each row alone "
                "(one fused launch) must match the 80-row batch (the products, then the SwiGLU) "
                "bitwise",
     make_gemm_swiglu, run_gemm_swiglu},
    {"add", "add", EXACT, "one rounded addition: bitwise equal", make_add, run_add},
    {"argmax", "argmax", EXACT, "exact selection, ties to the lowest id, NaN/Inf rows -1",
     make_argmax, run_argmax},
    {"top2", "top2", EXACT, "exact selection (value desc, id asc); NaN/Inf rows -1, NaN values",
     make_top2, run_top2},
    {"markov_step", "markov_step", ORDER(markov_bound),
     "the bias is a gemm in the backend's own K order: top_vals within |d| <= " TEXT(TOL_REL)
     "*S + 1 bf16 "
     "ulp of the bias + 1 fp32 ulp of U+bias, S = sum_j |w1[prev][j]*w2[v][j]| at the twin's ids"
     "; ids and tokens exact: every U row holds a planted top-2 whose margins are >= 16x that "
     "allowance (no near tie can flip an id)",
     make_markov, run_markov},
    {"ladder_force", "ladder_force", EXACT, "tokens are moved: bitwise equal", make_ladder,
     run_ladder},
    {"page_copy", "page_copy", EXACT, "bytes are moved: bitwise equal", make_page_copy,
     run_page_copy},
    {"copy_rows", "copy_rows", EXACT, "bytes are moved: bitwise equal", make_copy_rows,
     run_copy_rows},
    {"digest", "digest", EXACT, "integer hash sum: bitwise equal to be_digest", make_digest,
     run_digest},
    {"digest_bf16", "digest", EXACT, "integer hash sum: bitwise equal to be_digest",
     make_digest_bf16, run_digest},
};
const int ops_n_ops = (int)(sizeof ops_op_defs / sizeof ops_op_defs[0]);

// Number of cases of an op at a size (gemm at qwen3: one per weight).
int ops_n_cases(const op_def *d, int size) {
    return size == QWEN3 && strcmp(d->name, "gemm") == 0 ? N_QWEN3_WEIGHTS : 1;
}
