/* svc_evaluate: the evaluator.FunctionEvaluator/EvaluateFunction handler.
 *
 * request -> decode (protobuf-c) -> the server's evaluator (server_app: in
 * the wrapper server ev_exec, where fn_job runs the entrypoint and
 * fn_verdict judges the run as Porch does; in the function runner ev_multi
 * over its runtimes) -> reply {resource_list, log} or the error status.
 *
 * The reply borrows stdout and stderr from the evaluator's result instead of
 * copying them into a new protobuf message: only the two field headers are
 * encoded here, and the transport streams the pieces out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator.h"
#include "grpc_status.h"
#include "log.h"
#include "pb_request.h"
#include "rpc_server.h"
#include "services.h"

typedef struct eval_state {
    buf msg;                  /* the request message, kept for the call */
    pb_eval_request req;      /* decoded in place: resource_list points into msg */
    ev_call *call;
    int delivered;            /* the evaluator's done ran */
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
    size_t max = server_max_message(c->srv);
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
    log_info("Evaluated \"%s\": stdout length in bytes: %zu", eval_image(st), r->out_len);
    rpc_reply(c, segs, n);
}

/* Big buffers (buf spares) are kept between calls and released once no
 * EvaluateFunction call has run for this long, so an idle server holds no
 * megabytes. */
#define EVAL_SPARES_IDLE_NS (2 * 1000000000LL)

static size_t evals_active;
static loop_timer *spares_timer;

static void eval_release_spares(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    spares_timer = NULL;
    buf_spares_release();
}

static void eval_count_start(rpc_call *c)
{
    evals_active++;
    loop_timer_cancel(server_loop(c->srv), spares_timer);
    spares_timer = NULL;
}

static void eval_count_end(rpc_call *c)
{
    if (--evals_active == 0 && !spares_timer && buf_spares_bytes())
        spares_timer = loop_timer_add(server_loop(c->srv), EVAL_SPARES_IDLE_NS,
                                      eval_release_spares, NULL);
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

static void eval_handle(rpc_call *c, const uint8_t *msg, size_t len)
{
    eval_state *st = calloc(1, sizeof *st);
    if (!st) {
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    c->state = st;
    eval_count_start(c);
    char why[128], text[256];
    if (rpc_take_message(c, msg, len, &st->msg) < 0) {
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    if (pb_eval_request_decode((const uint8_t *)st->msg.data, st->msg.len, &st->req, why,
                               sizeof why) < 0) {
        snprintf(text, sizeof text, "grpc: error unmarshalling request: the "
                 "EvaluateFunctionRequest is not valid protobuf (%s)", why);
        rpc_fail(c, GRPC_INTERNAL, text);
        return;
    }
    ev_request req = {
        .image = eval_image(st),
        .input = st->req.resource_list,
        .input_len = st->req.resource_list_len,
    };
    st->call = ev_call_start(server_app(c->srv), &req, eval_done, c);
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
    if (st->call) {
        if (st->delivered)
            ev_call_free(st->call);
        else
            ev_call_cancel(st->call);
    }
    pb_eval_request_free(&st->req);
    buf_free(&st->msg);
    free(st);
    c->state = NULL;
    eval_count_end(c);
}

const rpc_method evaluate_method = {
    .service = "evaluator.FunctionEvaluator",
    .name = "EvaluateFunction",
    .handle = eval_handle,
    .end = eval_end,
};
