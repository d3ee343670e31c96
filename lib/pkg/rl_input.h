/* rl_input: turns what a user points runner-client at into one ResourceList.
 *
 * Input may be a YAML file (one or many documents), a directory of YAML
 * files, or stdin ("-"). A single document that already is a ResourceList
 * passes through byte for byte; otherwise every KRM object becomes an entry
 * of `items` of a new `config.kubernetes.io/v1` ResourceList, annotated with
 * the file it came from as kpt does, so a function's output can be mapped
 * back to files. */
#ifndef KRM_RL_INPUT_H
#define KRM_RL_INPUT_H

#include <stddef.h>

#include "core/buf.h"

/* What follows "DIR: " when a directory holds no KRM object. */
#define RL_INPUT_NO_RESOURCES \
    "no resources found (no KRM object in a Kptfile, *.yaml, *.yml or *.json file beneath it)"

/* Reads `path` (a file, a directory, or "-" / NULL for stdin) and appends the
 * ResourceList to out, reading at most max bytes (a file, stdin, or a
 * directory's files together: more could not be sent in one request, whose
 * limit max is). Only regular files are read (pkg_files.h: a directory's
 * links are skipped). Returns 0, or -1 with a one-line reason in err naming
 * the file (and line, for YAML errors); a directory without any object is
 * an error (RL_INPUT_NO_RESOURCES), a file or stdin without any is not. */
int rl_input_build(const char *path, size_t max, buf *out, buf *err);

/* The same for bytes already in memory; `name` is used in annotations and
 * messages (e.g. "stdin"). */
int rl_input_build_bytes(const char *data, size_t len, const char *name, buf *out,
                         buf *err);

#endif
