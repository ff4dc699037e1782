// gates/suites.h: the gate suites (internal to gates/): their table and the context they run in.
//
// Every suite loads its workload (the fixture's <workload>.json, or the --workload file for
// every suite; filtered to --request), makes one or more engine runs (gates/runner.h) and records
// what it finds in its gate_suite: the requests of its primary run with their verdicts against the
// reference (gates/verdict.h), and one failure per broken check (report.h). A suite returns SG_OK
// whatever it found; an error status only for bad input (a workload file, an unknown --request).
// Engine configurations: "unhedged" = speculative decoding with the drafter, hedging off;
// "hedged" = hedge cap 8, branch positions 0,1,2, three chains; "plain" = no drafting.
#ifndef SG_GATES_SUITES_H
#define SG_GATES_SUITES_H

#include "common/model.h"
#include "engine/engine.h"
#include "fixtures/catalog.h"
#include "refcache.h"
#include "report.h"

typedef struct {
    const sg_backend *be;
    const target_model *target;
    const drafter_model *draft;
    const fixture_info *fx;
    const char *workload;  // a file for every suite, or NULL
    const char *request;   // only this request, or NULL
    double tol;
    engine_fault fault;
    const char *replay;    // the flags that reproduce this gate's models and backend
    int can_hedge;         // the drafter has a Markov head
    ref_cache refs;
} gate_ctx;

typedef struct {
    const char *name;
    const char *summary;
    int needs_hedge;       // skipped when the drafter has no Markov head
    int (*run)(gate_ctx *g, gate_suite *s);
} suite_def;

#define GATE_N_SUITES 10
extern const suite_def gate_suite_defs[GATE_N_SUITES];

const suite_def *suite_find(const char *name);

#endif
