/* fileio: moving and comparing file bytes with plain read/write syscalls.
 *
 * The copier copies and compares whole files through fixed static buffers
 * (no stdio, no allocation). Comparisons use explicit offsets (pread) so a
 * source descriptor can be compared, copied and compared again without
 * seeking. */
#ifndef COPIER_FILEIO_H
#define COPIER_FILEIO_H

#include <stddef.h>

/* Writes n bytes at offset off of fd, retrying short writes and EINTR.
 * Returns 0, or -1 with errno set. */
int cop_pwrite_all(int fd, const void *p, size_t n, long long off);

/* Copies src from its current offset (a fresh descriptor: the start) to its
 * end into dst from offset 0; read(2) so pipes and devices work too.
 * Returns 0; or -1 with errno set and *write_failed telling which side
 * failed (0: reading src, 1: writing dst). */
int cop_copy_data(int src, int dst, int *write_failed);

/* Compares the whole contents of a and b from offset 0.
 * Returns 1 when identical, 0 when they differ, -1 (errno set) when reading
 * fails. */
int cop_same_bytes(int a, int b);

#endif
