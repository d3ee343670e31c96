/* grpc_unary: a whole unary call for CLI tools; see grpc_unary.h. */
#include "grpc/grpc_unary.h"

#include <stdlib.h>
#include <string.h>

#include "core/loop.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"

typedef struct unary_wait {
    loop *loop;
    gc_unary_result *out;
    int finished;   /* unary_done ran (possibly inside gc_call) */
} unary_wait;

static void unary_done(const gc_result *r, void *ctx)
{
    unary_wait *w = ctx;
    w->finished = 1;
    w->out->status = r->status;
    w->out->message = strdup(r->message ? r->message : "");
    if (r->response_len)
        w->out->response = (uint8_t *)buf_steal(r->response_buf, &w->out->response_len);
    loop_stop(w->loop);
}

int gc_unary(const char *addr, const char *path, const void *request, size_t len,
             const gc_unary_opts *opts, gc_unary_result *out)
{
    *out = (gc_unary_result){.status = GRPC_UNAVAILABLE};
    loop *l = loop_new();
    if (!l)
        return -1;
    buf err = {0};
    int64_t connect_ns = opts->connect_timeout_ns > 0 ? opts->connect_timeout_ns : 20000000000LL;
    gc_conn *c = gc_connect(l, addr, connect_ns, opts->max_message ? opts->max_message : 4 << 20,
                            &err);
    if (!c) {
        out->message = buf_steal(&err, NULL);
        loop_free(l);
        return out->message ? 0 : -1;
    }
    out->connected = 1;
    gc_set_metadata(c, opts->user_agent, opts->metadata, opts->n_metadata);
    unary_wait w = {.loop = l, .out = out};
    if (gc_call(c, path, request, len, opts->timeout_ns, unary_done, &w) < 0) {
        out->status = GRPC_INTERNAL;
        out->message = strdup("cannot start the call");
    } else if (!w.finished) {
        /* A connection reset found by gc_call's own write ends the call
         * inside gc_call; loop_run would then clear that loop_stop and wait
         * for ever, with no socket watched and no deadline armed. */
        loop_run(l);
    }
    gc_close(c);
    loop_free(l);
    buf_free(&err);
    return out->message ? 0 : -1;
}

void gc_unary_result_free(gc_unary_result *r)
{
    free(r->message);
    free(r->response);
    *r = (gc_unary_result){0};
}
