/* fdio: see fdio.h. */
#include "core/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/beneath.h"

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
    size_t start = out->len;
    for (;;) {
        size_t room = FDIO_READ_CHUNK;
        if (max && max - (out->len - start) + 1 < room)
            room = max - (out->len - start) + 1;   /* one byte past max tells "larger" */
        if (buf_reserve(out, room) < 0) {
            errno = ENOMEM;
            return -1;
        }
        ssize_t n = read(fd, out->data + out->len, room);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        out->len += (size_t)n;
        out->data[out->len] = '\0';
        if (max && out->len - start > max) {
            errno = EFBIG;
            return -1;
        }
    }
}

const char *fdio_file_kind(unsigned mode)
{
    switch (mode & S_IFMT) {
    case S_IFREG: return "a regular file";
    case S_IFDIR: return "a directory";
    case S_IFIFO: return "a FIFO (named pipe)";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFLNK: return "a symbolic link";
    default: return "not a regular file";
    }
}

static int refuse(int err, char *why, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int refuse(int err, char *why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, FDIO_WHY_MAX, fmt, ap);
    va_end(ap);
    errno = err;
    return -1;
}

static int not_regular(mode_t mode, char *why)
{
    return refuse(EINVAL, why,
                  "is %s, not a regular file: only regular files are read (a read could wait "
                  "forever or never end)",
                  fdio_file_kind(mode));
}

static int open_for_read(int dir_fd, const char *path, int flags)
{
    int oflags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (flags & FDIO_BENEATH)
        return beneath_open(dir_fd, path, oflags);
    return openat(dir_fd, path, oflags | (flags & FDIO_NOFOLLOW ? O_NOFOLLOW : 0));
}

/* fstat first: a FIFO or a device is refused before a byte is read. */
static int read_regular(int fd, size_t max, buf *out, char *why)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return refuse(errno, why, "fstat: %s", strerror(errno));
    if (S_ISDIR(st.st_mode))
        return refuse(EISDIR, why, "is a directory, not a regular file");
    if (!S_ISREG(st.st_mode))
        return not_regular(st.st_mode, why);
    if (max && (unsigned long long)st.st_size > max)
        return refuse(EFBIG, why, "is larger than %zu bytes (it has %lld)", max,
                      (long long)st.st_size);
    size_t start = out->len;
    if (fd_read_all(fd, out, max) == 0)
        return 0;
    int err = errno;
    out->len = start;
    if (out->data)
        out->data[start] = '\0';
    if (err == EFBIG)   /* it grew while read, or its size said less (/proc) */
        return refuse(EFBIG, why, "is larger than %zu bytes (it grew while read)", max);
    return refuse(err, why, "%s", strerror(err));
}

int file_read_at(int dir_fd, const char *path, int flags, size_t max, buf *out,
                 char why[FDIO_WHY_MAX])
{
    int fd = open_for_read(dir_fd, path, flags);
    if (fd < 0) {
        if (errno == ELOOP && (flags & FDIO_BENEATH))
            return refuse(ELOOP, why, "is or passes through a symbolic link, not followed "
                                      "inside a package");
        if (errno == ELOOP && (flags & FDIO_NOFOLLOW))
            return refuse(ELOOP, why, "is a symbolic link, not followed here");
        if (errno == EXDEV)
            return refuse(EXDEV, why, "leads outside its directory");
        struct stat st;   /* a socket cannot be opened: ENXIO */
        if (errno == ENXIO &&
            fstatat(dir_fd, path, &st, flags ? AT_SYMLINK_NOFOLLOW : 0) == 0 &&
            !S_ISREG(st.st_mode))
            return not_regular(st.st_mode, why);
        return refuse(errno, why, "%s", strerror(errno));
    }
    int rc = read_regular(fd, max, out, why);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int file_read_all(const char *path, buf *out, size_t max)
{
    char why[FDIO_WHY_MAX];
    return file_read_at(AT_FDCWD, path, 0, max, out, why);
}
