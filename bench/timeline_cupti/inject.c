// bench/timeline_cupti/inject.c: libsg_timeline.so, a CUPTI injection library that records the
// start and end of every kernel a CUDA program runs (graph replays and programmatic dependents
// included, as the GPU ran them) and, when the program exits, prints bench/timeline.h's summary to
// stderr. Nsight Systems is not on every machine; CUPTI ships with the toolkit.
//
//   CUDA_INJECTION64_PATH=build/libsg_timeline.so sparkgate bench ... 2> timeline.txt
//
// Environment: SG_TIMELINE_ALL=1 summarizes every kernel (default: kernels launched from CUDA
// graphs only, which for sparkgate are the replayed decode steps and rounds, not uploads, warm-up
// or the bandwidth probe); SG_TIMELINE_CSV=path also writes every kernel (start and end in ns from
// the first start, blocks, threads, graph id, mangled name); SG_TIMELINE_ROWS=n prints n rows
// (default 40, 0: all). Recording costs host time between launches (the GPU's kernel times stay
// as they were, measured on the H200: bench/README.md), so read the exposed times, not tokens/s.
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/timeline.h"
#include "common/error.h"

#define CUPTI_CHECK(call)                                                                          \
    do {                                                                                           \
        CUptiResult r_ = (call);                                                                   \
        if (r_ != CUPTI_SUCCESS) {                                                                 \
            const char *s_ = "?";                                                                  \
            cuptiGetResultString(r_, &s_);                                                         \
            fprintf(stderr, "timeline: %s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, s_);   \
        }                                                                                          \
    } while (0)

enum { BUFFER_BYTES = 4 << 20 };

typedef struct {
    tl_kernel k;
    uint32_t graph_id;
} recorded;

static recorded *rec;
static size_t n_rec, cap_rec, n_dropped;

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
    *buf = aligned_alloc(8, BUFFER_BYTES);
    *size = *buf ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
    (void)size;
    CUpti_Activity *a = NULL;
    while (cuptiActivityGetNextRecord(buf, valid, &a) == CUPTI_SUCCESS) {
        if (a->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)a;
        if (n_rec == cap_rec) {
            cap_rec = cap_rec ? 2 * cap_rec : 1 << 16;
            rec = realloc(rec, cap_rec * sizeof *rec);
            SG_CHECK(rec, "out of memory for %zu kernel records", cap_rec);
        }
        rec[n_rec++] = (recorded){
            .k = {.start_ns = k->start,
                  .end_ns = k->end,
                  .blocks = (int64_t)k->gridX * k->gridY * k->gridZ,
                  .threads = (int64_t)k->blockX * k->blockY * k->blockZ,
                  .name = k->name},
            .graph_id = k->graphId};
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
        n_dropped += dropped;
    free(buf);
}

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static void write_csv(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "timeline: cannot write %s: check the folder exists\n", path);
        return;
    }
    const uint64_t t0 = n_rec ? rec[0].k.start_ns : 0;
    fprintf(f, "start_ns,end_ns,blocks,threads,graph,name\n");
    for (size_t i = 0; i < n_rec; i++)
        fprintf(f, "%llu,%llu,%lld,%lld,%u,%s\n", (unsigned long long)(rec[i].k.start_ns - t0),
                (unsigned long long)(rec[i].k.end_ns - t0), (long long)rec[i].k.blocks,
                (long long)rec[i].k.threads, rec[i].graph_id, rec[i].k.name);
    fclose(f);
}

static int by_record_start(const void *a, const void *b) {
    const recorded *x = a, *y = b;
    return x->k.start_ns < y->k.start_ns ? -1 : x->k.start_ns > y->k.start_ns;
}

static void report(void) {
    CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    if (n_dropped) fprintf(stderr, "timeline: %zu kernel records dropped by CUPTI\n", n_dropped);
    qsort(rec, n_rec, sizeof *rec, by_record_start);
    const char *csv = getenv("SG_TIMELINE_CSV");
    if (csv && *csv) write_csv(csv);
    const int all = env_int("SG_TIMELINE_ALL", 0);
    tl_kernel *k = sg_calloc(n_rec ? n_rec : 1, sizeof *k);
    size_t n = 0;
    for (size_t i = 0; i < n_rec; i++)
        if (all || rec[i].graph_id) k[n++] = rec[i].k;
    tl_summary s;
    if (tl_summarize(k, n, &s) == SG_OK) {
        tl_summary_print(stderr, &s, all ? "all kernels" : "kernels launched from CUDA graphs",
                         (size_t)env_int("SG_TIMELINE_ROWS", 40));
        tl_summary_free(&s);
    } else {
        fprintf(stderr, "%s%s\n", sg_error(),
                all ? "" : " from CUDA graphs (SG_TIMELINE_ALL=1 summarizes every kernel)");
    }
    free(k);
    free(rec);
    rec = NULL;
    n_rec = cap_rec = 0;
}

// Called by the CUDA driver when it loads this library (CUDA_INJECTION64_PATH).
int InitializeInjection(void);
int InitializeInjection(void) {
    CUPTI_CHECK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    CUPTI_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    atexit(report);
    return 1;
}
