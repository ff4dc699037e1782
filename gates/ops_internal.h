// gates/ops_internal.h: what the units of the kernel bring-up tool (ops.h) share; not a public
// header. ops_cases.c: seeded inputs, the case model, every op's make/run pair with its tolerance
// and reason, the op table; ops_check.c: a case on both backends and its checks (twin comparison,
// guard zones, batch invariance, gemm M sweep, graph vs eager, rerun); ops_perf.c: perf mode and
// the vendor library comparison; ops.c: the driver (ops_run), the listings and the reports.
//
// Two rules compare an output buffer with the twin's. The ULP rule (every op's default): each
// element within tol_ulp ULP of the output's format and at most tol_share of the elements
// differing at all (0 and 0: bitwise; integers and bytes are always exact). The order rule, for
// the ops whose reduction order over K is the backend's own (design.md §3: invariance within one
// backend, a tolerance across implementations; today gemm, gemm_logits and markov_step, whose bias
// is a gemm): element e passes when
//   |got − twin| <= tol_rel·S[e] + extra[e] + (bf16 output ? 1 bf16 ULP of max(|got|, |twin|) : 0)
// where S[e] = Σ |terms| of e's reduction and extra[e] allows an intermediate rounding (markov's
// bf16 bias); the op's bound hook fills both per buffer. Two fp32 orders of the same terms differ
// by a small multiple of 2^-24·S, so tol_rel (ops_cases.c) sits far above any order effect and
// far below one term dropped or doubled. The bitwise checks on the backend under test (below) are
// the same for both rules.
//
// A case is an op at one size with its buffers (inputs, outputs, in-place buffers) generated from
// the seed; each buffer lives on both backends between guard zones (GUARD bytes of GUARD_BYTE),
// outputs start as POISON_BYTE, so an element an op never writes shows as a difference and a write
// outside the buffer as a broken guard. run(be, case, device pointers, r0, nr) issues the op for
// rows r0 .. r0+nr-1 of the case only (pointer offsets), which gives the batch-invariance checks:
// each row alone, the batch, and prefixes of it must agree bitwise on the backend under test.
#ifndef SG_GATES_OPS_INTERNAL_H
#define SG_GATES_OPS_INTERNAL_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "ops.h"

#define GUARD 4096
#define GUARD_BYTE 0xA5
#define POISON_BYTE 0xD3
#define OPS_MAX_BUF 12

enum { TINY, SMALL, QWEN3, N_SIZES };

// ---- seeded inputs (ops_cases.c) ----

typedef struct {
    uint64_t s;
} rng;

// n bf16 values uniform in [-a, a) from r: four 16-bit uniforms per draw (large weights are
// filled fast; bf16 keeps 8 bits anyway).
void ops_fill_bf16(bf16 *x, size_t n, double a, rng *r);

// ---- cases (ops_cases.c) ----

typedef enum { E_BF16, E_F32, E_I32, E_U64, E_U8 } elem_t;
typedef enum { R_IN, R_OUT, R_INOUT } role_t;

static inline size_t esize(elem_t t) {
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
    double tol_ulp;     // ULP rule: most ULP allowed against the twin (bf16 or fp32 ULP of the output)
    double tol_share;   // ULP rule: most share of its elements allowed to differ at all
    // The order rule (above): its tol_rel and its bound hook; 0 and NULL for the ULP rule only.
    // bound: for the `count` compared elements of output buffer bi, fills S and extra (zeroed by
    // the caller) and returns 1 when bi is compared by the order rule, 0 for the ULP rule. twin:
    // the twin's downloads of every output buffer (NULL for inputs), for bounds that depend on the
    // twin's choice (markov_step: S at the chosen ids).
    double tol_rel;
    int (*bound)(const ops_case *c, int bi, unsigned char *const *twin, size_t count, double *S,
                 double *extra);
    const char *why; // the rule's reason
    void (*make)(ops_case *c, int size, rng *r);
    void (*run)(const sg_backend *be, const ops_case *c, void *const *d, int r0, int nr);
} op_def;

// One unit in the last place of |x| in a format with `bits` significant bits (8: bf16, 24: fp32);
// 0 for x == 0 (normal range: the rule's values are far from the subnormals).
static inline double ops_ulp(double x, int bits) {
    int e;
    if (x == 0) return 0;
    frexp(fabs(x), &e); // |x| in [2^(e-1), 2^e)
    return ldexp(1.0, e - bits);
}

struct ops_case {
    const op_def *def;
    int size;
    char shape[160];
    int rows;     // rows of the batch
    int ref_rows; // rows run on the reference (a prefix; 0: all)
    int sweep;    // gemm: every prefix M of sweep_M (ops_check.c) up to rows, bitwise
    int p[12];    // op parameters (named per op)
    size_t z[4];  // byte sizes and strides
    float eps;
    double flops, bytes; // one full run, for perf
    ops_buf buf[OPS_MAX_BUF];
    int nbuf;
};

// The op table, in --list order, and its length.
extern const op_def ops_op_defs[];
extern const int ops_n_ops;

// Qwen3-4B's bf16-out products (target and drafter): gemm cases at qwen3 (one per weight) and perf.
typedef struct {
    const char *name;
    int N, K;
} ops_weight;
#define N_QWEN3_WEIGHTS 7
extern const ops_weight ops_qwen3_weights[N_QWEN3_WEIGHTS];

// Number of cases of an op at a size (gemm at qwen3: one per weight).
int ops_n_cases(const op_def *d, int size);
// Frees the host copies of a case's buffers (the case itself is the caller's).
void ops_case_free(ops_case *c);

// ---- running and checking a case (ops_check.c) ----

typedef struct {
    const sg_backend *be;
    void *raw[OPS_MAX_BUF]; // allocation including the guards
    void *d[OPS_MAX_BUF];   // the buffers themselves
} side;

// Allocates and uploads every buffer of c on be between its guards; SG_EXIT_USAGE when the
// backend cannot allocate. ops_side_free also after a failed init.
int ops_side_init(side *s, const sg_backend *be, const ops_case *c);
void ops_side_free(side *s, const ops_case *c);

typedef struct {
    double max_abs, max_ulp, share, nmse; // share: of all compared elements, bitwise
    long long first_bad; // element index in buffer first_buf beyond its rule, -1: none
    int first_buf;
    char first_text[512]; // the first bad element, named, with both values and the rule's figures
    double argmax_agree, top2_agree; // logits only, -1 otherwise
    // Order rule (-1 where no element with S > 0 was compared): the worst |Δ|/S, and the worst
    // (|Δ| − rounding allowance)⁺/S, the figure the rule holds to tol_rel (its headroom).
    double worst_rel, worst_excess;
    // Logits rows whose argmax differs from the twin's: within the order rule's allowance of both
    // candidates (a near tie: reported, passes) or not (fails); the first one described.
    int near_ties, argmax_bad;
    char argmax_text[256];
} diff_stats;

typedef struct {
    const ops_case *c;
    diff_stats d;
    int guard_ok, alone_ok, graph_ok, rerun_ok, sweep_ok; // 1 ok, 0 failed, -1 not run
    int pass;
    char why[512]; // first failure of a bitwise check
    double us;     // perf
} case_result;

// Runs c on the backend under test and on the twin and fills res with every check of check mode;
// SG_OK unless a backend could not allocate (res->pass says whether the checks passed).
int ops_run_case(ops_case *c, const sg_backend *test, const ops_device *dev, const sg_backend *ref,
                 case_result *res);

// ---- perf (ops_perf.c) ----

#define N_PERF_M 8 // the M of the gemm table: N_PERF_WEIGHTS * N_PERF_M rows
#define N_PERF_WEIGHTS (N_QWEN3_WEIGHTS + 1) // the bf16 products and the head

typedef struct {
    char weight[32];
    int M, K, N;
    double us, vendor_us, tflops, gbs, vendor_tflops;
} gemm_perf_row;

typedef struct {
    char weight[32];
    char ours[256], vendor[256];
} inv_row;

// The GEMM goal of bench/README.md at one M: how many of the table's shapes take at most
// GEMM_GOAL_RATIO times the vendor library's time (rows without a vendor time do not count).
#define GEMM_GOAL_RATIO 1.10
typedef struct {
    int M;
    int shapes, within;            // shapes timed against the vendor, those within the ratio
    double worst;                  // the largest ours / vendor time ratio
    int beyond[N_PERF_WEIGHTS];    // indices (into the rows) of the shapes beyond the ratio
    int n_beyond;
} gemm_goal_row;

// One goal row per M of `rows` that has a vendor time, in the rows' order of M; returns how many
// (at most OPS_GEMM_MAX_ROWS, the table's M values).
int ops_gemm_goal(const gemm_perf_row *rows, int n_rows, gemm_goal_row *goal);

// Times c on the backend under test (median µs into res->us); needs dev's timers.
int ops_perf_case(const ops_case *c, const sg_backend *test, const ops_device *dev,
                  case_result *res);
// Times the GEMM table's selected weights (t) at its M values, ours and the vendor's, and (with
// t->invariance) measures both for row invariance across M, printing both tables to out, and
// with a vendor library the goal by M (ops_gemm_goal).
int ops_perf_gemm(const sg_backend *be, const ops_device *dev, uint64_t seed,
                  const ops_gemm_table *t, FILE *out, gemm_perf_row *rows, int *n_rows,
                  inv_row *inv, int *n_inv);

#endif
