/* install: the `copier SRC... DESTDIR` form; see install.h.
 *
 * Order of work: open and check every source first (a missing source or a
 * directory fails the run before anything is written), open DESTDIR, remove
 * temporaries left by a killed run, then install the files one by one,
 * stopping at the first failure. Every installed file is complete. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "install.h"
#include "msg.h"
#include "tmpname.h"

typedef struct source {
    const char *path;
    const char *name;     /* basename: the name in DESTDIR */
    int fd;
} source;

const char *cop_basename(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Opens one source and checks it is a regular file. Returns 0 or -1. */
static int open_source(source *s)
{
    struct stat st;
    s->name = cop_basename(s->path);
    s->fd = open(s->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (s->fd < 0) {
        cop_msg(errno, "cannot open source '%s'", s->path);
        return -1;
    }
    if (fstat(s->fd, &st) < 0) {
        cop_msg(errno, "cannot stat source '%s'", s->path);
        return -1;
    }
    if (S_ISDIR(st.st_mode)) {
        cop_msg(EISDIR, "source '%s'", s->path);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        cop_msg(0, "source '%s' is not a regular file", s->path);
        return -1;
    }
    if (!*s->name || cop_tmp_is_name(s->name)) {
        cop_msg(0, "source '%s': unusable file name", s->path);
        return -1;
    }
    return 0;
}

/* Opens all sources; two sources may not share a name. Returns 0 or -1. */
static int open_sources(source *s, int n)
{
    for (int i = 0; i < n; i++) {
        if (open_source(&s[i]) < 0)
            return -1;
        for (int j = 0; j < i; j++) {
            if (strcmp(s[i].name, s[j].name) == 0) {
                cop_msg(0, "sources '%s' and '%s' have the same name", s[j].path, s[i].path);
                return -1;
            }
        }
    }
    return 0;
}

static int open_destdir(const char *destdir)
{
    int fd = open(destdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    if (errno == ENOTDIR)
        cop_msg(errno, "destination '%s'", destdir);
    else
        cop_msg(errno, "cannot open destination directory '%s'", destdir);
    return -1;
}

/* 1 when DESTDIR/name is a regular file, mode 0555, with the same bytes as
 * the source; 0 otherwise (missing, different, unreadable: rewrite it). */
static int target_current(int dirfd, const source *s)
{
    struct stat ss, ts;
    int fd = openat(dirfd, s->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int same = fstat(fd, &ts) == 0 && fstat(s->fd, &ss) == 0 && S_ISREG(ts.st_mode) &&
               (ts.st_mode & 07777) == COP_INSTALL_MODE && ts.st_size == ss.st_size &&
               cop_same_bytes(s->fd, fd) == 1;
    close(fd);
    return same;
}

/* Fills the temporary file fd from the source and makes it durable. */
static int write_tmp(int fd, const source *s, const char *destdir)
{
    int write_failed = 0;
    if (cop_copy_data(s->fd, fd, &write_failed) < 0) {
        if (write_failed)
            cop_msg(errno, "cannot write '%s/%s'", destdir, s->name);
        else
            cop_msg(errno, "cannot read source '%s'", s->path);
        return -1;
    }
    if (fchmod(fd, COP_INSTALL_MODE) < 0) {
        cop_msg(errno, "cannot set mode 0555 on '%s/%s'", destdir, s->name);
        return -1;
    }
    if (fsync(fd) < 0) {
        cop_msg(errno, "cannot write '%s/%s' (fsync)", destdir, s->name);
        return -1;
    }
    return 0;
}

/* fsync of the directory makes the rename durable. */
static int sync_dir(int dirfd, const char *destdir)
{
    if (fsync(dirfd) < 0 && errno != EINVAL) {
        cop_msg(errno, "cannot sync directory '%s'", destdir);
        return -1;
    }
    return 0;
}

static int install_file(int dirfd, const char *destdir, const source *s)
{
    if (target_current(dirfd, s))
        return 0;
    cop_tmp t;
    int fd = cop_tmp_file(dirfd, &t);
    if (fd < 0) {
        cop_msg(errno, "cannot create a temporary file in '%s'", destdir);
        return -1;
    }
    int rc = write_tmp(fd, s, destdir);
    if (rc == 0 && cop_tmp_commit(dirfd, &t, s->name) < 0) {
        cop_msg(errno, "cannot rename '%s/%s' to '%s'", destdir, t.name, s->name);
        rc = -1;
    }
    if (rc < 0)
        cop_tmp_discard(dirfd, &t);
    close(fd);          /* after the rename, so the lock covers the whole life */
    return rc < 0 ? -1 : sync_dir(dirfd, destdir);
}

/* 1 when DESTDIR/grpc-health-probe already is the symlink we want. */
static int probe_current(int dirfd)
{
    char target[sizeof COP_SERVER_NAME + 1];
    ssize_t n = readlinkat(dirfd, COP_PROBE_NAME, target, sizeof target);
    return n == (ssize_t)sizeof COP_SERVER_NAME - 1 &&
           memcmp(target, COP_SERVER_NAME, (size_t)n) == 0;
}

static int install_probe(int dirfd, const char *destdir)
{
    if (probe_current(dirfd))
        return 0;
    cop_tmp t;
    if (cop_tmp_symlink(dirfd, COP_SERVER_NAME, &t) < 0) {
        cop_msg(errno, "cannot create a temporary symlink in '%s'", destdir);
        return -1;
    }
    if (cop_tmp_commit(dirfd, &t, COP_PROBE_NAME) < 0) {
        cop_msg(errno, "cannot rename '%s/%s' to '%s'", destdir, t.name, COP_PROBE_NAME);
        cop_tmp_discard(dirfd, &t);
        return -1;
    }
    return sync_dir(dirfd, destdir);
}

/* --verify: the target must be a regular file, mode 0555, same bytes. */
static int verify_file(int dirfd, const char *destdir, const source *s)
{
    struct stat st;
    int fd = openat(dirfd, s->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        cop_msg(errno, "verify: cannot open '%s/%s'", destdir, s->name);
        return -1;
    }
    int rc = -1;
    int same = fstat(fd, &st) < 0 ? -1 : cop_same_bytes(s->fd, fd);
    if (same < 0)
        cop_msg(errno, "verify: cannot read '%s/%s' or '%s'", destdir, s->name, s->path);
    else if (!same || !S_ISREG(st.st_mode))
        cop_msg(0, "verify: '%s/%s' differs from '%s'", destdir, s->name, s->path);
    else if ((st.st_mode & 07777) != COP_INSTALL_MODE)
        cop_msg(0, "verify: '%s/%s' has mode %04o, not 0555", destdir, s->name,
                (unsigned)(st.st_mode & 07777));
    else
        rc = 0;
    close(fd);
    return rc;
}

static int verify_probe(int dirfd, const char *destdir)
{
    if (probe_current(dirfd))
        return 0;
    cop_msg(0, "verify: '%s/%s' is not a symlink to '%s'", destdir, COP_PROBE_NAME, COP_SERVER_NAME);
    return -1;
}

/* Whether the probe symlink is wanted: a source is named wrapper-server and
 * none is named grpc-health-probe (an explicit probe file wins). */
static int wants_probe(const source *s, int n)
{
    int server = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(s[i].name, COP_PROBE_NAME) == 0)
            return 0;
        server |= strcmp(s[i].name, COP_SERVER_NAME) == 0;
    }
    return server;
}

static int install_all(source *s, int n, const char *destdir, int verify)
{
    int dirfd = open_destdir(destdir);
    if (dirfd < 0)
        return -1;
    cop_tmp_sweep(dirfd, destdir);
    int probe = wants_probe(s, n), rc = 0;
    for (int i = 0; i < n && rc == 0; i++)
        rc = install_file(dirfd, destdir, &s[i]);
    if (rc == 0 && probe)
        rc = install_probe(dirfd, destdir);
    for (int i = 0; i < n && rc == 0 && verify; i++)
        rc = verify_file(dirfd, destdir, &s[i]);
    if (rc == 0 && probe && verify)
        rc = verify_probe(dirfd, destdir);
    close(dirfd);
    return rc;
}

int cop_install(char **srcs, int n, const char *destdir, int verify)
{
    source *s = calloc((size_t)n, sizeof *s);
    if (!s) {
        cop_msg(errno, "cannot allocate memory");
        return 1;
    }
    for (int i = 0; i < n; i++) {
        s[i].path = srcs[i];
        s[i].fd = -1;
    }
    int rc = open_sources(s, n) < 0 ? -1 : install_all(s, n, destdir, verify);
    for (int i = 0; i < n; i++)
        if (s[i].fd >= 0)
            close(s[i].fd);
    free(s);
    return rc < 0 ? 1 : 0;
}
