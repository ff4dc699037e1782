// gates/faults.h: the gate's negative controls (`sparkgate gate --fault NAME`, never in a default
// run): each is one deliberate engine bug, injected through the engine's test hooks
// (engine_hooks.fault), with the gate check that must catch it and the suite whose run shows it
// alone. A negative control passes when the gate fails with exit status 1, no crash, and that
// check among the failures (tests/test_gate_faults.c).
#ifndef SG_GATES_FAULTS_H
#define SG_GATES_FAULTS_H

#include "engine/engine.h"
#include "report.h"

typedef struct {
    const char *name;       // the --fault value
    engine_fault fault;
    gate_check caught_by;   // the check that must fail
    const char *suite;      // a suite in which it is the only check to fail
    const char *bug;        // what the injected bug does, and why that check sees it
} gate_fault;

#define GATE_N_FAULTS 5
extern const gate_fault gate_faults[GATE_N_FAULTS];

// NULL when there is no fault of that name.
const gate_fault *gate_fault_find(const char *name);

#endif
