/* ev_exec: local-process evaluator; see ev_exec.h.
 *
 * A call is: resolve the argv (fixed, or the lookup's binary) -> fn_job_start
 * -> fn_job done -> judge the output -> done(result). Failures known at once
 * (no entrypoint, not found, spawn failed) are delivered from a zero-delay
 * timer, so done never runs inside start.
 *
 * Judging a large output takes libyaml a while (about 30 ns a byte, far
 * more for hostile nesting), so it is done in steps (fn_verdict_step): the
 * first at once, which is all a small output needs, the rest each from a
 * zero-delay timer, so health checks and other calls are served between
 * them.
 *
 * Streaming (fixed argv only: the lookup needs the image, which follows the
 * ResourceList on the wire): the job starts on the first bytes of the input
 * and is fed as the rest arrives. If it finishes before the request is
 * complete, its verdict waits for input_done: the request may still turn
 * out bad, and then the call is cancelled and the function's answer never
 * counts. */
#include "ev_exec.h"

#include <stdlib.h>
#include <string.h>

#include "fn_job.h"
#include "fn_verdict.h"
#include "go_quote.h"
#include "grpc_status.h"
#include "log.h"

typedef struct exec_ev {
    evaluator base;
    ev_exec_config cfg;
} exec_ev;

typedef struct exec_call {
    ev_call base;
    char *image;
    ev_done_fn *done;
    void *ctx;
    fn_job *job;
    loop_timer *deferred;      /* pending delivery of an immediate result */
    fn_judging *judging;       /* the output being judged, in steps */
    loop_timer *judge_next;    /* the next judging step */
    buf path;                  /* lookup mode: the binary */
    char *argv[2];
    fn_verdict verdict;
    ev_result res;
    int input_open;            /* streaming: the request is not complete yet */
    int job_ended;             /* the job finished while input_open */
} exec_call;

static void exec_set_failure(exec_call *c, int code, int not_found)
{
    c->res = (ev_result){.code = code, .not_found = not_found,
                         .message = c->verdict.message.data ? c->verdict.message.data : ""};
}

static void exec_deliver_deferred(loop *l, void *ctx)
{
    (void)l;
    exec_call *c = ctx;
    c->deferred = NULL;   /* the loop frees the timer */
    c->done(&c->base, &c->res, c->ctx);
}

static void exec_judged(exec_call *c)
{
    fn_job *job = c->job;
    log_v(3, "function %d for \"%s\" finished in %.1f ms", (int)job->pid, c->image,
          (double)(loop_now_ns() - job->started_ns) / 1e6);
    if (c->verdict.warning.len)
        log_warn("%s", c->verdict.warning.data);
    if (c->verdict.code == GRPC_OK)
        c->res = (ev_result){.code = GRPC_OK,
                             .out = (const uint8_t *)job->out.data, .out_len = job->out.len,
                             .log = (const uint8_t *)job->err.data, .log_len = job->err.len};
    else
        exec_set_failure(c, c->verdict.code, 0);
    c->done(&c->base, &c->res, c->ctx);
}

static void exec_judge_resume(loop *l, void *ctx);

static void exec_judge_step(exec_call *c)
{
    exec_ev *e = (exec_ev *)c->base.ev;
    if (fn_verdict_step(c->judging, &c->verdict) == 1) {
        c->judge_next = loop_timer_add(e->cfg.loop, 0, exec_judge_resume, c);
        if (c->judge_next)
            return;
        while (fn_verdict_step(c->judging, &c->verdict) == 1)   /* no timer: finish here */
            continue;
    }
    fn_verdict_stop(c->judging);
    c->judging = NULL;
    exec_judged(c);
}

static void exec_judge_resume(loop *l, void *ctx)
{
    (void)l;
    exec_call *c = ctx;
    c->judge_next = NULL;   /* the loop frees the timer */
    exec_judge_step(c);
}

static void exec_judge(exec_call *c)
{
    c->judging = fn_verdict_start(c->image, c->job);
    if (c->judging) {
        exec_judge_step(c);
        return;
    }
    fn_verdict_judge(c->image, c->job, &c->verdict);   /* says out of memory */
    exec_judged(c);
}

static void exec_job_done(fn_job *job, void *ctx)
{
    (void)job;
    exec_call *c = ctx;
    if (c->input_open) {
        c->job_ended = 1;   /* judged once the request is known to be good */
        return;
    }
    exec_judge(c);
}

/* The argv to run, or NULL with c->verdict.message (and c->res) set. */
static char *const *exec_resolve(exec_ev *e, exec_call *c)
{
    if (e->cfg.argv) {
        if (e->cfg.argv[0])
            return e->cfg.argv;
        buf_append_str(&c->verdict.message,
                       "wrapper-server has no entrypoint to run: nothing followed \"--\" on its "
                       "command line (the function image has neither Entrypoint nor Cmd)");
        exec_set_failure(c, GRPC_INTERNAL, 0);
        return NULL;
    }
    if (e->cfg.lookup(e->cfg.lookup_ctx, c->image, &c->path) && c->path.len) {
        c->argv[0] = c->path.data;
        return c->argv;
    }
    buf_append_str(&c->verdict.message, "function ");
    go_quote(c->image, &c->verdict.message);
    buf_append_str(&c->verdict.message, " not found");
    exec_set_failure(c, GRPC_NOT_FOUND, 1);
    return NULL;
}

static exec_call *exec_call_new(evaluator *base, const char *image, ev_done_fn *done, void *ctx)
{
    exec_call *c = calloc(1, sizeof *c);
    if (!c || !(c->image = strdup(image ? image : ""))) {
        free(c);
        return NULL;
    }
    c->base.ev = base;
    c->done = done;
    c->ctx = ctx;
    return c;
}

static fn_job *exec_spawn(exec_ev *e, exec_call *c, char *const *argv, const ev_request *req,
                          int growing, size_t ready, buf *why)
{
    fn_job_spec spec = {
        .argv = argv,
        .input = (const char *)req->input,
        .input_len = req->input_len,
        .input_growing = growing,
        .input_ready = ready,
        .max_stdout = e->cfg.max_stdout,
        .max_stderr = e->cfg.max_stderr,
    };
    return fn_job_start(e->cfg.loop, &spec, exec_job_done, c, why);
}

static ev_call *exec_start(evaluator *base, const ev_request *req, ev_done_fn *done, void *ctx)
{
    exec_ev *e = (exec_ev *)base;
    exec_call *c = exec_call_new(base, req->image, done, ctx);
    if (!c)
        return NULL;
    char *const *argv = exec_resolve(e, c);
    if (argv) {
        buf why = {0};
        if (!e->cfg.argv)
            log_info("Evaluating \"%s\" in executable mode", c->image);
        c->job = exec_spawn(e, c, argv, req, 0, 0, &why);
        if (c->job)
            return &c->base;
        fn_verdict_spawn_failed(c->image, why.data ? why.data : "", &c->verdict);
        buf_free(&why);
        exec_set_failure(c, c->verdict.code, 0);
    }
    c->deferred = loop_timer_add(e->cfg.loop, 0, exec_deliver_deferred, c);
    if (!c->deferred) {
        fn_verdict_free(&c->verdict);
        buf_free(&c->path);
        free(c->image);
        free(c);
        return NULL;
    }
    return &c->base;
}

static ev_call *exec_start_streaming(evaluator *base, const ev_request *req, size_t ready,
                                     ev_done_fn *done, void *ctx)
{
    exec_ev *e = (exec_ev *)base;
    if (!e->cfg.argv || !e->cfg.argv[0])
        return NULL;   /* lookup mode needs the image; no entrypoint is answered at the end */
    exec_call *c = exec_call_new(base, req->image, done, ctx);
    if (!c)
        return NULL;
    buf why = {0};
    c->job = exec_spawn(e, c, e->cfg.argv, req, 1, ready, &why);
    buf_free(&why);   /* the complete request tries again and reports it */
    if (!c->job) {
        free(c->image);
        free(c);
        return NULL;
    }
    c->input_open = 1;
    return &c->base;
}

static void exec_input_ready(ev_call *base, size_t ready)
{
    exec_call *c = (exec_call *)base;
    if (c->input_open)
        fn_job_input_ready(c->job, ready);
}

static void exec_input_done(ev_call *base, const char *image)
{
    exec_call *c = (exec_call *)base;
    char *copy = strdup(image ? image : "");
    if (copy) {
        free(c->image);
        c->image = copy;
    }
    fn_job_input_ready(c->job, c->job->spec.input_len);
    c->input_open = 0;
    if (c->job_ended)
        exec_judge(c);   /* done may run inside input_done: see evaluator.h */
}

static void exec_free_call(ev_call *base)
{
    exec_call *c = (exec_call *)base;
    fn_verdict_stop(c->judging);   /* cancelled while judging; NULL after done */
    if (c->job)
        fn_job_free(c->job);
    fn_verdict_free(&c->verdict);
    buf_free(&c->path);
    free(c->image);
    free(c);
}

static void exec_cancel(ev_call *base)
{
    exec_call *c = (exec_call *)base;
    exec_ev *e = (exec_ev *)base->ev;
    if (c->deferred)
        loop_timer_cancel(e->cfg.loop, c->deferred);
    if (c->judge_next)
        loop_timer_cancel(e->cfg.loop, c->judge_next);
    if (c->job)
        fn_job_cancel(c->job, e->cfg.kill_grace_ns);   /* frees itself once reaped */
    c->job = NULL;
    exec_free_call(base);
}

static void exec_destroy(evaluator *e)
{
    free(e);
}

static const ev_ops exec_ops = {
    .name = "exec",
    .start = exec_start,
    .start_streaming = exec_start_streaming,
    .input_ready = exec_input_ready,
    .input_done = exec_input_done,
    .cancel = exec_cancel,
    .free_call = exec_free_call,
    .destroy = exec_destroy,
};

evaluator *ev_exec_new(const ev_exec_config *cfg)
{
    exec_ev *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->base.ops = &exec_ops;
    e->cfg = *cfg;
    return &e->base;
}
