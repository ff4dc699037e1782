// engine/auto_controller.h: the hedge auto controller (dspark-spec.md §5.4): picks the chain count
// C in {0 .. n_positions} at run time by measured committed tokens per second.
//
// Contract. Rounds are grouped into windows (64 rounds at first, 32 after the first commitment)
// booked to the C they ran with; the last AC_KEEP windows are kept per C; a C's score is the
// median of its window rates (tokens / seconds spent inside the window's rounds). Exploring: C
// starts at 0 and advances by one per booked window, wrapping after n_positions; after 3 full
// cycles the controller commits: best = 0, then for C = 1 .. n_positions, best = C whenever
// median(C) > 1.03 × median(best) (so flat traffic settles at C = 0). A commitment lasts 4096
// rounds; then exploration restarts at C = 0 with 32-round windows. A gap longer than 0.5 s
// between the end of one round and the start of the next clears the window in progress (the gap
// is never booked); a round that ran with a C other than the window's restarts the window with it.
// Time comes from an injected clock (seconds, monotonic), so runs with a fake clock are
// deterministic.
#ifndef SG_ENGINE_AUTO_CONTROLLER_H
#define SG_ENGINE_AUTO_CONTROLLER_H

#include <stdint.h>

#define AC_KEEP 12            // windows kept per C
#define AC_FIRST_WINDOW 64    // rounds per window in the first exploration
#define AC_LATER_WINDOW 32    // rounds per window after a commitment expired
#define AC_CYCLES 3           // exploration cycles before committing
#define AC_COMMIT_ROUNDS 4096 // rounds a commitment lasts
#define AC_GAP_S 0.5          // a longer gap between rounds clears the window in progress
#define AC_MARGIN 1.03        // a C must beat the best so far by more than 3%
#define AC_MAX_C 16

typedef double (*ac_clock_fn)(void *ctx); // seconds

typedef struct {
    double rates[AC_KEEP]; // ring of window rates
    int n;                 // windows held (<= AC_KEEP)
    int next;              // ring slot of the next window
} ac_history;

typedef struct {
    int n_positions; // C ranges over 0 .. n_positions
    ac_clock_fn clock;
    void *clock_ctx;
    ac_history hist[AC_MAX_C + 1];
    int exploring;     // 1 exploring, 0 committed
    int c;             // the C of the next round (exploring: the window's; committed: best)
    int window_rounds; // rounds per window (64, then 32)
    int windows_done;  // windows booked in this exploration
    int commit_left;   // rounds left in the commitment
    // The window in progress.
    int win_c, win_rounds;
    int64_t win_tokens;
    double win_seconds;
    // The round in progress.
    double round_start, last_end;
    int have_last_end;
} auto_controller;

void ac_init(auto_controller *a, int n_positions, ac_clock_fn clock, void *clock_ctx);
// The C to run the next round with; records the round's start time.
int ac_begin(auto_controller *a);
// Books the round that ran with chain count c and committed `tokens` tokens.
void ac_end(auto_controller *a, int c, int tokens);
// median of a C's windows (0 when it has none).
double ac_median(const auto_controller *a, int c);
// CLOCK_MONOTONIC in seconds (ctx unused): the default clock.
double ac_monotonic_clock(void *ctx);

#endif
