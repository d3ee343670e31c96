/* evaluator: "evaluate this function image on this ResourceList", behind one
 * interface, so the gRPC handler does not care how a function is run.
 *
 * Implementations (as in Porch's function runner):
 *   ev_exec   runs a local binary: the wrapper server's fixed entrypoint, or
 *             the binary a FunctionConfig maps the image to;
 *   ev_multi  tries evaluators in order, moving on only when one says
 *             NOT_FOUND (it has no such function); any other error is final.
 * A pod evaluator (issue 4) plugs in the same way.
 *
 * Calls are asynchronous on the loop: start() returns a call handle and
 * done(call, result, ctx) runs later from the loop, never inside start(),
 * exactly once unless the call is cancelled first. The result (and what it
 * points to) stays valid until ev_call_free(); after done the owner must
 * free the call. */
#ifndef KRM_EVALUATOR_H
#define KRM_EVALUATOR_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"

typedef struct evaluator evaluator;
typedef struct ev_call ev_call;

typedef struct ev_request {
    const char *image;         /* as the caller sent it; may be "" */
    const uint8_t *input;      /* the ResourceList; valid until done or cancel */
    size_t input_len;
    const char *tag;           /* the request's Tag (a semver constraint or a tag);
                                * "" or NULL when none; valid as image is */
} ev_request;

typedef struct ev_result {
    int code;                  /* GRPC_OK, else the status to answer with */
    int not_found;             /* this evaluator has no such function (code NOT_FOUND) */
    const char *message;       /* status message when code != GRPC_OK */
    const uint8_t *out;        /* GRPC_OK: the function's ResourceList (stdout) */
    size_t out_len;
    const uint8_t *log;        /* GRPC_OK: the function's stderr */
    size_t log_len;
} ev_result;

typedef void ev_done_fn(ev_call *call, const ev_result *r, void *ctx);
/* A cancelled call's work has stopped (ev_exec: its process was reaped). */
typedef void ev_gone_fn(void *ctx);

typedef struct ev_ops {
    const char *name;          /* "exec", "multi", ... for logs */
    /* Returns NULL only when out of memory; every other failure arrives
     * through done. */
    ev_call *(*start)(evaluator *e, const ev_request *req, ev_done_fn *done, void *ctx);
    /* Optional (NULL: not offered): streaming input, see
     * ev_call_start_streaming. */
    ev_call *(*start_streaming)(evaluator *e, const ev_request *req, size_t ready,
                                ev_done_fn *done, void *ctx);
    void (*input_ready)(ev_call *call, size_t ready);
    void (*input_done)(ev_call *call, const char *image);
    /* Abandon a call whose done has not run: stop its work, free it; then
     * gone(gone_ctx), if gone is given, once the work has stopped. */
    void (*cancel)(ev_call *call, ev_gone_fn *gone, void *gone_ctx);
    /* Free a call after its done ran. */
    void (*free_call)(ev_call *call);
    /* Optional: the caller's deadline passed (cancel follows); append to
     * why what the call still waits for, if anything. */
    void (*deadline_note)(ev_call *call, buf *why);
    void (*destroy)(evaluator *e);
} ev_ops;

struct evaluator {
    const ev_ops *ops;
};

/* Every call starts with this header, so the generic functions below can
 * dispatch on it. */
struct ev_call {
    evaluator *ev;
    /* Set by start when the evaluator already knows it has no such
     * function: its done (NOT_FOUND, not_found set) is on its way from the
     * loop, and a caller with somewhere else to look (ev_multi) may cancel
     * the call and look there at once, a round of the loop sooner. */
    int declined;
};

/* Start a call; done runs later from the loop, even for an immediate
 * failure such as NOT_FOUND. Returns NULL only when out of memory. */
ev_call *ev_call_start(evaluator *e, const ev_request *req, ev_done_fn *done, void *ctx);

/* Streaming input, for a large request whose ResourceList is still arriving:
 * start the function on the first `ready` bytes of req->input (whose full
 * length is req->input_len; the bytes must not move until done or cancel).
 * Feed it with ev_call_input_ready as more arrives, then ev_call_input_done
 * once the request is complete and checked; done never runs before that,
 * so a request that turns out bad is cancelled without an answer from the
 * function. Returns NULL when the evaluator cannot start a function before
 * the whole request is in (it lacks the op, needs the image first, or the
 * start failed): the caller then waits and uses ev_call_start. */
ev_call *ev_call_start_streaming(evaluator *e, const ev_request *req, size_t ready,
                                 ev_done_fn *done, void *ctx);
void ev_call_input_ready(ev_call *call, size_t ready);
/* All req->input_len bytes are there; image is the request's (it comes after
 * the ResourceList on the wire, so it was not known at the start). When the
 * function has already finished, done may run inside this call (or later,
 * from the loop, when its output takes several steps to judge): make it
 * the caller's last use of its state. */
void ev_call_input_done(ev_call *call, const char *image);
void ev_call_cancel(ev_call *call);
/* Cancel, and call gone(ctx) once the call's work has really stopped: a
 * process takes up to its kill grace to die. It may run inside this call
 * (nothing was running) or later from the loop; exactly once. */
void ev_call_cancel_notify(ev_call *call, ev_gone_fn *gone, void *ctx);
void ev_call_free(ev_call *call);
/* The caller's deadline passed, before cancelling: appends to why what the
 * call was still waiting for (a function slot), if anything. */
void ev_call_deadline_note(ev_call *call, buf *why);
void ev_destroy(evaluator *e);

#endif
