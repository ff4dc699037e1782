// common/counters.h: the speculation counters of design.md §5, their invariants and JSON form.
//
// Shared by ref/'s speculation simulator and the engine, so the gate compares like with like.
// Per round on the winning span: n = accepted drafts of the winner, retained = tokens committed
// (1 <= retained <= n + 1), then accepted += min(n, retained), bonus += retained - min(n, retained),
// emitted += retained, drafted += chain A's verified drafts, hist[min(n, retained)] += 1.
// [ours] zero- and full-accept rounds count only rounds that verified at least one draft, so a
// sampled request's one-token rounds are neither.
#ifndef SG_COUNTERS_H
#define SG_COUNTERS_H

#include <stdint.h>

#include "config.h"

struct cJSON;

typedef struct {
    int64_t rounds;
    int64_t drafted;
    int64_t accepted;
    int64_t bonus;
    int64_t emitted;
    int64_t zero_accept;
    int64_t full_accept;
    int64_t hist[SG_MAX_BLOCK + 1]; // hist[k]: rounds with min(n, retained) == k
    int64_t hedged_rounds;
    int64_t chain_spans;
    int64_t chain_wins;
    int64_t loss_rounds;
    int64_t chains_built;
    int64_t chains_deduped;
    int64_t chains_dropped_capacity;
} spec_counters;

// Books one round: n accepted drafts of the winner, `retained` committed tokens, `drafted` chain-A
// drafts verified this round.
void counters_book_round(spec_counters *c, int n, int retained, int drafted);
void counters_add(spec_counters *sum, const spec_counters *c);
// Checks the invariants of design.md §5 for a finished request (output_len = generated tokens;
// pass -1 for a sum over requests, which skips the length check). Returns 0, or SG_EXIT_FAIL with
// a message naming the broken invariant.
int counters_check(const spec_counters *c, int64_t output_len);
int counters_equal(const spec_counters *a, const spec_counters *b);
// {"rounds":..,...,"hist":[..]}; hist is cut after its last non-zero entry.
struct cJSON *counters_to_json(const spec_counters *c);
// One line: rounds, mean accepted drafts per round, zero/full-accept, hedge counters.
void counters_format(const spec_counters *c, char *buf, int size);

#endif
