/* pkg_write: a function's output ResourceList turned back into package
 * files, as `kpt fn eval` does with its path annotations: written in place
 * over the package that was read, into a new directory, or as one
 * unwrapped YAML stream.
 *
 * How: pkg_layout_build groups the items by file and orders them by index
 * (pkg_item.h), each file's text being its objects as YAML documents
 * without kpt's bookkeeping annotations. In place, the layout of the input
 * (the ResourceList rl_input built from the package) is built the same
 * way, so a file whose objects the function left as they were comes out
 * with the same text and is not touched at all: its comments, formatting
 * and bytes stay. A file whose objects changed is rewritten (comments in
 * it are lost; libyaml's emitter writes the objects), a new path is
 * created with its directories, and a file read from the package that no
 * item names any more is removed. Files that held no KRM object are never
 * touched. The write-back is all or nothing (pkg_stage.h): every path is
 * checked, every new content staged beside its target, then all are
 * renamed into place, a rewritten file keeping its mode. Directories below
 * the package are entered without following links: a symbolic link inside
 * the package is never a way out of it (a linked file is replaced by a
 * file, a linked directory refuses the write). */
#ifndef KRM_RC_PKG_WRITE_H
#define KRM_RC_PKG_WRITE_H

#include <stddef.h>

#include "core/buf.h"

typedef struct pkg_file {
    char *path;    /* relative to the package, '/'-separated */
    buf text;      /* its documents */
} pkg_file;

typedef struct pkg_layout {
    pkg_file *files; /* sorted by path */
    size_t n;
} pkg_layout;

/* Lays out the items of the ResourceList rl[0..len) as files. `name`
 * names the list in messages ("the output"). Returns 0, or -1 with a
 * one-line reason in err (not a ResourceList, an item that is not a
 * mapping, a path that leaves the package, two items at the same path and
 * index). */
int pkg_layout_build(const char *rl, size_t len, const char *name, pkg_layout *out, buf *err);
void pkg_layout_free(pkg_layout *l);

/* Appends the items of rl, in order and without the bookkeeping
 * annotations, as a YAML stream ("---" between documents). 0 or -1 (err). */
int pkg_unwrap(const char *rl, size_t len, const char *name, buf *out, buf *err);

/* Makes directory `dir`, read as `in`, hold `out`: see above; first warns
 * of entries an interrupted write-back left. Returns 0, or -1 with a reason
 * naming the file in err, the package then as it was. */
int pkg_write_in_place(const char *dir, const pkg_layout *in, const pkg_layout *out, buf *err);

/* Makes directory `dir` and its missing parents (mkdir -p). Returns 0, or
 * -1 with a reason naming the directory that could not be made in err. */
int pkg_make_dirs(const char *dir, buf *err);

/* Writes every file of `out` into the new directory `dir`, made (its
 * missing parents first) by the same all-or-nothing write-back: a failure
 * leaves no `dir`. */
int pkg_write_new(const char *dir, const pkg_layout *out, buf *err);

#endif
