// bench/timeline.c: the kernel timeline summary of timeline.h (exposed time per kernel, idle gaps).
#include "bench/timeline.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static int by_start(const void *a, const void *b) {
    const tl_kernel *x = a, *y = b;
    if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
    return x->end_ns < y->end_ns ? -1 : x->end_ns > y->end_ns;
}

static int by_exposed(const void *a, const void *b) {
    const tl_row *x = a, *y = b;
    if (x->exposed_us != y->exposed_us) return x->exposed_us > y->exposed_us ? -1 : 1;
    if (x->launches != y->launches) return x->launches > y->launches ? -1 : 1;
    return strcmp(x->name, y->name);
}

// The row of kernel k, added when new (rows has room for one per kernel).
static tl_row *row_of(tl_summary *s, const tl_kernel *k) {
    for (size_t i = 0; i < s->n_rows; i++) {
        tl_row *r = &s->rows[i];
        if (r->blocks == k->blocks && r->threads == k->threads && strcmp(r->name, k->name) == 0)
            return r;
    }
    tl_row *r = &s->rows[s->n_rows++];
    *r = (tl_row){.name = k->name, .blocks = k->blocks, .threads = k->threads};
    return r;
}

int tl_summarize(tl_kernel *k, size_t n, tl_summary *out) {
    *out = (tl_summary){0};
    if (n == 0) return sg_fail(SG_EXIT_INPUT, "timeline: no kernels were recorded");
    for (size_t i = 0; i < n; i++)
        if (k[i].end_ns < k[i].start_ns)
            return sg_fail(SG_EXIT_INPUT, "timeline: kernel %s ends (%llu ns) before it starts (%llu ns)",
                           k[i].name, (unsigned long long)k[i].end_ns,
                           (unsigned long long)k[i].start_ns);
    qsort(k, n, sizeof *k, by_start);
    out->rows = sg_calloc(n, sizeof *out->rows);
    out->n_kernels = n;
    uint64_t reach = k[0].start_ns, idle = 0; // latest end so far
    for (size_t i = 0; i < n; i++) {
        if (k[i].start_ns > reach) idle += k[i].start_ns - reach;
        const uint64_t from = k[i].start_ns > reach ? k[i].start_ns : reach;
        tl_row *r = row_of(out, &k[i]);
        r->launches++;
        r->busy_us += (double)(k[i].end_ns - k[i].start_ns) / 1e3;
        if (k[i].end_ns > from) r->exposed_us += (double)(k[i].end_ns - from) / 1e3;
        if (k[i].end_ns > reach) reach = k[i].end_ns;
    }
    out->span_us = (double)(reach - k[0].start_ns) / 1e3;
    out->idle_us = (double)idle / 1e3;
    qsort(out->rows, out->n_rows, sizeof *out->rows, by_exposed);
    return SG_OK;
}

void tl_summary_free(tl_summary *s) {
    free(s->rows);
    *s = (tl_summary){0};
}

void tl_summary_print(FILE *f, const tl_summary *s, const char *label, size_t max_rows) {
    const double span = s->span_us > 0 ? s->span_us : 1;
    fprintf(f, "timeline: %zu kernels (%s), span %.3f ms, idle %.3f ms (%.1f%%)\n", s->n_kernels,
            label, s->span_us / 1e3, s->idle_us / 1e3, 100 * s->idle_us / span);
    fprintf(f, "%12s %6s %9s %12s %12s %8s %7s  %s\n", "exposed ms", "share", "launches",
            "busy us/ln", "exposed us/ln", "blocks", "threads", "kernel");
    const size_t n = max_rows && max_rows < s->n_rows ? max_rows : s->n_rows;
    for (size_t i = 0; i < n; i++) {
        const tl_row *r = &s->rows[i];
        fprintf(f, "%12.3f %5.1f%% %9d %12.2f %12.2f %8lld %7lld  %s\n", r->exposed_us / 1e3,
                100 * r->exposed_us / span, r->launches, r->busy_us / r->launches,
                r->exposed_us / r->launches, (long long)r->blocks, (long long)r->threads,
                r->name);
    }
    if (n < s->n_rows) fprintf(f, "(%zu more kernels)\n", s->n_rows - n);
}
