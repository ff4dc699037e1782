// gates/report_json.c: the gate report as JSON (see report.h for the layout).
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"
#include "report.h"

static void add_hex64(cJSON *o, const char *key, uint64_t v) {
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, v);
    cJSON_AddStringToObject(o, key, hex);
}

// A |Δlogit| as a number, or the string "nan" (JSON has no NaN).
static void add_dlogit(cJSON *o, double v) {
    if (isnan(v)) cJSON_AddStringToObject(o, "max_abs_dlogit", "nan");
    else cJSON_AddNumberToObject(o, "max_abs_dlogit", v);
}

static cJSON *suite_json(const gate_suite *s) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", s->name);
    cJSON_AddBoolToObject(o, "passed", s->skipped || s->passed);
    cJSON_AddBoolToObject(o, "skipped", s->skipped);
    if (s->skipped) cJSON_AddStringToObject(o, "skip_reason", s->skip_reason);
    cJSON_AddItemToObject(o, "counters", counters_to_json(&s->counters));
    add_dlogit(o, s->max_abs_dlogit);
    cJSON *v = cJSON_AddObjectToObject(o, "verdicts");
    for (int k = 0; k < VERDICT_KINDS; k++)
        cJSON_AddNumberToObject(v, verdict_name((verdict_kind)k), s->verdicts[k]);
    cJSON *checks = cJSON_AddArrayToObject(o, "failed_checks");
    for (int c = 0; c < GATE_N_CHECKS; c++)
        if (suite_check_failed(s, (gate_check)c))
            cJSON_AddItemToArray(checks, cJSON_CreateString(gate_check_name((gate_check)c)));
    cJSON *fails = cJSON_AddArrayToObject(o, "failures");
    for (int i = 0; i < s->n_failures; i++) {
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "check", gate_check_name(s->failures[i].check));
        cJSON_AddStringToObject(f, "request", s->failures[i].request);
        cJSON_AddStringToObject(f, "text", s->failures[i].text);
        cJSON_AddItemToArray(fails, f);
    }
    cJSON *reqs = cJSON_AddArrayToObject(o, "requests");
    for (int i = 0; i < s->n_requests; i++) {
        const gate_request *q = &s->requests[i];
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "id", q->id);
        cJSON_AddStringToObject(j, "verdict", verdict_name(q->verdict));
        cJSON_AddBoolToObject(j, "passed", q->passed);
        if (q->verdict == VERDICT_REJECTED) cJSON_AddStringToObject(j, "reason", q->reason);
        cJSON_AddItemToObject(j, "tokens", cJSON_CreateIntArray(q->tokens, q->n_tokens));
        cJSON_AddItemToObject(j, "counters", counters_to_json(&q->counters));
        add_hex64(j, "digest", q->digest);
        add_dlogit(j, q->max_abs_dlogit);
        cJSON_AddItemToArray(reqs, j);
    }
    cJSON_AddNumberToObject(o, "runs", s->runs);
    cJSON_AddNumberToObject(o, "faults_injected", s->faults_injected);
    cJSON_AddNumberToObject(o, "seconds", s->seconds);
    return o;
}

cJSON *report_to_json(const gate_report *r) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "schema_version", GATE_REPORT_SCHEMA);
    const gate_provenance *p = &r->provenance;
    cJSON *prov = cJSON_AddObjectToObject(o, "provenance");
    cJSON_AddStringToObject(prov, "git_sha", p->git_sha);
    cJSON_AddStringToObject(prov, "fixture_sha256", p->fixture_sha256);
    cJSON_AddStringToObject(prov, "target_sha256", p->target_sha256);
    cJSON_AddStringToObject(prov, "draft_sha256", p->draft_sha256);
    cJSON_AddStringToObject(prov, "backend", p->backend);
    cJSON_AddStringToObject(prov, "gpu", p->gpu);
    cJSON_AddStringToObject(prov, "architecture", p->architecture);
    cJSON_AddStringToObject(o, "backend", r->backend);
    cJSON_AddStringToObject(o, "fixture", r->fixture);
    cJSON_AddStringToObject(o, "fixture_dir", r->fixture_dir);
    cJSON_AddNumberToObject(o, "tol", r->tol);
    if (r->fault[0]) cJSON_AddStringToObject(o, "fault", r->fault);
    else cJSON_AddNullToObject(o, "fault");
    cJSON_AddBoolToObject(o, "passed", r->passed);
    cJSON_AddNumberToObject(o, "seconds", r->seconds);
    cJSON *suites = cJSON_AddArrayToObject(o, "suites");
    for (int i = 0; i < r->n_suites; i++) cJSON_AddItemToArray(suites, suite_json(&r->suites[i]));
    return o;
}

int report_write_json(const gate_report *r, const char *path) {
    cJSON *root = report_to_json(r);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0) ok = 0;
    free(text);
    return ok ? SG_OK : sg_fail(SG_EXIT_INPUT, "--json %s: cannot write the file", path);
}
