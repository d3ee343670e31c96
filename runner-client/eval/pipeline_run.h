/* pipeline_run: runs a pipeline's steps one after another, kpt style: each
 * mutator's output items become the next step's input, every step gets its
 * own functionConfig, validators run last and cannot change the resources,
 * and all results are gathered into the final ResourceList, tagged with
 * the step that made them. */
#ifndef KRM_RC_PIPELINE_RUN_H
#define KRM_RC_PIPELINE_RUN_H

#include <stddef.h>

#include "core/buf.h"
#include "eval/eval_run.h"
#include "pkg/pipeline.h"

/* Tag keys set on every result. */
#define PL_TAG_STEP "fn.kpt.dev/step"
#define PL_TAG_IMAGE "fn.kpt.dev/image"
#define PL_TAG_NAME "fn.kpt.dev/name" /* only for steps with a name */

/* Runs p on `input` (a ResourceList) through run (each step's progress on
 * stderr and results entry: eval_run.h), stopping at the first failed step
 * when stop_on_error. Appends the final ResourceList to *final (also after
 * a failure: the items as they were before the failed step, and the
 * results so far, each tagged with its step). A failure that the step's
 * progress cannot show (its request could not be built, its output could
 * not be taken apart) gets a line of its own:
 *   runner-client eval: step N "IMAGE" failed: reason
 * Returns 0 all steps passed, 1 a step failed (or out of memory, or the
 * final list could not be written: reported), 2 the input is not a
 * ResourceList (reported, *final untouched). */
int pipeline_run(const pipeline *p, const char *input, size_t len, eval_run *run,
                 int stop_on_error, buf *final);

#endif
