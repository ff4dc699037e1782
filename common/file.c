// common/file.c: whole-file reading (file.h).
#include "file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

int file_read_all(const char *path, char **text, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return sg_fail(SG_EXIT_INPUT, "%s: cannot open: %s", path, strerror(errno));
    long size = -1;
    if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size < 0 || size > (64L << 20) || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return sg_fail(SG_EXIT_INPUT, "%s: not a readable regular file of at most 64 MiB", path);
    }
    *text = sg_calloc((size_t)size + 1, 1);
    size_t got = fread(*text, 1, (size_t)size, f);
    fclose(f);
    if (got != (size_t)size) {
        free(*text);
        *text = NULL;
        return sg_fail(SG_EXIT_INPUT, "%s: short read (%zu of %ld bytes)", path, got, size);
    }
    *len = got;
    return SG_OK;
}
