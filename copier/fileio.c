/* fileio: copy and compare file contents; see fileio.h. */
#include <errno.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "fileio.h"

#define CHUNK (128 * 1024)

static char copy_buf[CHUNK];
static char cmp_a[CHUNK / 2], cmp_b[CHUNK / 2];

/* pread that retries EINTR. */
static ssize_t pread_retry(int fd, void *p, size_t n, off_t off)
{
    ssize_t r;
    do
        r = pread(fd, p, n, off);
    while (r < 0 && errno == EINTR);
    return r;
}

/* Reads until n bytes or end of file; returns the count or -1. */
static ssize_t pread_full(int fd, char *p, size_t n, off_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread_retry(fd, p + got, n - got, off + (off_t)got);
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

int cop_pwrite_all(int fd, const void *p, size_t n, long long off)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = pwrite(fd, c, n, (off_t)off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {             /* should not happen for files; never spin */
            errno = EIO;
            return -1;
        }
        c += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

int cop_copy_data(int src, int dst, int *write_failed)
{
    off_t off = 0;
    for (;;) {
        ssize_t r = read(src, copy_buf, sizeof copy_buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *write_failed = 0;
            return -1;
        }
        if (r == 0)
            return 0;
        if (cop_pwrite_all(dst, copy_buf, (size_t)r, off) < 0) {
            *write_failed = 1;
            return -1;
        }
        off += r;
    }
}

int cop_same_bytes(int a, int b)
{
    off_t off = 0;
    for (;;) {
        ssize_t ra = pread_full(a, cmp_a, sizeof cmp_a, off);
        if (ra < 0)
            return -1;
        ssize_t rb = pread_full(b, cmp_b, sizeof cmp_b, off);
        if (rb < 0)
            return -1;
        if (ra != rb || memcmp(cmp_a, cmp_b, (size_t)ra) != 0)
            return 0;
        if (ra == 0)
            return 1;
        off += ra;
    }
}
