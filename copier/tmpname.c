/* tmpname: temporary entries renamed into place; see tmpname.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msg.h"
#include "tmpname.h"

#define MAX_TRIES 1000

static unsigned tmp_counter;

int cop_tmp_is_name(const char *name)
{
    return strncmp(name, COP_TMP_PREFIX, sizeof COP_TMP_PREFIX - 1) == 0;
}

static void next_name(cop_tmp *t)
{
    snprintf(t->name, sizeof t->name, COP_TMP_PREFIX "%ld-%u", (long)getpid(), tmp_counter++);
}

/* Locks a fresh temporary file; 1 if it is still linked (a concurrent sweep
 * may have removed it between open and flock), 0 if not, -1 on error. */
static int lock_fresh(int fd)
{
    struct stat st;
    if (flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0)
        return -1;
    return st.st_nlink > 0;
}

int cop_tmp_file(int dirfd, cop_tmp *t)
{
    for (int i = 0; i < MAX_TRIES; i++) {
        next_name(t);
        int fd = openat(dirfd, t->name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) {
            if (errno == EEXIST)
                continue;
            return -1;
        }
        int linked = lock_fresh(fd);
        if (linked > 0)
            return fd;
        int saved = errno;
        close(fd);
        if (linked < 0) {
            cop_tmp_discard(dirfd, t);
            errno = saved;
            return -1;
        }
        /* a sweep removed it before we locked it: take another name */
    }
    errno = EEXIST;
    return -1;
}

int cop_tmp_symlink(int dirfd, const char *target, cop_tmp *t)
{
    for (int i = 0; i < MAX_TRIES; i++) {
        next_name(t);
        if (symlinkat(target, dirfd, t->name) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

int cop_tmp_mknod(int dirfd, mode_t mode, dev_t dev, cop_tmp *t)
{
    for (int i = 0; i < MAX_TRIES; i++) {
        next_name(t);
        if (mknodat(dirfd, t->name, mode, dev) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

int cop_tmp_commit(int dirfd, const cop_tmp *t, const char *name)
{
    return renameat(dirfd, t->name, dirfd, name);
}

void cop_tmp_discard(int dirfd, const cop_tmp *t)
{
    int saved = errno;
    unlinkat(dirfd, t->name, 0);   /* best effort: the failure being reported matters more */
    errno = saved;
}

/* Whether a stale-looking regular file is still being written: someone holds
 * its lock. Files we cannot open are treated as stale. */
static int file_in_use(int dirfd, const char *name)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int busy = flock(fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd);          /* drops our lock, if we got it */
    return busy;
}

/* Removes one directory entry if it is a stale temporary; 1 if removed. */
static int sweep_entry(int dirfd, const char *dirpath, const char *name)
{
    struct stat st;
    if (!cop_tmp_is_name(name) || fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    if (S_ISDIR(st.st_mode) || (S_ISREG(st.st_mode) && file_in_use(dirfd, name)))
        return 0;
    if (unlinkat(dirfd, name, 0) < 0) {
        if (errno != ENOENT)
            cop_msg(errno, "cannot remove stale temporary file '%s/%s'", dirpath, name);
        return 0;
    }
    return 1;
}

int cop_tmp_sweep(int dirfd, const char *dirpath)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        cop_msg(errno, "cannot open directory '%s' to remove stale temporary files", dirpath);
        return 0;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        cop_msg(errno, "cannot read directory '%s'", dirpath);
        close(fd);
        return 0;
    }
    int removed = 0;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        removed += sweep_entry(dirfd, dirpath, e->d_name);
        errno = 0;
    }
    if (errno)
        cop_msg(errno, "cannot read directory '%s'", dirpath);
    closedir(d);
    return removed;
}
