/* cp: the `cp` form, what Porch's init container runs:
 * `cp -a /home/nonroot/wrapper-server/. /wrapper-server-tools`.
 *
 * Resolves operands as cp does (DEST an existing directory: each SRC goes
 * to DEST/<basename>, and SRC/. or SRC/.. copies the contents of SRC into
 * DEST itself; otherwise the single SRC is copied to the name DEST) and hands
 * each pair to cptree. */
#ifndef COPIER_CP_H
#define COPIER_CP_H

#include "cli.h"

/* Runs a parsed cp command line. Returns the exit status (0 or 1). */
int cp_run(cop_args *a);

/* The name SRC gets inside a destination directory: the last component
 * with trailing slashes ignored, "." for SRC/., SRC/.. and "/". The result
 * is written into out (size n). Exposed for the unit tests. */
void cp_dest_name(const char *src, char *out, size_t n);

#endif
