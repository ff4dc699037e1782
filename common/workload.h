// common/workload.h: workload files (design.md §7), parsed with cJSON and validated.
//
// {"schema": 1, "requests": [{"id": "s1", "prompt": [ids], "max_new_tokens": 64, "stop": [ids],
//   "temperature": 0, "seed": 0, "arrival_step": 0, "expect": "ok"|"rejected", "ignore_eos": false}]}
// Required: schema 1, id (unique), prompt (non-empty), max_new_tokens >= 1. Others default to the
// values shown (stop empty, expect "ok", ignore_eos false). Token ids are checked against the vocab
// when vocab > 0. Bad files: SG_EXIT_INPUT naming the file, request and field.
#ifndef SG_WORKLOAD_H
#define SG_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    char id[64];
    int *prompt;
    int n_prompt;
    int max_new_tokens;
    int *stop;
    int n_stop;
    double temperature; // 0 = greedy
    uint64_t seed;
    int arrival_step;
    int expect_rejected;
    int ignore_eos;
} sg_request;

typedef struct {
    sg_request *requests;
    int n_requests;
} sg_workload;

int workload_parse(const char *json, size_t len, const char *name, int vocab, sg_workload *out);
int workload_load(const char *path, int vocab, sg_workload *out);
void workload_free(sg_workload *w);

#endif
