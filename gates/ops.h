// gates/ops.h: the kernel bring-up tool behind `sparkgate ops` (in the manner of ggml's
// test-backend-ops): every op of the backend table (engine/backend.h), run on the backend under
// test and on its twin (the CPU backend) with the same seeded random inputs, at tiny, small and
// Qwen3-4B shapes.
//
// Per case it reports max |Δ|, max ULP (in the output's own format: bf16 or fp32), the share of
// elements that differ, NMSE, and for logits the argmax / top-2 agreement, against a tolerance
// written next to the op with its reason; the first bad element is printed. It also checks, on the
// backend under test: guard zones around every output (out-of-bounds writes), batch invariance
// (each row run alone equals the row inside the batch, bitwise; for gemm also every prefix M in
// {1, 2, 7, 8, 9, 16, 17, 32, 33, 64, 65, 256, 2048} of a 2048-row product), graph vs eager (the op
// captured in a CUDA graph and replayed, bitwise) and rerun determinism (bitwise). Perf mode times
// each op (µs, GB/s, TFLOP/s) and the target's GEMM shapes against the vendor library (cuBLAS),
// whose row invariance across M it also measures, and prints per M how many shapes take at most
// 1.10 times the vendor's time (the GEMM goal of bench/README.md).
//
// Contract: ops_list, ops_show_coverage and ops_validate need no device. ops_run returns SG_OK when
// every check passed, SG_EXIT_FAIL when one failed, SG_EXIT_USAGE for options ops_validate refuses.
#ifndef SG_GATES_OPS_H
#define SG_GATES_OPS_H

#include <stdint.h>
#include <stdio.h>

#include "engine/backend.h"

// Services of the backend under test beyond the op table (gpu/cuda_backend.h provides them for
// CUDA). A NULL capture pair skips the graph check; NULL timers refuse perf mode; a NULL
// vendor_gemm leaves the vendor columns out.
typedef struct {
    void (*sync)(const sg_backend *be);
    void (*capture_begin)(const sg_backend *be);
    void (*capture_end_replay)(const sg_backend *be);
    void (*timer_begin)(const sg_backend *be);
    double (*timer_end_us)(const sg_backend *be);
    void (*vendor_gemm)(const sg_backend *be, const bf16 *x, int M, int K, const bf16 *w, int N,
                        void *y, int out_f32);
    const char *vendor_name; // e.g. "cuBLAS"
    char description[1024];  // the device and the architecture the loaded code was built for
} ops_device;

typedef struct {
    int perf;         // 0: check mode, 1: perf mode
    const char *op;   // only this op (NULL: every op)
    const char *size; // only this size: tiny, small or qwen3 (NULL: all; perf: qwen3)
    uint64_t seed;    // input seed (replay a run with the seed it printed)
    const char *json; // write the results as JSON to this file (NULL: no)
    const char *csv;  // write the results as CSV to this file (NULL: no)
    // Perf mode's GEMM table (ops_gemm_table_parse): only these weights and M values,
    // comma-separated (NULL: every weight; the table's M values and the row-invariance sweep).
    const char *gemm_weights, *gemm_rows;
} ops_options;

// Perf mode's GEMM table: the Qwen3-4B products and the head (q_proj, k_proj, o_proj, gate_proj,
// down_proj, fc, markov_w2, lm_head), each timed at each M, ours against the vendor's.
#define OPS_GEMM_MAX_ROWS 8
typedef struct {
    unsigned weights;                // bit i: the table's weight i, in the order above
    int rows[OPS_GEMM_MAX_ROWS];     // the M values, 1 .. 2048
    int n_rows;
    int invariance;                  // 1: also each weight's row invariance across M (no --rows)
} ops_gemm_table;

// Parses the GEMM table's weights and M values (ops_options' gemm_weights, gemm_rows) into t;
// SG_EXIT_USAGE with a message naming the valid values for an unknown weight, an M outside
// 1 .. 2048, more than OPS_GEMM_MAX_ROWS values or an empty item.
int ops_gemm_table_parse(const char *weights, const char *rows, ops_gemm_table *t);
// SG_OK, or SG_EXIT_USAGE with a message for an unknown op or size, or a GEMM table selection
// outside perf mode's table (check mode, or --op other than gemm). No device needed.
int ops_validate(const ops_options *o);

// The ops with their sizes, tolerances and reasons (no device needed).
void ops_list(FILE *out);
// Every entry of the backend table with the checks that exercise it, and those without one.
// Returns the number of entries without a check.
int ops_show_coverage(FILE *out);
// 1 when name is an op of the list.
int ops_known(const char *name);
// Runs check or perf mode over the selected cases, printing a table to out.
int ops_run(const ops_options *o, const sg_backend *test, const ops_device *dev,
            const sg_backend *ref, FILE *out);

#endif
