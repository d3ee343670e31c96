/* render_tree: `runner-client render DIR` over a package and its
 * subpackages, as `kpt fn render` renders them.
 *
 * A subpackage is a directory beneath DIR holding its own Kptfile. kpt
 * renders depth first: each subpackage's pipeline runs on the subpackage's
 * own resources and the rendered resources of its own subpackages, then the
 * parent's pipeline on the parent's resources plus all of its subpackages'
 * rendered ones; the root's output is written back. Siblings go in name
 * order, their resources before the parent's own, as kpt orders them.
 *
 * Paths: a package's functions see the path annotations relative to that
 * package (a subpackage's pipeline sees `cm.yaml`, its parent's
 * `sub/cm.yaml`), as kpt's; an object a subpackage's function adds without
 * a path goes to a file in that subpackage.
 *
 * The package is read once (the ResourceList rl_input made of DIR, paths
 * relative to DIR); its objects are dealt out to the package owning the
 * directory they were read from, and the packages are the directories of
 * its Kptfiles. */
#ifndef KRM_RC_RENDER_TREE_H
#define KRM_RC_RENDER_TREE_H

#include <stddef.h>

#include "core/buf.h"
#include "eval/eval_run.h"
#include "pkg/pipeline.h"

/* Renders `dir`, whose files are the ResourceList input[0..len) and whose
 * own Kptfile's steps are `root` (a subpackage's Kptfile is read up to max
 * bytes, as the root's was). A package that fails stops the render:
 *   runner-client render: subpackage "a/b" failed: nothing is written
 * Appends the final ResourceList to *final (a failed package's, with the
 * results saying why); run->failed is set on any failure, so nothing is
 * written back. Returns 0, 1 a function failed (also: a subpackage's
 * function answered a path that leaves it; out of memory), 2 bad input (a
 * subpackage's Kptfile refused: named). */
int render_tree(const char *dir, const pipeline *root, const char *input, size_t len,
                size_t max, eval_run *run, buf *final);

#endif
