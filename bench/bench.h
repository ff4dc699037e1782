// bench/bench.h: `sparkgate bench`, performance against the memory roofline (bench/README.md).
//
// For each concurrency N and mode (plain greedy without a drafter, speculative without hedge,
// hedged with C = 1, 2, 3 ladders branching at positions 0 .. C-1 for every request), the engine
// decodes N greedy requests (the fixture's sequential prompts, cycled; max_new tokens each, EOS
// ignored) after a warm-up batch: untimed (tokens/s, ms per round; `repeat` times, the median time
// kept with the fastest and slowest, every repeat committing the first's tokens) and with phase
// timing (engine.h
// engine_timing: ms per round of the drafter forward, the Markov loop of chain A, the ladders, the
// verify and accept+commit, and the rest). Step 0 (prefill and the first round) is a warm-up in
// both passes. Per phase it counts the bytes that must move, from the model geometry and the work
// the engine recorded: weights read once per forward or Markov step, each span's KV read once,
// the fp32 logits / U rows written once, the U rows a Markov step reads; the phase's floor is
// bytes / bandwidth and its share = floor / measured time. The bandwidth is measured in the same
// run by the device's read kernel (dev->bandwidth); without one (CPU) no floor or share is given.
// Break-even runner-up hit rate of hedge C (per hedged request-round, h = chain wins / hedged
// request-rounds):  h* = tau0 * dT / (T0 * n_h * g),  with tau0 and T0 the spec run's tokens and
// ms per round, dT = ladder ms + (verify ms - spec verify ms) per round, n_h the hedged
// request-rounds per round and g the mean tokens a win adds (1 when there was no win: a win adds
// at least one); hedge C pays when h > h*. It also checks that every mode commits the same tokens
// as plain decoding at the same concurrency, and prints the goals of the issue met or missed.
//
// Contract: bench_run returns SG_OK after printing the tables (and writing --json), SG_EXIT_INPUT
// for a bad fixture or unwritable JSON, SG_EXIT_USAGE for a mode the drafter cannot run (hedging
// without a Markov head), SG_EXIT_FAIL when a mode's tokens differ from plain decoding's or a
// repeat's from the first.
#ifndef SG_BENCH_BENCH_H
#define SG_BENCH_BENCH_H

#include <stdio.h>

#include "engine/backend.h"

enum { BENCH_PLAIN, BENCH_SPEC, BENCH_HEDGE1, BENCH_HEDGE2, BENCH_HEDGE3, BENCH_MODES };
#define BENCH_MAX_CONC 8
#define BENCH_MAX_REPEAT 20

extern const char *const bench_mode_names[BENCH_MODES]; // plain, spec, hedge1, hedge2, hedge3

// The device services the bench needs beyond the op table.
typedef struct {
    // Waits for every op issued on be (NULL: ops are done when they return, as on the CPU).
    void (*sync)(const sg_backend *be);
    // Read bandwidth in 1e9 bytes/s over `bytes` (gpu/bandwidth.h); NULL: none (CPU).
    int (*bandwidth)(size_t bytes, int reps, double *gbps);
    char description[512];
} bench_device;

typedef struct {
    const char *fixture;           // NAME or DIR (NULL: the default set)
    int conc[BENCH_MAX_CONC];      // concurrencies, in the order run
    int n_conc;
    int modes[BENCH_MODES];        // 1: run the mode
    int max_new;                   // tokens per request
    int repeat;                    // untimed passes per (N, mode), <= BENCH_MAX_REPEAT (0: 1)
    int graphs;                    // engine_options.graphs (CUDA graph replay; no effect on CPU)
    const char *json;              // NULL: no JSON
} bench_options;

int bench_run(const bench_options *o, const sg_backend *be, const bench_device *dev, FILE *out);

#endif
