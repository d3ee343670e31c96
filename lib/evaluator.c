/* evaluator: dispatch of the generic calls to an implementation; see evaluator.h. */
#include "evaluator.h"

ev_call *ev_call_start(evaluator *e, const ev_request *req, ev_done_fn *done, void *ctx)
{
    return e->ops->start(e, req, done, ctx);
}

void ev_call_cancel(ev_call *call)
{
    if (call)
        call->ev->ops->cancel(call);
}

void ev_call_free(ev_call *call)
{
    if (call)
        call->ev->ops->free_call(call);
}

void ev_destroy(evaluator *e)
{
    if (e)
        e->ops->destroy(e);
}
