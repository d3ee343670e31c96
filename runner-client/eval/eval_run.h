/* eval_run: what every `runner-client eval` does around its function calls,
 * whatever runs the function (a gRPC endpoint, a function pod with
 * --kube) and however many steps there are: each call announced and
 * judged on stderr (eval_progress.h) and entered in results.yaml
 * (results_file.h); at the end the output written (eval_output.h) and the
 * exit status decided. One path for every evaluator, so `eval --kube`
 * reads and writes packages exactly as `eval --addr` does.
 *
 * A step fails when the call fails (any gRPC status but OK; the wrapper
 * server answers INTERNAL for a function that exited non-zero), when the
 * answer is not a ResourceList, or when its results hold severity "error"
 * (the SDK's rule, kpt's: the function failed). */
#ifndef KRM_RC_EVAL_RUN_H
#define KRM_RC_EVAL_RUN_H

#include <stddef.h>

#include "core/buf.h"
#include "krm/resourcelist.h"
#include "eval/eval_output.h"
#include "eval/fn_call.h"
#include "pkg/results_file.h"

/* Calls the function `image` (with the request's Tag `tag`: "" or NULL for
 * none) with ResourceList rl; fills *out as fn_call does. Returns 0, or -1
 * when out of memory. */
typedef int (*eval_call_fn)(void *ctx, const char *image, const char *tag, const char *rl,
                            size_t len, fn_call_result *out);

typedef struct eval_run {
    eval_call_fn call;
    void *call_ctx;
    const char *unnamed;      /* progress name for a call without image (the address) */
    int truncate;             /* --truncate-output */
    const char *results_dir;  /* --results-dir; NULL: none */
    results_file results;     /* set .results.bound: results_text_bound(--max-message) */
    int failed;               /* a step failed */
} eval_run;

typedef struct eval_step {
    fn_call_result answer;
    rl_list parsed;           /* the answer's results, when it is a ResourceList */
    int failed;
    buf error;                /* why it failed, when not (only) its results; empty otherwise */
} eval_step;

/* Runs one step: progress, call, judgement, results entry. Returns 0 with
 * *s filled (release with eval_step_free), or -1 when out of memory. */
int eval_step_run(eval_run *run, const char *image, const char *tag, const char *rl, size_t len,
                  eval_step *s);
void eval_step_free(eval_step *s);

/* One call with `image` on the input ResourceList; its answer, verbatim,
 * is the output. Returns the exit status (see eval_run_finish). */
int eval_run_single(eval_run *run, const char *image, const buf *input, const eval_output *o);

/* After the steps: writes the output (final NULL: there is none) and
 * results.yaml. Returns the exit status: 0, or 1 when a step failed or
 * something could not be written. */
int eval_run_finish(eval_run *run, const eval_output *o, const buf *input, const char *final,
                    size_t len);

void eval_run_free(eval_run *run);

#endif
