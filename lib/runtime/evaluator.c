/* evaluator: dispatch of the generic calls to an implementation; see evaluator.h. */
#include "runtime/evaluator.h"

ev_call *ev_call_start(evaluator *e, const ev_request *req, ev_done_fn *done, void *ctx)
{
    return e->ops->start(e, req, done, ctx);
}

ev_call *ev_call_start_streaming(evaluator *e, const ev_request *req, size_t ready,
                                 ev_done_fn *done, void *ctx)
{
    if (!e->ops->start_streaming)
        return NULL;
    return e->ops->start_streaming(e, req, ready, done, ctx);
}

void ev_call_input_ready(ev_call *call, size_t ready)
{
    call->ev->ops->input_ready(call, ready);
}

void ev_call_input_done(ev_call *call, const char *image)
{
    call->ev->ops->input_done(call, image);
}

void ev_call_cancel(ev_call *call)
{
    ev_call_cancel_notify(call, NULL, NULL);
}

void ev_call_cancel_notify(ev_call *call, ev_gone_fn *gone, void *ctx)
{
    if (call)
        call->ev->ops->cancel(call, gone, ctx);
    else if (gone)
        gone(ctx);
}

void ev_call_free(ev_call *call)
{
    if (call)
        call->ev->ops->free_call(call);
}

void ev_call_deadline_note(ev_call *call, buf *why)
{
    if (call && call->ev->ops->deadline_note)
        call->ev->ops->deadline_note(call, why);
}

void ev_destroy(evaluator *e)
{
    if (e)
        e->ops->destroy(e);
}
