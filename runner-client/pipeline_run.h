/* pipeline_run: runs a pipeline's steps one after another against a
 * function endpoint, kpt style: each mutator's output items become the next
 * step's input, every step gets its own functionConfig, validators run
 * last and cannot change the resources, and all results are gathered into
 * the final ResourceList, tagged with the step that made them. */
#ifndef KRM_RC_PIPELINE_RUN_H
#define KRM_RC_PIPELINE_RUN_H

#include <stddef.h>

#include "grpc/grpc_unary.h"
#include "pipeline.h"

typedef struct pl_run_opts {
    const char *addr;       /* HOST:PORT of the endpoint */
    gc_unary_opts call;     /* per call: timeout, largest answer */
    int stop_on_error;      /* stop at the first failed step */
} pl_run_opts;

/* Tag keys set on every result. */
#define PL_TAG_STEP "fn.kpt.dev/step"
#define PL_TAG_IMAGE "fn.kpt.dev/image"
#define PL_TAG_NAME "fn.kpt.dev/name" /* only for steps with a name */

/* Runs p on `input` (a ResourceList). Writes the final ResourceList to
 * stdout (also after a failure: the items as they were before the failed
 * step, and the results so far), each step's log to stderr prefixed with
 * "[step N IMAGE] ", and one line per failed step:
 *   runner-client eval: step N "IMAGE" failed: STATUS: message
 * Returns the exit status: 0 all steps passed, 1 a step failed or the output
 * could not be written, 2 the input is not a ResourceList. */
int pipeline_run(const pipeline *p, const char *input, size_t len, const pl_run_opts *o);

#endif
