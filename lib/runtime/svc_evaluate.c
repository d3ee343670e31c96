/* svc_evaluate: the evaluator.FunctionEvaluator/EvaluateFunction handler.
 *
 * request -> decode (protobuf-c) -> the server's evaluator (rpc_server_app: in
 * the wrapper server ev_exec, where fn_job runs the entrypoint and
 * fn_verdict judges the run as Porch does; in the function runner ev_multi
 * over its runtimes) -> reply {resource_list, log} or the error status.
 *
 * The reply borrows stdout and stderr from the evaluator's result instead of
 * copying them into a new protobuf message: only the two field headers are
 * encoded here, and the transport streams the pieces out.
 *
 * A large request is streamed: once its message starts with the
 * resource_list field (as every protobuf encoder writes it: fields in
 * number order), the function is started on the bytes that are in and fed
 * the rest as it arrives (ev_call_start_streaming), so its run overlaps the
 * upload instead of following it. Only the complete, decoded request
 * decides: a bad one cancels the function (its answer is never used), and
 * one whose resource_list turns out different (protobuf keeps the last of a
 * repeated field) restarts it on the right bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/go_quote.h"
#include "core/log.h"
#include "grpc/grpc_status.h"
#include "grpc/rpc_server.h"
#include "runtime/evaluator.h"
#include "runtime/pb_request.h"
#include "runtime/services.h"

typedef struct eval_state {
    buf msg;                  /* the request message, kept for the call */
    pb_eval_request req;      /* decoded in place: resource_list points into msg */
    ev_call *call;
    int delivered;            /* the evaluator's done ran */
    int no_stream;            /* streaming was ruled out for this request */
    const uint8_t *streamed;  /* the resource_list bytes the streaming call reads */
    size_t streamed_len;
    size_t streamed_off;      /* where they start in the message */
    uint8_t out_header[11];   /* field 1 tag + varint length */
    uint8_t log_header[11];   /* field 2 tag + varint length */
    char log_marker[128];     /* appended when the log had to be cut to fit */
} eval_state;

static size_t pb_len_field_header(uint8_t *out, uint8_t field, size_t len)
{
    size_t n = 0;
    out[n++] = (uint8_t)(field << 3 | 2);   /* wire type 2: length-delimited */
    do {
        uint8_t b = len & 0x7f;
        len >>= 7;
        out[n++] = b | (len ? 0x80 : 0);
    } while (len);
    return n;
}

static const char *eval_image(const eval_state *st)
{
    return st->req.image ? st->req.image : "";
}

/* Reply OK with stdout and as much of stderr as fits in one message. */
static void eval_reply_ok(rpc_call *c, eval_state *st, const ev_result *r)
{
    size_t max = rpc_server_max_message(c->srv);
    rpc_segment segs[5];
    int n = 0;
    size_t h1 = pb_len_field_header(st->out_header, 1, r->out_len);
    segs[n++] = (rpc_segment){st->out_header, h1};
    segs[n++] = (rpc_segment){r->out, r->out_len};
    size_t used = h1 + r->out_len;
    size_t log_len = r->log_len;
    size_t marker_len = 0;
    if (log_len && used + 11 + log_len > max) {
        int m = snprintf(st->log_marker, sizeof st->log_marker,
                         "\n[log truncated to fit the %zu-byte message limit]\n", max);
        marker_len = (size_t)m;
        size_t room = max > used + 11 + marker_len ? max - used - 11 - marker_len : 0;
        log_len = log_len < room ? log_len : room;
        if (used + 11 + marker_len > max)
            marker_len = 0, log_len = 0;   /* no room at all: stdout alone */
    }
    if (log_len + marker_len) {
        size_t h2 = pb_len_field_header(st->log_header, 2, log_len + marker_len);
        segs[n++] = (rpc_segment){st->log_header, h2};
        segs[n++] = (rpc_segment){r->log, log_len};
        if (marker_len)
            segs[n++] = (rpc_segment){st->log_marker, marker_len};
    }
    /* The log line after the answer is sent, not on its path (a write to
     * stderr, a pipe or a file): the image is taken from the call's state,
     * which the reply may free. */
    char *image = st->req.image;
    st->req.image = NULL;
    size_t out_len = r->out_len;
    rpc_reply(c, segs, n);
    log_info("Evaluated \"%s\": stdout length in bytes: %zu", image ? image : "", out_len);
    free(image);
}

static void eval_done(ev_call *call, const ev_result *r, void *ctx)
{
    (void)call;
    rpc_call *c = ctx;
    eval_state *st = c->state;
    st->delivered = 1;
    if (r->code == GRPC_OK) {
        eval_reply_ok(c, st, r);   /* c may be freed inside: nothing after this */
        return;
    }
    log_info("Evaluating \"%s\" failed: %s", eval_image(st), r->message);
    rpc_fail(c, r->code, r->message);
}

/* The transport's slot for the stream stays taken until the cancelled
 * function is reaped (rpc_hold_slot). */
static void eval_function_gone(void *ctx)
{
    rpc_release_slot(ctx);
}

static void eval_cancel(rpc_call *c, eval_state *st)
{
    ev_call *call = st->call;
    st->call = NULL;
    if (!call)
        return;
    rpc_slot_hold *hold = rpc_hold_slot(c);
    ev_call_cancel_notify(call, hold ? eval_function_gone : NULL, hold);
}

/* The call's state, made by the first of progress and handle. */
static eval_state *eval_state_of(rpc_call *c)
{
    if (c->state)
        return c->state;
    eval_state *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    c->state = st;
    return st;
}

/* Below this a request is read whole before the function starts: the
 * overlap would save well under a millisecond. */
#define EVAL_STREAM_MIN (256 * 1024)

static void eval_progress(rpc_call *c, const uint8_t *msg, size_t have, size_t total)
{
    eval_state *st = eval_state_of(c);
    if (!st || st->no_stream)
        return;   /* out of memory: handle reports it */
    if (st->call) {
        size_t ready = have > st->streamed_off ? have - st->streamed_off : 0;
        ev_call_input_ready(st->call, ready < st->streamed_len ? ready : st->streamed_len);
        return;
    }
    size_t off, len;
    st->no_stream = 1;   /* decided now, whatever happens below */
    if (total < EVAL_STREAM_MIN || !pb_eval_request_peek_list(msg, have, total, &off, &len) ||
        len < EVAL_STREAM_MIN)
        return;
    ev_request req = {.image = "", .input = msg + off, .input_len = len};
    size_t ready = have - off < len ? have - off : len;
    st->call = ev_call_start_streaming(rpc_server_app(c->srv), &req, ready, eval_done, c);
    if (!st->call)
        return;
    st->no_stream = 0;
    st->streamed = msg + off;
    st->streamed_len = len;
    st->streamed_off = off;
    log_v(3, "stream %d: function started on the first %zu of %zu bytes of the ResourceList",
          c->stream_id, ready, len);
}

/* The request is complete and decoded: keep the streaming call if it reads
 * exactly the resource_list decoded, else let it go. 1 when kept. */
static int eval_keep_streaming(rpc_call *c, eval_state *st)
{
    if (!st->call)
        return 0;
    if (st->req.resource_list == st->streamed && st->req.resource_list_len == st->streamed_len)
        return 1;
    log_v(3, "stream %d: a later resource_list field replaced the one the function was "
          "started on; starting it again", c->stream_id);
    eval_cancel(c, st);
    return 0;
}

/* An image or Tag with a NUL byte would name another as a C string (the
 * function configured for "example.com/fn:v1" would run for
 * "example.com/fn:v1\0..."): INVALID_ARGUMENT, naming the byte. 1 when so
 * answered. */
static int eval_refuse_nul(rpc_call *c, eval_state *st, const char *field, const char *s,
                           size_t len, const char *what)
{
    enum { SHOWN = 200 };   /* of the text in the message; it may be megabytes */
    const char *nul = memchr(s, '\0', len);
    if (!nul)
        return 0;
    eval_cancel(c, st);   /* a function started early must not answer */
    buf text = {0};
    buf_printf(&text, "%s ", field);
    go_quote_at_most(s, len, SHOWN, &text);
    buf_printf(&text, " has a NUL byte (\\x00) at offset %zu: not %s", (size_t)(nul - s), what);
    rpc_fail(c, GRPC_INVALID_ARGUMENT, text.data ? text.data : "a NUL byte in the request");
    buf_free(&text);
    return 1;
}

static void eval_handle(rpc_call *c, const uint8_t *msg, size_t len)
{
    eval_state *st = eval_state_of(c);
    if (!st) {
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    if (rpc_take_message(c, msg, len, &st->msg) < 0) {
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    buf why = {0};
    if (pb_eval_request_decode((const uint8_t *)st->msg.data, st->msg.len, &st->req, &why) < 0) {
        eval_cancel(c, st);   /* a function started early must not answer */
        buf text = {0};
        buf_printf(&text, "grpc: error unmarshalling request: the "
                   "EvaluateFunctionRequest is not valid protobuf (%s)",
                   why.data ? why.data : "out of memory");
        rpc_fail(c, GRPC_INTERNAL, text.data ? text.data : "out of memory");
        buf_free(&text);
        buf_free(&why);
        return;
    }
    if (eval_refuse_nul(c, st, "image", st->req.image, st->req.image_len, "an image name") ||
        eval_refuse_nul(c, st, "Tag", st->req.tag, st->req.tag_len, "a tag"))
        return;
    if (eval_keep_streaming(c, st)) {
        ev_call_input_done(st->call, eval_image(st));   /* may answer: nothing after it */
        return;
    }
    ev_request req = {
        .image = eval_image(st),
        .tag = st->req.tag,
        .input = st->req.resource_list,
        .input_len = st->req.resource_list_len,
    };
    st->call = ev_call_start(rpc_server_app(c->srv), &req, eval_done, c);
    if (!st->call)
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

static void eval_end(rpc_call *c, int finished)
{
    (void)finished;   /* whether the evaluator is done is what matters */
    eval_state *st = c->state;
    if (!st)
        return;
    /* The evaluator's result is borrowed by the reply until now. */
    if (st->call && st->delivered)
        ev_call_free(st->call);
    else
        eval_cancel(c, st);
    pb_eval_request_free(&st->req);
    buf_free(&st->msg);
    free(st);
    c->state = NULL;
}

static void eval_deadline_note(rpc_call *c, buf *why)
{
    eval_state *st = c->state;
    if (st && !st->delivered)
        ev_call_deadline_note(st->call, why);
}

const rpc_method evaluate_method = {
    .service = "evaluator.FunctionEvaluator",
    .name = "EvaluateFunction",
    .handle = eval_handle,
    .progress = eval_progress,
    .end = eval_end,
    .deadline_note = eval_deadline_note,
};
