// common/workload.c: workload files (workload.h), parsed with cJSON and validated field by field.
#include "workload.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "file.h"

// Reads an optional integer field; SG_EXIT_INPUT when present but not an integer in [lo, hi].
static int read_int(const cJSON *req, const char *field, long long lo, long long hi,
                    long long fallback, long long *out, const char *where) {
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(req, field);
    if (!item) {
        *out = fallback;
        return SG_OK;
    }
    double v = item->valuedouble;
    if (!cJSON_IsNumber(item) || v != floor(v) || v < (double)lo || v > (double)hi)
        return sg_fail(SG_EXIT_INPUT, "%s: \"%s\" must be an integer in [%lld, %lld]", where, field,
                       lo, hi);
    *out = (long long)v;
    return SG_OK;
}

static int read_ids(const cJSON *req, const char *field, int vocab, int required, int **ids, int *n,
                    const char *where) {
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(req, field);
    *ids = NULL;
    *n = 0;
    if (!arr && !required) return SG_OK;
    if (!cJSON_IsArray(arr) || (required && cJSON_GetArraySize(arr) == 0))
        return sg_fail(SG_EXIT_INPUT, "%s: \"%s\" must be a%s array of token ids", where, field,
                       required ? " non-empty" : "n");
    *n = cJSON_GetArraySize(arr);
    *ids = sg_calloc((size_t)*n, sizeof **ids);
    int i = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, arr) {
        double v = item->valuedouble;
        if (!cJSON_IsNumber(item) || v != floor(v) || v < 0 || (vocab > 0 && v >= vocab) || v > 1e9)
            return sg_fail(SG_EXIT_INPUT, "%s: \"%s\"[%d] is not a token id in [0, %d)", where,
                           field, i, vocab > 0 ? vocab : 1000000000);
        (*ids)[i++] = (int)v;
    }
    return SG_OK;
}

static int parse_request(const cJSON *req, int index, const char *name, int vocab, sg_request *r) {
    char where[256];
    snprintf(where, sizeof where, "%s: request %d", name, index);
    if (!cJSON_IsObject(req)) return sg_fail(SG_EXIT_INPUT, "%s is not an object", where);
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(req, "id");
    if (!cJSON_IsString(id) || !id->valuestring[0] || strlen(id->valuestring) >= sizeof r->id)
        return sg_fail(SG_EXIT_INPUT, "%s: \"id\" must be a non-empty string shorter than %zu",
                       where, sizeof r->id);
    strcpy(r->id, id->valuestring);
    snprintf(where, sizeof where, "%s: request \"%s\"", name, r->id);

    long long v = 0;
    SG_TRY(read_ids(req, "prompt", vocab, 1, &r->prompt, &r->n_prompt, where));
    SG_TRY(read_ids(req, "stop", vocab, 0, &r->stop, &r->n_stop, where));
    SG_TRY(read_int(req, "max_new_tokens", 1, 1 << 24, -1, &v, where));
    if (v < 0) return sg_fail(SG_EXIT_INPUT, "%s: \"max_new_tokens\" is required", where);
    r->max_new_tokens = (int)v;
    SG_TRY(read_int(req, "arrival_step", 0, 1 << 30, 0, &v, where));
    r->arrival_step = (int)v;
    SG_TRY(read_int(req, "seed", 0, (1LL << 53), 0, &v, where));
    r->seed = (uint64_t)v;

    const cJSON *t = cJSON_GetObjectItemCaseSensitive(req, "temperature");
    r->temperature = 0;
    if (t) {
        if (!cJSON_IsNumber(t) || !(t->valuedouble >= 0) || t->valuedouble > 1e6)
            return sg_fail(SG_EXIT_INPUT, "%s: \"temperature\" must be a number >= 0", where);
        r->temperature = t->valuedouble;
    }
    const cJSON *expect = cJSON_GetObjectItemCaseSensitive(req, "expect");
    r->expect_rejected = 0;
    if (expect) {
        if (cJSON_IsString(expect) && strcmp(expect->valuestring, "rejected") == 0)
            r->expect_rejected = 1;
        else if (!cJSON_IsString(expect) || strcmp(expect->valuestring, "ok") != 0)
            return sg_fail(SG_EXIT_INPUT, "%s: \"expect\" must be \"ok\" or \"rejected\"", where);
    }
    const cJSON *ignore_eos = cJSON_GetObjectItemCaseSensitive(req, "ignore_eos");
    if (ignore_eos && !cJSON_IsBool(ignore_eos))
        return sg_fail(SG_EXIT_INPUT, "%s: \"ignore_eos\" must be true or false", where);
    r->ignore_eos = cJSON_IsTrue(ignore_eos);
    return SG_OK;
}

int workload_parse(const char *json, size_t len, const char *name, int vocab, sg_workload *out) {
    memset(out, 0, sizeof *out);
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root) return sg_fail(SG_EXIT_INPUT, "%s: not valid JSON (near byte %ld)", name,
                              (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - json : 0));
    int status = SG_OK;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *requests = cJSON_GetObjectItemCaseSensitive(root, "requests");
    if (!cJSON_IsNumber(schema) || schema->valuedouble != 1)
        status = sg_fail(SG_EXIT_INPUT, "%s: \"schema\" must be 1 (the only workload schema)", name);
    else if (!cJSON_IsArray(requests) || cJSON_GetArraySize(requests) == 0)
        status = sg_fail(SG_EXIT_INPUT, "%s: \"requests\" must be a non-empty array", name);
    if (status == SG_OK) {
        out->n_requests = cJSON_GetArraySize(requests);
        out->requests = sg_calloc((size_t)out->n_requests, sizeof *out->requests);
        int i = 0;
        const cJSON *req;
        cJSON_ArrayForEach(req, requests) {
            status = parse_request(req, i, name, vocab, &out->requests[i]);
            if (status) break;
            for (int j = 0; j < i; j++)
                if (strcmp(out->requests[j].id, out->requests[i].id) == 0) {
                    status = sg_fail(SG_EXIT_INPUT, "%s: request id \"%s\" appears twice", name,
                                     out->requests[i].id);
                    break;
                }
            if (status) break;
            i++;
        }
    }
    cJSON_Delete(root);
    if (status) workload_free(out);
    return status;
}

int workload_load(const char *path, int vocab, sg_workload *out) {
    char *text;
    size_t len;
    SG_TRY(file_read_all(path, &text, &len));
    int status = workload_parse(text, len, path, vocab, out);
    free(text);
    return status;
}

void workload_free(sg_workload *w) {
    for (int i = 0; i < w->n_requests; i++) {
        free(w->requests[i].prompt);
        free(w->requests[i].stop);
    }
    free(w->requests);
    memset(w, 0, sizeof *w);
}
