/* sandbox_host_tmp: a kept sandbox's /tmp, made anew after each call; see
 * sandbox_host_tmp.h. */
#include "runtime/sandbox_host_tmp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "runtime/sandbox.h"

/* open_tree(2) and move_mount(2) (Linux 5.2) through syscall(2): musl has
 * no wrappers, and <linux/mount.h> clashes with glibc's <sys/mount.h>. */
#ifndef SYS_open_tree
#define SYS_open_tree 428
#define SYS_move_mount 429
#endif
#define HOST_OPEN_TREE_CLONE 1
#define HOST_OPEN_TREE_CLOEXEC O_CLOEXEC
#define HOST_AT_RECURSIVE 0x8000
#define HOST_MOVE_MOUNT_F_EMPTY_PATH 0x04

/* Appends s and a NUL to t->text; its offset in *at. */
static int text_add(host_tmp *t, const char *s, size_t *at)
{
    size_t n = strlen(s);
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
    memcpy(t->text + t->text_len, s, n + 1);
    *at = t->text_len;
    t->text_len += n + 1;
    return 0;
}

/* The directories beneath dir (open as fd) on /tmp's filesystem (dev), and
 * the binds there, appended. */
static int record_children(host_tmp *t, const char *dir, int fd, dev_t dev)
{
    int list_fd = dup(fd);
    DIR *d = list_fd >= 0 ? fdopendir(list_fd) : NULL;
    if (!d) {
        int err = errno;
        if (list_fd >= 0)
            close(list_fd);
        return err;
    }
    int err = 0;
    for (struct dirent *e; !err && (e = readdir(d));) {
        struct stat st;
        char path[PATH_MAX];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") ||
            fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
            continue;
        int len = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (len < 0 || (size_t)len >= sizeof path) {
            err = ENAMETOOLONG;
        } else if (st.st_dev != dev) {   /* a bind (its top is the bound directory) */
            if (t->n_binds == HOST_TMP_BINDS_MAX)
                err = ENOSPC;
            else if (!(err = text_add(t, path, &t->binds_at[t->n_binds])))
                t->n_binds++;
        } else if (t->n_dirs == HOST_TMP_DIRS_MAX) {
            err = ENOSPC;
        } else if (!(err = text_add(t, path, &t->dirs_at[t->n_dirs]))) {
            t->modes[t->n_dirs++] = st.st_mode & 07777;
        }
    }
    closedir(d);
    return err;
}

/* Copies of the binds (read-only ones stay so), taken while they are
 * where they were made: a call may rename or move what leads to them. */
static int copy_binds(host_tmp *t)
{
    for (size_t i = 0; i < t->n_binds; i++)
        if ((t->copies[i] = (int)syscall(SYS_open_tree, AT_FDCWD, t->text + t->binds_at[i],
                                         HOST_OPEN_TREE_CLONE | HOST_OPEN_TREE_CLOEXEC |
                                             HOST_AT_RECURSIVE)) < 0)
            return errno;
    return 0;
}

static void close_copies(host_tmp *t)
{
    for (size_t i = 0; i < t->n_binds; i++)
        if (t->copies[i] >= 0) {
            close(t->copies[i]);
            t->copies[i] = -1;
        }
}

int host_tmp_record(host_tmp *t, const char *root, const char *options, const char **step)
{
    *t = (host_tmp){.options = options};
    for (size_t i = 0; i < HOST_TMP_BINDS_MAX; i++)
        t->copies[i] = -1;
    *step = "record /tmp's directories";
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return err;
    }
    int err = record_children(t, root, fd, st.st_dev);
    close(fd);
    /* breadth first, no recursion: each directory's after its parent */
    for (size_t i = 0; !err && i < t->n_dirs; i++) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", t->text + t->dirs_at[i]);   /* text may move */
        if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            return errno;
        err = record_children(t, dir, fd, st.st_dev);
        close(fd);
    }
    if (!err) {
        *step = "copy what is bound into /tmp";
        err = copy_binds(t);
    }
    return err;
}

int host_tmp_remake(host_tmp *t, const char *root, const char **step)
{
    *step = "detach /tmp";
    if (umount2(root, MNT_DETACH) < 0)
        return errno;
    *step = "mount a new /tmp";
    if (sandbox_tmpfs_mount(root, t->options) < 0)
        return errno;
    *step = "make /tmp's directories again";
    for (size_t i = 0; i < t->n_dirs; i++) {
        const char *dir = t->text + t->dirs_at[i];
        if (mkdir(dir, 0700) < 0 || chmod(dir, t->modes[i]) < 0)
            return errno;
    }
    *step = "bind into the new /tmp";
    for (size_t i = 0; i < t->n_binds; i++) {
        const char *at = t->text + t->binds_at[i];   /* on a directory of its own, as at set-up */
        if (mkdir(at, 0700) < 0 || syscall(SYS_move_mount, t->copies[i], "", AT_FDCWD, at,
                                           HOST_MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return errno;
    }
    close_copies(t);
    *step = "copy what is bound into /tmp";
    return copy_binds(t);
}

void host_tmp_free(host_tmp *t)
{
    close_copies(t);
    free(t->text);
    t->text = NULL;
    t->text_len = t->text_cap = 0;
}
