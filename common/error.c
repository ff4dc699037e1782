// common/error.c: the error message slot (one per thread) and the internal-invariant abort.
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char sg_message[2048];

int sg_fail(int status, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sg_message, sizeof sg_message, fmt, ap);
    va_end(ap);
    return status;
}

int sg_fail_context(int status, const char *fmt, ...) {
    char prefix[1024], old[sizeof sg_message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, sg_message, sizeof old);
    // Truncation of an over-long message is acceptable; the prefix comes first.
    size_t n = strlen(prefix);
    if (n > sizeof sg_message - 3) n = sizeof sg_message - 3;
    memcpy(sg_message, prefix, n);
    memcpy(sg_message + n, ": ", 2);
    size_t rest = sizeof sg_message - n - 3;
    strncpy(sg_message + n + 2, old, rest);
    sg_message[sizeof sg_message - 1] = '\0';
    return status;
}

const char *sg_error(void) { return sg_message; }

void sg_check_failed(const char *file, int line, const char *cond, const char *fmt, ...) {
    fprintf(stderr, "%s:%d: internal check failed: %s: ", file, line, cond);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n(this is a bug in sparkgate; please report it with the command line)\n");
    abort();
}

void *sg_alloc_at(size_t n, size_t size, const char *file, int line) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) sg_check_failed(file, line, "calloc", "out of memory allocating %zu x %zu bytes", n, size);
    return p;
}
