/* fdio: see fdio.h. */
#include "core/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#define FDIO_READ_CHUNK 65536

int fd_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int fd_read_all(int fd, buf *out, size_t max)
{
    for (;;) {
        if (buf_reserve(out, FDIO_READ_CHUNK) < 0) {
            errno = ENOMEM;
            return -1;
        }
        ssize_t n = read(fd, out->data + out->len, out->cap - out->len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        out->len += (size_t)n;
        out->data[out->len] = '\0';
        if (max && out->len > max) {
            errno = EFBIG;
            return -1;
        }
    }
}

int file_read_all(const char *path, buf *out, size_t max)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fd_read_all(fd, out, max);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}
