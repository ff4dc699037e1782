// gates/ops_check.c: one case of the bring-up tool (ops_internal.h) in check mode: its buffers on
// both backends between guard zones, the comparison with the twin (max |Δ|, ULP in the output's
// format, share differing, NMSE, argmax / top-2 agreement of logits, the first bad element) and
// the bitwise checks on the backend under test: guard zones, rerun, graph vs eager, each row alone
// vs in the batch, and for gemm every prefix M of the sweep.
//
// The twin comparison follows the op's rule (ops_internal.h): bitwise / ULP for the ops that share
// the twin's reduction order and rounding points; the order rule (|Δ| within tol_rel·S plus the
// output's rounding, worst |Δ|/S reported) for gemm, gemm_logits and markov_step, whose CUDA
// reduction order over K is the backend's own and not the twin's (design.md §3). Under the order
// rule a logits row whose argmax differs within both candidates' allowances is a near tie:
// reported, not failed.
//
// Contract: a case passes when it is within its op's rule against the twin and every bitwise
// check that ran held; the first failure of a bitwise check is kept in the result's why.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ops_internal.h"

// The prefix row counts of the gemm sweep (design.md §3: one K order for every M).
static const int sweep_M[] = {1, 2, 7, 8, 9, 16, 17, 32, 33, 64, 65, 256, 2048};
#define N_SWEEP ((int)(sizeof sweep_M / sizeof sweep_M[0]))

// ---- running a case on one backend ----

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

int ops_side_init(side *s, const sg_backend *be, const ops_case *c) {
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

void ops_side_free(side *s, const ops_case *c) {
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

// Counts of one case's comparison: every compared element, and those under the ULP rule.
typedef struct {
    size_t diff, all, diff_ulp, all_ulp;
    double se, sr; // Σ (test − twin)², Σ twin² over finite pairs (NMSE)
} tally;

// The rounding part of the order rule's allowance of one element (ops_internal.h): extra, plus
// one bf16 ULP of the larger magnitude for a bf16 output (the two backends' sums may round either
// way); the whole allowance adds tol_rel·S.
static double rounding(elem_t t, double extra, double vt, double vr) {
    return extra + (t == E_BF16 ? ops_ulp(fmax(fabs(vt), fabs(vr)), 8) : 0);
}
static double allowance(const ops_case *c, elem_t t, double S, double extra, double vt, double vr) {
    return c->def->tol_rel * S + rounding(t, extra, vt, vr);
}

static void note_first_bad(const ops_case *c, int bi, const unsigned char *t,
                           const unsigned char *r, size_t i, const char *detail, diff_stats *st) {
    const ops_buf *b = &c->buf[bi];
    st->first_bad = (long long)i;
    st->first_buf = bi;
    char a[96], e[96], at[48];
    format_elem(a, sizeof a, t, b->type, i);
    format_elem(e, sizeof e, r, b->type, i);
    if (b->row)
        snprintf(at, sizeof at, "%zu,%zu", i / b->row, i % b->row);
    else
        snprintf(at, sizeof at, "%zu", i);
    snprintf(st->first_text, sizeof st->first_text, "%s[%s]: got %s, twin %s%s", b->name, at, a, e,
             detail);
}

// Compares `count` elements of buffer bi (test t vs twin r) into st. S, extra: the order rule's
// figures per element (NULL: the op's ULP rule).
static void compare_buf(const ops_case *c, int bi, const unsigned char *t, const unsigned char *r,
                        size_t count, const double *S, const double *extra, diff_stats *st,
                        tally *n) {
    const ops_buf *b = &c->buf[bi];
    int fp = b->type == E_BF16 || b->type == E_F32;
    size_t es = esize(b->type);
    for (size_t i = 0; i < count; i++) {
        int same = memcmp(t + i * es, r + i * es, es) == 0;
        double vt = 0, vr = 0, ulp = same ? 0 : INFINITY; // integers and bytes: exact
        if (fp) {
            uint32_t bt, br;
            vt = value_of(t, b->type, i, &bt);
            vr = value_of(r, b->type, i, &br);
            if (isfinite(vt) && isfinite(vr)) {
                n->se += (vt - vr) * (vt - vr);
                n->sr += vr * vr;
                if (!same) {
                    int w = b->type == E_BF16 ? 16 : 32;
                    ulp = fabs(ordered(bt, w) - ordered(br, w));
                    st->max_abs = fmax(st->max_abs, fabs(vt - vr));
                }
            } else if (isnan(vt) && isnan(vr)) {
                ulp = 0; // both NaN: agree (payloads may differ)
            }
        }
        st->max_ulp = fmax(st->max_ulp, ulp);
        n->diff += !same;
        int bad = 0;
        char detail[160] = "";
        if (S && fp) {
            if (!isfinite(ulp)) {
                bad = 1; // a NaN or Inf on one side only
            } else if ((ulp > 0 || S[i] > 0) && !isnan(vt)) {
                double d = fabs(vt - vr), rnd = rounding(b->type, extra[i], vt, vr);
                double a = c->def->tol_rel * S[i] + rnd;
                bad = d > a;
                if (S[i] > 0) {
                    st->worst_rel = fmax(st->worst_rel, d / S[i]);
                    st->worst_excess = fmax(st->worst_excess, fmax(d - rnd, 0.0) / S[i]);
                }
                if (bad)
                    snprintf(detail, sizeof detail,
                             " (|d| %.3g > allowed %.3g = %g*S + rounding, S %.4g)", d, a,
                             c->def->tol_rel, S[i]);
            }
        } else {
            n->all_ulp++;
            n->diff_ulp += !same;
            bad = ulp > c->def->tol_ulp;
        }
        if (bad && st->first_bad < 0) note_first_bad(c, bi, t, r, i, detail, st);
    }
    n->all += count;
}

// Argmax / top-2 agreement of the logits rows of buffer bi. A row whose argmax differs fails,
// except under the order rule when the twin's gap between its argmax and ours is within both
// values' allowances (a near tie: counted and described, random data can tie).
static void compare_logits(const ops_case *c, int bi, const float *t, const float *r,
                           size_t count, const double *S, const double *extra, diff_stats *st) {
    const ops_buf *b = &c->buf[bi];
    int rows = (int)(count / b->row), a_ok = 0, t_ok = 0;
    for (int rr = 0; rr < rows; rr++) {
        size_t o = (size_t)rr * b->row;
        int it[2], ir[2];
        int ft = host_top2(t + o, (int)b->row, it), fr = host_top2(r + o, (int)b->row, ir);
        a_ok += ft == fr && it[0] == ir[0];
        t_ok += ft == fr && it[0] == ir[0] && it[1] == ir[1];
        if (ft == fr && it[0] == ir[0]) continue;
        int tie = 0;
        char what[160] = "a NaN or Inf on one side only";
        if (ft && fr) {
            size_t g = o + (size_t)it[0], w = o + (size_t)ir[0];
            double gap = (double)r[w] - (double)r[g];
            double allow = S ? allowance(c, E_F32, S[w], extra[w], t[w], r[w]) +
                                   allowance(c, E_F32, S[g], extra[g], t[g], r[g])
                             : 0;
            tie = S && gap <= allow;
            snprintf(what, sizeof what, "twin's gap %.3g %s the allowance %.3g", gap,
                     tie ? "within" : "beyond", allow);
        }
        st->near_ties += tie;
        st->argmax_bad += !tie;
        if (!st->argmax_text[0] || (!tie && st->argmax_bad == 1))
            snprintf(st->argmax_text, sizeof st->argmax_text, "%s row %d: argmax %d, twin %d: %s%s",
                     b->name, rr, it[0], ir[0], what, tie ? " (near tie)" : "");
    }
    st->argmax_agree = rows ? (double)a_ok / rows : 1;
    st->top2_agree = rows ? (double)t_ok / rows : 1;
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

int ops_run_case(ops_case *c, const sg_backend *test, const ops_device *dev, const sg_backend *ref,
                 case_result *res) {
    memset(res, 0, sizeof *res);
    res->c = c;
    res->d.first_bad = -1;
    res->d.argmax_agree = res->d.top2_agree = -1;
    res->sweep_ok = res->graph_ok = -1;
    side T, R;
    memset(&R, 0, sizeof R);
    R.be = ref;
    int st = ops_side_init(&T, test, c);
    if (st == SG_OK) st = ops_side_init(&R, ref, c);
    if (st != SG_OK) {
        ops_side_free(&T, c);
        ops_side_free(&R, c);
        return st;
    }
    const op_def *def = c->def;
    int ref_rows = c->ref_rows ? c->ref_rows : c->rows;
    def->run(ref, c, R.d, 0, ref_rows);
    def->run(test, c, T.d, 0, c->rows);
    if (dev && dev->sync) dev->sync(test);

    unsigned char *batch[OPS_MAX_BUF] = {0}, *got[OPS_MAX_BUF] = {0}, *twin[OPS_MAX_BUF] = {0};
    size_t count[OPS_MAX_BUF] = {0};
    // The twin's outputs first (an order rule's bound may depend on the twin's choice).
    for (int i = 0; i < c->nbuf; i++) {
        const ops_buf *b = &c->buf[i];
        if (b->role == R_IN || b->absent) continue;
        count[i] = ref_rows < c->rows && b->row ? (size_t)ref_rows * b->row : b->n;
        twin[i] = side_get(&R, c, i, count[i] * esize(b->type));
    }
    // Guards and the comparison with the twin.
    res->guard_ok = 1;
    res->d.worst_rel = res->d.worst_excess = -1;
    tally n = {0};
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
        double *S = sg_calloc(count[i], sizeof *S), *extra = sg_calloc(count[i], sizeof *extra);
        int order = def->bound && def->bound(c, i, twin, count[i], S, extra);
        compare_buf(c, i, batch[i], twin[i], count[i], order ? S : NULL, order ? extra : NULL,
                    &res->d, &n);
        if (b->logits && b->row)
            compare_logits(c, i, (const float *)batch[i], (const float *)twin[i], count[i],
                           order ? S : NULL, order ? extra : NULL, &res->d);
        free(S);
        free(extra);
    }
    free_outputs(c, twin);
    res->d.share = n.all ? (double)n.diff / (double)n.all : 0;
    res->d.nmse = n.sr > 0 ? n.se / n.sr : n.se;
    double share_ulp = n.all_ulp ? (double)n.diff_ulp / (double)n.all_ulp : 0;
    int close = res->d.first_bad < 0 && share_ulp <= def->tol_share && res->d.argmax_bad == 0;

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
    ops_side_free(&T, c);
    ops_side_free(&R, c);
    res->pass = close && res->guard_ok && res->rerun_ok && res->alone_ok && res->graph_ok != 0 &&
                res->sweep_ok != 0;
    return SG_OK;
}
