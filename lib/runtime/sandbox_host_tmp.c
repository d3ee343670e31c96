/* sandbox_host_tmp: a kept sandbox's /tmp, emptied and set back after each
 * call; see sandbox_host_tmp.h. */
#include "runtime/sandbox_host_tmp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/xattr.h>
#include <unistd.h>

#ifndef XATTR_LIST_MAX
#define XATTR_LIST_MAX 65536
#endif

/* Appends n bytes and a NUL to t->text; their offset in *at. */
static int text_add(host_tmp *t, const char *s, size_t n, size_t *at)
{
    if (t->text_len + n + 1 > t->text_cap) {
        size_t cap = t->text_cap ? t->text_cap : 4096;
        while (cap < t->text_len + n + 1)
            cap *= 2;
        char *more = realloc(t->text, cap);
        if (!more)
            return ENOMEM;
        t->text = more;
        t->text_cap = cap;
    }
    memcpy(t->text + t->text_len, s, n);
    t->text[t->text_len + n] = '\0';
    *at = t->text_len;
    t->text_len += n + 1;
    return 0;
}

/* Its extended attributes' names, at most XATTR_LIST_MAX bytes: static,
 * the host is single-threaded and its stack small. */
static char names_buf[XATTR_LIST_MAX];

static ssize_t list_xattrs(int fd)
{
    ssize_t n = flistxattr(fd, names_buf, sizeof names_buf);
    if (n < 0 && (errno == ENOTSUP || errno == EOPNOTSUPP))
        return 0;
    return n;
}

static int record_dir(host_tmp *t, host_tmp_dir *d, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return errno;
    d->ino = st.st_ino;
    d->mode = st.st_mode & 07777;
    d->times[0] = st.st_atim;
    d->times[1] = st.st_mtim;
    d->has_flags = ioctl(fd, FS_IOC_GETFLAGS, &d->flags) == 0;
    ssize_t n = list_xattrs(fd);
    if (n < 0)
        return errno;
    int err = text_add(t, names_buf, (size_t)n, &d->xattrs_at);
    d->xattrs_len = (size_t)n;
    return err;
}

/* The directories beneath d (open as fd) on /tmp's filesystem, appended. */
static int record_children(host_tmp *t, size_t i, int fd)
{
    int list_fd = dup(fd);
    DIR *dir = list_fd >= 0 ? fdopendir(list_fd) : NULL;
    if (!dir) {
        int err = errno;
        if (list_fd >= 0)
            close(list_fd);
        return err;
    }
    int err = 0;
    for (struct dirent *e; !err && (e = readdir(dir));) {
        struct stat st;
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode) ||
            st.st_dev != t->dev)
            continue;   /* a bind's top is the bound directory's, not ours */
        if (t->n_dirs == HOST_TMP_DIRS_MAX) {
            err = ENOSPC;
            break;
        }
        char path[PATH_MAX];
        const char *parent = t->text + t->dirs[i].path_at;
        int len = i == 0 ? snprintf(path, sizeof path, "%s", e->d_name)
                         : snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
        if (len < 0 || (size_t)len >= sizeof path) {
            err = ENAMETOOLONG;
            break;
        }
        host_tmp_dir *d = &t->dirs[t->n_dirs];
        *d = (host_tmp_dir){0};
        if (!(err = text_add(t, path, (size_t)len, &d->path_at)))
            t->n_dirs++;
    }
    closedir(dir);
    return err;
}

int host_tmp_record(host_tmp *t, int tmp_fd, const char **step)
{
    *t = (host_tmp){.fd = tmp_fd};
    struct stat root;
    *step = "record /tmp's directories";
    if (fstat(tmp_fd, &root) < 0)
        return errno;
    t->dev = root.st_dev;
    int err = text_add(t, ".", 1, &t->dirs[0].path_at);
    t->n_dirs = 1;
    for (size_t i = 0; !err && i < t->n_dirs; i++) {   /* breadth first: no recursion */
        int fd = openat(tmp_fd, t->text + t->dirs[i].path_at,
                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            return errno;
        if (!(err = record_dir(t, &t->dirs[i], fd)))
            err = record_children(t, i, fd);
        close(fd);
    }
    return err;
}

static const host_tmp_dir *skeleton_dir(const host_tmp *t, ino_t ino)
{
    for (size_t i = 0; i < t->n_dirs; i++)
        if (t->dirs[i].ino == ino)
            return &t->dirs[i];
    return NULL;
}

static int recorded_xattr(const host_tmp *t, const host_tmp_dir *d, const char *name)
{
    for (const char *p = t->text + d->xattrs_at; p < t->text + d->xattrs_at + d->xattrs_len;
         p += strlen(p) + 1)
        if (!strcmp(p, name))
            return 1;
    return 0;
}

/* d, open as fd, as recorded: the extended attributes a call added (a
 * POSIX ACL is one) removed, then its inode flags, mode and times. */
static int set_back(const host_tmp *t, int fd, const host_tmp_dir *d)
{
    ssize_t n = list_xattrs(fd);
    if (n < 0)
        return errno;
    for (const char *p = names_buf; p < names_buf + n; p += strlen(p) + 1)
        if (!recorded_xattr(t, d, p) && fremovexattr(fd, p) < 0 && errno != ENODATA)
            return errno;
    int flags;
    if (d->has_flags && (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0 ||
                         (flags != d->flags && ioctl(fd, FS_IOC_SETFLAGS, &d->flags) < 0)))
        return errno;
    if (fchmod(fd, d->mode) < 0 || futimens(fd, d->times) < 0)
        return errno;
    return 0;
}

/* Each skeleton directory under its recorded path: a call may have renamed
 * or moved one (its name would be the next call's to read, and what is
 * bound beneath it out of place). */
static int skeleton_in_place(const host_tmp *t)
{
    for (size_t i = 1; i < t->n_dirs; i++) {
        struct stat st;
        if (fstatat(t->fd, t->text + t->dirs[i].path_at, &st, AT_SYMLINK_NOFOLLOW) < 0)
            return errno;
        if (!S_ISDIR(st.st_mode) || st.st_ino != t->dirs[i].ino || st.st_dev != t->dev)
            return ENOENT;
    }
    return 0;
}

/* Empties /tmp without recursion or paths: it walks down to a directory
 * it cannot remove, empties it and climbs back through "..", so its
 * memory and descriptors stay the same whatever depth a call made. What
 * it keeps is the skeleton (set back as it climbs out of each) and the
 * binds in it (other filesystems). 0, or an errno. */
static int empty_tmp(const host_tmp *t)
{
    ino_t emptied[HOST_TMP_DIRS_MAX];   /* the skeleton's, this reset */
    size_t n_emptied = 0;
    int fd = dup(t->fd);
    if (fd < 0)
        return errno;
    for (;;) {
        int list_fd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        DIR *d = list_fd >= 0 ? fdopendir(list_fd) : NULL;
        if (!d) {
            int err = errno;
            if (list_fd >= 0)
                close(list_fd);
            close(fd);
            return err;
        }
        char down[NAME_MAX + 1] = "";
        int kept = 0, failed = 0;
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
                continue;
            struct stat st;
            if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                continue;   /* gone meanwhile */
            if (!S_ISDIR(st.st_mode)) {
                /* a file left would be the next call's */
                if (unlinkat(fd, e->d_name, 0) < 0 && errno != ENOENT) {
                    failed = errno;
                    break;
                }
                continue;
            }
            int is_kept = st.st_dev != t->dev;   /* a bind of ours */
            for (size_t i = 0; i < n_emptied && !is_kept; i++)
                is_kept = emptied[i] == st.st_ino;
            if (is_kept) {
                kept = 1;
                continue;
            }
            /* the skeleton's are gone into (to be set back), never removed */
            if (!skeleton_dir(t, st.st_ino)) {
                if (unlinkat(fd, e->d_name, AT_REMOVEDIR) == 0)
                    continue;
                if (errno != ENOTEMPTY && errno != EEXIST) {
                    failed = errno;
                    break;
                }
            }
            snprintf(down, sizeof down, "%s", e->d_name);
            break;
        }
        closedir(d);
        if (failed) {
            close(fd);
            return failed;
        }
        if (down[0]) {
            int next = openat(fd, down, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            struct stat st;
            if (next >= 0 && fstat(next, &st) == 0 && st.st_dev == t->dev) {
                close(fd);
                fd = next;
                continue;
            }
            if (next >= 0)
                close(next);
            close(fd);
            return EIO;
        }
        struct stat here;
        if (fstat(fd, &here) < 0) {
            close(fd);
            return errno;
        }
        const host_tmp_dir *skel = skeleton_dir(t, here.st_ino);
        int err = skel ? set_back(t, fd, skel) : kept ? EBUSY : 0;   /* EBUSY: a bind moved */
        if (err || skel == &t->dirs[0]) {
            close(fd);
            return err;   /* or back at /tmp: empty but for the skeleton */
        }
        if (skel)
            emptied[n_emptied++] = here.st_ino;
        int up = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        close(fd);
        if (up < 0)
            return errno;
        fd = up;
    }
}

int host_tmp_reset(const host_tmp *t, const char **step)
{
    int err = empty_tmp(t);
    if (err) {
        *step = "empty /tmp";
        return err;
    }
    if ((err = skeleton_in_place(t)))
        *step = "find /tmp's directories where they were";
    return err;
}

void host_tmp_free(host_tmp *t)
{
    free(t->text);
    t->text = NULL;
    t->text_len = t->text_cap = 0;
}
