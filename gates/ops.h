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
// {1, 2, 7, 8, 9, 16, 17, 32, 33, 256, 2048} of a 2048-row product), graph vs eager (the op
// captured in a CUDA graph and replayed, bitwise) and rerun determinism (bitwise). Perf mode times
// each op (µs, GB/s, TFLOP/s) and the target's GEMM shapes against the vendor library (cuBLAS),
// whose row invariance across M it also measures.
//
// Contract: ops_list and ops_show_coverage need no device. ops_run returns SG_OK when every check
// passed, SG_EXIT_FAIL when one failed, SG_EXIT_USAGE for an unknown op or size name.
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
} ops_options;

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
