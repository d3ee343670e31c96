/* pkg_stage: a package written back all or nothing.
 *
 * Why: kpt promises that a failed function leaves the local files intact;
 * a write-back that fails part-way (a name too long, a path through a
 * file or a link, a full disk, a read-only directory) must not leave some
 * files rewritten and some directories made. So a write-back goes in
 * phases, every step beneath the package's descriptor without following a
 * link (core/beneath_write.h):
 *
 *  1. check: every path (length, NAME_MAX per name, PATH_MAX in all; each
 *     directory on the way a directory, not a link or a file; the target
 *     not a directory), before anything is made;
 *  2. stage: each new content is written whole under a fresh name beside
 *     its target (".krm-staged-PID-N.NAME"); a missing directory is made under
 *     such a name too, with everything below it; each file to be replaced
 *     or removed gets a second name (".krm-backup-PID-N.NAME", a hard link);
 *  3. commit: renames put the staged files and directories in place, then
 *     the removed files go; a failure here renames every original back;
 *  4. the backups are dropped.
 *
 * A failure in 1-3 removes what was staged: the package is byte for byte
 * as it was, and the message says so. A crash (or kill -9) in the middle can
 * leave ".krm-staged-*" (never put in place) and ".krm-backup-*" (the
 * original of a file replaced or removed) entries; pkg_stage_leftovers
 * finds them for the next run to report. The reader skips names starting
 * with '.', so such entries never reach a function. */
#ifndef KRM_RC_PKG_STAGE_H
#define KRM_RC_PKG_STAGE_H

#include <stddef.h>

#include "core/buf.h"

typedef struct pkg_change {
    const char *path; /* relative to the package, '/'-separated, cleaned */
    const buf *text;  /* its new content; NULL: the file is removed */
} pkg_change;

/* Applies changes[0..n) to the directory open as root_fd (named `dir` in
 * messages): writes first, removals last. Returns 0, or -1 with a reason
 * naming the path in err, the package then as it was (err says so when an
 * original could not be put back, and where it is). */
int pkg_stage_apply(int root_fd, const char *dir, const pkg_change *changes, size_t n,
                    buf *err);

/* Warns on stderr of each entry under dir left by an interrupted
 * write-back (the first few, then how many more). Returns how many there
 * are. */
size_t pkg_stage_leftovers(const char *dir);

#endif
