// cli/bench.c: `sparkgate bench`: flags, the backend and its device services (sync, the bandwidth
// kernel), then bench_run (bench/bench.h). Exit 2 on bad flags, 77 without a usable CUDA device
// for --backend cuda.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "cli/commands.h"
#include "common/error.h"
#ifdef SG_HAVE_CUDA
#include "gpu/bandwidth.h"
#include "gpu/cuda_backend.h"
#endif

static void bench_help(void) {
    printf(
        "usage: sparkgate bench [options]\n\n"
        "Decode speed against the memory roofline: for each concurrency N and mode, N greedy\n"
        "requests of --max-new tokens; tokens/s, ms per round split into verify, drafter,\n"
        "Markov loop, ladder and accept+commit, each phase's bytes, floor and share of it,\n"
        "accepted drafts and hedge wins per round, the break-even runner-up hit rate of each\n"
        "hedge C and the goals of bench/README.md. On cuda the bandwidth is measured first\n"
        "(read-only kernel over 8 GiB, L2 flushed).\n\n"
        "  --fixture NAME|DIR   fixture set with a target and a DSpark drafter (default: %s)\n"
        "  --backend cpu|cuda   [cpu]\n"
        "  --concurrency LIST   comma-separated, at most %d [1,4,16,64]\n"
        "  --modes LIST         of plain,spec,hedge1,hedge2,hedge3 [all]\n"
        "  --max-new N          tokens per request [64]\n"
        "  --repeat R           measured passes per row, at most %d: tokens/s is the median,\n"
        "                       \"spr\" its spread (fastest - slowest) / median [1]\n"
        "  --graphs on|off      replay the engine's kernel sequences as cached CUDA graphs [on]\n"
        "  --json FILE          everything as JSON (with the prompt and plain tokens of request 0\n"
        "                       for bench/hf_baseline.py)\n\n"
        "exit status: 0 ok, 1 a mode's tokens differ from plain decoding, 2 usage, 3 bad input,\n"
        "77 no usable CUDA device\n",
        SG_DEFAULT_FIXTURE, BENCH_MAX_CONC, BENCH_MAX_REPEAT);
}

static int parse_int(const char *flag, const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return sg_fail(SG_EXIT_USAGE, "bench: %s %s: not an integer in %d..%d", flag, s, lo, hi);
    *out = (int)v;
    return SG_OK;
}

static int parse_conc(const char *s, bench_options *o) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    o->n_conc = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (o->n_conc == BENCH_MAX_CONC)
            return sg_fail(SG_EXIT_USAGE, "bench: --concurrency: at most %d values",
                           BENCH_MAX_CONC);
        SG_TRY(parse_int("--concurrency", t, 1, 256, &o->conc[o->n_conc++]));
    }
    if (o->n_conc == 0) return sg_fail(SG_EXIT_USAGE, "bench: --concurrency needs a value");
    return SG_OK;
}

static int parse_modes(const char *s, bench_options *o) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    memset(o->modes, 0, sizeof o->modes);
    int n = 0;
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
         t = strtok_r(NULL, ",", &save), n++) {
        int m = 0;
        while (m < BENCH_MODES && strcmp(t, bench_mode_names[m]) != 0) m++;
        if (m == BENCH_MODES)
            return sg_fail(SG_EXIT_USAGE,
                           "bench: --modes: unknown mode \"%s\" (plain, spec, "
                           "hedge1, hedge2, hedge3)",
                           t);
        o->modes[m] = 1;
    }
    if (n == 0) return sg_fail(SG_EXIT_USAGE, "bench: --modes needs a value");
    return SG_OK;
}

static int parse(int argc, char **argv, bench_options *o, const char **backend, int *help) {
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            *help = 1;
            return SG_OK;
        }
        static const char *const with_value[] = {"--fixture", "--backend", "--concurrency",
                                                 "--modes",   "--max-new", "--json",
                                                 "--graphs",  "--repeat"};
        size_t k = 0;
        while (k < sizeof with_value / sizeof *with_value && strcmp(a, with_value[k]) != 0) k++;
        if (k == sizeof with_value / sizeof *with_value)
            return sg_fail(SG_EXIT_USAGE, "bench: unknown argument \"%s\" (see --help)", a);
        if (i + 1 >= argc) return sg_fail(SG_EXIT_USAGE, "bench: %s needs a value", a);
        const char *v = argv[++i];
        if (k == 0)
            o->fixture = v;
        else if (k == 1)
            *backend = v;
        else if (k == 2)
            SG_TRY(parse_conc(v, o));
        else if (k == 3)
            SG_TRY(parse_modes(v, o));
        else if (k == 4)
            SG_TRY(parse_int("--max-new", v, 1, 100000, &o->max_new));
        else if (k == 5)
            o->json = v;
        else if (k == 7)
            SG_TRY(parse_int("--repeat", v, 1, BENCH_MAX_REPEAT, &o->repeat));
        else if (strcmp(v, "on") == 0 || strcmp(v, "off") == 0)
            o->graphs = strcmp(v, "on") == 0;
        else
            return sg_fail(SG_EXIT_USAGE, "bench: --graphs: expected on or off, got \"%s\"", v);
    }
    return SG_OK;
}

int cmd_bench(int argc, char **argv) {
    bench_options o = {
        .conc = {1, 4, 16, 64}, .n_conc = 4, .modes = {1, 1, 1, 1, 1}, .max_new = 64, .graphs = 1,
        .repeat = 1};
    const char *backend = NULL;
    int help = 0;
    if (parse(argc, argv, &o, &backend, &help) != SG_OK) return cli_report(SG_EXIT_USAGE);
    if (help) {
        bench_help();
        return SG_OK;
    }
    sg_backend *be = NULL;
    int st = cli_engine_backend(backend, &be);
    if (st != SG_OK) return cli_report(st);
    bench_device dev = {0};
    snprintf(dev.description, sizeof dev.description, "the host CPU");
#ifdef SG_HAVE_CUDA
    if (strcmp(be->name, "cuda") == 0) {
        cuda_device_info info;
        st = cuda_device_query(&info);
        dev.sync = cuda_backend_sync;
        dev.bandwidth = cuda_read_bandwidth;
        snprintf(dev.description, sizeof dev.description, "%s, %d SMs, L2 %.0f MiB, kernels %s",
                 info.name, info.sm_count, (double)info.l2_bytes / (1u << 20), info.built_for);
    }
#endif
    if (st == SG_OK) st = bench_run(&o, be, &dev, stdout);
    be->destroy(be);
    return cli_report(st);
}
