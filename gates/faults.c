// gates/faults.c: the table of negative controls (see faults.h).
#include "faults.h"

#include <string.h>

const gate_fault gate_faults[GATE_N_FAULTS] = {
    {"flip-draft", ENGINE_FAULT_FLIP_DRAFT, CHECK_VERDICT, "sequential",
     "the accept step commits one accepted draft with its id changed (id + 1): the output leaves "
     "the target's greedy path, so the verdict is MISMATCH"},
    {"corrupt-kv", ENGINE_FAULT_CORRUPT_KV, CHECK_LOGITS, "capture_shape",
     "after the first round's commit, one committed K/V row (the anchor's, every layer) is "
     "negated: the later logits move by far more than the tolerance (the fixture's history "
     "dependence), before any token changes"},
    {"corrupt-tap", ENGINE_FAULT_CORRUPT_TAP, CHECK_COUNTERS, "counters",
     "on every chain win, the last tap row copied back into the drafter's context is negated: the "
     "drafter drafts differently (its context dependence), the output stays lossless, only the "
     "counters differ from the simulator's"},
    {"skip-copyback", ENGINE_FAULT_SKIP_COPY_BACK, CHECK_DIGEST, "invariance",
     "a winning chain's scratch pages are not copied back: the request keeps chain A's K/V for "
     "the chain's accepted positions, so hedged runs' digests differ from the plain run's"},
    {"tie-to-chain", ENGINE_FAULT_TIE_TO_CHAIN, CHECK_COUNTERS, "counters",
     "a tie in retained length hands the win to the later span (a chain over A): tokens and "
     "digests stay the same, chain wins and loss rounds differ from the simulator's"},
};

const gate_fault *gate_fault_find(const char *name) {
    for (int i = 0; i < GATE_N_FAULTS; i++)
        if (strcmp(gate_faults[i].name, name) == 0) return &gate_faults[i];
    return NULL;
}
