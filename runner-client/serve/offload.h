/* offload: one piece of work that would stall the loop (seconds of parsing
 * when serve reloads large FunctionConfigs), run on a thread of its own
 * while the loop goes on serving; its end is reported on the loop.
 *
 * Why a thread and not steps on the loop: libyaml loads a document whole
 * (one 4 MiB document is hundreds of milliseconds) and the strict
 * FunctionConfig reader works on that tree, so bounded steps would mean
 * rewriting it over the event stream. Why not a child process: the result,
 * a tree of strings, would need a format of its own and a second reader.
 * The thread shares nothing with the loop: the work reads only what it was
 * given and writes only its own result, the loop reads that result only
 * after the thread has ended (pthread_join), and the thread never logs,
 * touches a loop or a call. So serving stays single-threaded; there is at
 * most one such thread per piece of work the owner starts (serve: one
 * reload at a time), never one per request.
 *
 * The thread blocks every signal (they are the loop's, read from its
 * signalfd) and has the stack the main thread would (musl's default for
 * threads is 128 KiB; the parsers recurse). */
#ifndef KRM_OFFLOAD_H
#define KRM_OFFLOAD_H

#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"

typedef struct offload offload;

/* Runs on the thread: may use only ctx, nothing of the loop. */
typedef void offload_work_fn(void *ctx);
/* Runs on the loop once work has returned and the thread is gone; o is
 * freed after it returns. */
typedef void offload_done_fn(offload *o, void *ctx);

/* Starts work(ctx) on a thread; done(o, ctx) follows on the loop. NULL with
 * the reason (errno text) appended to err when it cannot start: nothing
 * ran then. */
offload *offload_start(loop *l, offload_work_fn *work, offload_done_fn *done, void *ctx,
                       buf *err);

/* On exit, with the loop no longer run: waits up to wait_ns for the work
 * to end and frees o; done is not called. Returns 0 when the work ended
 * (ctx is the caller's again), -1 when it still runs (a read that blocks):
 * the thread is left to end with the process and ctx must not be freed. */
int offload_abandon(offload *o, int64_t wait_ns);

#endif
