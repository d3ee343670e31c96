/* cptree: copying one file or directory tree the way `cp -a` does.
 *
 * This is the engine of the `cp` form (Porch's init container runs
 * `cp -a SRC/. DESTDIR`). Directories are recreated (an existing one is
 * merged into), symlinks are copied as symlinks when not dereferencing,
 * FIFOs and device nodes are recreated with -R, and regular files are
 * written to a temporary name, fsynced and renamed over the target, so no
 * partial file is ever visible under its real name. With preserve
 * (-p, -a) ownership, mode and timestamps follow the source; a failure
 * with EPERM (a non-root init container) is a warning in busybox's words,
 * "can't preserve ownership of 'X': Operation not permitted", and the copy
 * goes on. Errors are reported and the copy continues with the next entry,
 * as GNU cp does; the caller turns any failure into exit status 1. */
#ifndef COPIER_CPTREE_H
#define COPIER_CPTREE_H

#include <sys/types.h>

typedef struct cp_opts {
    int recursive;    /* -R, -r, -a: copy directories and their contents */
    int no_deref;     /* -P, -d, -a, and implied by -R: copy symlinks as symlinks */
    int preserve;     /* -p, -a: ownership, mode, timestamps */
    mode_t umask;     /* the process umask, for modes when not preserving */
} cp_opts;

/* Copies src (a path, relative to the working directory) to the entry
 * dstname of the directory dstdir; dstname "." means dstdir itself (the
 * SRC/. form). dstpath names the destination in messages.
 * Returns 0, or -1 after reporting at least one error. */
int cp_copy(const cp_opts *o, const char *src, int dstdir, const char *dstname, const char *dstpath);

#endif
