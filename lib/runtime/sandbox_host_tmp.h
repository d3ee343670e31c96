/* sandbox_host_tmp: a kept sandbox's /tmp (sandbox_host.h), emptied after
 * each call and set back as it was made.
 *
 * The host's /tmp is a tmpfs made once, holding the directories that lead
 * to what is bound back into it (--functions, --sandbox-read and
 * --sandbox-write beneath /tmp): its skeleton, recorded at set-up. After a
 * call every other file and directory goes, and the skeleton's
 * directories, /tmp included, get back their names, mode, times, inode
 * flags and extended attributes (ACLs included) as recorded: a call could
 * set any of them for the next one to read. What cannot be removed or set
 * back fails the reset (the host is ended) rather than stay. */
#ifndef KRM_SANDBOX_HOST_TMP_H
#define KRM_SANDBOX_HOST_TMP_H

#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#define HOST_TMP_DIRS_MAX 256   /* the skeleton's directories, /tmp included */

typedef struct host_tmp_dir {
    ino_t ino;
    mode_t mode;
    struct timespec times[2];   /* access, modification */
    int flags;                  /* FS_IOC_GETFLAGS' */
    int has_flags;              /* the filesystem has inode flags */
    size_t path_at, xattrs_at, xattrs_len;   /* in host_tmp.text */
} host_tmp_dir;

typedef struct host_tmp {
    int fd;                     /* /tmp, O_RDONLY */
    dev_t dev;
    host_tmp_dir dirs[HOST_TMP_DIRS_MAX];   /* [0]: /tmp itself, "." */
    size_t n_dirs;
    char *text;                 /* paths relative to /tmp and xattr name lists */
    size_t text_len, text_cap;
} host_tmp;

/* In the host at set-up, after its mounts: records the skeleton of the
 * /tmp open as tmp_fd (kept: t->fd). 0, or an errno with *step. */
int host_tmp_record(host_tmp *t, int tmp_fd, const char **step);

/* At each reset, once no other process of the namespace is left. 0, or an
 * errno with *step. */
int host_tmp_reset(const host_tmp *t, const char **step);

/* What host_tmp_record allocated (not t->fd, the caller's). */
void host_tmp_free(host_tmp *t);

#endif
