/* ev_exec: the evaluator that runs a function as a local process (fn_job)
 * and judges the run as Porch's wrapper server does (fn_verdict).
 *
 * Two uses share it, so a function behaves the same wherever it runs:
 *   - the wrapper server: one fixed argv (everything after `--`) for every
 *     call, whatever image the request names;
 *   - the function runner's exec runtime: a lookup maps the image (and the
 *     request's Tag) to a binary (FunctionConfig binaryExecutor), run with
 *     no arguments; an image without a binary is NOT_FOUND, so ev_multi can
 *     try the next runtime. The wrapper server runs its one function
 *     whatever the Tag, as Porch's does. */
#ifndef KRM_EV_EXEC_H
#define KRM_EV_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"
#include "runtime/evaluator.h"
#include "runtime/fn_job.h"

/* The binary for image. Returns
 *    1  found: *path (NUL-terminated) names it; it is the function's argv[0]
 *       and what messages say. *fd is -1 (run *path), or an open descriptor
 *       of the file itself, inheritable (a #! script's interpreter reopens
 *       it as /proc/self/fd/N): ev_exec runs it through /proc/self/fd and
 *       closes it once the process is started, so nothing done to the path
 *       after the lookup changes what runs;
 *    0  no binary for this image: NOT_FOUND, ev_multi tries the next runtime;
 *       what why holds then is added to the message `function "IMG" not
 *       found` (e.g. "; Tag: ..." to say why the Tag matched none), then
 *       what describe_missing adds;
 *   -1  there is one, but it may not or cannot run: why says so, and the
 *       call fails FAILED_PRECONDITION.
 * *setup (NULL when the lookup leaves it) is the function's own child
 * setup (its sandbox, fn_job_spec.child_setup); it must outlive the call. */
typedef int ev_exec_lookup_fn(void *ctx, const char *image, const char *tag, buf *path, int *fd,
                              const spawn_child_setup **setup, buf *why);

/* The stderr a call keeps (the rest is counted and dropped), the same
 * wherever a function runs: the wrapper server, serve's exec runtime, eval
 * --exec. */
#define EV_EXEC_MAX_STDERR (1024 * 1024)

typedef struct ev_exec_config {
    loop *loop;
    size_t max_stdout;         /* larger output fails the call (max message size) */
    size_t max_stderr;         /* stderr kept per call */
    int64_t kill_grace_ns;     /* cancelled calls: SIGTERM, then SIGKILL after this */
    char *const *argv;         /* fixed mode: run this (argv[0] NULL: no entrypoint) */
    ev_exec_lookup_fn *lookup; /* lookup mode, when argv is NULL */
    void *lookup_ctx;
    /* Optional, lookup mode: appends to why what the NOT_FOUND message adds
     * after the lookup's reason (e.g. "; configured: ..." to show what would
     * have matched), with lookup_ctx. Asked only when that message is
     * delivered: not for a call ev_multi passes on to the next runtime at
     * once, which every call of a pod-served image is. */
    void (*describe_missing)(void *ctx, const char *image, const char *tag, buf *why);
    /* When set, asked why a run failed (a sandbox limit it reached): 1 with
     * a sentence in out, added to the call's message; 0 for nothing. */
    int (*explain_failure)(void *ctx, const fn_job *job, buf *out);
    void *explain_ctx;
} ev_exec_config;

/* Copies cfg (argv itself must outlive the evaluator). NULL on ENOMEM. */
evaluator *ev_exec_new(const ev_exec_config *cfg);

#endif
