/* unary: one blocking-style gRPC call for runner-client's subcommands: a
 * private event loop runs until the call's done callback fires. */
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "grpc_client.h"
#include "grpc_status.h"

typedef struct unary_wait {
    loop *loop;
    rc_call_result *out;
} unary_wait;

static void unary_done(const gc_result *r, void *ctx)
{
    unary_wait *w = ctx;
    w->out->status = r->status;
    w->out->message = strdup(r->message ? r->message : "");
    if (r->response_len) {
        w->out->response = malloc(r->response_len);
        if (w->out->response)
            memcpy(w->out->response, r->response, r->response_len);
        w->out->response_len = w->out->response ? r->response_len : 0;
    }
    loop_stop(w->loop);
}

int rc_unary(const char *addr, const char *path, const void *req, size_t len, int64_t timeout_ns,
             uint32_t max_message, rc_call_result *out)
{
    *out = (rc_call_result){0};
    loop *l = loop_new();
    if (!l)
        return -1;
    buf err = {0};
    /* the connection attempt shares the call's deadline (20 s without one) */
    gc_conn *c = gc_connect(l, addr, timeout_ns > 0 ? timeout_ns : 20000000000LL, max_message,
                            &err);
    if (!c) {
        out->status = GRPC_UNAVAILABLE;
        out->message = buf_steal(&err, NULL);
        loop_free(l);
        return 0;
    }
    unary_wait w = {.loop = l, .out = out};
    if (gc_call(c, path, req, len, timeout_ns, unary_done, &w) < 0) {
        out->status = GRPC_INTERNAL;
        out->message = strdup("cannot start the call");
    } else {
        loop_run(l);
    }
    gc_close(c);
    loop_free(l);
    buf_free(&err);
    return 0;
}

void rc_call_result_free(rc_call_result *r)
{
    free(r->message);
    free(r->response);
    *r = (rc_call_result){0};
}
