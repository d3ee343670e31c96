/* tmpname: temporary entries that become real names by rename(2).
 *
 * Everything the copier writes goes first to a temporary name in the target
 * directory and is renamed over the final name once complete, so a reader
 * (or a run killed with SIGKILL) never sees a partial file: only a temporary
 * entry named ".copier-tmp-*" can be left behind, and the next run removes
 * those (cop_tmp_sweep). A temporary file is flock()ed while it is being
 * written, so a sweep never removes the file of a copier still running in
 * the same directory. */
#ifndef COPIER_TMPNAME_H
#define COPIER_TMPNAME_H

#include <sys/types.h>

#define COP_TMP_PREFIX ".copier-tmp-"

typedef struct cop_tmp {
    char name[48];        /* ".copier-tmp-<pid>-<n>" inside the directory */
} cop_tmp;

/* Whether name is one of our temporary names. */
int cop_tmp_is_name(const char *name);

/* Creates an empty regular file (mode 0600, write-only, locked) in dirfd.
 * Returns the descriptor, or -1 with errno set. */
int cop_tmp_file(int dirfd, cop_tmp *t);

/* Creates a symbolic link to target. Returns 0, or -1 with errno set. */
int cop_tmp_symlink(int dirfd, const char *target, cop_tmp *t);

/* Creates a FIFO, socket or device node (mknodat). Returns 0 or -1. */
int cop_tmp_mknod(int dirfd, mode_t mode, dev_t dev, cop_tmp *t);

/* Renames the temporary entry over name. Returns 0, or -1 with errno set. */
int cop_tmp_commit(int dirfd, const cop_tmp *t, const char *name);

/* Removes the temporary entry (after a failure); keeps errno. */
void cop_tmp_discard(int dirfd, const cop_tmp *t);

/* Removes stale temporary entries left in dirfd by killed runs: symlinks and
 * nodes with our name, and files with our name that no live copier holds
 * locked. Failures are reported as warnings naming dirpath (a failed sweep
 * does not stop a copy). Returns the number of entries removed. */
int cop_tmp_sweep(int dirfd, const char *dirpath);

#endif
