/* beneath: paths beneath a directory descriptor, never through a link; see
 * beneath.h. */
#include "core/beneath_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/fdio.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

int beneath_kind(int dir_fd, const char *name, mode_t *perm)
{
    struct stat st;
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (perm)
        *perm = st.st_mode & 07777;
    return (int)(st.st_mode & S_IFMT);
}

/* Enters `part` of dir_fd. On failure errno says why: a link is ELOOP and a
 * file ENOTDIR, whatever openat answered for them. */
static int enter(int dir_fd, const char *part)
{
    int fd = openat(dir_fd, part, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0)
        return fd;
    int saved = errno, kind = beneath_kind(dir_fd, part, NULL);
    errno = kind == S_IFLNK ? ELOOP : kind > 0 && kind != S_IFDIR ? ENOTDIR : saved;
    return -1;
}

int beneath_open_dir(int root_fd, const char *rel, size_t len, size_t *bad_len)
{
    char part[NAME_MAX + 1];
    int fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
    size_t at = 0;
    while (fd >= 0 && at < len) {
        const char *slash = memchr(rel + at, '/', len - at);
        size_t end = slash ? (size_t)(slash - rel) : len, n = end - at;
        if (n == 0) { /* "a//b" */
            at++;
            continue;
        }
        int next = -1;
        if (n >= sizeof part) {
            errno = ENAMETOOLONG;
        } else {
            memcpy(part, rel + at, n);
            part[n] = '\0';
            next = enter(fd, part);
        }
        int saved = errno;
        close(fd);
        errno = saved;
        fd = next;
        if (fd < 0 && bad_len)
            *bad_len = end;
        at = end + (slash ? 1 : 0);
    }
    return fd;
}

/* prefix + "PID-N", then "." + for_name when it fits NAME_MAX: the PID
 * and N make it fresh, for_name tells a user after a crash what it was for. */
static void fresh_name(char *out, const char *prefix, const char *for_name)
{
    static unsigned counter; /* names differ within this process; the pid across processes */
    int n = snprintf(out, BENEATH_TMP_MAX, "%s%ld-%u", prefix, (long)getpid(), counter++);
    if (for_name && n > 0 && (size_t)n + 1 + strlen(for_name) <= NAME_MAX)
        snprintf(out + n, BENEATH_TMP_MAX - (size_t)n, ".%s", for_name);
}

int beneath_create_fresh(int dir_fd, const char *prefix, const char *for_name, int is_dir,
                         mode_t mode, char *name)
{
    for (int tries = 0; tries < 100; tries++) {
        fresh_name(name, prefix, for_name);
        int rc = is_dir ? mkdirat(dir_fd, name, mode)
                        : openat(dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                                 mode);
        if (rc >= 0 || errno != EEXIST)
            return rc;
    }
    return -1;
}

int beneath_link_backup(int dir_fd, const char *name, char *backup)
{
    for (int tries = 0; tries < 100; tries++) {
        fresh_name(backup, BENEATH_BACKUP, name);
        /* no AT_SYMLINK_FOLLOW: a link is kept as the link it is */
        if (linkat(dir_fd, name, dir_fd, backup, 0) == 0)
            return 0;
        if (errno != EEXIST)
            return -1;
    }
    return -1;
}

int beneath_rename_noreplace(int dir_fd, const char *from, const char *to)
{
    long rc = syscall(SYS_renameat2, dir_fd, from, dir_fd, to, RENAME_NOREPLACE);
    if (rc == 0 || (errno != EINVAL && errno != ENOSYS))
        return rc == 0 ? 0 : -1;
    int kind = beneath_kind(dir_fd, to, NULL);
    if (kind != 0) {
        if (kind > 0)
            errno = EEXIST;
        return -1;
    }
    return renameat(dir_fd, from, dir_fd, to);
}

int beneath_replace(int dir_fd, const char *name, const void *data, size_t len, mode_t mode)
{
    int kind = beneath_kind(dir_fd, name, NULL);
    if (kind < 0 || kind == S_IFLNK || kind == S_IFDIR) {
        if (kind >= 0)
            errno = kind == S_IFLNK ? ELOOP : EISDIR;
        return -1;
    }
    char tmp[BENEATH_TMP_MAX];
    int fd = beneath_create_fresh(dir_fd, BENEATH_STAGED, name, 0, mode, tmp);
    if (fd < 0)
        return -1;
    int ok = fd_write_all(fd, data, len) == 0, saved = errno;
    if (close(fd) < 0 && ok)
        ok = 0, saved = errno;
    /* rename replaces a link planted meanwhile; it never writes through it */
    if (ok && renameat(dir_fd, tmp, dir_fd, name) == 0)
        return 0;
    if (ok)
        saved = errno;
    unlinkat(dir_fd, tmp, 0);
    errno = saved;
    return -1;
}
