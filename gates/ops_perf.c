// gates/ops_perf.c: perf mode of the bring-up tool (ops_internal.h): the median time of a case on
// the backend under test, and the GEMM table (ops.h): the Qwen3-4B gemm shapes (and lm_head) at
// the M of the table, ours against the vendor library's (cuBLAS), with the row invariance across M
// of both and the GEMM goal by M (ops_gemm_goal); ops_gemm_table_parse selects its weights and M
// values.
//
// Contract: needs the device's timers (ops_run refuses perf mode without them); a NULL
// vendor_gemm leaves the vendor columns at zero and its invariance "(no vendor library)".
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ops_internal.h"

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

#define GEMM_COPIES 32
#define GEMM_TRAIN_BYTES ((size_t)256 << 20) // over four times the H200's L2

typedef struct {
    const sg_backend *be;
    const ops_device *dev;
    bf16 *x;
    bf16 *w[GEMM_COPIES]; // copies of the weight, at least GEMM_TRAIN_BYTES together
    int n_w;
    void *y;
    int M, K, N, f32, vendor;
} gemm_timing;

static void gemm_once(const gemm_timing *g, const bf16 *w) {
    if (g->vendor)
        g->dev->vendor_gemm(g->be, g->x, g->M, g->K, w, g->N, g->y, g->f32);
    else
        g->be->gemm(g->be->ctx, g->x, g->M, g->K, w, g->N, g->y, g->f32);
}

// One sample: a train of launches back to back, one per copy of the weight, as a decode step
// issues them (so launch latency overlaps, and the copies together are well past the L2);
// the caller divides by n_w.
static void timed_gemm(void *arg, int rep) {
    (void)rep;
    gemm_timing *g = arg;
    for (int k = 0; k < g->n_w; k++) gemm_once(g, g->w[k]);
}

static const int perf_M[] = {1, 8, 16, 32, 64, 128, 512, 2048};
_Static_assert(sizeof perf_M / sizeof perf_M[0] == N_PERF_M, "N_PERF_M is perf_M's length");
_Static_assert(OPS_GEMM_MAX_ROWS == N_PERF_M, "a selection holds at most the table's M values");
#define PERF_MAX_M 2048 // x and y are allocated for this many rows

// The table's weights: Qwen3-4B's bf16 products, then the head (fp32 logits).
typedef struct {
    const char *name;
    int N, K, f32;
} perf_shape;

static perf_shape perf_weight(int i) {
    if (i < N_QWEN3_WEIGHTS)
        return (perf_shape){ops_qwen3_weights[i].name, ops_qwen3_weights[i].N,
                            ops_qwen3_weights[i].K, 0};
    return (perf_shape){"lm_head", 151936, 2560, 1};
}

// The next item of the comma-separated `whole` (option `opt`) at *at into item (NUL-terminated);
// *at moves past it, to NULL after the last. SG_EXIT_USAGE for an empty or overlong item.
static int next_item(const char **at, const char *opt, const char *whole, char *item,
                     size_t cap) {
    const char *end = strchr(*at, ',');
    size_t len = end ? (size_t)(end - *at) : strlen(*at);
    if (len == 0 || len >= cap)
        return sg_fail(SG_EXIT_USAGE, "ops: %s \"%s\": an empty or overlong item in the list",
                       opt, whole);
    memcpy(item, *at, len);
    item[len] = '\0';
    *at = end ? end + 1 : NULL;
    return SG_OK;
}

int ops_gemm_table_parse(const char *weights, const char *rows, ops_gemm_table *t) {
    memset(t, 0, sizeof *t);
    char names[256] = "", item[64];
    for (int i = 0; i < N_PERF_WEIGHTS; i++) {
        size_t len = strlen(names);
        snprintf(names + len, sizeof names - len, "%s%s", i ? ", " : "", perf_weight(i).name);
    }
    if (!weights) t->weights = (1u << N_PERF_WEIGHTS) - 1;
    for (const char *w = weights; w;) {
        SG_TRY(next_item(&w, "--weight", weights, item, sizeof item));
        int found = -1;
        for (int i = 0; i < N_PERF_WEIGHTS && found < 0; i++)
            if (strcmp(item, perf_weight(i).name) == 0) found = i;
        if (found < 0)
            return sg_fail(SG_EXIT_USAGE, "ops: --weight %s: not a weight of the GEMM table (%s)",
                           item, names);
        t->weights |= 1u << found;
    }
    t->invariance = rows == NULL;
    if (!rows) {
        memcpy(t->rows, perf_M, sizeof perf_M);
        t->n_rows = N_PERF_M;
        return SG_OK;
    }
    for (const char *m = rows; m;) {
        SG_TRY(next_item(&m, "--rows", rows, item, sizeof item));
        char *end;
        errno = 0;
        long v = strtol(item, &end, 10);
        if (errno || *end || v < 1 || v > PERF_MAX_M)
            return sg_fail(SG_EXIT_USAGE, "ops: --rows %s: M must be an integer from 1 to %d",
                           item, PERF_MAX_M);
        if (t->n_rows == OPS_GEMM_MAX_ROWS)
            return sg_fail(SG_EXIT_USAGE, "ops: --rows %s: at most %d values", rows,
                           OPS_GEMM_MAX_ROWS);
        for (int i = 0; i < t->n_rows; i++)
            if (t->rows[i] == v)
                return sg_fail(SG_EXIT_USAGE, "ops: --rows %s: M %ld is given twice", rows, v);
        t->rows[t->n_rows++] = (int)v;
    }
    return SG_OK;
}

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
        gemm_once(g, g->w[0]);
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

int ops_gemm_goal(const gemm_perf_row *rows, int n_rows, gemm_goal_row *goal) {
    int n = 0;
    for (int i = 0; i < n_rows; i++) {
        if (rows[i].vendor_us <= 0) continue;
        int g = 0;
        while (g < n && goal[g].M != rows[i].M) g++;
        if (g == n) goal[n++] = (gemm_goal_row){.M = rows[i].M};
        gemm_goal_row *r = &goal[g];
        const double ratio = rows[i].us / rows[i].vendor_us;
        r->shapes++;
        if (ratio > r->worst) r->worst = ratio;
        if (ratio <= GEMM_GOAL_RATIO)
            r->within++;
        else
            r->beyond[r->n_beyond++] = i;
    }
    return n;
}

// The goal lines under the GEMM table: per M, the shapes within the ratio and those beyond it.
static void print_gemm_goal(FILE *out, const char *vendor, const gemm_perf_row *rows,
                            int n_rows) {
    gemm_goal_row goal[OPS_GEMM_MAX_ROWS];
    const int n = ops_gemm_goal(rows, n_rows, goal);
    fprintf(out, "\nGEMM goal (bench/README.md): ours within %.0f %% of %s's time, by M:\n",
            (GEMM_GOAL_RATIO - 1) * 100, vendor);
    for (int g = 0; g < n; g++) {
        fprintf(out, "  M=%-5d %d of %d shapes, worst %.2fx", goal[g].M, goal[g].within,
                goal[g].shapes, goal[g].worst);
        for (int b = 0; b < goal[g].n_beyond; b++) {
            const gemm_perf_row *r = &rows[goal[g].beyond[b]];
            fprintf(out, "%s%s %.2fx", b ? ", " : "; beyond: ", r->weight, r->us / r->vendor_us);
        }
        fputc('\n', out);
    }
}

int ops_perf_gemm(const sg_backend *be, const ops_device *dev, uint64_t seed,
                  const ops_gemm_table *t, FILE *out, gemm_perf_row *rows, int *n_rows,
                  inv_row *inv, int *n_inv) {
    fprintf(out,
            "\ngemm (Qwen3-4B and DSpark shapes; TFLOP/s = 2MNK/t, GB/s = weight bytes/t; %s = "
            "the same shape through %s)\n",
            dev->vendor_gemm ? dev->vendor_name : "vendor",
            dev->vendor_gemm ? dev->vendor_name : "none");
    fprintf(out, "%-10s %6s %6s %7s %10s %8s %8s %10s %8s\n", "weight", "M", "K", "N", "us",
            "TFLOP/s", "GB/s", "vendor_us", "TFLOP/s");
    for (int wi = 0; wi < N_PERF_WEIGHTS; wi++) {
        if (!((t->weights >> wi) & 1)) continue;
        const perf_shape ws = perf_weight(wi);
        int N = ws.N, K = ws.K, Mmax = PERF_MAX_M;
        rng r = {seed ^ 0x5eedf00dull ^ ((uint64_t)(wi + 1) << 48)}; // by seed and weight alone
        size_t wbytes = (size_t)N * K * 2;
        gemm_timing g = {.be = be, .dev = dev, .K = K, .N = N, .f32 = ws.f32};
        g.n_w = (int)((GEMM_TRAIN_BYTES + wbytes - 1) / wbytes);
        if (g.n_w > GEMM_COPIES) g.n_w = GEMM_COPIES;
        bf16 *hw = sg_calloc((size_t)N * K, sizeof *hw);
        ops_fill_bf16(hw, (size_t)N * K, 0.05, &r);
        int st = SG_OK;
        for (int k = 0; k < g.n_w && st == SG_OK; k++)
            st = be_alloc_upload(be, hw, wbytes, "w", (void **)&g.w[k]);
        free(hw);
        bf16 *hx = sg_calloc((size_t)Mmax * K, sizeof *hx);
        ops_fill_bf16(hx, (size_t)Mmax * K, 1.0, &r);
        if (st == SG_OK) st = be_alloc_upload(be, hx, (size_t)Mmax * K * 2, "x", (void **)&g.x);
        free(hx);
        if (st == SG_OK) st = be_alloc(be, (size_t)Mmax * N * (g.f32 ? 4 : 2), "y", &g.y);
        if (st != SG_OK) {
            for (int k = 0; k < g.n_w; k++) be->free(be->ctx, g.w[k]);
            be->free(be->ctx, g.x);
            return st;
        }
        for (int mi = 0; mi < t->n_rows; mi++) {
            gemm_perf_row *row = &rows[(*n_rows)++];
            memset(row, 0, sizeof *row);
            snprintf(row->weight, sizeof row->weight, "%s", ws.name);
            row->M = g.M = t->rows[mi];
            row->K = K;
            row->N = N;
            g.vendor = 0;
            row->us = time_us(be, dev, timed_gemm, &g) / g.n_w;
            double flop = 2.0 * g.M * (double)N * K;
            row->tflops = flop / row->us * 1e-6;
            row->gbs = (double)wbytes / row->us * 1e-3;
            if (dev->vendor_gemm) {
                g.vendor = 1;
                row->vendor_us = time_us(be, dev, timed_gemm, &g) / g.n_w;
                row->vendor_tflops = flop / row->vendor_us * 1e-6;
            }
            fprintf(out, "%-10s %6d %6d %7d %10.1f %8.2f %8.0f %10.1f %8.2f\n", row->weight, g.M, K,
                    N, row->us, row->tflops, row->gbs, row->vendor_us, row->vendor_tflops);
        }
        if (t->invariance) {
            inv_row *iv = &inv[(*n_inv)++];
            snprintf(iv->weight, sizeof iv->weight, "%s", ws.name);
            g.vendor = 0;
            row_invariance(&g, iv->ours, sizeof iv->ours);
            if (dev->vendor_gemm) {
                g.vendor = 1;
                row_invariance(&g, iv->vendor, sizeof iv->vendor);
            } else {
                snprintf(iv->vendor, sizeof iv->vendor, "(no vendor library)");
            }
        }
        for (int k = 0; k < g.n_w; k++) be->free(be->ctx, g.w[k]);
        be->free(be->ctx, g.x);
        be->free(be->ctx, g.y);
    }
    if (dev->vendor_gemm) print_gemm_goal(out, dev->vendor_name, rows, *n_rows);
    if (!t->invariance) return SG_OK;
    fprintf(out,
            "\nrow invariance across M in {1..2048} (rows two consecutive M share, bitwise):\n");
    for (int i = 0; i < *n_inv; i++)
        fprintf(out, "  %-10s ours: %-26s %s: %s\n", inv[i].weight,
                inv[i].ours[0] ? inv[i].ours : "invariant",
                dev->vendor_gemm ? dev->vendor_name : "vendor",
                inv[i].vendor[0] ? inv[i].vendor : "invariant");
    return SG_OK;
}

int ops_perf_case(const ops_case *c, const sg_backend *test, const ops_device *dev,
                  case_result *res) {
    side T;
    int st = ops_side_init(&T, test, c);
    if (st == SG_OK) {
        case_timing ct = {test, c, T.d};
        memset(res, 0, sizeof *res);
        res->c = c;
        res->us = time_us(test, dev, timed_case, &ct);
    }
    ops_side_free(&T, c);
    return st;
}
