/* ev_pod: EvaluateFunction through a function pod; see ev_pod.h.
 *
 * A call: pod_cache_get -> gc_connect_start (numeric address, on the loop)
 * -> gc_call -> done. One connection per call: simple and enough for the
 * CLI; a runner holding many calls should keep one per pod (not done yet). */
#include "runtime/ev_pod.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"
#include "evaluator.pb-c.h"

#define EVALUATE_PATH "/evaluator.FunctionEvaluator/EvaluateFunction"
#define CONNECT_TIMEOUT_NS (10LL * 1000000000)

typedef struct pod_ev {
    evaluator base;
    loop *l;
    pod_cache *pc;
    ev_pod_opts o;
    ev_pod_last last;
} pod_ev;

typedef struct pod_call {
    ev_call base;
    ev_request req;
    char *image;
    ev_done_fn *done;
    void *ctx;
    pod_waiter *waiter;
    gc_dialing *dialing;
    gc_conn *conn;
    char *pod;                 /* the pod dialed */
    buf packed;                /* the request message */
    loop_timer *deferred;      /* a failure delivered from the loop */
    ev_result res;
    buf message;
    Evaluator__EvaluateFunctionResponse *resp;
    int ended;
    int in_client_cb;          /* inside the gRPC client's callback: do not gc_close now */
} pod_call;

static void finish(pod_call *c, int code, const char *message)
{
    if (c->ended)
        return;
    c->ended = 1;
    if (code != GRPC_OK) {
        buf_append_str(&c->message, message ? message : "");
        c->res = (ev_result){.code = code, .message = c->message.data ? c->message.data : ""};
    }
    c->done(&c->base, &c->res, c->ctx);
}

static void on_answer(const gc_result *r, void *ctx)
{
    pod_call *c = ctx;
    pod_ev *p = (pod_ev *)c->base.ev;
    if (c->ended)
        return;   /* cancelled: gc_close ends the call with CANCELLED */
    c->in_client_cb = 1;   /* finish may free c: never read after it */
    pod_cache_used(p->pc, c->image);
    if (r->status != GRPC_OK) {
        if (r->status == GRPC_UNAVAILABLE)
            pod_cache_forget(p->pc, c->image, c->pod, r->message);
        buf m = {0};
        buf_printf(&m, "%s (function pod %s)", r->message, c->pod);
        finish(c, r->status, m.data);
        buf_free(&m);
        return;
    }
    c->resp = evaluator__evaluate_function_response__unpack(NULL, r->response_len, r->response);
    if (!c->resp)
        return finish(c, GRPC_INTERNAL, "the function pod's answer is not an EvaluateFunctionResponse");
    c->res = (ev_result){.code = GRPC_OK, .out = c->resp->resource_list.data,
                         .out_len = c->resp->resource_list.len, .log = c->resp->log.data,
                         .log_len = c->resp->log.len};
    finish(c, GRPC_OK, NULL);
}

static void on_connected(gc_conn *conn, const char *error, void *ctx)
{
    pod_call *c = ctx;
    pod_ev *p = (pod_ev *)c->base.ev;
    c->dialing = NULL;
    c->in_client_cb = 1;   /* finish may free c: never read after it */
    if (!conn) {
        pod_cache_forget(p->pc, c->image, c->pod, error);
        return finish(c, GRPC_UNAVAILABLE, error);
    }
    c->conn = conn;
    if (gc_call(conn, EVALUATE_PATH, c->packed.data, c->packed.len, p->o.call_timeout_ns, on_answer,
                c) < 0)
        finish(c, GRPC_RESOURCE_EXHAUSTED, "cannot start the call to the function pod");
    else
        c->in_client_cb = 0;
}

static void on_pod(const pod_answer *a, void *ctx)
{
    pod_call *c = ctx;
    pod_ev *p = (pod_ev *)c->base.ev;
    c->waiter = NULL;
    if (a->error)
        return finish(c, GRPC_UNAVAILABLE, a->error);
    snprintf(p->last.pod, sizeof p->last.pod, "%s", a->pod);
    snprintf(p->last.uid, sizeof p->last.uid, "%s", a->uid ? a->uid : "");
    snprintf(p->last.addr, sizeof p->last.addr, "%s", a->name);
    p->last.created = a->created;
    p->last.pod_wait_ns = a->waited_ns;
    buf err = {0};
    if (!(c->pod = strdup(a->pod)) ||
        !(c->dialing = gc_connect_start(p->l, a->addr, p->o.connect_timeout_ns, p->o.max_message,
                                        on_connected, c, &err)))
        finish(c, GRPC_UNAVAILABLE, err.data ? err.data : "out of memory");
    buf_free(&err);
}

static int pack(pod_call *c)
{
    Evaluator__EvaluateFunctionRequest req = EVALUATOR__EVALUATE_FUNCTION_REQUEST__INIT;
    req.resource_list.data = (uint8_t *)c->req.input;
    req.resource_list.len = c->req.input_len;
    req.image = c->image;
    size_t size = evaluator__evaluate_function_request__get_packed_size(&req);
    if (buf_reserve(&c->packed, size) < 0)
        return -1;
    evaluator__evaluate_function_request__pack(&req, (uint8_t *)c->packed.data);
    c->packed.len = size;
    return 0;
}

static void deliver_deferred(loop *l, void *ctx)
{
    (void)l;
    pod_call *c = ctx;
    c->deferred = NULL;
    finish(c, GRPC_INVALID_ARGUMENT, "the pod runtime needs the function's image");
}

static ev_call *pod_start(evaluator *base, const ev_request *req, ev_done_fn *done, void *ctx)
{
    pod_ev *p = (pod_ev *)base;
    pod_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->req = *req;   /* before pack(), which reads the input */
    if (!(c->image = strdup(req->image ? req->image : "")) || pack(c) < 0)
        goto oom;
    c->base.ev = base;
    c->done = done;
    c->ctx = ctx;
    if (!*c->image) {
        if (!(c->deferred = loop_timer_add(p->l, 0, deliver_deferred, c)))
            goto oom;
        return &c->base;
    }
    if (!(c->waiter = pod_cache_get(p->pc, c->image, on_pod, c)))
        goto oom;
    return &c->base;
oom:
    if (c) {
        free(c->image);
        buf_free(&c->packed);
    }
    free(c);
    return NULL;
}

static void close_later(loop *l, void *ctx)
{
    (void)l;
    gc_close(ctx);
}

/* The owner may free the call from inside its done, which then runs inside
 * the gRPC client's callback (a server replies at once): the connection is
 * closed next turn, once the client has let go of it; nothing runs on it
 * any more (one call per connection, answered). Otherwise (cancel, or a
 * free after done returned) it is closed now. */
static void call_release(ev_call *base, int defer_close)
{
    pod_call *c = (pod_call *)base;
    pod_ev *p = (pod_ev *)base->ev;
    pod_cache_cancel(p->pc, c->waiter);
    gc_connect_cancel(c->dialing);
    loop_timer_cancel(p->l, c->deferred);
    if (c->conn && defer_close && !loop_timer_add(p->l, 0, close_later, c->conn))
        log_warn("function pod %s: out of memory closing its connection; left open", c->pod ? c->pod : "");
    else if (c->conn && !defer_close)
        gc_close(c->conn);   /* a running call ends CANCELLED: on_answer ignores it (ended) */
    if (c->resp)
        evaluator__evaluate_function_response__free_unpacked(c->resp, NULL);
    buf_free(&c->packed);
    buf_free(&c->message);
    free(c->image);
    free(c->pod);
    free(c);
}

static void pod_free_call(ev_call *base) { call_release(base, ((pod_call *)base)->in_client_cb); }

static void pod_cancel(ev_call *base, ev_gone_fn *gone, void *gone_ctx)
{
    pod_call *c = (pod_call *)base;
    c->ended = 1;              /* gc_close ends a running call with CANCELLED: not reported */
    call_release(base, 0);
    if (gone)
        gone(gone_ctx);
}

static void pod_destroy(evaluator *base)
{
    free(base);
}

static const ev_ops pod_ops = {
    .name = "pod",
    .start = pod_start,
    .cancel = pod_cancel,
    .free_call = pod_free_call,
    .destroy = pod_destroy,
};

evaluator *ev_pod_new(loop *l, pod_cache *pc, const ev_pod_opts *o)
{
    pod_ev *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->base.ops = &pod_ops;
    p->l = l;
    p->pc = pc;
    p->o = *o;
    if (p->o.connect_timeout_ns <= 0)
        p->o.connect_timeout_ns = CONNECT_TIMEOUT_NS;
    if (!p->o.max_message)
        p->o.max_message = 6291456;
    return &p->base;
}

const ev_pod_last *ev_pod_last_call(evaluator *e)
{
    pod_ev *p = (pod_ev *)e;
    return p->last.pod[0] ? &p->last : NULL;
}
