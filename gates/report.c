// gates/report.c: the gate's console output: one line per suite and a summary (see report.h).
#include <stdio.h>
#include <string.h>

#include "report.h"

// Failures printed per suite (all of them go to the JSON and JUnit reports).
#define REPORT_CONSOLE_FAILURES 4

// "6 IDENTICAL, 1 REJECTED" (kinds with a count only; "no requests" when there are none).
static void verdict_counts(const gate_suite *s, char *buf, size_t size) {
    size_t at = 0;
    buf[0] = 0;
    for (int k = 0; k < VERDICT_KINDS; k++) {
        if (!s->verdicts[k]) continue;
        int n = snprintf(buf + at, size - at, "%s%d %s", at ? ", " : "", s->verdicts[k],
                         verdict_name((verdict_kind)k));
        if (n < 0 || (size_t)n >= size - at) break;
        at += (size_t)n;
    }
    if (!at) snprintf(buf, size, "no requests");
}

void report_print_suite(const gate_suite *s, FILE *out) {
    if (s->skipped) {
        fprintf(out, "SKIP  %-17s %s\n", s->name, s->skip_reason);
        return;
    }
    char counts[160];
    verdict_counts(s, counts, sizeof counts);
    const spec_counters *c = &s->counters;
    double per_round = c->rounds ? (double)c->accepted / (double)c->rounds : 0.0;
    fprintf(out,
            "%s  %-17s %-34s hedged %3lld wins %3lld losses %3lld  accepted/round %.2f  "
            "max|dlogit| %.2e  %5.1f s\n",
            s->passed ? "PASS" : "FAIL", s->name, counts, (long long)c->hedged_rounds,
            (long long)c->chain_wins, (long long)c->loss_rounds, per_round, s->max_abs_dlogit,
            s->seconds);
    for (int i = 0; i < s->n_failures; i++) {
        const gate_failure *f = &s->failures[i];
        if (i == REPORT_CONSOLE_FAILURES) {
            fprintf(out, "      ... and %d more failures (every one is in the --json and --junit "
                    "reports)\n", s->n_failures - i);
            break;
        }
        fprintf(out, "      [%s] %s%s", gate_check_name(f->check), f->request,
                f->request[0] ? ": " : "");
        for (const char *p = f->text; *p; p++) {
            fputc(*p, out);
            if (*p == '\n' && p[1]) fputs("        ", out);
        }
        if (!f->text[0] || f->text[strlen(f->text) - 1] != '\n') fputc('\n', out);
    }
}

void report_print_summary(const gate_report *r, FILE *out) {
    int ran = 0, failed = 0, skipped = 0;
    for (int i = 0; i < r->n_suites; i++) {
        if (r->suites[i].skipped) skipped++;
        else ran++;
        if (!r->suites[i].skipped && !r->suites[i].passed) failed++;
    }
    fprintf(out, "gate %s: %d of %d suites passed", r->passed ? "PASSED" : "FAILED",
            ran - failed, ran);
    if (skipped) fprintf(out, ", %d skipped", skipped);
    if (failed) {
        fprintf(out, " (failed:");
        for (int i = 0; i < r->n_suites; i++) {
            const gate_suite *s = &r->suites[i];
            if (s->skipped || s->passed) continue;
            fprintf(out, " %s[", s->name);
            int first = 1;
            for (int c = 0; c < GATE_N_CHECKS; c++)
                if (suite_check_failed(s, (gate_check)c)) {
                    fprintf(out, "%s%s", first ? "" : ",", gate_check_name((gate_check)c));
                    first = 0;
                }
            fprintf(out, "]");
        }
        fprintf(out, ")");
    }
    fprintf(out, "; fixture %s, backend %s, tol %g", r->fixture, r->backend, r->tol);
    if (r->fault[0]) fprintf(out, ", fault %s", r->fault);
    fprintf(out, "; elapsed %.1f s\n", r->seconds);
}
