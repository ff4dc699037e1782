// cli/gate.c: `sparkgate gate`, the main job: runs the gate suites (gates/gate.h) of the hedged
// speculative decoder on a backend against the plain CPU reference, prints one line per suite and
// a summary, writes --json / --junit reports, and exits 0 when every suite passed, 1 when a gate
// failed, 2 on usage errors, 3 on bad input files, 77 when the CUDA backend is not usable.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/options.h"
#include "common/error.h"
#include "gates/faults.h"
#include "gates/gate.h"
#ifdef SG_HAVE_CUDA
#include "gpu/cuda_backend.h"
#endif

static const char *gate_shared_flags = "--fixture --target --draft --backend --json --junit";

static void gate_help(void) {
    printf("usage: sparkgate gate [options]\n\n"
           "Runs the gate suites: the hedged speculative decoder (engine) on a backend against the\n"
           "plain CPU reference decoder, on a fixture's checkpoints and workloads (prompts are token\n"
           "ids). Per request the verdict is IDENTICAL, TIE (a difference within the fixture's\n"
           "tolerance, every later token passing the teacher-forced check), REJECTED (passes only\n"
           "where the workload expects it) or MISMATCH; each suite also checks |dlogit| against the\n"
           "tolerance, digests within the backend, counters and their invariants. Prints one line\n"
           "per suite and a summary; a failure prints what differs and a command that replays it.\n\n"
           "  --fixture NAME|DIR     fixture set (default: %s)\n"
           "  --target DIR --draft DIR  any checkpoint pair instead of the fixture's (both)\n"
           "  --workload FILE        one workload file for every suite instead of the fixture's\n"
           "  --suite NAME           run this suite (repeat, or a comma list; default: all)\n"
           "  --request ID           only this request (with exactly one --suite): a replay\n"
           "  --backend cpu|cuda     the engine's backend [cpu]\n"
           "  --json FILE            write the report as JSON (schema_version 1)\n"
           "  --junit FILE           write the report as JUnit XML\n"
           "  --fault NAME           a negative control: inject one engine bug; the gate must fail\n\n"
           "suites:\n",
           SG_DEFAULT_FIXTURE);
    const char *const *names, *const *summaries;
    int n = gate_suite_list(&names, &summaries);
    for (int i = 0; i < n; i++) printf("  %-17s %s\n", names[i], summaries[i]);
    printf("\nfaults (never in a default run; each names the check that must catch it):\n");
    for (int i = 0; i < GATE_N_FAULTS; i++)
        printf("  %-14s caught by %-8s %s\n", gate_faults[i].name,
               gate_check_name(gate_faults[i].caught_by), gate_faults[i].bug);
    printf("\nexit status: 0 every suite passed, 1 a gate failed, 2 usage, 3 bad input file or\n"
           "config, 77 no usable CUDA device\n");
}

typedef struct {
    const char *workload, *request, *fault;
    char *suite_lists[GATE_MAX_SELECTED]; // owned copies of --suite values (comma lists)
    int n_suite_lists;
} gate_flags;

// Takes the gate-only flags out of argv (argc shrinks); SG_EXIT_USAGE on a missing value.
static int take_gate_flags(int *argc, char **argv, gate_flags *f) {
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        const char *flag = argv[i];
        const char **slot = strcmp(flag, "--workload") == 0 ? &f->workload
                            : strcmp(flag, "--request") == 0 ? &f->request
                            : strcmp(flag, "--fault") == 0   ? &f->fault
                                                             : NULL;
        int is_suite = strcmp(flag, "--suite") == 0;
        if (!slot && !is_suite) {
            argv[out++] = argv[i];
            continue;
        }
        if (i + 1 == *argc || !argv[i + 1][0])
            return sg_fail(SG_EXIT_USAGE, "%s needs a value", flag);
        const char *value = argv[++i];
        if (slot) {
            if (*slot) return sg_fail(SG_EXIT_USAGE, "%s is given twice", flag);
            *slot = value;
        } else {
            if (f->n_suite_lists == GATE_MAX_SELECTED)
                return sg_fail(SG_EXIT_USAGE, "--suite: at most %d", GATE_MAX_SELECTED);
            size_t n = strlen(value) + 1;
            f->suite_lists[f->n_suite_lists] = sg_calloc(n, 1);
            memcpy(f->suite_lists[f->n_suite_lists++], value, n);
        }
    }
    *argc = out;
    return SG_OK;
}

// Splits the --suite values (comma lists) into o->suites.
static int select_suites(gate_flags *f, gate_options *o) {
    for (int i = 0; i < f->n_suite_lists; i++)
        for (char *save = NULL, *tok = strtok_r(f->suite_lists[i], ",", &save); tok;
             tok = strtok_r(NULL, ",", &save)) {
            if (o->n_suites == GATE_MAX_SELECTED)
                return sg_fail(SG_EXIT_USAGE, "--suite: at most %d suites", GATE_MAX_SELECTED);
            o->suites[o->n_suites++] = tok;
        }
    return SG_OK;
}

static int write_reports(const gate_report *r, const char *json, const char *junit) {
    if (json) SG_TRY(report_write_json(r, json));
    if (junit) SG_TRY(report_write_junit(r, junit));
    return SG_OK;
}

static int gate_main(int argc, char **argv, gate_flags *f) {
    cli_options c;
    SG_TRY(take_gate_flags(&argc, argv, f));
    SG_TRY(cli_parse_options(argc, argv, gate_shared_flags, &c));
    if (c.help) {
        gate_help();
        return SG_OK;
    }
    if (c.n_positional > 0)
        return sg_fail(SG_EXIT_USAGE, "gate takes no arguments (\"%s\"); see --help",
                       c.positional[0]);
    gate_options o = {.fixture = c.fixture, .target = c.target, .draft = c.draft,
                      .workload = f->workload, .request = f->request, .fault = f->fault,
                      .progress = stdout};
    SG_TRY(select_suites(f, &o));
    sg_backend *be = NULL;
    SG_TRY(cli_engine_backend(c.backend, &be));
    o.be = be;
#ifdef SG_HAVE_CUDA
    cuda_device_info dev;
    char arch[32];
    if (strcmp(be->name, "cuda") == 0 && cuda_device_query(&dev) == SG_OK) {
        snprintf(arch, sizeof arch, "sm_%d%d", dev.cc_major, dev.cc_minor);
        o.gpu = dev.name;
        o.gpu_arch = arch;
    }
#endif
    gate_report r;
    int st = gate_run(&o, &r);
    if (st == SG_OK) {
        st = write_reports(&r, c.json, c.junit);
        if (st == SG_OK && !r.passed) st = SG_EXIT_FAIL;
        gate_report_free(&r);
    }
    be->destroy(be);
    return st;
}

int cmd_gate(int argc, char **argv) {
    char **args = sg_calloc((size_t)argc + 1, sizeof *args);
    memcpy(args, argv, sizeof *args * (size_t)argc);
    gate_flags f;
    memset(&f, 0, sizeof f);
    int st = gate_main(argc, args, &f);
    for (int i = 0; i < f.n_suite_lists; i++) free(f.suite_lists[i]);
    free(args);
    // A failed gate has printed its report; other errors are reported here.
    return st == SG_EXIT_FAIL ? st : cli_report(st);
}
