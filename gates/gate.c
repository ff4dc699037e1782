// gates/gate.c: a gate run: options, models, provenance, the selected suites in order, timing
// (see gate.h).
#include "gate.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/error.h"
#include "faults.h"
#include "fixtures/catalog.h"
#include "provenance.h"
#include "strbuf.h"
#include "suites.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int gate_suite_list(const char *const **names, const char *const **summaries) {
    static const char *n[GATE_N_SUITES], *d[GATE_N_SUITES];
    for (int i = 0; i < GATE_N_SUITES; i++) {
        n[i] = gate_suite_defs[i].name;
        d[i] = gate_suite_defs[i].summary;
    }
    *names = n;
    *summaries = d;
    return GATE_N_SUITES;
}

static int check_options(const gate_options *o, const gate_fault **fault) {
    *fault = NULL;
    for (int i = 0; i < o->n_suites; i++) {
        if (!suite_find(o->suites[i])) {
            strbuf b = {0};
            for (int k = 0; k < GATE_N_SUITES; k++)
                sb_printf(&b, "%s%s", k ? ", " : "", gate_suite_defs[k].name);
            char *list = sb_take(&b);
            int st = sg_fail(SG_EXIT_USAGE, "--suite %s: no such suite (the suites: %s)",
                             o->suites[i], list);
            free(list);
            return st;
        }
        for (int k = 0; k < i; k++)
            if (strcmp(o->suites[i], o->suites[k]) == 0)
                return sg_fail(SG_EXIT_USAGE, "--suite %s is given twice", o->suites[i]);
    }
    if (o->request && o->n_suites != 1)
        return sg_fail(SG_EXIT_USAGE, "--request %s replays one request of one suite: give "
                       "exactly one --suite with it", o->request);
    if (o->fault && !(*fault = gate_fault_find(o->fault))) {
        strbuf b = {0};
        for (int k = 0; k < GATE_N_FAULTS; k++)
            sb_printf(&b, "%s%s", k ? ", " : "", gate_faults[k].name);
        char *list = sb_take(&b);
        int st = sg_fail(SG_EXIT_USAGE, "--fault %s: no such fault (the faults: %s)", o->fault,
                         list);
        free(list);
        return st;
    }
    if (o->target && !o->draft)
        return sg_fail(SG_EXIT_USAGE, "--target without --draft means no drafter, and the gate "
                       "checks the speculative decoder: give --draft DIR too");
    if (o->draft && !o->target)
        return sg_fail(SG_EXIT_USAGE, "--draft needs its --target (the checkpoint pair)");
    return SG_OK;
}

// The flags that make a replayed gate use the same models, workload, backend and fault.
static char *replay_flags(const gate_options *o, const fixture_info *fx, const char *backend) {
    strbuf b = {0};
    sb_puts(&b, "--fixture ");
    sb_shell_word(&b, fx->dir);
    const char *flags[4] = {"--target", "--draft", "--workload", "--fault"};
    const char *values[4] = {o->target, o->draft, o->workload, o->fault};
    for (int i = 0; i < 4; i++)
        if (values[i]) {
            sb_printf(&b, " %s ", flags[i]);
            sb_shell_word(&b, values[i]);
        }
    sb_printf(&b, " --backend %s", backend);
    return sb_take(&b);
}

static int provenance(const gate_options *o, const fixture_info *fx, const char *target_dir,
                      const char *draft_dir, gate_provenance *p) {
    prov_git_sha(SG_SOURCE_DIR, p->git_sha, sizeof p->git_sha);
    SG_TRY(prov_sha256_dir(fx->dir, p->fixture_sha256));
    SG_TRY(prov_sha256_dir(target_dir, p->target_sha256));
    SG_TRY(prov_sha256_dir(draft_dir, p->draft_sha256));
    snprintf(p->backend, sizeof p->backend, "%s", o->be->name);
    snprintf(p->gpu, sizeof p->gpu, "%s", o->gpu ? o->gpu : "none");
    if (o->gpu_arch) snprintf(p->architecture, sizeof p->architecture, "%s", o->gpu_arch);
    else prov_architecture(p->architecture, sizeof p->architecture);
    return SG_OK;
}

typedef struct {
    fixture_info fx;
    target_model target;
    drafter_model draft;
    int has_target, has_draft;
} gate_models;

static int load_models(const gate_options *o, gate_models *m) {
    SG_TRY(fixture_open(o->fixture, &m->fx));
    SG_TRY(target_model_load(o->target ? o->target : m->fx.target, &m->target));
    m->has_target = 1;
    SG_TRY(drafter_model_load(o->draft ? o->draft : m->fx.draft, &m->target, &m->draft));
    m->has_draft = 1;
    return SG_OK;
}

static void free_models(gate_models *m) {
    if (m->has_draft) drafter_model_free(&m->draft);
    if (m->has_target) target_model_free(&m->target);
}

static int run_suites(const gate_options *o, gate_models *m, const gate_fault *fault,
                      gate_report *out) {
    gate_ctx g = {.be = o->be, .target = &m->target, .draft = &m->draft, .fx = &m->fx,
                  .workload = o->workload, .request = o->request, .tol = m->fx.tol,
                  .fault = fault ? fault->fault : ENGINE_FAULT_NONE,
                  .can_hedge = m->draft.cfg.markov_rank > 0};
    char *replay = replay_flags(o, &m->fx, o->be->name);
    g.replay = replay;
    ref_cache_init(&g.refs, &m->target, &m->draft);
    if (o->progress)
        fprintf(o->progress, "sparkgate gate: fixture %s (%s), backend %s, tol %g, git %s%s%s\n",
                m->fx.name, m->fx.dir, o->be->name, m->fx.tol, out->provenance.git_sha,
                fault ? ", NEGATIVE CONTROL --fault " : "", fault ? fault->name : "");
    int st = SG_OK;
    for (int i = 0; i < GATE_N_SUITES && st == SG_OK; i++) {
        const suite_def *d = &gate_suite_defs[i];
        int selected = o->n_suites == 0;
        for (int k = 0; k < o->n_suites; k++) selected |= strcmp(o->suites[k], d->name) == 0;
        if (!selected) continue;
        gate_suite *s = report_add_suite(out, d->name);
        double t0 = now_s();
        if (d->needs_hedge && !g.can_hedge) {
            s->skipped = 1;
            snprintf(s->skip_reason, sizeof s->skip_reason,
                     "the drafter has no Markov head (markov_rank 0), so it cannot hedge");
        } else {
            st = d->run(&g, s);
        }
        s->seconds = now_s() - t0;
        if (st == SG_OK && o->progress) {
            report_print_suite(s, o->progress);
            fflush(o->progress);
        }
    }
    ref_cache_free(&g.refs);
    free(replay);
    return st;
}

int gate_run(const gate_options *o, gate_report *out) {
    memset(out, 0, sizeof *out);
    double t0 = now_s();
    const gate_fault *fault;
    SG_TRY(check_options(o, &fault));
    gate_models m;
    memset(&m, 0, sizeof m);
    int st = load_models(o, &m);
    if (st == SG_OK)
        st = provenance(o, &m.fx, o->target ? o->target : m.fx.target,
                        o->draft ? o->draft : m.fx.draft, &out->provenance);
    if (st == SG_OK) {
        snprintf(out->backend, sizeof out->backend, "%s", o->be->name);
        snprintf(out->fixture, sizeof out->fixture, "%s", m.fx.name);
        snprintf(out->fixture_dir, sizeof out->fixture_dir, "%s", m.fx.dir);
        snprintf(out->fault, sizeof out->fault, "%s", fault ? fault->name : "");
        out->tol = m.fx.tol;
        st = run_suites(o, &m, fault, out);
    }
    free_models(&m);
    if (st != SG_OK) {
        gate_report_free(out);
        return st;
    }
    report_finish(out);
    out->seconds = now_s() - t0;
    if (o->progress) report_print_summary(out, o->progress);
    return SG_OK;
}
