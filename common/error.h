// common/error.h: exit statuses (design.md §8), the error message slot, and check macros.
//
// Contract: functions that can meet bad input return an int status (0 = ok) and, on failure, leave a
// human-readable message in sg_error() that names the file or tensor and says how to fix it.
// SG_CHECK is for internal invariants only: a failure is a bug in sparkgate, reported with file and
// line, and aborts. Bad input never reaches an abort.
#ifndef SG_ERROR_H
#define SG_ERROR_H

#include <stddef.h>

enum {
    SG_OK = 0,
    SG_EXIT_FAIL = 1,    // a gate or check failed
    SG_EXIT_USAGE = 2,   // bad command line or impossible request
    SG_EXIT_INPUT = 3,   // bad input file or config
    SG_EXIT_NO_GPU = 77, // no usable CUDA device (CTest's skip code)
};

// Records a formatted message (replacing the previous one) and returns status.
int sg_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Prepends context ("while loading X: ") to the current message and returns status.
int sg_fail_context(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *sg_error(void);

void sg_check_failed(const char *file, int line, const char *cond, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));

#define SG_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) sg_check_failed(__FILE__, __LINE__, #cond, __VA_ARGS__);                     \
    } while (0)

// Propagates a non-zero status.
#define SG_TRY(expr)                                                                               \
    do {                                                                                           \
        int sg_try_status_ = (expr);                                                               \
        if (sg_try_status_ != SG_OK) return sg_try_status_;                                        \
    } while (0)

// Allocation that never returns NULL: out of memory is reported with file and line and aborts.
void *sg_alloc_at(size_t n, size_t size, const char *file, int line);
#define sg_calloc(n, size) sg_alloc_at((n), (size), __FILE__, __LINE__)

#endif
