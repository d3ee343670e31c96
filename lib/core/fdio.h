/* fdio: whole-buffer writes to a blocking descriptor (the CLIs' stdout and
 * stderr), retried across short writes and EINTR, and whole-file reads (a
 * CLI's input, a FunctionConfig file, a benchmark's list), so every reader
 * of "all of it" handles EINTR, short reads and size limits the same way. */
#ifndef KRM_FDIO_H
#define KRM_FDIO_H

#include <stddef.h>

#include "core/buf.h"

/* Returns 0, or -1 with errno set. */
int fd_write_all(int fd, const void *data, size_t len);

/* Appends everything up to end of file to out (NUL-terminated). Returns 0,
 * or -1 with errno set: EFBIG once out holds more than max bytes (max 0:
 * no limit), ENOMEM, or read's error. */
int fd_read_all(int fd, buf *out, size_t max);
/* The same for the file at path (opened and closed here). */
int file_read_all(const char *path, buf *out, size_t max);

#endif
