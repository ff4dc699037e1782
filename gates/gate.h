// gates/gate.h: `sparkgate gate`, the harness's main job: the gate suites (gates/suites.c) run the
// hedged speculative decoder (engine/) on a backend against the plain CPU reference (ref/) on a
// fixture's checkpoints and workloads, and the report says, per suite and per request, whether
// decoding stayed lossless (design.md §4-5).
//
// Contract: gate_run loads the fixture (NULL: the compiled-in default), its target and DSpark
// drafter (or the given checkpoint pair), runs the selected suites in the table's order (none
// selected: all) and fills the report; it returns SG_OK when the suites ran, whatever they found
// (report.passed says), and SG_EXIT_USAGE / SG_EXIT_INPUT with a message for bad options, a
// missing fixture, bad checkpoints or workload files. With `progress`, each suite's console line
// is printed as it finishes, then the summary. The backend is the caller's (it outlives the call).
#ifndef SG_GATES_GATE_H
#define SG_GATES_GATE_H

#include <stdio.h>

#include "engine/backend.h"
#include "report.h"

#define GATE_MAX_SELECTED 32

typedef struct {
    const sg_backend *be;
    const char *fixture;    // set name or folder; NULL: the default fixture
    const char *target;     // checkpoint folders; NULL: the fixture's
    const char *draft;      // (a target without a drafter is refused: the gate needs one)
    const char *workload;   // a workload file every selected suite uses; NULL: each suite's own
    const char *suites[GATE_MAX_SELECTED];
    int n_suites;           // 0: every suite
    const char *request;    // only this request id (needs exactly one suite); NULL: all
    const char *fault;      // a negative control (faults.h); NULL: none
    const char *gpu;        // the device's name for the provenance; NULL: "none"
    const char *gpu_arch;   // its architecture ("sm_90"); NULL: the host's (uname -m)
    FILE *progress;         // console output as the suites finish; NULL: quiet
} gate_options;

int gate_run(const gate_options *o, gate_report *out);

// The suites, in the order they run: names[i] and a one-line summary[i]; returns the count.
int gate_suite_list(const char *const **names, const char *const **summaries);

#endif
