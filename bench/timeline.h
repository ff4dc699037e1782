// bench/timeline.h: the summary of a kernel timeline (which kernels a run's time goes to, with
// overlaps accounted). The CUPTI injection library in bench/timeline_cupti/ records the kernels of
// any CUDA program; this unit is plain C so the CPU tests cover it.
//
// Kernels are taken in start order. A kernel's exposed time is how far its end reaches past the
// latest end of every kernel started before it (0 when it ends under one of them); the gaps where
// no kernel runs are idle time. Exposed and idle time add up to the span, first start to last end,
// so a kernel that runs beside another (a programmatic dependent that starts early, a side stream)
// is charged only for what it adds at the end: the exposed column is each kernel's share of the
// critical path as the GPU ran it.
#ifndef SG_BENCH_TIMELINE_H
#define SG_BENCH_TIMELINE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    uint64_t start_ns, end_ns;
    int64_t blocks, threads; // blocks in the grid, threads per block
    const char *name;        // the kernel's name as recorded (mangled); kept, not copied
} tl_kernel;

// One kernel (name, grid and block shape) over all its launches.
typedef struct {
    const char *name;
    int64_t blocks, threads;
    int launches;
    double busy_us;    // Σ (end − start)
    double exposed_us; // Σ exposed time
} tl_row;

typedef struct {
    tl_row *rows; // largest exposed time first (ties: more launches, then name)
    size_t n_rows, n_kernels;
    double span_us, idle_us;
} tl_summary;

// Summarizes n kernels (sorted by start in place). Fails (SG_EXIT_INPUT, message in sg_error())
// when a kernel ends before it starts or n is 0.
int tl_summarize(tl_kernel *k, size_t n, tl_summary *out);
void tl_summary_free(tl_summary *s);

// The table: span, idle, then up to max_rows rows (0: all) with each one's exposed time and share
// of the span, launches and per-launch busy and exposed µs; `label` names what was recorded.
// Names are printed as given (pipe through c++filt to demangle).
void tl_summary_print(FILE *f, const tl_summary *s, const char *label, size_t max_rows);

#endif
