// gates/report_junit.c: the gate report as JUnit XML for CI systems (see report.h): one
// <testsuite> per gate suite, one <testcase> per request (failing with its verdict failure) and
// one per suite-level check that failed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "report.h"
#include "strbuf.h"

// XML text or attribute value: & < > " ' escaped; control characters other than tab and newline
// (not allowed in XML 1.0) become '?'.
static void put_escaped(strbuf *b, const char *text) {
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        switch (*p) {
        case '&': sb_puts(b, "&amp;"); break;
        case '<': sb_puts(b, "&lt;"); break;
        case '>': sb_puts(b, "&gt;"); break;
        case '"': sb_puts(b, "&quot;"); break;
        case '\'': sb_puts(b, "&apos;"); break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t') sb_puts(b, "?");
            else sb_put(b, (const char *)p, 1);
        }
    }
}

// The first line of a failure text (the summary) as a message attribute.
static void put_summary(strbuf *b, const char *text) {
    size_t n = strcspn(text, "\n");
    char *line = sg_calloc(n + 1, 1);
    memcpy(line, text, n);
    put_escaped(b, line);
    free(line);
}

static void put_failure(strbuf *b, const gate_failure *f) {
    sb_printf(b, "      <failure type=\"%s\" message=\"", gate_check_name(f->check));
    put_summary(b, f->text);
    sb_puts(b, "\">");
    put_escaped(b, f->text);
    sb_puts(b, "</failure>\n");
}

static int suite_level_failures(const gate_suite *s) {
    int n = 0;
    for (int i = 0; i < s->n_failures; i++) n += s->failures[i].request[0] == 0;
    return n;
}

// A suite's test cases and how many of them fail (a skipped suite: one skipped case).
static void suite_cases(const gate_suite *s, int *tests, int *failures) {
    *tests = 1;
    *failures = 0;
    if (s->skipped) return;
    *failures = suite_level_failures(s);
    *tests = s->n_requests + *failures;
    for (int i = 0; i < s->n_requests; i++) {
        int failed = 0;
        for (int k = 0; k < s->n_failures; k++)
            failed |= strcmp(s->failures[k].request, s->requests[i].id) == 0;
        *failures += failed;
    }
}

static void put_suite(strbuf *b, const gate_suite *s) {
    int tests, failures;
    suite_cases(s, &tests, &failures);
    sb_puts(b, "  <testsuite name=\"");
    put_escaped(b, s->name);
    sb_printf(b, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\">\n",
         tests, failures, s->skipped, s->seconds);
    if (s->skipped) {
        sb_printf(b, "    <testcase classname=\"sparkgate.gate.%s\" name=\"%s\">\n", s->name,
                  s->name);
        sb_puts(b, "      <skipped message=\"");
        put_escaped(b, s->skip_reason);
        sb_puts(b, "\"/>\n    </testcase>\n");
    }
    for (int i = 0; i < s->n_requests; i++) {
        const gate_request *q = &s->requests[i];
        sb_printf(b, "    <testcase classname=\"sparkgate.gate.%s\" name=\"", s->name);
        put_escaped(b, q->id);
        sb_printf(b, " %s\">\n", verdict_name(q->verdict));
        for (int k = 0; k < s->n_failures; k++)
            if (strcmp(s->failures[k].request, q->id) == 0) put_failure(b, &s->failures[k]);
        sb_puts(b, "    </testcase>\n");
    }
    for (int k = 0; k < s->n_failures; k++) {
        const gate_failure *f = &s->failures[k];
        if (f->request[0]) continue;
        sb_printf(b, "    <testcase classname=\"sparkgate.gate.%s\" name=\"check %s\">\n", s->name,
             gate_check_name(f->check));
        put_failure(b, f);
        sb_puts(b, "    </testcase>\n");
    }
    sb_puts(b, "  </testsuite>\n");
}

char *report_junit_string(const gate_report *r) {
    strbuf b = {0};
    int tests = 0, failures = 0, skipped = 0;
    for (int i = 0; i < r->n_suites; i++) {
        int t, f;
        suite_cases(&r->suites[i], &t, &f);
        tests += t;
        failures += f;
        skipped += r->suites[i].skipped;
    }
    sb_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<testsuites name=\"sparkgate gate\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" "
             "time=\"%.3f\">\n",
         tests, failures, skipped, r->seconds);
    for (int i = 0; i < r->n_suites; i++) put_suite(&b, &r->suites[i]);
    sb_puts(&b, "</testsuites>\n");
    return sb_take(&b);
}

int report_write_junit(const gate_report *r, const char *path) {
    char *xml = report_junit_string(r);
    FILE *f = fopen(path, "w");
    int ok = f && fputs(xml, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    free(xml);
    return ok ? SG_OK : sg_fail(SG_EXIT_INPUT, "--junit %s: cannot write the file", path);
}
