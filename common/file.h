// common/file.h: whole-file reading for the JSON inputs (configs, indexes, workloads).
#ifndef SG_FILE_H
#define SG_FILE_H

#include <stddef.h>

// Reads path into a NUL-terminated heap buffer. SG_EXIT_INPUT naming the file when it cannot be
// opened or read, or is larger than 64 MiB (no JSON input of this project comes near that).
int file_read_all(const char *path, char **text, size_t *len);

#endif
