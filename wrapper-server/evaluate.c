/* evaluate: the evaluator.FunctionEvaluator/EvaluateFunction handler.
 *
 * request -> decode (protobuf-c) -> fn_job runs the entrypoint with the
 * ResourceList on stdin -> fn_verdict judges the run as Porch does ->
 * reply {resource_list: stdout, log: stderr} or an INTERNAL status.
 *
 * The reply borrows stdout and stderr from the job instead of copying them
 * into a new protobuf message: only the two field headers are encoded here,
 * and the transport streams the pieces out. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evaluator.pb-c.h"
#include "fn_job.h"
#include "fn_verdict.h"
#include "grpc_status.h"
#include "handlers.h"
#include "log.h"
#include "server.h"

#define EVAL_MAX_STDERR (1024 * 1024)   /* stderr kept per call */

typedef struct eval_state {
    Evaluator__EvaluateFunctionRequest *req;
    fn_job *job;
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
    return st->req->image ? st->req->image : "";
}

/* Reply OK with stdout and as much of stderr as fits in one message. */
static void eval_reply_ok(rpc_call *c, eval_state *st)
{
    const fn_job *job = st->job;
    size_t max = server_max_message(c->srv);
    rpc_segment segs[5];
    int n = 0;
    size_t h1 = pb_len_field_header(st->out_header, 1, job->out.len);
    segs[n++] = (rpc_segment){st->out_header, h1};
    segs[n++] = (rpc_segment){job->out.data, job->out.len};
    size_t used = h1 + job->out.len;
    size_t log_len = job->err.len;
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
        segs[n++] = (rpc_segment){job->err.data, log_len};
        if (marker_len)
            segs[n++] = (rpc_segment){st->log_marker, marker_len};
    }
    log_info("Evaluated \"%s\": stdout length in bytes: %zu", eval_image(st), job->out.len);
    rpc_reply(c, segs, n);
}

static void eval_done(fn_job *job, void *ctx)
{
    rpc_call *c = ctx;
    eval_state *st = c->state;
    fn_verdict v;
    fn_verdict_judge(eval_image(st), job, &v);
    log_v(3, "function %d for \"%s\" finished in %.1f ms", (int)job->pid, eval_image(st),
          (double)(loop_now_ns() - job->started_ns) / 1e6);
    if (v.warning.len)
        log_warn("%s", v.warning.data);
    if (v.code == GRPC_OK) {
        fn_verdict_free(&v);
        eval_reply_ok(c, st);   /* c may be freed inside: nothing after this */
        return;
    }
    log_info("Evaluating \"%s\" failed: %s", eval_image(st), v.message.data);
    buf msg = v.message;
    v.message = (buf){0};
    fn_verdict_free(&v);
    rpc_fail(c, GRPC_INTERNAL, msg.data);
    buf_free(&msg);
}

static void eval_handle(rpc_call *c, const uint8_t *msg, size_t len)
{
    const ws_config *cfg = server_config(c->srv);
    eval_state *st = calloc(1, sizeof *st);
    if (!st) {
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    c->state = st;
    st->req = evaluator__evaluate_function_request__unpack(NULL, len, msg);
    if (!st->req) {
        rpc_fail(c, GRPC_INTERNAL,
                 "grpc: error unmarshalling request: the EvaluateFunctionRequest is not valid "
                 "protobuf");
        return;
    }
    if (!cfg->entrypoint[0]) {
        rpc_fail(c, GRPC_INTERNAL,
                 "wrapper-server has no entrypoint to run: nothing followed \"--\" on its command "
                 "line (the function image has neither Entrypoint nor Cmd)");
        return;
    }
    fn_job_spec spec = {
        .argv = cfg->entrypoint,
        .input = (const char *)st->req->resource_list.data,
        .input_len = st->req->resource_list.len,
        .max_stdout = cfg->max_message,
        .max_stderr = EVAL_MAX_STDERR,
    };
    fn_spawn_error why;
    st->job = fn_job_start(server_loop(c->srv), &spec, eval_done, c, &why);
    if (!st->job) {
        fn_verdict v;
        fn_verdict_spawn_failed(eval_image(st), &why, &v);
        log_info("Evaluating \"%s\" failed: %s", eval_image(st), v.message.data);
        rpc_fail(c, GRPC_INTERNAL, v.message.data);
        fn_verdict_free(&v);
    }
}

static void eval_end(rpc_call *c, int finished)
{
    (void)finished;   /* the job knows whether it is done */
    eval_state *st = c->state;
    if (!st)
        return;
    if (st->job) {
        if (st->job->finished)
            fn_job_free(st->job);
        else
            fn_job_cancel(st->job, server_kill_grace_ns());
    }
    if (st->req)
        evaluator__evaluate_function_request__free_unpacked(st->req, NULL);
    free(st);
    c->state = NULL;
}

const rpc_method evaluate_method = {
    .service = "evaluator.FunctionEvaluator",
    .name = "EvaluateFunction",
    .handle = eval_handle,
    .end = eval_end,
};
