/* pkg_files: which files of a package directory go into the ResourceList,
 * in which order, under which relative path: kpt's input discovery.
 *
 * Why: kpt fn source and Porch read a package with kyaml's
 * LocalPackageReader; the order of items and the path annotations a
 * function sees depend on these rules, so they are kept together here,
 * apart from what is done with each file (rl_input.c).
 *
 * Rules: the directory is walked depth first in byte-wise name order (Go's
 * filepath.Walk order); names starting with '.' are skipped, files and
 * directories alike; a file is read when it is named `Kptfile` or ends in
 * .yaml, .yml or .json (kpt's MatchAllKRM); anything else is ignored.
 *
 * Symbolic links inside the package are not followed, to files or to
 * directories, as kpt ignores them ("symlinks within the package are
 * ignored"): a link is skipped with a warning on stderr when it has a
 * resource file's name or leads to a directory. A link must not be a way
 * to read files from outside the package (a planted `x.yaml ->
 * ~/.kube/config` would send them to the function), and one to a file
 * inside would hand the function the same objects twice. The directory
 * given (the package itself) may be a link.
 *
 * Everything beneath the package is opened relative to the package's
 * descriptor with no link anywhere on the way (beneath_open), so a
 * directory swapped for a link while the walk runs leads nowhere; a FIFO,
 * device or socket with a resource file's name is refused by the read
 * (file_read_at), never opened in a way that could block. Paths longer
 * than PATH_MAX bound the walk's depth. */
#ifndef KRM_RC_PKG_FILES_H
#define KRM_RC_PKG_FILES_H

#include <stddef.h>

#include "core/buf.h"

/* One file to read: `rel_path` relative to the package, separated by '/'
 * (the path annotation), to be opened beneath `pkg_fd` (file_read_at with
 * FDIO_BENEATH); `path` is the directory joined with it, for messages.
 * Both are freed when it returns. Returns 0 to go on; anything else stops
 * the walk and is returned, with the reason already in err. */
typedef int (*pkg_files_fn)(void *ctx, int pkg_fd, const char *path, const char *rel_path);

/* Calls on_file for each file of directory `dir`, in order. Returns 0, the
 * callback's value when it stopped the walk, or -1 with a one-line reason
 * in err ("DIR/locked: Permission denied"). */
int pkg_files_walk(const char *dir, pkg_files_fn on_file, void *ctx, buf *err);

#endif
