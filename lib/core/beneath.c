/* beneath: see beneath.h. */
#include "core/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* openat2(2) has no libc wrapper; musl builds see no kernel headers, so the
 * ABI (fixed since Linux 5.6) is spelt out when they are missing. */
#if defined(__has_include)
#if __has_include(<linux/openat2.h>)
#include <linux/openat2.h>
#define BENEATH_HAVE_OPENAT2_H 1
#endif
#endif
#ifndef BENEATH_HAVE_OPENAT2_H
struct open_how {
    uint64_t flags;
    uint64_t mode;
    uint64_t resolve;
};
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04
#define RESOLVE_BENEATH 0x08
#endif
#ifndef SYS_openat2
#define SYS_openat2 437   /* the same number on every architecture */
#endif

/* ---- clean relative paths ----------------------------------------------- */

static int blank(const char *s)
{
    for (; *s; s++)
        if (!strchr(" \t\r\n\v\f", *s))
            return 0;
    return 1;
}

int beneath_clean(const char *path, buf *out, const char **why)
{
    if (blank(path)) {
        *why = BENEATH_EMPTY;
        return -1;
    }
    if (path[0] == '/') {
        *why = BENEATH_ABSOLUTE;
        return -1;
    }
    size_t start = out->len;
    const char *p = path;
    while (*p) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (out->len == start) {   /* nothing left to climb out of */
                *why = BENEATH_OUTSIDE;
                return -1;
            }
            char *last = memrchr(out->data + start, '/', out->len - start);
            out->len = last ? (size_t)(last - out->data) : start;
            out->data[out->len] = '\0';
        } else if (n && !(n == 1 && p[0] == '.')) {
            if ((out->len > start && buf_append(out, "/", 1) < 0) || buf_append(out, p, n) < 0) {
                *why = "out of memory";
                return -1;
            }
        }
        p += n;
        p += *p == '/';
    }
    if (out->len == start && buf_append(out, ".", 1) < 0) {
        *why = "out of memory";
        return -1;
    }
    return 0;
}

/* ---- opening ------------------------------------------------------------- */

/* EAGAIN: a rename raced a ".." step and the kernel could not prove the
 * walk stayed beneath; openat2(2) says to retry. */
static int beneath_openat2(int dir_fd, const char *path, int flags, uint64_t resolve)
{
    struct open_how how = { .flags = (uint64_t)flags, .resolve = resolve };
    for (int tries = 0;; tries++) {
        long fd = syscall(SYS_openat2, dir_fd, path, &how, sizeof how);
        if (fd >= 0)
            return (int)fd;
        if ((errno != EAGAIN && errno != EINTR) || tries == 8)
            return -1;
    }
}

/* 1 openat2 works, -1 it does not (ENOSYS, or a seccomp filter's EPERM),
 * 0 not tried yet. */
static int openat2_state;

/* Why a component could not be entered: a link is ELOOP, whatever else. */
static int link_or(int dir_fd, const char *name, int err)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
        return ELOOP;
    return err;
}

/* O_PATH | O_NOFOLLOW opens a link itself: closed and refused. */
static int refuse_link(int *fd)
{
    struct stat st;
    if (fstat(*fd, &st) == 0 && !S_ISLNK(st.st_mode))
        return 0;
    close(*fd);
    *fd = -1;
    return -1;
}

/* The walk without openat2: each directory on the way opened with
 * O_NOFOLLOW from the one before, ".." refused, so neither a link nor a
 * rename can lead out; only the last component is opened with `flags`. */
static int open_walk(int dir_fd, const char *path, int flags)
{
    int fd = dir_fd;
    const char *p = path;
    for (;;) {
        size_t n = strcspn(p, "/");
        char name[NAME_MAX + 1];
        if (n > NAME_MAX) {
            errno = ENAMETOOLONG;
            break;
        }
        memcpy(name, p, n);
        name[n] = '\0';
        if (n == 2 && name[0] == '.' && name[1] == '.') {
            errno = EXDEV;
            break;
        }
        p += n;
        while (*p == '/')
            p++;
        int last = *p == '\0';
        int next = openat(fd, n ? name : ".",
                          last ? flags | O_NOFOLLOW | O_CLOEXEC
                               : O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0)
            errno = link_or(fd, name, errno);
        else if (last && (flags & O_PATH) && refuse_link(&next) < 0)
            errno = ELOOP;
        if (fd != dir_fd) {
            int saved = errno;
            close(fd);
            errno = saved;
        }
        if (next < 0 || last)
            return next;
        fd = next;
    }
    if (fd != dir_fd)
        close(fd);
    return -1;
}

int beneath_has_openat2(void)
{
    if (openat2_state == 0) {
        int fd = beneath_openat2(AT_FDCWD, ".", O_PATH | O_CLOEXEC, RESOLVE_BENEATH);
        openat2_state = fd >= 0 ? 1 : -1;
        if (fd >= 0)
            close(fd);
    }
    return openat2_state > 0;
}

void beneath_use_openat2(int on)
{
    openat2_state = on ? 0 : -1;
}

int beneath_open(int dir_fd, const char *path, int flags)
{
    if (!*path) {
        errno = ENOENT;
        return -1;
    }
    if (path[0] == '/') {
        errno = EXDEV;
        return -1;
    }
    if (!beneath_has_openat2())
        return open_walk(dir_fd, path, flags);
    int fd = beneath_openat2(dir_fd, path, flags | O_NOFOLLOW | O_CLOEXEC,
                             RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
    if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
        /* a filter that lets the probe through but not this call */
        openat2_state = -1;
        return open_walk(dir_fd, path, flags);
    }
    return fd;
}

int beneath_open_links(int dir_fd, const char *path, int flags)
{
    return beneath_openat2(dir_fd, path, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS);
}
