/* eval_progress: what `runner-client eval` says on stderr about each
 * function it runs, in kpt fn eval's words and layout:
 *
 *   [RUNNING] "IMAGE"
 *   [PASS] "IMAGE" in 1.2s            ([FAIL] when the step failed)
 *     Results:
 *       [error] v1/ConfigMap/ns/name spec.x: message
 *     Stderr:
 *       "a line the function wrote on stderr"
 *     Error: INTERNAL: failed to evaluate function ...
 *
 * Why kpt's: users of kpt read (and scripts grep) these lines; a pipeline
 * prints one such block per step. The time is the call's, truncated to
 * 100ms and written as Go writes a time.Duration, as kpt does. A result
 * line is the SDK's Result.String(); stderr lines are quoted as Go's %q,
 * kpt's way of keeping a function's control characters off the terminal.
 * Results and Stderr show at most 4 lines each unless truncation is off
 * (--truncate-output=false, kpt's flag), then how many were left out.
 * "Error:" is ours: over gRPC a failed call has a status and message
 * rather than kpt's exit code, and an output that is not a ResourceList
 * needs its reason shown. */
#ifndef KRM_RC_EVAL_PROGRESS_H
#define KRM_RC_EVAL_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "krm/resourcelist.h"

#define PROGRESS_TRUNCATE_LINES 4 /* kpt's FnExecErrorTruncateLines */

typedef struct progress_step {
    const char *name;        /* the image, as the user gave it */
    int failed;
    int64_t elapsed_ns;
    const rl_list *results;  /* the function's results; NULL: none */
    const char *log;         /* the function's stderr */
    size_t log_len;
    const char *error;       /* why the step failed, when not its results; NULL */
} progress_step;

/* Appends "[RUNNING] \"NAME\"\n". */
int progress_running(const char *name, buf *out);

/* Appends the [PASS]/[FAIL] line and the blocks that apply. */
int progress_done(const progress_step *s, int truncate, buf *out);

/* Appends d truncated to 100ms, as Go's time.Duration.String writes it
 * ("0s", "300ms", "1.2s", "1m5s", "2h0m0.1s"). */
int progress_duration(int64_t ns, buf *out);

#endif
