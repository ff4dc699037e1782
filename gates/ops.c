// gates/ops.c: the kernel bring-up tool (ops.h): every op of the backend table against its twin,
// case by case, with the tolerances and their reasons written next to each op below.
//
// A case is an op at one size with its buffers (inputs, outputs, in-place buffers) generated from
// the seed; each buffer lives on both backends between guard zones (GUARD bytes of GUARD_BYTE),
// outputs start as POISON_BYTE, so an element an op never writes shows as a difference and a write
// outside the buffer as a broken guard. run(be, case, device pointers, r0, nr) issues the op for
// rows r0 .. r0+nr-1 of the case only (pointer offsets), which gives the batch-invariance checks:
// each row alone, the batch, and prefixes of it must agree bitwise on the backend under test.
#include "ops.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

#define GUARD 4096
#define GUARD_BYTE 0xA5
#define POISON_BYTE 0xD3
#define OPS_MAX_BUF 10

enum { TINY, SMALL, QWEN3, N_SIZES };
static const char *const size_names[N_SIZES] = {"tiny", "small", "qwen3"};

// The prefix row counts of the gemm sweep (design.md §3: one K order for every M).
static const int sweep_M[] = {1, 2, 7, 8, 9, 32, 33, 256, 2048};
#define N_SWEEP ((int)(sizeof sweep_M / sizeof sweep_M[0]))

// ---- seeded inputs ----

typedef struct {
    uint64_t s;
} rng;

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
static void fill_bf16(bf16 *x, size_t n, double a, rng *r) {
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

typedef enum { E_BF16, E_F32, E_I32, E_U64, E_U8 } elem_t;
typedef enum { R_IN, R_OUT, R_INOUT } role_t;

static size_t esize(elem_t t) {
    switch (t) {
    case E_BF16:
        return 2;
    case E_F32:
        return 4;
    case E_I32:
        return 4;
    case E_U64:
        return 8;
    case E_U8:
        return 1;
    }
    return 1;
}

typedef struct {
    const char *name;
    role_t role;
    elem_t type;
    size_t n;   // elements
    void *host; // initial contents (inputs and in-place buffers); NULL for outputs
    size_t row; // elements per row of the case (0: not row-shaped, compared whole)
    int logits; // fp32 logits rows: argmax / top-2 agreement is reported
    int absent; // passed as NULL (an optional argument left out)
} ops_buf;

typedef struct ops_case ops_case;

typedef struct {
    const char *name;
    const char *covers; // backend table entries this op's cases exercise
    double tol_ulp;     // most ULP allowed against the twin (bf16 or fp32 ULP of the output)
    double tol_share;   // most share of elements allowed to differ at all
    const char *why;    // the tolerance's reason
    void (*make)(ops_case *c, int size, rng *r);
    void (*run)(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr);
} op_def;

struct ops_case {
    const op_def *def;
    int size;
    char shape[160];
    int rows;     // rows of the batch
    int ref_rows; // rows run on the reference (a prefix; 0: all)
    int sweep;    // gemm: every prefix M of sweep_M up to rows, bitwise
    int p[12];    // op parameters (named per op)
    size_t z[4];  // byte sizes and strides
    float eps;
    double flops, bytes; // one full run, for perf
    ops_buf buf[OPS_MAX_BUF];
    int nbuf;
};

static void *add_buf(ops_case *c, const char *name, role_t role, elem_t t, size_t n, size_t row) {
    SG_CHECK(c->nbuf < OPS_MAX_BUF, "too many buffers in op case %s", c->def->name);
    ops_buf *b = &c->buf[c->nbuf++];
    *b = (ops_buf){.name = name, .role = role, .type = t, .n = n, .row = row};
    if (role != R_OUT) b->host = sg_calloc(n ? n : 1, esize(t));
    return b->host;
}

static void case_free(ops_case *c) {
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
    fill_bf16(add_buf(c, "table", R_IN, E_BF16, (size_t)v * h, 0), (size_t)v * h, 1.0, r);
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
    fill_bf16(add_buf(c, "x", R_IN, E_BF16, (size_t)M * K, K), (size_t)M * K, 1.0, r);
    fill_bf16(add_buf(c, "w", R_IN, E_BF16, (size_t)N * K, 0), (size_t)N * K, 0.05, r);
    ops_buf *y = &c->buf[c->nbuf];
    add_buf(c, "y", R_OUT, f32 ? E_F32 : E_BF16, (size_t)M * N, N);
    y->logits = f32;
    snprintf(c->shape, sizeof c->shape, "%s%sM=%d K=%d N=%d%s", w ? w : "", w ? " " : "", M, K, N,
             ref_rows ? " (ref: first rows)" : "");
    c->flops = 2.0 * M * (double)N * K;
    c->bytes = 2.0 * ((double)M * K + (double)N * K) + (double)M * N * (f32 ? 4 : 2);
}

// Qwen3-4B's bf16-out products (target and drafter), at M = 2048 with the sweep.
static const struct {
    const char *name;
    int N, K;
} qwen3_weights[] = {{"q_proj", 4096, 2560},    {"k_proj", 1024, 2560},    {"o_proj", 2560, 4096},
                     {"gate_proj", 9728, 2560}, {"down_proj", 2560, 9728}, {"fc", 2560, 12800}};
#define N_QWEN3_WEIGHTS ((int)(sizeof qwen3_weights / sizeof qwen3_weights[0]))

static void make_gemm(ops_case *c, int size, rng *r) {
    if (size == TINY)
        make_gemm_shape(c, 3, 20, 5, 0, 0, NULL, r); // K % 8 != 0: unaligned path
    else if (size == SMALL)
        make_gemm_shape(c, 33, 200, 77, 0, 0, NULL, r);
    else {
        int i = c->p[11]; // which weight (set by the case list)
        make_gemm_shape(c, 2048, qwen3_weights[i].K, qwen3_weights[i].N, 0, 3,
                        qwen3_weights[i].name, r);
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
static void run_gemm(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    int K = c->p[0], N = c->p[1], f32 = c->p[2];
    size_t es = f32 ? 4 : 2;
    be->gemm(be->ctx, BF(d, 0) + (size_t)r0 * K, nr, K, BF(d, 1), N,
             (char *)d[2] + (size_t)r0 * N * es, f32);
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
    fill_bf16(add_buf(c, "x", c->p[1] ? R_INOUT : R_IN, E_BF16, (size_t)c->rows * n, n),
              (size_t)c->rows * n, 3.0, r);
    fill_bf16(add_buf(c, "w", R_IN, E_BF16, n, 0), n, 1.5, r);
    if (!c->p[1]) add_buf(c, "y", R_OUT, E_BF16, (size_t)c->rows * n, n);
    snprintf(c->shape, sizeof c->shape, "rows=%d D=%d%s", c->rows, n, c->p[1] ? " in place" : "");
    c->bytes = 4.0 * c->rows * n;
}
static void run_rmsnorm(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    int D = c->p[0];
    bf16 *x = BF(d, 0) + (size_t)r0 * D;
    be->rmsnorm(be->ctx, x, nr, D, BF(d, 1), c->eps, c->p[1] ? x : BF(d, 2) + (size_t)r0 * D);
}

// ---- head_norm_rope ----

// p: n_heads, head_dim, max_pos.
static void make_rope(ops_case *c, int size, rng *r) {
    static const int rows[] = {2, 9, 33}, nH[] = {2, 4, 32}, hd[] = {8, 64, 128},
                     mp[] = {16, 300, 4096};
    c->rows = rows[size];
    c->p[0] = nH[size];
    c->p[1] = hd[size];
    c->p[2] = mp[size];
    c->eps = 1e-6f;
    size_t w = (size_t)nH[size] * hd[size], half = (size_t)hd[size] / 2;
    fill_bf16(add_buf(c, "x", R_INOUT, E_BF16, c->rows * w, w), c->rows * w, 2.0, r);
    fill_bf16(add_buf(c, "w", R_IN, E_BF16, hd[size], 0), hd[size], 1.5, r);
    fill_bf16(add_buf(c, "cos", R_IN, E_BF16, mp[size] * half, 0), mp[size] * half, 1.0, r);
    fill_bf16(add_buf(c, "sin", R_IN, E_BF16, mp[size] * half, 0), mp[size] * half, 1.0, r);
    int32_t *pos = add_buf(c, "pos", R_IN, E_I32, c->rows, 1);
    for (int i = 0; i < c->rows; i++) pos[i] = rbelow(r, mp[size]);
    snprintf(c->shape, sizeof c->shape, "rows=%d heads=%d hd=%d", c->rows, nH[size], hd[size]);
    c->bytes = 4.0 * c->rows * w;
}
static void run_rope(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    size_t w = (size_t)c->p[0] * c->p[1];
    be->head_norm_rope(be->ctx, BF(d, 0) + r0 * w, nr, c->p[0], c->p[1], BF(d, 1), c->eps, BF(d, 2),
                       BF(d, 3), I32(d, 4) + r0);
}

// ---- paged KV: kv_store and attention ----

// p: page_size, n_kv_heads, head_dim, n_pages, n_seq, table_stride, n_heads.
static const int kv_geom[N_SIZES][7] = {
    {4, 1, 8, 10, 2, 4, 2},         // tiny
    {16, 2, 160, 64, 3, 20, 4},     // small: head_dim 160 (two output dims per thread)
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

static void make_kv_store(ops_case *c, int size, rng *r) {
    memcpy(c->p, kv_geom[size], sizeof kv_geom[size]);
    static const int rows[] = {3, 9, 33};
    c->rows = rows[size];
    size_t kvd = (size_t)c->p[1] * c->p[2], pool = (size_t)c->p[3] * c->p[0] * kvd;
    fill_bf16(add_buf(c, "k_pages", R_INOUT, E_BF16, pool, 0), pool, 1.0, r);
    fill_bf16(add_buf(c, "v_pages", R_INOUT, E_BF16, pool, 0), pool, 1.0, r);
    make_tables(c, r);
    int32_t *rt = add_buf(c, "row_table", R_IN, E_I32, c->rows, 1);
    int32_t *pos = add_buf(c, "pos", R_IN, E_I32, c->rows, 1);
    int span = c->p[5] * c->p[0]; // positions per sequence
    for (int i = 0; i < c->rows; i++) {
        int dup;
        do { // distinct (sequence, position) pairs: no two rows write one slot
            rt[i] = rbelow(r, c->p[4]);
            pos[i] = rbelow(r, span);
            dup = 0;
            for (int j = 0; j < i; j++) dup |= rt[j] == rt[i] && pos[j] == pos[i];
        } while (dup);
    }
    fill_bf16(add_buf(c, "k", R_IN, E_BF16, c->rows * kvd, kvd), c->rows * kvd, 1.0, r);
    fill_bf16(add_buf(c, "v", R_IN, E_BF16, c->rows * kvd, kvd), c->rows * kvd, 1.0, r);
    snprintf(c->shape, sizeof c->shape, "rows=%d page=%d kv_heads=%d hd=%d", c->rows, c->p[0],
             c->p[1], c->p[2]);
    c->bytes = 8.0 * c->rows * kvd;
}
static void run_kv_store(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    be_paging pg = paging_of(c, d, 2);
    size_t kvd = (size_t)c->p[1] * c->p[2];
    be->kv_store(be->ctx, &pg, BF(d, 0), BF(d, 1), I32(d, 3) + r0, I32(d, 4) + r0,
                 BF(d, 5) + r0 * kvd, BF(d, 6) + r0 * kvd, nr);
}

static void make_attention(ops_case *c, int size, rng *r) {
    memcpy(c->p, kv_geom[size], sizeof kv_geom[size]);
    static const int rows[] = {3, 9, 24};
    c->rows = rows[size];
    int nH = c->p[6], hd = c->p[2];
    size_t kvd = (size_t)c->p[1] * hd, pool = (size_t)c->p[3] * c->p[0] * kvd;
    size_t qd = (size_t)nH * hd;
    fill_bf16(add_buf(c, "k_pages", R_IN, E_BF16, pool, 0), pool, 1.5, r);
    fill_bf16(add_buf(c, "v_pages", R_IN, E_BF16, pool, 0), pool, 1.0, r);
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
    fill_bf16(add_buf(c, "q", R_IN, E_BF16, c->rows * qd, qd), c->rows * qd, 1.5, r);
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
static void make_swiglu(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 9, 33}, H[] = {8, 96, 9728};
    c->rows = rows[size];
    int h = H[size];
    c->p[0] = h;
    c->p[1] = size == QWEN3; // out aliases gate, as the engine calls it
    size_t n = (size_t)c->rows * h;
    fill_bf16(add_buf(c, "gate", c->p[1] ? R_INOUT : R_IN, E_BF16, n, h), n, 12.0, r);
    fill_bf16(add_buf(c, "up", R_IN, E_BF16, n, h), n, 3.0, r);
    if (!c->p[1]) add_buf(c, "out", R_OUT, E_BF16, n, h);
    snprintf(c->shape, sizeof c->shape, "rows=%d n=%d%s", c->rows, h, c->p[1] ? " in place" : "");
    c->bytes = 6.0 * n;
}
static void run_swiglu(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr) {
    size_t h = (size_t)c->p[0];
    bf16 *g = BF(d, 0) + r0 * h;
    be->swiglu(be->ctx, g, BF(d, 1) + r0 * h, nr * h, c->p[1] ? g : BF(d, 2) + r0 * h);
}

static void make_add(ops_case *c, int size, rng *r) {
    static const int rows[] = {3, 9, 33}, H[] = {8, 96, 2560};
    c->rows = rows[size];
    c->p[0] = H[size];
    size_t n = (size_t)c->rows * H[size];
    fill_bf16(add_buf(c, "h", R_INOUT, E_BF16, n, H[size]), n, 4.0, r);
    fill_bf16(add_buf(c, "x", R_IN, E_BF16, n, H[size]), n, 1.0, r);
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

// p: V, r, tok_stride, s, n_chains.
static void make_markov(ops_case *c, int size, rng *r) {
    static const int V[] = {16, 1000, 151936}, R[] = {0, 20, 256}, rows[] = {3, 6, 9};
    int v = V[size], rk = R[size], ts = 8, s = 2, nch = rows[size] + 1, nu = 16;
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
    if (rk) {
        fill_bf16(w1, (size_t)v * rk, 1.0, r);
        fill_bf16(w2, (size_t)v * rk, 0.3, r);
    }
    int32_t *chain = add_buf(c, "chain_row", R_IN, E_I32, c->rows, 1);
    int32_t *urow = add_buf(c, "u_row", R_IN, E_I32, c->rows, 1);
    int32_t *start = add_buf(c, "start", R_IN, E_I32, c->rows, 1);
    int32_t *limit = add_buf(c, "limit", R_IN, E_I32, c->rows, 1);
    int32_t *tok = add_buf(c, "tokens", R_INOUT, E_I32, (size_t)nch * ts, 0);
    int32_t *tid = add_buf(c, "top_ids", R_INOUT, E_I32, (size_t)nch * (ts - 1) * 2, 0);
    float *tval = add_buf(c, "top_vals", R_INOUT, E_F32, (size_t)nch * (ts - 1) * 2, 0);
    int32_t *perm = sg_calloc((size_t)nch, sizeof *perm);
    permute(perm, nch, r);
    for (int i = 0; i < c->rows; i++) {
        chain[i] = perm[i];
        start[i] = rbelow(r, 4);
        limit[i] = ts - 1;
        urow[i] = rbelow(r, nu - ts);
    }
    free(perm);
    limit[c->rows - 1] = start[c->rows - 1] + s; // skipped: k == limit
    for (int i = 0; i < nch * ts; i++) tok[i] = rbelow(r, v);
    for (int i = 0; i < nch * (ts - 1) * 2; i++) {
        tid[i] = rbelow(r, v);
        tval[i] = (float)rsym(r, 1.0);
    }
    tok[(size_t)chain[1] * ts + start[1] + s] = -1; // a chain marked by an earlier NaN
    if (c->rows > 3) U[(size_t)(urow[2] + start[2] + s) * v + rbelow(r, v)] = NAN; // a NaN score
    snprintf(c->shape, sizeof c->shape, "rows=%d V=%d rank=%d", c->rows, v, rk);
    c->flops = 2.0 * c->rows * (double)v * rk;
    c->bytes = 2.0 * (double)v * rk + 4.0 * c->rows * v;
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
        fill_bf16(x, tot, 20.0, r);
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

#define EXACT_SAME_ORDER "same reduction order and rounding points as the CPU twin: bitwise equal"
static const op_def op_defs[] = {
    {"copy", "alloc free upload download copy", 0, 0, "bytes are moved, not computed", make_copy,
     run_copy},
    {"embed", "embed", 0, 0, "a gather: bitwise equal", make_embed, run_embed},
    {"gemm", "gemm", 0, 0, EXACT_SAME_ORDER " (8 fp32 lanes, k mod 8, fixed tree)", make_gemm,
     run_gemm},
    {"gemm_logits", "gemm", 0, 0, EXACT_SAME_ORDER " (fp32 logits)", make_gemm_logits, run_gemm},
    {"rmsnorm", "rmsnorm", 0, 0, EXACT_SAME_ORDER " (sequential Σx², IEEE 1/sqrt)", make_rmsnorm,
     run_rmsnorm},
    {"head_norm_rope", "head_norm_rope", 0, 0, EXACT_SAME_ORDER, make_rope, run_rope},
    {"kv_store", "kv_store", 0, 0, "rows are moved into pages: bitwise equal", make_kv_store,
     run_kv_store},
    {"attention", "attention", 0, 0,
     EXACT_SAME_ORDER " (keys in ascending position; expf is glibc's algorithm on the device)",
     make_attention, run_attention},
    {"swiglu", "swiglu", 0, 0, EXACT_SAME_ORDER " (expf is glibc's algorithm on the device)",
     make_swiglu, run_swiglu},
    {"add", "add", 0, 0, "one rounded addition: bitwise equal", make_add, run_add},
    {"argmax", "argmax", 0, 0, "exact selection, ties to the lowest id, NaN/Inf rows -1",
     make_argmax, run_argmax},
    {"top2", "top2", 0, 0, "exact selection (value desc, id asc); NaN/Inf rows -1, NaN values",
     make_top2, run_top2},
    {"markov_step", "markov_step", 0, 0,
     "bias in gemm's order (bitwise), U + bias one fp32 add, exact top-2", make_markov, run_markov},
    {"ladder_force", "ladder_force", 0, 0, "tokens are moved: bitwise equal", make_ladder,
     run_ladder},
    {"page_copy", "page_copy", 0, 0, "bytes are moved: bitwise equal", make_page_copy,
     run_page_copy},
    {"copy_rows", "copy_rows", 0, 0, "bytes are moved: bitwise equal", make_copy_rows,
     run_copy_rows},
    {"digest", "digest", 0, 0, "integer hash sum: bitwise equal to be_digest", make_digest,
     run_digest},
    {"digest_bf16", "digest", 0, 0, "integer hash sum: bitwise equal to be_digest",
     make_digest_bf16, run_digest},
};
#define N_OPS ((int)(sizeof op_defs / sizeof op_defs[0]))

// Table entries of backend.h, for --show-coverage (destroy: every run ends with it).
static const char *const table_entries[] = {
    "alloc",   "free",           "upload",       "download",  "copy",      "embed",  "gemm",
    "rmsnorm", "head_norm_rope", "kv_store",     "attention", "swiglu",    "add",    "argmax",
    "top2",    "markov_step",    "ladder_force", "page_copy", "copy_rows", "digest", "destroy"};

static int covers(const op_def *d, const char *entry) {
    size_t n = strlen(entry);
    for (const char *p = d->covers; (p = strstr(p, entry)) != NULL; p += n)
        if ((p == d->covers || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}

// Number of cases of an op at a size (gemm at qwen3: one per weight).
static int n_cases(const op_def *d, int size) {
    return size == QWEN3 && strcmp(d->name, "gemm") == 0 ? N_QWEN3_WEIGHTS : 1;
}

int ops_known(const char *name) {
    for (int i = 0; i < N_OPS; i++)
        if (strcmp(op_defs[i].name, name) == 0) return 1;
    return 0;
}

void ops_list(FILE *out) {
    fprintf(out, "ops of the backend table, each checked against the CPU twin (sizes: tiny, small, "
                 "qwen3 = Qwen3-4B geometry):\n\n");
    for (int i = 0; i < N_OPS; i++) {
        const op_def *d = &op_defs[i];
        fprintf(out, "%-14s covers: %s\n", d->name, d->covers);
        if (d->tol_ulp == 0 && d->tol_share == 0)
            fprintf(out, "%-14s tolerance: exact\n", "");
        else
            fprintf(out, "%-14s tolerance: <= %g ulp on <= %g%% of the elements\n", "", d->tol_ulp,
                    100.0 * d->tol_share);
        fprintf(out, "%-14s why: %s\n", "", d->why);
    }
    fprintf(out, "\nevery case also checks: guard zones, each row alone vs in the batch (bitwise), "
                 "graph vs eager (bitwise), rerun (bitwise); gemm at qwen3 also every prefix M in "
                 "{1,2,7,8,9,32,33,256,2048} of a 2048-row product (bitwise)\n");
}

int ops_show_coverage(FILE *out) {
    int missing = 0;
    size_t n = sizeof table_entries / sizeof table_entries[0];
    fprintf(out, "backend table entry -> checks\n");
    for (size_t e = 0; e < n; e++) {
        char line[512] = "";
        for (int i = 0; i < N_OPS; i++)
            if (covers(&op_defs[i], table_entries[e])) {
                strncat(line, " ", sizeof line - strlen(line) - 1);
                strncat(line, op_defs[i].name, sizeof line - strlen(line) - 1);
            }
        if (strcmp(table_entries[e], "destroy") == 0 && !line[0])
            snprintf(line, sizeof line, " (every run: the backends are destroyed at the end)");
        if (!line[0]) missing++;
        fprintf(out, "  %-15s%s\n", table_entries[e], line[0] ? line : " NO CHECK");
    }
    fprintf(out, "ops without a check: %d\n", missing);
    return missing;
}

// ---- running a case on one backend ----

typedef struct {
    const sg_backend *be;
    void *raw[OPS_MAX_BUF]; // allocation including the guards
    void *d[OPS_MAX_BUF];   // the buffers themselves
} side;

static size_t bytes_of(const ops_buf *b) { return b->n * esize(b->type); }

// Uploads a buffer's initial bytes between its guards: inputs and in-place buffers their
// contents, outputs poison.
static void upload_initial(const sg_backend *be, void *raw, const ops_buf *b) {
    size_t nb = bytes_of(b);
    unsigned char guard[GUARD];
    memset(guard, GUARD_BYTE, GUARD);
    be->upload(be->ctx, raw, guard, GUARD);
    be->upload(be->ctx, (char *)raw + GUARD + nb, guard, GUARD);
    if (b->host) {
        be->upload(be->ctx, (char *)raw + GUARD, b->host, nb);
    } else {
        unsigned char *poison = sg_calloc(nb, 1);
        memset(poison, POISON_BYTE, nb);
        be->upload(be->ctx, (char *)raw + GUARD, poison, nb);
        free(poison);
    }
}

static int side_init(side *s, const sg_backend *be, const ops_case *c) {
    memset(s, 0, sizeof *s);
    s->be = be;
    for (int i = 0; i < c->nbuf; i++) {
        const ops_buf *b = &c->buf[i];
        if (b->absent) continue;
        size_t total = bytes_of(b) + 2 * GUARD;
        s->raw[i] = be->alloc(be->ctx, total);
        if (!s->raw[i])
            return sg_fail(SG_EXIT_USAGE, "ops %s: the %s backend cannot allocate %zu bytes for %s",
                           c->def->name, be->name, total, b->name);
        upload_initial(be, s->raw[i], b);
        s->d[i] = (char *)s->raw[i] + GUARD;
    }
    return SG_OK;
}

static void side_free(side *s, const ops_case *c) {
    for (int i = 0; i < c->nbuf; i++)
        if (s->raw[i]) s->be->free(s->be->ctx, s->raw[i]);
}

// Outputs and in-place buffers back to their initial bytes; rows > 0 resets only the first rows
// of row-shaped outputs (the gemm sweep).
static void side_reset(side *s, const ops_case *c, int rows) {
    for (int i = 0; i < c->nbuf; i++) {
        const ops_buf *b = &c->buf[i];
        if (b->role == R_IN || b->absent) continue;
        size_t nb = bytes_of(b);
        if (rows > 0 && b->row) nb = (size_t)rows * b->row * esize(b->type);
        if (b->host) {
            s->be->upload(s->be->ctx, s->d[i], b->host, nb);
        } else {
            unsigned char *poison = sg_calloc(nb, 1);
            memset(poison, POISON_BYTE, nb);
            s->be->upload(s->be->ctx, s->d[i], poison, nb);
            free(poison);
        }
    }
}

// The first `bytes` of buffer i (bytes 0: the whole buffer).
static unsigned char *side_get(const side *s, const ops_case *c, int i, size_t bytes) {
    size_t nb = bytes ? bytes : bytes_of(&c->buf[i]);
    unsigned char *h = sg_calloc(nb, 1);
    s->be->download(s->be->ctx, h, s->d[i], nb);
    return h;
}

// ---- comparing ----

typedef struct {
    double max_abs, max_ulp, share, nmse;
    long long first_bad; // element index in buffer first_buf, -1: none
    int first_buf;
    char first_text[256];
    int rows_cmp;
    double argmax_agree, top2_agree; // logits only, -1 otherwise
} diff_stats;

static double ordered(uint32_t bits, int width) {
    if (width == 16) {
        int32_t v = (bits & 0x8000u) ? -(int32_t)(bits & 0x7fffu) : (int32_t)bits;
        return (double)v;
    }
    int64_t v = (bits & 0x80000000u) ? -(int64_t)(bits & 0x7fffffffu) : (int64_t)bits;
    return (double)v;
}

static double value_of(const unsigned char *p, elem_t t, size_t i, uint32_t *bits) {
    if (t == E_BF16) {
        uint16_t h;
        memcpy(&h, p + 2 * i, 2);
        *bits = h;
        return bf16_to_f32(h);
    }
    float f;
    memcpy(&f, p + 4 * i, 4);
    memcpy(bits, &f, 4);
    return f;
}

static void format_elem(char *out, size_t n, const unsigned char *p, elem_t t, size_t i) {
    uint32_t bits;
    switch (t) {
    case E_BF16:
    case E_F32: {
        double v = value_of(p, t, i, &bits);
        snprintf(out, n, "%.9g (0x%0*x)", v, t == E_BF16 ? 4 : 8, bits);
        break;
    }
    case E_I32: {
        int32_t v;
        memcpy(&v, p + 4 * i, 4);
        snprintf(out, n, "%d", v);
        break;
    }
    case E_U64: {
        uint64_t v;
        memcpy(&v, p + 8 * i, 8);
        snprintf(out, n, "0x%016llx", (unsigned long long)v);
        break;
    }
    case E_U8:
        snprintf(out, n, "0x%02x", p[i]);
        break;
    }
}

// Exact top-2 of a row (value descending, id ascending); 0 when it holds a NaN or Inf.
static int host_top2(const float *x, int n, int ids[2]) {
    ids[0] = ids[1] = -1;
    for (int i = 0; i < n; i++) {
        if (!isfinite(x[i])) return 0;
        if (ids[0] < 0 || x[i] > x[ids[0]]) {
            ids[1] = ids[0];
            ids[0] = i;
        } else if (ids[1] < 0 || x[i] > x[ids[1]]) {
            ids[1] = i;
        }
    }
    return 1;
}

// Compares `count` elements of buffer bi (test vs ref) into st; tol: the op's ULP tolerance.
static void compare_buf(const ops_case *c, int bi, const unsigned char *t, const unsigned char *r,
                        size_t count, double tol, diff_stats *st, size_t *n_diff, size_t *n_all,
                        double *se, double *sr) {
    const ops_buf *b = &c->buf[bi];
    int fp = b->type == E_BF16 || b->type == E_F32;
    size_t es = esize(b->type);
    for (size_t i = 0; i < count; i++) {
        int same = memcmp(t + i * es, r + i * es, es) == 0;
        double ulp = 0;
        if (!same) {
            (*n_diff)++;
            if (fp) {
                uint32_t bt, br;
                double vt = value_of(t, b->type, i, &bt), vr = value_of(r, b->type, i, &br);
                int w = b->type == E_BF16 ? 16 : 32;
                if (isnan(vt) && isnan(vr))
                    ulp = 0; // both NaN: agree (payloads may differ)
                else if (isnan(vt) || isnan(vr) || isinf(vt) || isinf(vr))
                    ulp = INFINITY;
                else {
                    ulp = fabs(ordered(bt, w) - ordered(br, w));
                    if (fabs(vt - vr) > st->max_abs) st->max_abs = fabs(vt - vr);
                }
            } else {
                ulp = INFINITY; // integers and bytes: exact
            }
        }
        if (fp) {
            uint32_t bt, br;
            double vt = value_of(t, b->type, i, &bt), vr = value_of(r, b->type, i, &br);
            if (isfinite(vt) && isfinite(vr)) {
                *se += (vt - vr) * (vt - vr);
                *sr += vr * vr;
            }
        }
        if (ulp > st->max_ulp) st->max_ulp = ulp;
        if (ulp > tol && st->first_bad < 0) {
            st->first_bad = (long long)i;
            st->first_buf = bi;
            char a[96], e[96];
            format_elem(a, sizeof a, t, b->type, i);
            format_elem(e, sizeof e, r, b->type, i);
            if (b->row)
                snprintf(st->first_text, sizeof st->first_text, "%s[%zu,%zu]: got %s, twin %s",
                         b->name, i / b->row, i % b->row, a, e);
            else
                snprintf(st->first_text, sizeof st->first_text, "%s[%zu]: got %s, twin %s", b->name,
                         i, a, e);
        }
    }
    *n_all += count;
}

// Bitwise equality of two downloads; on a difference names the first element.
static int same_bits(const ops_case *c, int bi, const unsigned char *a, const unsigned char *b,
                     size_t bytes, char *why, size_t why_n, const char *what) {
    if (memcmp(a, b, bytes) == 0) return 1;
    size_t es = esize(c->buf[bi].type), i = 0;
    while (memcmp(a + i * es, b + i * es, es) == 0) i++;
    char x[96], y[96];
    format_elem(x, sizeof x, a, c->buf[bi].type, i);
    format_elem(y, sizeof y, b, c->buf[bi].type, i);
    snprintf(why, why_n, "%s: %s element %zu: %s vs %s", what, c->buf[bi].name, i, x, y);
    return 0;
}

// ---- one case ----

typedef struct {
    const ops_case *c;
    diff_stats d;
    int guard_ok, alone_ok, graph_ok, rerun_ok, sweep_ok; // 1 ok, 0 failed, -1 not run
    int pass;
    char why[512]; // first failure of a bitwise check
    double us;     // perf
} case_result;

static int alone_rows(const ops_case *c, int *rows) {
    if (c->rows <= 64) {
        for (int i = 0; i < c->rows; i++) rows[i] = i;
        return c->rows;
    }
    rows[0] = 0;
    rows[1] = 1;
    rows[2] = c->rows / 2;
    rows[3] = c->rows - 1;
    return 4;
}

// Downloads every output of the test side (the whole buffer, or `prefix` rows of row buffers).
static void get_outputs(const side *s, const ops_case *c, unsigned char **out, int prefix) {
    for (int i = 0; i < c->nbuf; i++) {
        const ops_buf *b = &c->buf[i];
        out[i] = NULL;
        if (b->role == R_IN || b->absent) continue;
        size_t nb = prefix > 0 && b->row ? (size_t)prefix * b->row * esize(b->type) : 0;
        out[i] = side_get(s, c, i, nb);
    }
}

static void free_outputs(const ops_case *c, unsigned char **out) {
    for (int i = 0; i < c->nbuf; i++) free(out[i]);
}

// Compares a bitwise check's outputs with the batch outputs; rows: NULL = whole buffers, else the
// listed rows of row-shaped buffers.
static int check_same_into(const ops_case *c, unsigned char **batch, unsigned char **got,
                           const int *rows, int n_rows, int prefix, char *why, size_t why_n,
                           const char *what) {
    for (int i = 0; i < c->nbuf; i++) {
        if (!got[i]) continue;
        const ops_buf *b = &c->buf[i];
        size_t es = esize(b->type);
        if (rows) {
            for (int k = 0; k < n_rows; k++) {
                size_t off = (size_t)rows[k] * b->row * es;
                if (!same_bits(c, i, got[i] + off, batch[i] + off, b->row * es, why, why_n, what))
                    return 0;
            }
        } else {
            size_t nb = prefix > 0 && b->row ? (size_t)prefix * b->row * es : bytes_of(b);
            if (!same_bits(c, i, got[i], batch[i], nb, why, why_n, what)) return 0;
        }
    }
    return 1;
}

static int check_same(const ops_case *c, unsigned char **batch, unsigned char **got,
                      const int *rows, int n_rows, int prefix, case_result *res, const char *what) {
    // The first failure of a case is kept in res->why.
    char why[sizeof res->why];
    int ok = check_same_into(c, batch, got, rows, n_rows, prefix, why, sizeof why, what);
    if (!ok && !res->why[0]) snprintf(res->why, sizeof res->why, "%s", why);
    return ok;
}

static int run_case(ops_case *c, const sg_backend *test, const ops_device *dev,
                    const sg_backend *ref, case_result *res) {
    memset(res, 0, sizeof *res);
    res->c = c;
    res->d.first_bad = -1;
    res->d.argmax_agree = res->d.top2_agree = -1;
    res->sweep_ok = res->graph_ok = -1;
    side T, R;
    memset(&R, 0, sizeof R);
    R.be = ref;
    int st = side_init(&T, test, c);
    if (st == SG_OK) st = side_init(&R, ref, c);
    if (st != SG_OK) {
        side_free(&T, c);
        side_free(&R, c);
        return st;
    }
    const op_def *def = c->def;
    int ref_rows = c->ref_rows ? c->ref_rows : c->rows;
    def->run(ref, c, R.d, 0, ref_rows);
    def->run(test, c, T.d, 0, c->rows);
    if (dev && dev->sync) dev->sync(test);

    unsigned char *batch[OPS_MAX_BUF] = {0}, *got[OPS_MAX_BUF] = {0};
    // Guards and the comparison with the twin.
    res->guard_ok = 1;
    size_t n_diff = 0, n_all = 0;
    double se = 0, sr = 0;
    for (int i = 0; i < c->nbuf; i++) {
        const ops_buf *b = &c->buf[i];
        if (b->role == R_IN || b->absent) continue;
        size_t nb = bytes_of(b), total = nb + 2 * GUARD;
        unsigned char *whole = sg_calloc(total, 1);
        test->download(test->ctx, whole, T.raw[i], total);
        for (size_t g = 0; g < GUARD && res->guard_ok; g++)
            if (whole[g] != GUARD_BYTE || whole[GUARD + nb + g] != GUARD_BYTE) {
                res->guard_ok = 0;
                snprintf(res->why, sizeof res->why, "guard zone of %s overwritten (%s byte %zu)",
                         b->name, whole[g] != GUARD_BYTE ? "before, " : "after, ", g);
            }
        batch[i] = sg_calloc(nb, 1);
        memcpy(batch[i], whole + GUARD, nb);
        free(whole);
        size_t count = ref_rows < c->rows && b->row ? (size_t)ref_rows * b->row : b->n;
        unsigned char *rv = side_get(&R, c, i, count * esize(b->type));
        compare_buf(c, i, batch[i], rv, count, def->tol_ulp, &res->d, &n_diff, &n_all, &se, &sr);
        if (b->logits && b->row) {
            int rows_l = (int)(count / b->row), a_ok = 0, t_ok = 0;
            for (int rr = 0; rr < rows_l; rr++) {
                int it[2], ir[2];
                int ft = host_top2((const float *)batch[i] + (size_t)rr * b->row, (int)b->row, it);
                int fr = host_top2((const float *)rv + (size_t)rr * b->row, (int)b->row, ir);
                a_ok += ft == fr && it[0] == ir[0];
                t_ok += ft == fr && it[0] == ir[0] && it[1] == ir[1];
            }
            res->d.argmax_agree = rows_l ? (double)a_ok / rows_l : 1;
            res->d.top2_agree = rows_l ? (double)t_ok / rows_l : 1;
        }
        free(rv);
    }
    res->d.share = n_all ? (double)n_diff / (double)n_all : 0;
    res->d.nmse = sr > 0 ? se / sr : se;
    int close = res->d.max_ulp <= def->tol_ulp && res->d.share <= def->tol_share;
    if (res->d.argmax_agree >= 0 && res->d.argmax_agree < 1) close = 0;

    // Rerun: bitwise.
    side_reset(&T, c, 0);
    def->run(test, c, T.d, 0, c->rows);
    get_outputs(&T, c, got, 0);
    res->rerun_ok = check_same(c, batch, got, NULL, 0, 0, res, "rerun differs");
    free_outputs(c, got);

    // Graph vs eager: bitwise.
    if (dev && dev->capture_begin && dev->capture_end_replay) {
        side_reset(&T, c, 0);
        dev->capture_begin(test);
        def->run(test, c, T.d, 0, c->rows);
        dev->capture_end_replay(test);
        get_outputs(&T, c, got, 0);
        res->graph_ok = check_same(c, batch, got, NULL, 0, 0, res, "graph replay differs");
        free_outputs(c, got);
    }

    // Each row alone vs inside the batch: bitwise.
    int rows[64];
    int n_alone = alone_rows(c, rows);
    side_reset(&T, c, 0);
    for (int k = 0; k < n_alone; k++) def->run(test, c, T.d, rows[k], 1);
    get_outputs(&T, c, got, 0);
    res->alone_ok = check_same(c, batch, got, n_alone < c->rows ? rows : NULL, n_alone, 0, res,
                               "a row alone differs from the row in the batch");
    free_outputs(c, got);

    // The gemm sweep: every prefix M of the batch, bitwise.
    if (c->sweep) {
        res->sweep_ok = 1;
        for (int k = 0; k < N_SWEEP && res->sweep_ok && sweep_M[k] <= c->rows; k++) {
            side_reset(&T, c, sweep_M[k]);
            def->run(test, c, T.d, 0, sweep_M[k]);
            get_outputs(&T, c, got, sweep_M[k]);
            char what[64];
            snprintf(what, sizeof what, "M=%d differs from the rows of M=%d", sweep_M[k], c->rows);
            res->sweep_ok = check_same(c, batch, got, NULL, 0, sweep_M[k], res, what);
            free_outputs(c, got);
        }
    }
    free_outputs(c, batch);
    side_free(&T, c);
    side_free(&R, c);
    res->pass = close && res->guard_ok && res->rerun_ok && res->alone_ok && res->graph_ok != 0 &&
                res->sweep_ok != 0;
    return SG_OK;
}

// ---- perf ----

static double median(double *v, int n) {
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef void (*timed_fn)(void *arg, int rep);

// Median µs of `reps` timed runs after 2 warm-ups.
static double time_us(const sg_backend *be, const ops_device *dev, timed_fn fn, void *arg) {
    fn(arg, 0);
    fn(arg, 1);
    dev->timer_begin(be);
    fn(arg, 2);
    double once = dev->timer_end_us(be);
    int reps = once > 20000 ? 3 : once > 2000 ? 7 : 21;
    double t[21];
    for (int k = 0; k < reps; k++) {
        dev->timer_begin(be);
        fn(arg, k);
        t[k] = dev->timer_end_us(be);
    }
    return median(t, reps);
}

typedef struct {
    const sg_backend *be;
    const ops_case *c;
    void **d;
} case_timing;

static void timed_case(void *arg, int rep) {
    (void)rep;
    case_timing *t = arg;
    t->c->def->run(t->be, t->c, t->d, 0, t->c->rows);
}

typedef struct {
    const sg_backend *be;
    const ops_device *dev;
    bf16 *x;
    bf16 *w[4]; // rotated copies of the weight (beyond the L2 together)
    int n_w;
    void *y;
    int M, K, N, f32, vendor;
} gemm_timing;

static void timed_gemm(void *arg, int rep) {
    gemm_timing *g = arg;
    bf16 *w = g->w[rep % g->n_w];
    if (g->vendor)
        g->dev->vendor_gemm(g->be, g->x, g->M, g->K, w, g->N, g->y, g->f32);
    else
        g->be->gemm(g->be->ctx, g->x, g->M, g->K, w, g->N, g->y, g->f32);
}

static const int perf_M[] = {1, 8, 32, 64, 512, 2048};
#define N_PERF_M ((int)(sizeof perf_M / sizeof perf_M[0]))
static const int inv_M[] = {1,  2,  3,  7,  8,   9,   15,  16,  17,   24,  32,
                            33, 48, 64, 96, 128, 200, 256, 512, 1024, 2048};
#define N_INV_M ((int)(sizeof inv_M / sizeof inv_M[0]))

// Rows of consecutive M in inv_M compared bitwise; writes where they change ("" if never).
static void row_invariance(gemm_timing *g, char *out, size_t n) {
    size_t es = g->f32 ? 4 : 2;
    size_t full = (size_t)inv_M[N_INV_M - 1] * g->N * es;
    unsigned char *prev = sg_calloc(full, 1), *cur = sg_calloc(full, 1);
    out[0] = '\0';
    for (int k = 0; k < N_INV_M; k++) {
        g->M = inv_M[k];
        timed_gemm(g, 0);
        g->be->download(g->be->ctx, cur, g->y, (size_t)g->M * g->N * es);
        if (k > 0 && memcmp(prev, cur, (size_t)inv_M[k - 1] * g->N * es) != 0) {
            size_t len = strlen(out);
            snprintf(out + len, n - len, "%s%d->%d", len ? ", " : "", inv_M[k - 1], inv_M[k]);
        }
        unsigned char *t = prev;
        prev = cur;
        cur = t;
    }
    free(prev);
    free(cur);
}

typedef struct {
    char weight[32];
    int M, K, N;
    double us, vendor_us, tflops, gbs, vendor_tflops;
} gemm_perf_row;

typedef struct {
    char weight[32];
    char ours[256], vendor[256];
} inv_row;

static int perf_gemm(const sg_backend *be, const ops_device *dev, uint64_t seed, FILE *out,
                     gemm_perf_row *rows, int *n_rows, inv_row *inv, int *n_inv) {
    struct {
        const char *name;
        int N, K, f32;
    } ws[N_QWEN3_WEIGHTS + 1];
    for (int i = 0; i < N_QWEN3_WEIGHTS; i++) {
        ws[i].name = qwen3_weights[i].name;
        ws[i].N = qwen3_weights[i].N;
        ws[i].K = qwen3_weights[i].K;
        ws[i].f32 = 0;
    }
    ws[N_QWEN3_WEIGHTS].name = "lm_head";
    ws[N_QWEN3_WEIGHTS].N = 151936;
    ws[N_QWEN3_WEIGHTS].K = 2560;
    ws[N_QWEN3_WEIGHTS].f32 = 1;
    fprintf(out,
            "\ngemm (Qwen3-4B shapes; TFLOP/s = 2MNK/t, GB/s = weight bytes/t; %s = the same "
            "shape through %s)\n",
            dev->vendor_gemm ? dev->vendor_name : "vendor",
            dev->vendor_gemm ? dev->vendor_name : "none");
    fprintf(out, "%-10s %6s %6s %7s %10s %8s %8s %10s %8s\n", "weight", "M", "K", "N", "us",
            "TFLOP/s", "GB/s", "vendor_us", "TFLOP/s");
    rng r = {seed ^ 0x5eedf00dull};
    for (int wi = 0; wi <= N_QWEN3_WEIGHTS; wi++) {
        int N = ws[wi].N, K = ws[wi].K, Mmax = 2048;
        size_t wbytes = (size_t)N * K * 2;
        gemm_timing g = {.be = be, .dev = dev, .K = K, .N = N, .f32 = ws[wi].f32};
        g.n_w = wbytes >= ((size_t)200 << 20) ? 1 : 3;
        bf16 *hw = sg_calloc((size_t)N * K, sizeof *hw);
        fill_bf16(hw, (size_t)N * K, 0.05, &r);
        int st = SG_OK;
        for (int k = 0; k < g.n_w && st == SG_OK; k++)
            st = be_alloc_upload(be, hw, wbytes, "w", (void **)&g.w[k]);
        free(hw);
        bf16 *hx = sg_calloc((size_t)Mmax * K, sizeof *hx);
        fill_bf16(hx, (size_t)Mmax * K, 1.0, &r);
        if (st == SG_OK) st = be_alloc_upload(be, hx, (size_t)Mmax * K * 2, "x", (void **)&g.x);
        free(hx);
        if (st == SG_OK) st = be_alloc(be, (size_t)Mmax * N * (g.f32 ? 4 : 2), "y", &g.y);
        if (st != SG_OK) {
            for (int k = 0; k < g.n_w; k++) be->free(be->ctx, g.w[k]);
            be->free(be->ctx, g.x);
            return st;
        }
        for (int mi = 0; mi < N_PERF_M; mi++) {
            gemm_perf_row *row = &rows[(*n_rows)++];
            memset(row, 0, sizeof *row);
            snprintf(row->weight, sizeof row->weight, "%s", ws[wi].name);
            row->M = g.M = perf_M[mi];
            row->K = K;
            row->N = N;
            g.vendor = 0;
            row->us = time_us(be, dev, timed_gemm, &g);
            double flop = 2.0 * g.M * (double)N * K;
            row->tflops = flop / row->us * 1e-6;
            row->gbs = (double)wbytes / row->us * 1e-3;
            if (dev->vendor_gemm) {
                g.vendor = 1;
                row->vendor_us = time_us(be, dev, timed_gemm, &g);
                row->vendor_tflops = flop / row->vendor_us * 1e-6;
            }
            fprintf(out, "%-10s %6d %6d %7d %10.1f %8.2f %8.0f %10.1f %8.2f\n", row->weight, g.M, K,
                    N, row->us, row->tflops, row->gbs, row->vendor_us, row->vendor_tflops);
        }
        inv_row *iv = &inv[(*n_inv)++];
        snprintf(iv->weight, sizeof iv->weight, "%s", ws[wi].name);
        g.vendor = 0;
        row_invariance(&g, iv->ours, sizeof iv->ours);
        if (dev->vendor_gemm) {
            g.vendor = 1;
            row_invariance(&g, iv->vendor, sizeof iv->vendor);
        } else {
            snprintf(iv->vendor, sizeof iv->vendor, "(no vendor library)");
        }
        for (int k = 0; k < g.n_w; k++) be->free(be->ctx, g.w[k]);
        be->free(be->ctx, g.x);
        be->free(be->ctx, g.y);
    }
    fprintf(out,
            "\nrow invariance across M in {1..2048} (rows two consecutive M share, bitwise):\n");
    for (int i = 0; i < *n_inv; i++)
        fprintf(out, "  %-10s ours: %-26s %s: %s\n", inv[i].weight,
                inv[i].ours[0] ? inv[i].ours : "invariant",
                dev->vendor_gemm ? dev->vendor_name : "vendor",
                inv[i].vendor[0] ? inv[i].vendor : "invariant");
    return SG_OK;
}

// ---- reports ----

static const char *tri(int v) { return v < 0 ? "-" : v ? "ok" : "FAIL"; }

static void print_header(FILE *out) {
    fprintf(out, "%-14s %-6s %-44s %10s %8s %7s %9s %6s %5s %5s %5s %5s %5s %s\n", "op", "size",
            "shape", "max|d|", "maxulp", "diff%", "nmse", "tol", "guard", "alone", "graph", "rerun",
            "sweep", "result");
}

static void print_result(FILE *out, const case_result *r) {
    const ops_case *c = r->c;
    char tol[16];
    snprintf(tol, sizeof tol, "%g", c->def->tol_ulp);
    fprintf(out, "%-14s %-6s %-44.44s %10.3g %8.3g %7.3f %9.2e %6s %5s %5s %5s %5s %5s %s\n",
            c->def->name, size_names[c->size], c->shape, r->d.max_abs, r->d.max_ulp,
            100.0 * r->d.share, r->d.nmse, tol, tri(r->guard_ok), tri(r->alone_ok),
            tri(r->graph_ok), tri(r->rerun_ok), tri(r->sweep_ok), r->pass ? "PASS" : "FAIL");
    if (r->d.argmax_agree >= 0)
        fprintf(out, "%-14s logits: argmax agreement %.1f%%, top-2 agreement %.1f%%\n", "",
                100.0 * r->d.argmax_agree, 100.0 * r->d.top2_agree);
    if (r->d.first_bad >= 0) fprintf(out, "%-14s first bad element: %s\n", "", r->d.first_text);
    if (r->why[0]) fprintf(out, "%-14s %s\n", "", r->why);
}

static cJSON *result_json(const case_result *r, int perf) {
    const ops_case *c = r->c;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", c->def->name);
    cJSON_AddStringToObject(o, "size", size_names[c->size]);
    cJSON_AddStringToObject(o, "shape", c->shape);
    if (perf) {
        cJSON_AddNumberToObject(o, "us", r->us);
        cJSON_AddNumberToObject(o, "gb_per_s", c->bytes / r->us * 1e-3);
        cJSON_AddNumberToObject(o, "tflop_per_s", c->flops / r->us * 1e-6);
        return o;
    }
    cJSON_AddNumberToObject(o, "max_abs", r->d.max_abs);
    cJSON_AddNumberToObject(o, "max_ulp", isinf(r->d.max_ulp) ? -1 : r->d.max_ulp);
    cJSON_AddNumberToObject(o, "share_differing", r->d.share);
    cJSON_AddNumberToObject(o, "nmse", r->d.nmse);
    cJSON_AddNumberToObject(o, "tol_ulp", c->def->tol_ulp);
    cJSON_AddNumberToObject(o, "tol_share", c->def->tol_share);
    cJSON_AddStringToObject(o, "tol_reason", c->def->why);
    if (r->d.argmax_agree >= 0) {
        cJSON_AddNumberToObject(o, "argmax_agreement", r->d.argmax_agree);
        cJSON_AddNumberToObject(o, "top2_agreement", r->d.top2_agree);
    }
    cJSON_AddStringToObject(o, "guard", tri(r->guard_ok));
    cJSON_AddStringToObject(o, "batch_invariance", tri(r->alone_ok));
    cJSON_AddStringToObject(o, "graph_vs_eager", tri(r->graph_ok));
    cJSON_AddStringToObject(o, "rerun", tri(r->rerun_ok));
    cJSON_AddStringToObject(o, "m_sweep", tri(r->sweep_ok));
    if (r->d.first_bad >= 0) cJSON_AddStringToObject(o, "first_bad", r->d.first_text);
    if (r->why[0]) cJSON_AddStringToObject(o, "failure", r->why);
    cJSON_AddBoolToObject(o, "pass", r->pass);
    return o;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return sg_fail(SG_EXIT_USAGE, "cannot write %s: check the folder exists", path);
    fputs(text, f);
    int bad = fclose(f) != 0;
    return bad ? sg_fail(SG_EXIT_USAGE, "cannot write %s", path) : SG_OK;
}

static int write_reports(const ops_options *o, const ops_device *dev, case_result *res, int n,
                         gemm_perf_row *gp, int n_gp, inv_row *inv, int n_inv, int passed) {
    if (o->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "mode", o->perf ? "perf" : "check");
        cJSON_AddStringToObject(root, "device", dev ? dev->description : "");
        cJSON_AddNumberToObject(root, "seed", (double)o->seed);
        cJSON *cases = cJSON_AddArrayToObject(root, "cases");
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(cases, result_json(&res[i], o->perf));
        if (n_gp) {
            cJSON *g = cJSON_AddArrayToObject(root, "gemm");
            for (int i = 0; i < n_gp; i++) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "weight", gp[i].weight);
                cJSON_AddNumberToObject(x, "M", gp[i].M);
                cJSON_AddNumberToObject(x, "K", gp[i].K);
                cJSON_AddNumberToObject(x, "N", gp[i].N);
                cJSON_AddNumberToObject(x, "us", gp[i].us);
                cJSON_AddNumberToObject(x, "tflop_per_s", gp[i].tflops);
                cJSON_AddNumberToObject(x, "weight_gb_per_s", gp[i].gbs);
                cJSON_AddNumberToObject(x, "vendor_us", gp[i].vendor_us);
                cJSON_AddItemToArray(g, x);
            }
            cJSON *v = cJSON_AddArrayToObject(root, "row_invariance");
            for (int i = 0; i < n_inv; i++) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "weight", inv[i].weight);
                cJSON_AddStringToObject(x, "ours_changes_at", inv[i].ours);
                cJSON_AddStringToObject(x, "vendor_changes_at", inv[i].vendor);
                cJSON_AddItemToArray(v, x);
            }
        }
        cJSON_AddBoolToObject(root, "passed", passed);
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        int st = write_text(o->json, text);
        free(text);
        SG_TRY(st);
    }
    if (o->csv) {
        size_t cap = 4096 + (size_t)(n + n_gp) * 512, len = 0;
        char *text = sg_calloc(cap, 1);
        if (o->perf) {
            len += (size_t)snprintf(text + len, cap - len,
                                    "kind,op,size,shape,us,gb_per_s,tflop_per_s,vendor_us\n");
            for (int i = 0; i < n; i++)
                len += (size_t)snprintf(
                    text + len, cap - len, "op,%s,%s,\"%s\",%.3f,%.3f,%.4f,\n", res[i].c->def->name,
                    size_names[res[i].c->size], res[i].c->shape, res[i].us,
                    res[i].c->bytes / res[i].us * 1e-3, res[i].c->flops / res[i].us * 1e-6);
            for (int i = 0; i < n_gp; i++)
                len += (size_t)snprintf(text + len, cap - len,
                                        "gemm,%s,qwen3,\"M=%d K=%d N=%d\",%.3f,%.3f,%.4f,%.3f\n",
                                        gp[i].weight, gp[i].M, gp[i].K, gp[i].N, gp[i].us,
                                        gp[i].gbs, gp[i].tflops, gp[i].vendor_us);
        } else {
            len += (size_t)snprintf(text + len, cap - len,
                                    "op,size,shape,max_abs,max_ulp,share_differing,nmse,tol_ulp,"
                                    "guard,alone,graph,rerun,sweep,pass\n");
            for (int i = 0; i < n; i++) {
                const case_result *r = &res[i];
                len += (size_t)snprintf(text + len, cap - len,
                                        "%s,%s,\"%s\",%.6g,%.6g,%.6g,%.6g,%g,%s,%s,%s,%s,%s,%d\n",
                                        r->c->def->name, size_names[r->c->size], r->c->shape,
                                        r->d.max_abs, isinf(r->d.max_ulp) ? -1.0 : r->d.max_ulp,
                                        r->d.share, r->d.nmse, r->c->def->tol_ulp, tri(r->guard_ok),
                                        tri(r->alone_ok), tri(r->graph_ok), tri(r->rerun_ok),
                                        tri(r->sweep_ok), r->pass);
            }
        }
        int st = write_text(o->csv, text);
        free(text);
        SG_TRY(st);
    }
    return SG_OK;
}

// ---- driver ----

static int size_index(const char *name) {
    for (int i = 0; i < N_SIZES; i++)
        if (strcmp(size_names[i], name) == 0) return i;
    return -1;
}

int ops_run(const ops_options *o, const sg_backend *test, const ops_device *dev,
            const sg_backend *ref, FILE *out) {
    if (o->op && !ops_known(o->op))
        return sg_fail(SG_EXIT_USAGE, "ops: unknown op \"%s\" (see sparkgate ops --list)", o->op);
    int only = -1;
    if (o->size && (only = size_index(o->size)) < 0)
        return sg_fail(SG_EXIT_USAGE, "ops: unknown size \"%s\" (tiny, small or qwen3)", o->size);
    if (o->perf && (!dev || !dev->timer_begin || !dev->timer_end_us))
        return sg_fail(SG_EXIT_USAGE, "ops perf: the %s backend has no timers", test->name);
    if (o->perf && only < 0) only = QWEN3;
    fprintf(out, "sparkgate ops %s: %s vs %s twin, seed %llu\n", o->perf ? "perf" : "check",
            test->name, ref->name, (unsigned long long)o->seed);
    if (dev && dev->description[0]) fprintf(out, "device: %s\n", dev->description);
    int n_max = 0;
    for (int i = 0; i < N_OPS; i++)
        for (int s = 0; s < N_SIZES; s++) n_max += n_cases(&op_defs[i], s);
    case_result *res = sg_calloc((size_t)n_max, sizeof *res);
    ops_case *cases = sg_calloc((size_t)n_max, sizeof *cases);
    int n = 0, failed = 0, st = SG_OK;
    if (o->perf)
        fprintf(out, "\n%-14s %-6s %-44s %10s %9s %9s\n", "op", "size", "shape", "us", "GB/s",
                "TFLOP/s");
    else {
        fprintf(out, "\n");
        print_header(out);
    }
    for (int i = 0; i < N_OPS && st == SG_OK; i++) {
        const op_def *d = &op_defs[i];
        if (o->op && strcmp(o->op, d->name) != 0) continue;
        for (int s = 0; s < N_SIZES && st == SG_OK; s++) {
            if (only >= 0 && s != only) continue;
            for (int k = 0; k < n_cases(d, s) && st == SG_OK; k++) {
                ops_case *c = &cases[n];
                c->def = d;
                c->size = s;
                c->p[11] = k;
                // Inputs depend on the seed, the op and the size only: --seed replays a case.
                rng r = {o->seed * 0x100000001b3ull ^ ((uint64_t)(i + 1) << 40) ^
                         ((uint64_t)s << 32) ^ (uint64_t)k};
                d->make(c, s, &r);
                case_result *cr = &res[n];
                if (o->perf) {
                    side T;
                    st = side_init(&T, test, c);
                    if (st == SG_OK) {
                        case_timing ct = {test, c, T.d};
                        memset(cr, 0, sizeof *cr);
                        cr->c = c;
                        cr->us = time_us(test, dev, timed_case, &ct);
                        fprintf(out, "%-14s %-6s %-44.44s %10.1f %9.1f %9.3f\n", d->name,
                                size_names[s], c->shape, cr->us, c->bytes / cr->us * 1e-3,
                                c->flops / cr->us * 1e-6);
                    }
                    side_free(&T, c);
                } else {
                    st = run_case(c, test, dev, ref, cr);
                    if (st == SG_OK) {
                        print_result(out, cr);
                        failed += !cr->pass;
                    }
                }
                fflush(out);
                if (st == SG_OK) n++;
                case_free(c);
            }
        }
    }
    gemm_perf_row gp[(N_QWEN3_WEIGHTS + 1) * N_PERF_M];
    inv_row inv[N_QWEN3_WEIGHTS + 1];
    int n_gp = 0, n_inv = 0;
    if (st == SG_OK && o->perf && (!o->op || strcmp(o->op, "gemm") == 0))
        st = perf_gemm(test, dev, o->seed, out, gp, &n_gp, inv, &n_inv);
    if (st == SG_OK) {
        if (!o->perf)
            fprintf(out, "\n%d case(s), %d failed (replay with --seed %llu)\n", n, failed,
                    (unsigned long long)o->seed);
        st = write_reports(o, dev, res, n, gp, n_gp, inv, n_inv, failed == 0);
    }
    free(res);
    free(cases);
    if (st != SG_OK) return st;
    return failed ? sg_fail(SG_EXIT_FAIL, "ops: %d case(s) failed", failed) : SG_OK;
}
