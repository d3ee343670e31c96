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
 * .yaml, .yml or .json (kpt's MatchAllKRM) and is a regular file or a
 * symlink; symlinks to directories are not followed, like filepath.Walk;
 * anything else is ignored. Path length limits bound the walk's depth. */
#ifndef KRM_RC_PKG_FILES_H
#define KRM_RC_PKG_FILES_H

#include <stddef.h>

/* One file to read: `path` to open (the directory joined with the names),
 * `rel_path` relative to the directory, separated by '/' (the path
 * annotation). Both are freed when it returns. Returns 0 to go on; anything
 * else stops the walk and is returned, with the reason already in err. */
typedef int (*pkg_files_fn)(void *ctx, const char *path, const char *rel_path);

/* Calls on_file for each file of directory `dir`, in order. Returns 0, the
 * callback's value when it stopped the walk, or -1 with a one-line reason
 * in err ("DIR/locked: Permission denied"). */
int pkg_files_walk(const char *dir, pkg_files_fn on_file, void *ctx, char *err, size_t errlen);

#endif
