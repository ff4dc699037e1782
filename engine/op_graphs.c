// engine/op_graphs.c: the graph-replay wrapper of op_graphs.h: op records, the log, its flush
// (eager, capture or launch) and the cache of logs and graphs.
//
// A record is a uint64 op id followed by the op's argument struct. Every field of every argument
// struct is 8 bytes wide (pointers, int64_t, size_t, double), so the structs have no padding and
// the log bytes are exactly the arguments: equal bytes mean an equal call. Floats are kept as
// double (exact both ways). The log is one growing buffer (no allocation per op).
#include "op_graphs.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8 && sizeof(double) == 8,
               "op records assume 8-byte pointers, sizes and doubles (no struct padding)");

enum {
    OP_COPY,
    OP_EMBED,
    OP_GEMM,
    OP_GEMM_GROUP,
    OP_RMSNORM,
    OP_ADD_RMSNORM,
    OP_QK_NORM_ROPE_STORE,
    OP_ATTENTION,
    OP_GEMM_SWIGLU,
    OP_ADD,
    OP_ARGMAX,
    OP_TOP2,
    OP_MARKOV_STEP,
    OP_LADDER_FORCE,
    OP_PAGE_COPY,
    OP_COPY_ROWS,
    OP_DIGEST,
    OP_COUNT
};

typedef struct {
    int64_t page_size, n_kv_heads, head_dim;
    const int32_t *page_tables;
    int64_t table_stride;
} r_paging;

typedef struct { void *dst; const void *src; size_t bytes; } r_copy;
typedef struct {
    const bf16 *table; int64_t H; const int32_t *ids; int64_t rows; bf16 *out;
} r_embed;
typedef struct {
    const bf16 *x; int64_t M, K; const bf16 *w; int64_t N; void *y; int64_t out_f32;
} r_gemm;
typedef struct { // unused entries NULL / 0 (records are compared bytewise)
    const bf16 *x; int64_t M, K, n; const bf16 *w[BE_GEMM_GROUP_MAX]; int64_t N[BE_GEMM_GROUP_MAX];
    bf16 *y[BE_GEMM_GROUP_MAX];
} r_gemm_group;
typedef struct { const bf16 *x; int64_t M, D; const bf16 *w; double eps; bf16 *y; } r_rmsnorm;
typedef struct {
    bf16 *h; const bf16 *x; int64_t M, D; const bf16 *w; double eps; bf16 *y;
} r_add_rmsnorm;
typedef struct {
    r_paging pg; bf16 *k_pages, *v_pages; const int32_t *row_table, *pos; int64_t rows;
    bf16 *q; int64_t nq, n_heads; const bf16 *q_norm; bf16 *k; const bf16 *v, *k_norm;
    double eps; const bf16 *cos, *sin;
} r_qk_norm_rope_store;
typedef struct {
    r_paging pg; const bf16 *k_pages, *v_pages; const int32_t *row_table, *n_keys; const bf16 *q;
    int64_t rows, n_heads; bf16 *out;
} r_attention;
typedef struct {
    const bf16 *x; int64_t M, K; const bf16 *w_gate, *w_up; int64_t N; bf16 *out;
} r_gemm_swiglu;
typedef struct { bf16 *h; const bf16 *x; size_t n; } r_add;
typedef struct { const float *x; int64_t rows, n; size_t row_stride; int32_t *ids; } r_argmax;
typedef struct {
    const float *x; int64_t rows, n; size_t row_stride; int32_t *ids; float *vals;
} r_top2;
typedef struct {
    const float *U; int64_t V; const bf16 *w1, *w2; int64_t r, rows;
    const int32_t *chain_row, *u_row, *start, *limit; int64_t s; int32_t *tokens;
    int64_t tok_stride; int32_t *top_ids; float *top_vals;
} r_markov_step;
typedef struct {
    int32_t *tokens; int64_t tok_stride; const int32_t *top_ids; int64_t rows;
    const int32_t *chain_row, *a_row, *branch;
} r_ladder_force;
typedef struct {
    void *base; int64_t n_groups; size_t group_stride, page_bytes; const int32_t *src, *dst;
    int64_t n;
} r_page_copy;
typedef struct {
    void *dst; size_t dst_stride; const int32_t *dst_idx; const void *src; size_t src_stride;
    const int32_t *src_idx; int64_t rows; size_t row_bytes;
} r_copy_rows;
typedef struct {
    const void *x; int64_t rows, n, elem_bytes; size_t row_stride; uint64_t *digests;
} r_digest;

static const size_t rec_bytes[OP_COUNT] = {
    [OP_COPY] = sizeof(r_copy), [OP_EMBED] = sizeof(r_embed), [OP_GEMM] = sizeof(r_gemm),
    [OP_GEMM_GROUP] = sizeof(r_gemm_group),
    [OP_RMSNORM] = sizeof(r_rmsnorm), [OP_ADD_RMSNORM] = sizeof(r_add_rmsnorm),
    [OP_QK_NORM_ROPE_STORE] = sizeof(r_qk_norm_rope_store), [OP_ATTENTION] = sizeof(r_attention),
    [OP_GEMM_SWIGLU] = sizeof(r_gemm_swiglu), [OP_ADD] = sizeof(r_add),
    [OP_ARGMAX] = sizeof(r_argmax),
    [OP_TOP2] = sizeof(r_top2), [OP_MARKOV_STEP] = sizeof(r_markov_step),
    [OP_LADDER_FORCE] = sizeof(r_ladder_force), [OP_PAGE_COPY] = sizeof(r_page_copy),
    [OP_COPY_ROWS] = sizeof(r_copy_rows), [OP_DIGEST] = sizeof(r_digest),
};

// A growing byte buffer: the pending log, or a cached log.
typedef struct {
    unsigned char *p;
    size_t n, cap;
    int ops;
} og_log;

typedef struct {
    og_log log;
    uint64_t hash;
    void *graph;   // NULL: seen once (ran eagerly)
    uint64_t used; // LRU tick
} og_entry;

typedef struct {
    sg_backend be; // the wrapper's table; be.ctx points here
    const sg_backend *inner;
    int can_capture;
    og_log log; // recorded, not yet run
    og_entry cache[OP_GRAPHS_CACHE];
    int n_cache;
    uint64_t tick;
    op_graphs_stats st;
} og;

static void log_reserve(og_log *l, size_t more) {
    if (l->n + more <= l->cap) return;
    size_t cap = l->cap ? 2 * l->cap : 4096;
    while (cap < l->n + more) cap *= 2;
    unsigned char *p = sg_calloc(cap, 1);
    if (l->n) memcpy(p, l->p, l->n);
    free(l->p);
    l->p = p;
    l->cap = cap;
}

// Appends a record of `op` and returns its argument struct, to be filled by the caller.
static void *push(og *w, int op) {
    size_t b = rec_bytes[op];
    log_reserve(&w->log, 8 + b);
    uint64_t id = (uint64_t)op;
    memcpy(w->log.p + w->log.n, &id, 8);
    void *args = w->log.p + w->log.n + 8;
    w->log.n += 8 + b;
    w->log.ops++;
    w->st.ops++;
    return args;
}

static size_t rec_at(const unsigned char *p, size_t left, int *op) {
    uint64_t id;
    SG_CHECK(left >= 8, "truncated op log");
    memcpy(&id, p, 8);
    SG_CHECK(id < OP_COUNT && left >= 8 + rec_bytes[id], "bad op record %llu",
             (unsigned long long)id);
    *op = (int)id;
    return 8 + rec_bytes[id];
}

static be_paging paging(const r_paging *g) {
    return (be_paging){.page_size = (int)g->page_size, .n_kv_heads = (int)g->n_kv_heads,
                       .head_dim = (int)g->head_dim, .page_tables = g->page_tables,
                       .table_stride = (int)g->table_stride};
}

static r_paging paging_rec(const be_paging *g) {
    return (r_paging){.page_size = g->page_size, .n_kv_heads = g->n_kv_heads,
                      .head_dim = g->head_dim, .page_tables = g->page_tables,
                      .table_stride = g->table_stride};
}

// Issues one record's op on the inner backend.
static void run_rec(const sg_backend *b, int op, const void *a) {
    void *c = b->ctx;
    switch (op) {
    case OP_COPY: {
        const r_copy *r = a;
        b->copy(c, r->dst, r->src, r->bytes);
        break;
    }
    case OP_EMBED: {
        const r_embed *r = a;
        b->embed(c, r->table, (int)r->H, r->ids, (int)r->rows, r->out);
        break;
    }
    case OP_GEMM: {
        const r_gemm *r = a;
        b->gemm(c, r->x, (int)r->M, (int)r->K, r->w, (int)r->N, r->y, (int)r->out_f32);
        break;
    }
    case OP_GEMM_GROUP: {
        const r_gemm_group *r = a;
        int N[BE_GEMM_GROUP_MAX];
        for (int p = 0; p < r->n; p++) N[p] = (int)r->N[p];
        b->gemm_group(c, r->x, (int)r->M, (int)r->K, (int)r->n, r->w, N, r->y);
        break;
    }
    case OP_RMSNORM: {
        const r_rmsnorm *r = a;
        b->rmsnorm(c, r->x, (int)r->M, (int)r->D, r->w, (float)r->eps, r->y);
        break;
    }
    case OP_ADD_RMSNORM: {
        const r_add_rmsnorm *r = a;
        b->add_rmsnorm(c, r->h, r->x, (int)r->M, (int)r->D, r->w, (float)r->eps, r->y);
        break;
    }
    case OP_QK_NORM_ROPE_STORE: {
        const r_qk_norm_rope_store *r = a;
        be_paging pg = paging(&r->pg);
        b->qk_norm_rope_store(c, &pg, r->k_pages, r->v_pages, r->row_table, r->pos, (int)r->rows,
                              r->q, (int)r->nq, (int)r->n_heads, r->q_norm, r->k, r->v,
                              r->k_norm, (float)r->eps, r->cos, r->sin);
        break;
    }
    case OP_ATTENTION: {
        const r_attention *r = a;
        be_paging pg = paging(&r->pg);
        b->attention(c, &pg, r->k_pages, r->v_pages, r->row_table, r->n_keys, r->q, (int)r->rows,
                     (int)r->n_heads, r->out);
        break;
    }
    case OP_GEMM_SWIGLU: {
        const r_gemm_swiglu *r = a;
        b->gemm_swiglu(c, r->x, (int)r->M, (int)r->K, r->w_gate, r->w_up, (int)r->N, r->out);
        break;
    }
    case OP_ADD: {
        const r_add *r = a;
        b->add(c, r->h, r->x, r->n);
        break;
    }
    case OP_ARGMAX: {
        const r_argmax *r = a;
        b->argmax(c, r->x, (int)r->rows, (int)r->n, r->row_stride, r->ids);
        break;
    }
    case OP_TOP2: {
        const r_top2 *r = a;
        b->top2(c, r->x, (int)r->rows, (int)r->n, r->row_stride, r->ids, r->vals);
        break;
    }
    case OP_MARKOV_STEP: {
        const r_markov_step *r = a;
        b->markov_step(c, r->U, (int)r->V, r->w1, r->w2, (int)r->r, (int)r->rows, r->chain_row,
                       r->u_row, r->start, r->limit, (int)r->s, r->tokens, (int)r->tok_stride,
                       r->top_ids, r->top_vals);
        break;
    }
    case OP_LADDER_FORCE: {
        const r_ladder_force *r = a;
        b->ladder_force(c, r->tokens, (int)r->tok_stride, r->top_ids, (int)r->rows, r->chain_row,
                        r->a_row, r->branch);
        break;
    }
    case OP_PAGE_COPY: {
        const r_page_copy *r = a;
        b->page_copy(c, r->base, (int)r->n_groups, r->group_stride, r->page_bytes, r->src, r->dst,
                     (int)r->n);
        break;
    }
    case OP_COPY_ROWS: {
        const r_copy_rows *r = a;
        b->copy_rows(c, r->dst, r->dst_stride, r->dst_idx, r->src, r->src_stride, r->src_idx,
                     (int)r->rows, r->row_bytes);
        break;
    }
    case OP_DIGEST: {
        const r_digest *r = a;
        b->digest(c, r->x, (int)r->rows, (int)r->n, (int)r->elem_bytes, r->row_stride,
                  r->digests);
        break;
    }
    default:
        SG_CHECK(0, "unknown op record %d", op);
    }
}

static void run_log(const sg_backend *b, const og_log *l) {
    for (size_t at = 0; at < l->n;) {
        int op;
        size_t len = rec_at(l->p + at, l->n - at, &op);
        run_rec(b, op, l->p + at + 8);
        at += len;
    }
}

// FNV-1a over 64-bit words (the log is a whole number of words).
static uint64_t log_hash(const og_log *l) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < l->n; i += 8) {
        uint64_t v;
        memcpy(&v, l->p + i, 8);
        h = (h ^ v) * 0x100000001b3ULL;
    }
    return h;
}

// The cache slot for a new log: a free one, else the least recently used log seen once, else the
// least recently used graph (destroyed).
static og_entry *make_room(og *w) {
    if (w->n_cache < OP_GRAPHS_CACHE) return &w->cache[w->n_cache++];
    og_entry *once = NULL, *graph = NULL;
    for (int i = 0; i < w->n_cache; i++) {
        og_entry *e = &w->cache[i];
        og_entry **best = e->graph ? &graph : &once;
        if (!*best || e->used < (*best)->used) *best = e;
    }
    if (once) return once;
    w->inner->graph_destroy(w->inner->ctx, graph->graph);
    graph->graph = NULL;
    w->st.evictions++;
    return graph;
}

static void flush(og *w) {
    og_log *l = &w->log;
    if (!l->ops) return;
    w->st.flushes++;
    if (!w->can_capture || l->ops < OP_GRAPHS_MIN_OPS) {
        run_log(w->inner, l);
        w->st.eager_flushes++;
    } else {
        uint64_t h = log_hash(l);
        og_entry *e = NULL;
        for (int i = 0; i < w->n_cache && !e; i++) {
            og_entry *c = &w->cache[i];
            if (c->hash == h && c->log.n == l->n && memcmp(c->log.p, l->p, l->n) == 0) e = c;
        }
        const sg_backend *in = w->inner;
        if (!e) { // first seen: run eagerly (it sizes any scratch the ops need), remember it
            e = make_room(w);
            e->hash = h;
            e->log.n = 0;
            log_reserve(&e->log, l->n);
            memcpy(e->log.p, l->p, l->n);
            e->log.n = l->n;
            e->log.ops = l->ops;
            run_log(in, l);
            w->st.eager_flushes++;
        } else {
            if (!e->graph) { // seen before: capture it
                in->capture_begin(in->ctx);
                run_log(in, l);
                e->graph = in->capture_end(in->ctx);
                SG_CHECK(e->graph, "the %s backend captured no graph", in->name);
                w->st.captures++;
            }
            in->graph_launch(in->ctx, e->graph);
            w->st.launches++;
            w->st.graph_ops += l->ops;
        }
        e->used = ++w->tick;
    }
    l->n = 0;
    l->ops = 0;
}

// ---- memory: flush first, then the inner backend ----

static void *og_alloc(void *ctx, size_t bytes) {
    og *w = ctx;
    flush(w);
    return w->inner->alloc(w->inner->ctx, bytes);
}

static void og_free(void *ctx, void *p) {
    og *w = ctx;
    flush(w);
    w->inner->free(w->inner->ctx, p);
}

static void og_upload(void *ctx, void *dst, const void *src, size_t bytes) {
    og *w = ctx;
    flush(w);
    w->inner->upload(w->inner->ctx, dst, src, bytes);
}

static void og_download(void *ctx, void *dst, const void *src, size_t bytes) {
    og *w = ctx;
    flush(w);
    w->inner->download(w->inner->ctx, dst, src, bytes);
}

// ---- recorded ops ----

static void og_copy(void *ctx, void *dst, const void *src, size_t bytes) {
    *(r_copy *)push(ctx, OP_COPY) = (r_copy){dst, src, bytes};
}

static void og_embed(void *ctx, const bf16 *table, int H, const int32_t *ids, int rows,
                     bf16 *out) {
    *(r_embed *)push(ctx, OP_EMBED) = (r_embed){table, H, ids, rows, out};
}

static void og_gemm(void *ctx, const bf16 *x, int M, int K, const bf16 *w, int N, void *y,
                    int out_f32) {
    *(r_gemm *)push(ctx, OP_GEMM) = (r_gemm){x, M, K, w, N, y, out_f32};
}

static void og_gemm_group(void *ctx, const bf16 *x, int M, int K, int n, const bf16 *const *w,
                          const int *N, bf16 *const *y) {
    SG_CHECK(n >= 1 && n <= BE_GEMM_GROUP_MAX, "gemm group of %d products", n);
    r_gemm_group r = {x, M, K, n, {NULL}, {0}, {NULL}};
    for (int p = 0; p < n; p++) {
        r.w[p] = w[p];
        r.N[p] = N[p];
        r.y[p] = y[p];
    }
    *(r_gemm_group *)push(ctx, OP_GEMM_GROUP) = r;
}

static void og_rmsnorm(void *ctx, const bf16 *x, int M, int D, const bf16 *w, float eps,
                       bf16 *y) {
    *(r_rmsnorm *)push(ctx, OP_RMSNORM) = (r_rmsnorm){x, M, D, w, eps, y};
}

static void og_add_rmsnorm(void *ctx, bf16 *h, const bf16 *x, int M, int D, const bf16 *w,
                           float eps, bf16 *y) {
    *(r_add_rmsnorm *)push(ctx, OP_ADD_RMSNORM) = (r_add_rmsnorm){h, x, M, D, w, eps, y};
}

static void og_qk_norm_rope_store(void *ctx, const be_paging *pg, bf16 *k_pages,
                                  bf16 *v_pages, const int32_t *row_table, const int32_t *pos,
                                  int rows, bf16 *q, int nq, int n_heads, const bf16 *q_norm,
                                  bf16 *k, const bf16 *v, const bf16 *k_norm, float eps,
                                  const bf16 *cos, const bf16 *sin) {
    *(r_qk_norm_rope_store *)push(ctx, OP_QK_NORM_ROPE_STORE) = (r_qk_norm_rope_store){
        paging_rec(pg), k_pages, v_pages, row_table, pos, rows, q, nq, n_heads, q_norm, k, v,
        k_norm, eps, cos, sin};
}

static void og_attention(void *ctx, const be_paging *pg, const bf16 *k_pages,
                         const bf16 *v_pages, const int32_t *row_table, const int32_t *n_keys,
                         const bf16 *q, int rows, int n_heads, bf16 *out) {
    *(r_attention *)push(ctx, OP_ATTENTION) =
        (r_attention){paging_rec(pg), k_pages, v_pages, row_table, n_keys, q, rows, n_heads, out};
}

static void og_gemm_swiglu(void *ctx, const bf16 *x, int M, int K, const bf16 *w_gate,
                           const bf16 *w_up, int N, bf16 *out) {
    *(r_gemm_swiglu *)push(ctx, OP_GEMM_SWIGLU) = (r_gemm_swiglu){x, M, K, w_gate, w_up, N, out};
}

static void og_add(void *ctx, bf16 *h, const bf16 *x, size_t n) {
    *(r_add *)push(ctx, OP_ADD) = (r_add){h, x, n};
}

static void og_argmax(void *ctx, const float *x, int rows, int n, size_t row_stride,
                      int32_t *ids) {
    *(r_argmax *)push(ctx, OP_ARGMAX) = (r_argmax){x, rows, n, row_stride, ids};
}

static void og_top2(void *ctx, const float *x, int rows, int n, size_t row_stride, int32_t *ids,
                    float *vals) {
    *(r_top2 *)push(ctx, OP_TOP2) = (r_top2){x, rows, n, row_stride, ids, vals};
}

static void og_markov_step(void *ctx, const float *U, int V, const bf16 *w1, const bf16 *w2,
                           int r, int rows, const int32_t *chain_row, const int32_t *u_row,
                           const int32_t *start, const int32_t *limit, int s, int32_t *tokens,
                           int tok_stride, int32_t *top_ids, float *top_vals) {
    *(r_markov_step *)push(ctx, OP_MARKOV_STEP) =
        (r_markov_step){U, V, w1, w2, r, rows, chain_row, u_row, start, limit, s, tokens,
                        tok_stride, top_ids, top_vals};
}

static void og_ladder_force(void *ctx, int32_t *tokens, int tok_stride, const int32_t *top_ids,
                            int rows, const int32_t *chain_row, const int32_t *a_row,
                            const int32_t *branch) {
    *(r_ladder_force *)push(ctx, OP_LADDER_FORCE) =
        (r_ladder_force){tokens, tok_stride, top_ids, rows, chain_row, a_row, branch};
}

static void og_page_copy(void *ctx, void *base, int n_groups, size_t group_stride,
                         size_t page_bytes, const int32_t *src, const int32_t *dst, int n) {
    *(r_page_copy *)push(ctx, OP_PAGE_COPY) =
        (r_page_copy){base, n_groups, group_stride, page_bytes, src, dst, n};
}

static void og_copy_rows(void *ctx, void *dst, size_t dst_stride, const int32_t *dst_idx,
                         const void *src, size_t src_stride, const int32_t *src_idx, int rows,
                         size_t row_bytes) {
    *(r_copy_rows *)push(ctx, OP_COPY_ROWS) =
        (r_copy_rows){dst, dst_stride, dst_idx, src, src_stride, src_idx, rows, row_bytes};
}

static void og_digest(void *ctx, const void *x, int rows, int n, int elem_bytes,
                      size_t row_stride, uint64_t *digests) {
    *(r_digest *)push(ctx, OP_DIGEST) = (r_digest){x, rows, n, elem_bytes, row_stride, digests};
}

static void og_destroy(sg_backend *be) {
    og *w = be->ctx;
    flush(w);
    for (int i = 0; i < w->n_cache; i++) {
        if (w->cache[i].graph) w->inner->graph_destroy(w->inner->ctx, w->cache[i].graph);
        free(w->cache[i].log.p);
    }
    free(w->log.p);
    free(w);
}

static og *og_of(const sg_backend *wrapped) {
    SG_CHECK(wrapped->destroy == og_destroy, "the %s backend is not an op_graphs wrapper",
             wrapped->name);
    return wrapped->ctx;
}

int op_graphs_wrap(const sg_backend *inner, sg_backend **out) {
    og *w = sg_calloc(1, sizeof *w);
    w->inner = inner;
    w->can_capture = inner->capture_begin && inner->capture_end && inner->graph_launch &&
                     inner->graph_destroy;
    sg_backend *b = &w->be;
    b->name = inner->name;
    b->ctx = w;
    b->alloc = og_alloc;
    b->free = og_free;
    b->upload = og_upload;
    b->download = og_download;
    b->copy = og_copy;
    b->embed = og_embed;
    b->gemm = og_gemm;
    b->gemm_group = og_gemm_group;
    b->rmsnorm = og_rmsnorm;
    b->add_rmsnorm = og_add_rmsnorm;
    b->qk_norm_rope_store = og_qk_norm_rope_store;
    b->attention = og_attention;
    b->gemm_swiglu = og_gemm_swiglu;
    b->add = og_add;
    b->argmax = og_argmax;
    b->top2 = og_top2;
    b->markov_step = og_markov_step;
    b->ladder_force = og_ladder_force;
    b->page_copy = og_page_copy;
    b->copy_rows = og_copy_rows;
    b->digest = og_digest;
    b->destroy = og_destroy;
    *out = b;
    return SG_OK;
}

void op_graphs_flush(const sg_backend *wrapped) { flush(og_of(wrapped)); }

void op_graphs_stats_of(const sg_backend *wrapped, op_graphs_stats *out) {
    *out = og_of(wrapped)->st;
}

const sg_backend *op_graphs_inner(const sg_backend *wrapped) { return og_of(wrapped)->inner; }

size_t op_graphs_take(const sg_backend *wrapped, void **log) {
    og_log *l = &og_of(wrapped)->log;
    size_t n = l->n;
    *log = NULL;
    if (n) {
        *log = sg_calloc(n, 1);
        memcpy(*log, l->p, n);
    }
    l->n = 0;
    l->ops = 0;
    return n;
}

void op_graphs_put(const sg_backend *wrapped, const void *log, size_t bytes) {
    og *w = og_of(wrapped);
    const unsigned char *p = log;
    for (size_t at = 0; at < bytes;) {
        int op;
        size_t len = rec_at(p + at, bytes - at, &op);
        memcpy(push(w, op), p + at + 8, len - 8);
        at += len;
    }
}
