/* results_file: `--results-dir DIR` writes DIR/results.yaml as kpt does,
 * a FunctionResultList with one entry per function run:
 *
 *   apiVersion: kpt.dev/v1
 *   kind: FunctionResultList
 *   metadata:
 *     name: fnresults
 *   exitCode: 1
 *   items:
 *   - image: example.com/fn:v1
 *     stderr: ...            (a failed step's, when it wrote any)
 *     exitCode: 1
 *     results:
 *     - message: ...
 *       severity: error
 *       resourceRef: {apiVersion, kind, name, namespace}
 *       field: {path, currentValue, proposedValue}
 *       file: {path, index}
 *       tags: {...}
 *
 * Why kpt's shape: CI jobs written for kpt read this file. A result is
 * written from what the judge read (lib/krm/resourcelist), in the SDK's
 * field order, absent fields left out. A step has no exit code over gRPC:
 * exitCode is 0 for a step that passed and 1 for one that failed; a call
 * that failed, or an output that is not a ResourceList, becomes an error
 * result with the reason, as in the pipeline's own ResourceList. */
#ifndef KRM_RC_RESULTS_FILE_H
#define KRM_RC_RESULTS_FILE_H

#include <stddef.h>

#include "core/buf.h"
#include "krm/resourcelist.h"

typedef struct results_file {
    buf items;     /* the entries so far, as YAML sequence entries */
    size_t n;
    size_t bound;  /* bytes of results kept (results_text.h) */
} results_file;

/* Adds one step. `results` may be NULL (none), `error` is NULL unless the
 * step failed for another reason than its results; `log` is the
 * function's stderr, kept for a failed step. Results past rf->bound are
 * dropped, with a warning result in their place (results_text.h);
 * *dropped says how many. 0, or -1 when out of memory. */
int results_file_add(results_file *rf, const char *image, int failed, const rl_list *results,
                     const char *error, const char *log, size_t log_len, size_t *dropped);

/* Whether DIR/results.yaml can be written: refused when it is a symbolic
 * link or a directory (checked before the package is written back, so a
 * refusal leaves the package as it was). 0, or -1 with a reason in err. */
int results_file_check(const char *dir, buf *err);

/* Writes DIR/results.yaml with the overall exit code: a new file renamed
 * over the old one, never written through a link planted there. Returns 0,
 * or -1 with a one-line reason in err. */
int results_file_write(const results_file *rf, const char *dir, int exit_code, buf *path,
                       buf *err);

void results_file_free(results_file *rf);

#endif
