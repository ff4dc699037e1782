// cli/ops.c: `sparkgate ops`, the kernel bring-up tool (gates/ops.h): the CUDA backend's ops
// against the CPU backend, op by op (bitwise, or within the order rule for the ops whose K order
// is the CUDA backend's own: gemm, gemm_logits, markov_step). `--list` and `--show-coverage` need no GPU; every other mode
// exits 77 without a usable CUDA device (or in a build without CUDA).
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/error.h"
#include "engine/cpu_backend.h"
#include "gates/ops.h"
#ifdef SG_HAVE_CUDA
#include "gpu/cuda_backend.h"
#endif

static void ops_help(void) {
    printf(
        "usage: sparkgate ops [check|perf] [options]\n\n"
        "Runs every op of the CUDA backend and its CPU twin on the same seeded random inputs\n"
        "(tiny, small and Qwen3-4B shapes) and prints, per case: max |d|, max ULP, the share of\n"
        "elements that differ, NMSE, the op's tolerance (and why), guard zones, batch\n"
        "invariance (each row alone vs in the batch, bitwise; gemm also every prefix M of a\n"
        "2048-row product), graph vs eager and rerun determinism (bitwise), and the first bad\n"
        "element. Most ops must equal their twin bitwise; gemm, gemm_logits and markov_step\n"
        "(its bias is a gemm) reduce K in the CUDA backend's own order, so they must stay\n"
        "within |d| <= 1e-5*S + rounding per element (S = sum of |terms|, see --list), and\n"
        "the worst |d|/S is printed; a logits argmax that differs within that bound is\n"
        "reported as a near tie. perf: time per op (us, GB/s, TFLOP/s) and the GEMM shapes\n"
        "against cuBLAS, with cuBLAS's own row invariance across M, and per M how many\n"
        "shapes take at most 1.10x cuBLAS's time (the GEMM goal of bench/README.md).\n\n"
        "  --op NAME          only this op (see --list)\n"
        "  --size S           only tiny, small or qwen3 [all; perf: qwen3]\n"
        "  --seed N           input seed, to replay a run [1]\n"
        "  --json FILE        results as JSON\n"
        "  --csv FILE         results as CSV\n"
        "  --weight LIST      perf: only these weights of the GEMM table, comma-separated\n"
        "                     (q_proj, k_proj, o_proj, gate_proj, down_proj, fc, markov_w2,\n"
        "                     lm_head) [all]\n"
        "  --rows LIST        perf: the GEMM table's M values instead, 1 to 2048, at most 8\n"
        "                     distinct ones, comma-separated; skips the row-invariance sweep (a\n"
        "                     profiler sees only these launches) [1,8,16,32,64,128,512,2048]\n"
        "  --list             the ops, their tolerances and reasons (no GPU needed)\n"
        "  --show-coverage    backend table entries and the checks exercising them; exit 1 if\n"
        "                     one has none (no GPU needed)\n\n"
        "exit status: 0 every check passed, 1 a check failed, 2 usage, 77 no usable CUDA device\n");
}

static int parse_seed(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || !*s || *end || s[0] == '-')
        return sg_fail(SG_EXIT_USAGE, "ops: --seed %s: not a non-negative integer", s);
    *out = (uint64_t)v;
    return SG_OK;
}

#ifdef SG_HAVE_CUDA
static int run_on_cuda(const ops_options *o) {
    cuda_device_info info;
    SG_TRY(cuda_device_query(&info));
    sg_backend *gpu;
    SG_TRY(cuda_backend_create(&gpu));
    ops_device dev = {.sync = cuda_backend_sync,
                      .capture_begin = cuda_capture_begin,
                      .capture_end_replay = cuda_capture_end_replay,
                      .timer_begin = cuda_timer_begin,
                      .timer_end_us = cuda_timer_end_us,
                      .vendor_gemm = cuda_vendor_gemm,
                      .vendor_name = "cuBLAS"};
    snprintf(dev.description, sizeof dev.description,
             "%s, compute capability %d.%d, %d SMs, %.1f GiB, L2 %.0f MiB; driver %d.%d, runtime "
             "%d.%d; kernels built for %s, loaded image sm_%d",
             info.name, info.cc_major, info.cc_minor, info.sm_count,
             (double)info.mem_bytes / (1u << 30), (double)info.l2_bytes / (1u << 20),
             info.driver_version / 1000, info.driver_version % 1000 / 10,
             info.runtime_version / 1000, info.runtime_version % 1000 / 10, info.built_for,
             info.kernel_arch);
    sg_backend *cpu = cpu_backend_create();
    int st = ops_run(o, gpu, &dev, cpu, stdout);
    cpu->destroy(cpu);
    gpu->destroy(gpu);
    return st;
}
#endif

int cmd_ops(int argc, char **argv) {
    ops_options o = {.seed = 1};
    int list = 0, coverage = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char **value = NULL;
        const char *seed = NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            ops_help();
            return SG_OK;
        } else if (strcmp(a, "--list") == 0)
            list = 1;
        else if (strcmp(a, "--show-coverage") == 0)
            coverage = 1;
        else if (strcmp(a, "perf") == 0)
            o.perf = 1;
        else if (strcmp(a, "check") == 0)
            o.perf = 0;
        else if (strcmp(a, "--op") == 0)
            value = &o.op;
        else if (strcmp(a, "--size") == 0)
            value = &o.size;
        else if (strcmp(a, "--json") == 0)
            value = &o.json;
        else if (strcmp(a, "--csv") == 0)
            value = &o.csv;
        else if (strcmp(a, "--weight") == 0)
            value = &o.gemm_weights;
        else if (strcmp(a, "--rows") == 0)
            value = &o.gemm_rows;
        else if (strcmp(a, "--seed") == 0)
            value = &seed;
        else
            return cli_report(
                sg_fail(SG_EXIT_USAGE, "ops: unknown argument \"%s\" (see --help)", a));
        if (value) {
            if (i + 1 >= argc)
                return cli_report(sg_fail(SG_EXIT_USAGE, "ops: %s needs a value", a));
            *value = argv[++i];
            if (seed && parse_seed(seed, &o.seed) != SG_OK) return cli_report(SG_EXIT_USAGE);
        }
    }
    if (ops_validate(&o) != SG_OK) return cli_report(SG_EXIT_USAGE);
    if (list) {
        ops_list(stdout);
        return SG_OK;
    }
    if (coverage) return ops_show_coverage(stdout) ? SG_EXIT_FAIL : SG_OK;
#ifdef SG_HAVE_CUDA
    return cli_report(run_on_cuda(&o));
#else
    return cli_report(sg_fail(SG_EXIT_NO_GPU, "ops: this build has no CUDA backend (nvcc was not "
                                              "found when it was configured)"));
#endif
}
