// gates/strbuf.c: a growing text buffer (see strbuf.h).
#include "strbuf.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static void reserve(strbuf *b, size_t more) {
    if (b->n + more + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + more + 1) cap *= 2;
    char *bigger = sg_calloc(cap, 1);
    if (b->n) memcpy(bigger, b->s, b->n);
    free(b->s);
    b->s = bigger;
    b->cap = cap;
}

void sb_put(strbuf *b, const char *text, size_t n) {
    reserve(b, n);
    memcpy(b->s + b->n, text, n);
    b->n += n;
    b->s[b->n] = 0;
}

void sb_puts(strbuf *b, const char *text) { sb_put(b, text, strlen(text)); }

void sb_printf(strbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    SG_CHECK(n >= 0, "bad format %s", fmt);
    reserve(b, (size_t)n);
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void sb_shell_word(strbuf *b, const char *word) {
    int plain = word[0] != 0;
    for (const char *c = word; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("_./:=,+-", *c)) plain = 0;
    if (plain) {
        sb_puts(b, word);
        return;
    }
    sb_puts(b, "'");
    for (const char *c = word; *c; c++) {
        if (*c == '\'') sb_puts(b, "'\\''");
        else sb_put(b, c, 1);
    }
    sb_puts(b, "'");
}

char *sb_take(strbuf *b) {
    if (!b->s) reserve(b, 0);
    char *s = b->s;
    s[b->n] = 0;
    memset(b, 0, sizeof *b);
    return s;
}
