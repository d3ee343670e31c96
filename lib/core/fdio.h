/* fdio: whole-buffer writes to a blocking descriptor (the CLIs' stdout and
 * stderr), retried across short writes and EINTR, and whole-file reads (a
 * CLI's input, a package's files, a Kptfile, a kubeconfig, a FunctionConfig
 * file), so every reader of "all of it" handles EINTR, short reads, special
 * files and size limits the same way.
 *
 * Why one reader: a file someone else chose can be a FIFO (a read waits
 * forever for a writer), /dev/zero or a huge file (a read never ends, or
 * ends when memory does). file_read_at opens without blocking, looks at
 * what it opened before reading a byte, reads regular files only, and
 * never more than the caller's limit. */
#ifndef KRM_FDIO_H
#define KRM_FDIO_H

#include <stddef.h>

#include "core/buf.h"

/* Returns 0, or -1 with errno set. */
int fd_write_all(int fd, const void *data, size_t len);

/* Appends everything up to end of file to out (NUL-terminated). Returns 0,
 * or -1 with errno set: EFBIG once out holds more than max bytes (max 0:
 * no limit), ENOMEM, or read's error. For descriptors the user handed over
 * (stdin); files by name go through file_read_at. */
int fd_read_all(int fd, buf *out, size_t max);

/* file_read_at's flags. */
#define FDIO_NOFOLLOW 1   /* the last component must not be a symbolic link */
#define FDIO_BENEATH 2    /* path is clean and relative (beneath_clean) and is opened beneath
                           * dir_fd with no symbolic link anywhere (beneath_open) */

/* The longest reason file_read_at writes, with its NUL. */
#define FDIO_WHY_MAX 160

/* Appends the whole regular file `path` (relative to dir_fd; AT_FDCWD:
 * the working directory) to out, NUL-terminated, reading at most max bytes
 * (max 0: no limit). It is opened O_NONBLOCK and looked at (fstat) before
 * anything is read: a FIFO, a device, a socket or a directory is refused,
 * and so is a file larger than max, by its size or by growing while read.
 * Returns 0, or -1 with errno set and, in why, the reason to print after
 * the file's name, e.g. "is a FIFO (named pipe), not a regular file: only
 * regular files are read" (errno EINVAL), "is larger than 6291456 bytes"
 * (EFBIG), "is a symbolic link, not followed here" (ELOOP), or strerror. */
int file_read_at(int dir_fd, const char *path, int flags, size_t max, buf *out,
                 char why[FDIO_WHY_MAX]);

/* file_read_at(AT_FDCWD, path, 0, max, out, ...) for callers that print
 * strerror(errno) (the benchmarks' inputs): EINVAL for a file that is not
 * regular, EFBIG over max. */
int file_read_all(const char *path, buf *out, size_t max);

/* What kind of file st_mode is, with its article: "a FIFO (named pipe)",
 * "a character device", ... ; "a regular file" too. */
const char *fdio_file_kind(unsigned mode);

#endif
