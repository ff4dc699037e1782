// gates/refcache.h: the reference decodes a gate run compares against, computed once per distinct
// request (several suites share the sequential and concurrent workloads).
//
// Contract: ref_cache_get decodes a request with ref_generate (greedy or seeded sampling, its stop
// ids, EOS rule and max_new_tokens), keeping the fp32 logits row that chose every token and, when
// a drafter is given, the taps of the drafter's target_layer_ids for every fed position (what
// ref_simulate needs). Two requests with the same prompt, budget, stop ids, temperature, seed and
// EOS rule share one decode (the id and arrival step do not matter). The output stays valid until
// ref_cache_free. Errors are ref_generate's (SG_EXIT_USAGE for a request that does not fit).
#ifndef SG_GATES_REFCACHE_H
#define SG_GATES_REFCACHE_H

#include "common/model.h"
#include "common/workload.h"
#include "ref/generate.h"

typedef struct ref_cache_entry ref_cache_entry;

typedef struct {
    const target_model *target;
    const drafter_model *draft; // NULL: no taps
    ref_cache_entry *entries;   // a list
    int hits, misses;
} ref_cache;

void ref_cache_init(ref_cache *c, const target_model *target, const drafter_model *draft);
int ref_cache_get(ref_cache *c, const sg_request *r, const ref_output **out);
void ref_cache_free(ref_cache *c);

#endif
