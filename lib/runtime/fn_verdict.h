/* fn_verdict: judges a finished function run exactly as Porch's Go wrapper
 * server does, and words the outcome in Porch's messages, byte for byte,
 * because users and tools match on them.
 *
 *   exit 0, stdout is a ResourceList      -> OK (error results: warning only)
 *   stdout not a ResourceList (any exit)  -> INTERNAL "failed to parse the output ..."
 *   exit != 0, stdout is a ResourceList   -> INTERNAL "failed to evaluate function ..."
 *   could not start                       -> INTERNAL "Failed to execute function ..."
 * Empty stdout is a parse failure, never an empty success: an empty list
 * would delete every resource of the user's package. */
#ifndef KRM_FN_VERDICT_H
#define KRM_FN_VERDICT_H

#include "core/buf.h"
#include "runtime/fn_job.h"

typedef struct fn_verdict {
    int code;       /* GRPC_OK or GRPC_INTERNAL */
    buf message;    /* grpc-message when code != GRPC_OK */
    buf warning;    /* non-empty: log this as a warning (OK with error results) */
} fn_verdict;

void fn_verdict_judge(const char *image, const fn_job *job, fn_verdict *v);

/* The same in steps, so that a server goes back to its event loop between
 * them: reading an output costs libyaml about 30 ns a byte (a 6 MiB one
 * 200 ms and more), and health checks and other calls must not wait for
 * that. fn_verdict_start returns NULL when out of memory; image and job
 * must outlive the judging. Each fn_verdict_step reads at most
 * FN_VERDICT_STEP_EVENTS YAML events and about 32 KiB of the output, and
 * returns 1 while there is more to do, else 0 with *v filled exactly as
 * fn_verdict_judge fills it. fn_verdict_stop frees at any point. */
enum { FN_VERDICT_STEP_EVENTS = 2048 };
typedef struct fn_judging fn_judging;
fn_judging *fn_verdict_start(const char *image, const fn_job *job);
int fn_verdict_step(fn_judging *j, fn_verdict *v);
void fn_verdict_stop(fn_judging *j);
void fn_verdict_spawn_failed(const char *image, const char *why, fn_verdict *v);
void fn_verdict_free(fn_verdict *v);

#endif
