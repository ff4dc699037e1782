// gates/report_model.c: building and freeing the gate report (see report.h).
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "report.h"

const char *gate_check_name(gate_check c) {
    static const char *names[GATE_N_CHECKS] = {"engine", "verdict", "logits", "digest",
                                                "counters", "rerun", "hedge", "pool",
                                                "wait", "reject", "oracle"};
    SG_CHECK(c >= 0 && c < GATE_N_CHECKS, "check %d", (int)c);
    return names[c];
}

// Grows an array of `size`-byte items to hold one more; returns the new item (zeroed).
static void *grow(void **items, int *n, int *cap, size_t size) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 8;
        void *bigger = sg_calloc((size_t)*cap, size);
        if (*n) memcpy(bigger, *items, (size_t)*n * size);
        free(*items);
        *items = bigger;
    }
    return (char *)*items + (size_t)(*n)++ * size;
}

gate_suite *report_add_suite(gate_report *r, const char *name) {
    gate_suite *s = grow((void **)&r->suites, &r->n_suites, &r->cap_suites, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->passed = 1;
    return s;
}

gate_request *suite_add_request(gate_suite *s, const char *id) {
    gate_request *q = grow((void **)&s->requests, &s->n_requests, &s->cap_requests, sizeof *q);
    snprintf(q->id, sizeof q->id, "%s", id);
    return q;
}

void suite_fail(gate_suite *s, gate_check check, const char *request, const char *fmt, ...) {
    gate_failure *f = grow((void **)&s->failures, &s->n_failures, &s->cap_failures, sizeof *f);
    f->check = check;
    snprintf(f->request, sizeof f->request, "%s", request ? request : "");
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    f->text = sg_calloc((size_t)n + 1, 1);
    va_start(ap, fmt);
    vsnprintf(f->text, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->passed = 0;
}

int suite_check_failed(const gate_suite *s, gate_check check) {
    for (int i = 0; i < s->n_failures; i++)
        if (s->failures[i].check == check) return 1;
    return 0;
}

void report_finish(gate_report *r) {
    r->passed = 1;
    for (int i = 0; i < r->n_suites; i++)
        if (!r->suites[i].skipped && !r->suites[i].passed) r->passed = 0;
}

void gate_report_free(gate_report *r) {
    for (int i = 0; i < r->n_suites; i++) {
        gate_suite *s = &r->suites[i];
        for (int k = 0; k < s->n_requests; k++) free(s->requests[k].tokens);
        for (int k = 0; k < s->n_failures; k++) free(s->failures[k].text);
        free(s->requests);
        free(s->failures);
    }
    free(r->suites);
    memset(r, 0, sizeof *r);
}
