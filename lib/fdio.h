/* fdio: whole-buffer writes to a blocking descriptor (the CLIs' stdout and
 * stderr), retried across short writes and EINTR. */
#ifndef KRM_FDIO_H
#define KRM_FDIO_H

#include <stddef.h>

/* Returns 0, or -1 with errno set. */
int fd_write_all(int fd, const void *data, size_t len);

#endif
