// gates/ops.c: the kernel bring-up tool (ops.h): the driver. ops_run selects the cases (op, size),
// builds each from the seed (ops_cases.c), runs it in check mode (ops_check.c) or perf mode
// (ops_perf.c), prints the table and writes the JSON and CSV reports; ops_list and
// ops_show_coverage print the op table, its tolerances and reasons, and the backend table entries
// each op's checks exercise.
//
// Contract: as ops.h; the listings need no device.
#include "ops.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "ops_internal.h"

static const char *const size_names[N_SIZES] = {"tiny", "small", "qwen3"};

// Table entries of backend.h, for --show-coverage (destroy: every run ends with it).
static const char *const table_entries[] = {
    "alloc",     "free",        "upload",         "download",    "copy",         "embed",
    "gemm",      "gemm_group",  "rmsnorm",        "add_rmsnorm", "qk_norm_rope_store",
    "attention", "gemm_swiglu", "add",            "argmax",      "top2",         "markov_step",
    "ladder_force", "page_copy", "copy_rows",     "digest",      "destroy"};

static int covers(const op_def *d, const char *entry) {
    size_t n = strlen(entry);
    for (const char *p = d->covers; (p = strstr(p, entry)) != NULL; p += n)
        if ((p == d->covers || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return 1;
    return 0;
}
int ops_known(const char *name) {
    for (int i = 0; i < ops_n_ops; i++)
        if (strcmp(ops_op_defs[i].name, name) == 0) return 1;
    return 0;
}

void ops_list(FILE *out) {
    fprintf(out, "ops of the backend table, each checked against the CPU twin (sizes: tiny, small, "
                 "qwen3 = Qwen3-4B geometry):\n\n");
    for (int i = 0; i < ops_n_ops; i++) {
        const op_def *d = &ops_op_defs[i];
        fprintf(out, "%-14s covers: %s\n", d->name, d->covers);
        if (d->tol_rel > 0)
            fprintf(out,
                    "%-14s tolerance: |got - twin| <= %g*S + rounding per element (S = sum of "
                    "|terms|); the rest exact\n",
                    "", d->tol_rel);
        else if (d->tol_ulp == 0 && d->tol_share == 0)
            fprintf(out, "%-14s tolerance: exact\n", "");
        else
            fprintf(out, "%-14s tolerance: <= %g ulp on <= %g%% of the elements\n", "", d->tol_ulp,
                    100.0 * d->tol_share);
        fprintf(out, "%-14s why: %s\n", "", d->why);
    }
    fprintf(out, "\nevery case also checks: guard zones, each row alone vs in the batch (bitwise), "
                 "graph vs eager (bitwise), rerun (bitwise); gemm at qwen3 also every prefix M in "
                 "{1,2,7,8,9,32,33,256,2048} of a 2048-row product (bitwise)\n");
}

int ops_show_coverage(FILE *out) {
    int missing = 0;
    size_t n = sizeof table_entries / sizeof table_entries[0];
    fprintf(out, "backend table entry -> checks\n");
    for (size_t e = 0; e < n; e++) {
        char line[512] = "";
        for (int i = 0; i < ops_n_ops; i++)
            if (covers(&ops_op_defs[i], table_entries[e])) {
                strncat(line, " ", sizeof line - strlen(line) - 1);
                strncat(line, ops_op_defs[i].name, sizeof line - strlen(line) - 1);
            }
        if (strcmp(table_entries[e], "destroy") == 0 && !line[0])
            snprintf(line, sizeof line, " (every run: the backends are destroyed at the end)");
        if (!line[0]) missing++;
        fprintf(out, "  %-15s%s\n", table_entries[e], line[0] ? line : " NO CHECK");
    }
    fprintf(out, "ops without a check: %d\n", missing);
    return missing;
}

// ---- reports ----

static const char *tri(int v) { return v < 0 ? "-" : v ? "ok" : "FAIL"; }

static void print_header(FILE *out) {
    fprintf(out, "%-14s %-6s %-44s %10s %8s %7s %9s %6s %5s %5s %5s %5s %5s %s\n", "op", "size",
            "shape", "max|d|", "maxulp", "diff%", "nmse", "tol", "guard", "alone", "graph", "rerun",
            "sweep", "result");
}

static void print_result(FILE *out, const case_result *r) {
    const ops_case *c = r->c;
    char tol[16];
    if (c->def->tol_rel > 0)
        snprintf(tol, sizeof tol, "%gS", c->def->tol_rel);
    else
        snprintf(tol, sizeof tol, "%g", c->def->tol_ulp);
    fprintf(out, "%-14s %-6s %-44.44s %10.3g %8.3g %7.3f %9.2e %6s %5s %5s %5s %5s %5s %s\n",
            c->def->name, size_names[c->size], c->shape, r->d.max_abs, r->d.max_ulp,
            100.0 * r->d.share, r->d.nmse, tol, tri(r->guard_ok), tri(r->alone_ok),
            tri(r->graph_ok), tri(r->rerun_ok), tri(r->sweep_ok), r->pass ? "PASS" : "FAIL");
    if (r->d.argmax_agree >= 0)
        fprintf(out, "%-14s logits: argmax agreement %.1f%%, top-2 agreement %.1f%%\n", "",
                100.0 * r->d.argmax_agree, 100.0 * r->d.top2_agree);
    if (r->d.worst_rel >= 0)
        fprintf(out,
                "%-14s order rule: worst |d|/S %.3g, beyond the rounding allowance %.3g (limit "
                "%g)\n",
                "", r->d.worst_rel, r->d.worst_excess, c->def->tol_rel);
    if (r->d.argmax_text[0])
        fprintf(out, "%-14s argmax: %d near tie(s), %d failed; %s\n", "", r->d.near_ties,
                r->d.argmax_bad, r->d.argmax_text);
    if (r->d.first_bad >= 0) fprintf(out, "%-14s first bad element: %s\n", "", r->d.first_text);
    if (r->why[0]) fprintf(out, "%-14s %s\n", "", r->why);
}

static cJSON *result_json(const case_result *r, int perf) {
    const ops_case *c = r->c;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "op", c->def->name);
    cJSON_AddStringToObject(o, "size", size_names[c->size]);
    cJSON_AddStringToObject(o, "shape", c->shape);
    if (perf) {
        cJSON_AddNumberToObject(o, "us", r->us);
        cJSON_AddNumberToObject(o, "gb_per_s", c->bytes / r->us * 1e-3);
        cJSON_AddNumberToObject(o, "tflop_per_s", c->flops / r->us * 1e-6);
        return o;
    }
    cJSON_AddNumberToObject(o, "max_abs", r->d.max_abs);
    cJSON_AddNumberToObject(o, "max_ulp", isinf(r->d.max_ulp) ? -1 : r->d.max_ulp);
    cJSON_AddNumberToObject(o, "share_differing", r->d.share);
    cJSON_AddNumberToObject(o, "nmse", r->d.nmse);
    cJSON_AddNumberToObject(o, "tol_ulp", c->def->tol_ulp);
    cJSON_AddNumberToObject(o, "tol_share", c->def->tol_share);
    cJSON_AddStringToObject(o, "tol_reason", c->def->why);
    if (c->def->tol_rel > 0) {
        cJSON_AddNumberToObject(o, "tol_rel", c->def->tol_rel);
        cJSON_AddNumberToObject(o, "worst_d_over_s", r->d.worst_rel);
        cJSON_AddNumberToObject(o, "worst_excess_over_s", r->d.worst_excess);
    }
    if (r->d.argmax_agree >= 0) {
        cJSON_AddNumberToObject(o, "argmax_agreement", r->d.argmax_agree);
        cJSON_AddNumberToObject(o, "top2_agreement", r->d.top2_agree);
        cJSON_AddNumberToObject(o, "argmax_near_ties", r->d.near_ties);
        cJSON_AddNumberToObject(o, "argmax_failed", r->d.argmax_bad);
    }
    if (r->d.argmax_text[0]) cJSON_AddStringToObject(o, "argmax_first", r->d.argmax_text);
    cJSON_AddStringToObject(o, "guard", tri(r->guard_ok));
    cJSON_AddStringToObject(o, "batch_invariance", tri(r->alone_ok));
    cJSON_AddStringToObject(o, "graph_vs_eager", tri(r->graph_ok));
    cJSON_AddStringToObject(o, "rerun", tri(r->rerun_ok));
    cJSON_AddStringToObject(o, "m_sweep", tri(r->sweep_ok));
    if (r->d.first_bad >= 0) cJSON_AddStringToObject(o, "first_bad", r->d.first_text);
    if (r->why[0]) cJSON_AddStringToObject(o, "failure", r->why);
    cJSON_AddBoolToObject(o, "pass", r->pass);
    return o;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return sg_fail(SG_EXIT_USAGE, "cannot write %s: check the folder exists", path);
    fputs(text, f);
    int bad = fclose(f) != 0;
    return bad ? sg_fail(SG_EXIT_USAGE, "cannot write %s", path) : SG_OK;
}

// The GEMM goal by M (ops_gemm_goal) as JSON; NULL when no row has a vendor time.
static cJSON *gemm_goal_json(const gemm_perf_row *gp, int n_gp) {
    gemm_goal_row goal[OPS_GEMM_MAX_ROWS];
    const int n = ops_gemm_goal(gp, n_gp, goal);
    if (n == 0) return NULL;
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "ratio", GEMM_GOAL_RATIO);
    cJSON *by = cJSON_AddArrayToObject(j, "by_M");
    for (int i = 0; i < n; i++) {
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "M", goal[i].M);
        cJSON_AddNumberToObject(x, "shapes", goal[i].shapes);
        cJSON_AddNumberToObject(x, "within", goal[i].within);
        cJSON_AddNumberToObject(x, "worst_ratio", goal[i].worst);
        cJSON *b = cJSON_AddArrayToObject(x, "beyond");
        for (int k = 0; k < goal[i].n_beyond; k++)
            cJSON_AddItemToArray(b, cJSON_CreateString(gp[goal[i].beyond[k]].weight));
        cJSON_AddItemToArray(by, x);
    }
    return j;
}

static int write_reports(const ops_options *o, const ops_device *dev, case_result *res, int n,
                         gemm_perf_row *gp, int n_gp, inv_row *inv, int n_inv, int passed) {
    if (o->json) {
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "mode", o->perf ? "perf" : "check");
        cJSON_AddStringToObject(root, "device", dev ? dev->description : "");
        cJSON_AddNumberToObject(root, "seed", (double)o->seed);
        cJSON *cases = cJSON_AddArrayToObject(root, "cases");
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(cases, result_json(&res[i], o->perf));
        if (n_gp) {
            cJSON *g = cJSON_AddArrayToObject(root, "gemm");
            for (int i = 0; i < n_gp; i++) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "weight", gp[i].weight);
                cJSON_AddNumberToObject(x, "M", gp[i].M);
                cJSON_AddNumberToObject(x, "K", gp[i].K);
                cJSON_AddNumberToObject(x, "N", gp[i].N);
                cJSON_AddNumberToObject(x, "us", gp[i].us);
                cJSON_AddNumberToObject(x, "tflop_per_s", gp[i].tflops);
                cJSON_AddNumberToObject(x, "weight_gb_per_s", gp[i].gbs);
                cJSON_AddNumberToObject(x, "vendor_us", gp[i].vendor_us);
                cJSON_AddItemToArray(g, x);
            }
            cJSON *goal = gemm_goal_json(gp, n_gp);
            if (goal) cJSON_AddItemToObject(root, "gemm_goal", goal);
            cJSON *v = cJSON_AddArrayToObject(root, "row_invariance");
            for (int i = 0; i < n_inv; i++) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "weight", inv[i].weight);
                cJSON_AddStringToObject(x, "ours_changes_at", inv[i].ours);
                cJSON_AddStringToObject(x, "vendor_changes_at", inv[i].vendor);
                cJSON_AddItemToArray(v, x);
            }
        }
        cJSON_AddBoolToObject(root, "passed", passed);
        char *text = cJSON_Print(root);
        cJSON_Delete(root);
        int st = write_text(o->json, text);
        free(text);
        SG_TRY(st);
    }
    if (o->csv) {
        size_t cap = 4096 + (size_t)(n + n_gp) * 512, len = 0;
        char *text = sg_calloc(cap, 1);
        if (o->perf) {
            len += (size_t)snprintf(text + len, cap - len,
                                    "kind,op,size,shape,us,gb_per_s,tflop_per_s,vendor_us\n");
            for (int i = 0; i < n; i++)
                len += (size_t)snprintf(
                    text + len, cap - len, "op,%s,%s,\"%s\",%.3f,%.3f,%.4f,\n", res[i].c->def->name,
                    size_names[res[i].c->size], res[i].c->shape, res[i].us,
                    res[i].c->bytes / res[i].us * 1e-3, res[i].c->flops / res[i].us * 1e-6);
            for (int i = 0; i < n_gp; i++)
                len += (size_t)snprintf(text + len, cap - len,
                                        "gemm,%s,qwen3,\"M=%d K=%d N=%d\",%.3f,%.3f,%.4f,%.3f\n",
                                        gp[i].weight, gp[i].M, gp[i].K, gp[i].N, gp[i].us,
                                        gp[i].gbs, gp[i].tflops, gp[i].vendor_us);
        } else {
            len += (size_t)snprintf(text + len, cap - len,
                                    "op,size,shape,max_abs,max_ulp,share_differing,nmse,tol_ulp,"
                                    "tol_rel,worst_d_over_s,worst_excess_over_s,"
                                    "guard,alone,graph,rerun,sweep,pass\n");
            for (int i = 0; i < n; i++) {
                const case_result *r = &res[i];
                len += (size_t)snprintf(
                    text + len, cap - len,
                    "%s,%s,\"%s\",%.6g,%.6g,%.6g,%.6g,%g,%g,%.6g,%.6g,%s,%s,%s,%s,%s,%d\n",
                    r->c->def->name, size_names[r->c->size], r->c->shape, r->d.max_abs,
                    isinf(r->d.max_ulp) ? -1.0 : r->d.max_ulp, r->d.share, r->d.nmse,
                    r->c->def->tol_ulp, r->c->def->tol_rel, r->d.worst_rel, r->d.worst_excess,
                    tri(r->guard_ok), tri(r->alone_ok), tri(r->graph_ok), tri(r->rerun_ok),
                    tri(r->sweep_ok), r->pass);
            }
        }
        int st = write_text(o->csv, text);
        free(text);
        SG_TRY(st);
    }
    return SG_OK;
}

// ---- driver ----

static int size_index(const char *name) {
    for (int i = 0; i < N_SIZES; i++)
        if (strcmp(size_names[i], name) == 0) return i;
    return -1;
}

// ops_validate, with the GEMM table it selects into t (every weight and M where none is given).
static int validate(const ops_options *o, ops_gemm_table *t) {
    if (o->op && !ops_known(o->op))
        return sg_fail(SG_EXIT_USAGE, "ops: unknown op \"%s\" (see sparkgate ops --list)", o->op);
    if (o->size && size_index(o->size) < 0)
        return sg_fail(SG_EXIT_USAGE, "ops: --size %s: tiny, small or qwen3", o->size);
    if ((o->gemm_weights || o->gemm_rows) && (!o->perf || (o->op && strcmp(o->op, "gemm") != 0)))
        return sg_fail(SG_EXIT_USAGE, "ops: --weight and --rows select rows of perf mode's GEMM "
                                      "table: use them with `ops perf`, without --op or with "
                                      "--op gemm");
    return ops_gemm_table_parse(o->gemm_weights, o->gemm_rows, t);
}

int ops_validate(const ops_options *o) {
    ops_gemm_table t;
    return validate(o, &t);
}

int ops_run(const ops_options *o, const sg_backend *test, const ops_device *dev,
            const sg_backend *ref, FILE *out) {
    ops_gemm_table table;
    SG_TRY(validate(o, &table));
    int only = o->size ? size_index(o->size) : -1;
    if (o->perf && (!dev || !dev->timer_begin || !dev->timer_end_us))
        return sg_fail(SG_EXIT_USAGE, "ops perf: the %s backend has no timers", test->name);
    if (o->perf && only < 0) only = QWEN3;
    fprintf(out, "sparkgate ops %s: %s vs %s twin, seed %llu\n", o->perf ? "perf" : "check",
            test->name, ref->name, (unsigned long long)o->seed);
    if (dev && dev->description[0]) fprintf(out, "device: %s\n", dev->description);
    int n_max = 0;
    for (int i = 0; i < ops_n_ops; i++)
        for (int s = 0; s < N_SIZES; s++) n_max += ops_n_cases(&ops_op_defs[i], s);
    case_result *res = sg_calloc((size_t)n_max, sizeof *res);
    ops_case *cases = sg_calloc((size_t)n_max, sizeof *cases);
    int n = 0, failed = 0, st = SG_OK;
    if (o->perf)
        fprintf(out, "\n%-14s %-6s %-44s %10s %9s %9s\n", "op", "size", "shape", "us", "GB/s",
                "TFLOP/s");
    else {
        fprintf(out, "\n");
        print_header(out);
    }
    for (int i = 0; i < ops_n_ops && st == SG_OK; i++) {
        const op_def *d = &ops_op_defs[i];
        if (o->op && strcmp(o->op, d->name) != 0) continue;
        for (int s = 0; s < N_SIZES && st == SG_OK; s++) {
            if (only >= 0 && s != only) continue;
            for (int k = 0; k < ops_n_cases(d, s) && st == SG_OK; k++) {
                ops_case *c = &cases[n];
                c->def = d;
                c->size = s;
                c->p[11] = k;
                // Inputs depend on the seed, the op and the size only: --seed replays a case.
                rng r = {o->seed * 0x100000001b3ull ^ ((uint64_t)(i + 1) << 40) ^
                         ((uint64_t)s << 32) ^ (uint64_t)k};
                d->make(c, s, &r);
                case_result *cr = &res[n];
                if (o->perf) {
                    st = ops_perf_case(c, test, dev, cr);
                    if (st == SG_OK)
                        fprintf(out, "%-14s %-6s %-44.44s %10.1f %9.1f %9.3f\n", d->name,
                                size_names[s], c->shape, cr->us, c->bytes / cr->us * 1e-3,
                                c->flops / cr->us * 1e-6);
                } else {
                    st = ops_run_case(c, test, dev, ref, cr);
                    if (st == SG_OK) {
                        print_result(out, cr);
                        failed += !cr->pass;
                    }
                }
                fflush(out);
                if (st == SG_OK) n++;
                ops_case_free(c);
            }
        }
    }
    gemm_perf_row gp[N_PERF_WEIGHTS * N_PERF_M];
    inv_row inv[N_PERF_WEIGHTS];
    int n_gp = 0, n_inv = 0;
    if (st == SG_OK && o->perf && (!o->op || strcmp(o->op, "gemm") == 0))
        st = ops_perf_gemm(test, dev, o->seed, &table, out, gp, &n_gp, inv, &n_inv);
    if (st == SG_OK) {
        if (!o->perf)
            fprintf(out, "\n%d case(s), %d failed (replay with --seed %llu)\n", n, failed,
                    (unsigned long long)o->seed);
        st = write_reports(o, dev, res, n, gp, n_gp, inv, n_inv, failed == 0);
    }
    free(res);
    free(cases);
    if (st != SG_OK) return st;
    return failed ? sg_fail(SG_EXIT_FAIL, "ops: %d case(s) failed", failed) : SG_OK;
}
