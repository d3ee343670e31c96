/* ev_multi: the fallback chain; see ev_multi.h.
 *
 * A multi call owns one inner call at a time. When the inner call reports
 * NOT_FOUND it is freed and the next evaluator's call started; the request
 * (image, input) is kept by reference, valid until done or cancel. */
#include "runtime/ev_multi.h"

#include <stdlib.h>

#include "core/log.h"
#include "grpc/grpc_status.h"

#define NO_RUNTIME "no function runtime is enabled (all were disabled with --disable-runtimes)"

typedef struct multi_ev {
    evaluator base;
    loop *loop;
    evaluator **evs;
    size_t n;
} multi_ev;

typedef struct multi_call {
    ev_call base;
    ev_request req;
    ev_done_fn *done;
    void *ctx;
    size_t index;              /* evaluator of `inner` */
    ev_call *inner;
    loop_defer deferred;       /* n == 0: the failure, delivered from the loop */
    ev_result res;
} multi_call;

static void multi_inner_done(ev_call *inner, const ev_result *r, void *ctx);

/* The current evaluator has no function for c: on to the next. */
static void multi_next(multi_ev *m, multi_call *c)
{
    /* every call of a pod-served image passes here: a detail (verbosity
     * 3), not a line per call beside svc_evaluate's "Evaluated" */
    log_v(3, "%s runtime has no function \"%s\"; trying %s", m->evs[c->index]->ops->name,
          c->req.image, m->evs[c->index + 1]->ops->name);
    c->inner = NULL;
    c->index++;
}

/* Starts c on the current evaluator, or on the first after it that does not
 * decline it at once (the last one's call is kept whatever it says). */
static int multi_try(multi_ev *m, multi_call *c)
{
    for (;;) {
        c->inner = ev_call_start(m->evs[c->index], &c->req, multi_inner_done, c);
        if (!c->inner)
            return -1;
        if (!c->inner->declined || c->index + 1 >= m->n)
            return 0;
        ev_call *declined = c->inner;
        multi_next(m, c);
        ev_call_cancel(declined);   /* its NOT_FOUND is not delivered */
    }
}

static void multi_inner_done(ev_call *inner, const ev_result *r, void *ctx)
{
    multi_call *c = ctx;
    multi_ev *m = (multi_ev *)c->base.ev;
    if (r->not_found && c->index + 1 < m->n) {
        multi_next(m, c);
        ev_call_free(inner);
        if (multi_try(m, c) == 0)
            return;
        c->res = (ev_result){.code = GRPC_RESOURCE_EXHAUSTED, .message = "out of memory"};
        c->done(&c->base, &c->res, c->ctx);
        return;
    }
    c->done(&c->base, r, c->ctx);   /* r belongs to inner, freed with this call */
}

static void multi_deliver_deferred(loop *l, void *ctx)
{
    (void)l;
    multi_call *c = ctx;
    c->done(&c->base, &c->res, c->ctx);
}

static ev_call *multi_start(evaluator *base, const ev_request *req, ev_done_fn *done, void *ctx)
{
    multi_ev *m = (multi_ev *)base;
    multi_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->base.ev = base;
    c->req = *req;
    c->done = done;
    c->ctx = ctx;
    loop_defer_init(&c->deferred, multi_deliver_deferred, c);
    if (m->n == 0) {
        c->res = (ev_result){.code = GRPC_FAILED_PRECONDITION, .message = NO_RUNTIME};
        loop_defer_post(m->loop, &c->deferred);
        return &c->base;
    }
    if (multi_try(m, c) == 0)
        return &c->base;
    free(c);
    return NULL;
}

static void multi_free_call(ev_call *base)
{
    multi_call *c = (multi_call *)base;
    loop_defer_cancel(&c->deferred);
    ev_call_free(c->inner);
    free(c);
}

static void multi_cancel(ev_call *base, ev_gone_fn *gone, void *gone_ctx)
{
    multi_call *c = (multi_call *)base;
    loop_defer_cancel(&c->deferred);
    ev_call *inner = c->inner;
    free(c);
    ev_call_cancel_notify(inner, gone, gone_ctx);
}

static void multi_deadline_note(ev_call *base, buf *why)
{
    ev_call_deadline_note(((multi_call *)base)->inner, why);
}

static void multi_destroy(evaluator *base)
{
    multi_ev *m = (multi_ev *)base;
    for (size_t i = 0; i < m->n; i++)
        ev_destroy(m->evs[i]);
    free(m->evs);
    free(m);
}

static const ev_ops multi_ops = {
    .name = "multi",
    .start = multi_start,
    .cancel = multi_cancel,
    .free_call = multi_free_call,
    .deadline_note = multi_deadline_note,
    .destroy = multi_destroy,
};

evaluator *ev_multi_new(loop *l, evaluator **evs, size_t n)
{
    multi_ev *m = calloc(1, sizeof *m);
    if (!m || (n && !(m->evs = calloc(n, sizeof *evs)))) {
        free(m);
        return NULL;
    }
    m->base.ops = &multi_ops;
    m->loop = l;
    for (size_t i = 0; i < n; i++)
        m->evs[i] = evs[i];
    m->n = n;
    return &m->base;
}
