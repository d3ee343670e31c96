/* ev_exec: local-process evaluator; see ev_exec.h.
 *
 * A call is: resolve the argv (fixed, or the lookup's binary) -> fn_job_start
 * -> fn_job done -> judge the output -> done(result). Failures known at once
 * (no entrypoint, not found, refused by the lookup, no function slot, spawn
 * failed) are delivered from a zero-delay timer, so done never runs inside
 * start. A binary the lookup opened is run by descriptor (fn_job's
 * exec_path), so a symlink swapped between the lookup and the exec cannot
 * redirect it. The run waits for a function slot (fn_slots) first.
 *
 * An image the lookup does not have is declined at start (ev_call.declined):
 * ev_multi then cancels the call and asks the next runtime, so the NOT_FOUND
 * message is written only when it is delivered (exec_answer_missing), for
 * the last runtime of a chain, not for every call of a pod-served image.
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
#include "runtime/ev_exec.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/go_quote.h"
#include "core/log.h"
#include "core/state_step.h"
#include "grpc/grpc_status.h"
#include "runtime/fn_job.h"
#include "runtime/fn_prespawn.h"
#include "runtime/fn_slots.h"
#include "runtime/fn_verdict.h"

typedef struct exec_ev {
    evaluator base;
    ev_exec_config cfg;
} exec_ev;

/* Where the request stands against its job. A call that is not streamed
 * has its whole request at start and stays INPUT_COMPLETE. */
typedef enum exec_input {
    EXEC_INPUT_COMPLETE,       /* the request is whole: the job's end is judged at once */
    EXEC_INPUT_STREAMING,      /* the request is still arriving */
    EXEC_INPUT_JOB_ENDED,      /* still arriving, and the job already finished */
} exec_input;

typedef struct exec_call {
    ev_call base;
    char *image;
    char *tag;                 /* the request's Tag, "" when none */
    ev_done_fn *done;
    void *ctx;
    fn_job *job;
    loop_defer deferred;       /* pending delivery of an immediate result */
    fn_judging *judging;       /* the output being judged, in steps */
    loop_defer judge_next;     /* the next judging step, after the loop's other events */
    buf path;                  /* lookup mode: the binary */
    buf missing_why;           /* lookup mode, no binary: the lookup's reason, until the
                                * NOT_FOUND message is written (exec_answer_missing) */
    int exec_fd;               /* lookup mode: that binary, opened; -1 none */
    char exec_path[32];        /* "/proc/self/fd/<exec_fd>" */
    char *argv[2];
    fn_verdict verdict;
    ev_result res;
    exec_input input;          /* where the request stands against the job */
    fn_slot_wait wait;         /* queued for a function slot (fn_slots) */
    char *const *run_argv;     /* what to run once a slot is ours */
    const spawn_child_setup *setup;   /* lookup mode: the function's own, or NULL */
    ev_request req;            /* its input: valid until done or cancel */
} exec_call;

static const char *const input_names[] = {
    [EXEC_INPUT_COMPLETE] = "COMPLETE", [EXEC_INPUT_STREAMING] = "STREAMING",
    [EXEC_INPUT_JOB_ENDED] = "JOB_ENDED",
};

static const unsigned input_next[] = {
    [EXEC_INPUT_COMPLETE] = STATE_BIT(EXEC_INPUT_STREAMING),
    [EXEC_INPUT_STREAMING] = STATE_BIT(EXEC_INPUT_JOB_ENDED) | STATE_BIT(EXEC_INPUT_COMPLETE),
    [EXEC_INPUT_JOB_ENDED] = STATE_BIT(EXEC_INPUT_COMPLETE),
};

static void exec_set_input(exec_call *c, exec_input next)
{
    int legal = state_step(input_next, input_names, c->input, next, "call for \"%s\": input",
                           c->image);
    assert(legal);
    (void)legal;   /* NDEBUG */
    c->input = next;
}

static void exec_set_failure(exec_call *c, int code, int not_found)
{
    c->res = (ev_result){.code = code, .not_found = not_found,
                         .message = c->verdict.message.data ? c->verdict.message.data : ""};
}

/* A call for an image the lookup does not have is answered: its message,
 * `function "IMG" not found` and why, written now that it is used. */
static void exec_answer_missing(exec_call *c)
{
    const exec_ev *e = (const exec_ev *)c->base.ev;
    buf_append_str(&c->verdict.message, "function ");
    go_quote(c->image, &c->verdict.message);
    buf_append_str(&c->verdict.message, " not found");
    if (c->missing_why.len)
        buf_append(&c->verdict.message, c->missing_why.data, c->missing_why.len);
    if (e->cfg.describe_missing)
        e->cfg.describe_missing(e->cfg.lookup_ctx, c->image, c->tag, &c->verdict.message);
    exec_set_failure(c, GRPC_NOT_FOUND, 1);
}

/* An immediate failure (and the one after a slot was waited for) to the
 * caller. */
static void exec_answer_failure(exec_call *c)
{
    if (c->res.not_found)
        exec_answer_missing(c);
    c->done(&c->base, &c->res, c->ctx);
}

static void exec_deliver_deferred(loop *l, void *ctx)
{
    (void)l;
    exec_answer_failure(ctx);
}

/* The runtime's reason, when it has one, after Porch's words (which tools
 * match from their start): "...: exit status 2 (function exceeded ...)". */
static void exec_explain_failure(exec_call *c)
{
    const exec_ev *e = (const exec_ev *)c->base.ev;
    if (!e->cfg.explain_failure)
        return;
    buf why = {0};
    if (e->cfg.explain_failure(e->cfg.explain_ctx, c->job, &why) && why.data)
        buf_printf(&c->verdict.message, " (%s)", why.data);
    buf_free(&why);
}

static void exec_judged(exec_call *c)
{
    fn_job *job = c->job;
    log_v(3, "function %d for \"%s\" finished in %.1f ms", (int)job->pid, c->image,
          (double)(loop_now_ns() - job->started_ns) / 1e6);
    if (c->verdict.warning.len)
        log_warn("%s", c->verdict.warning.data);
    if (c->verdict.code == GRPC_OK) {
        c->res = (ev_result){.code = GRPC_OK,
                             .out = (const uint8_t *)job->out.data, .out_len = job->out.len,
                             .log = (const uint8_t *)job->err.data, .log_len = job->err.len};
    } else {
        exec_explain_failure(c);
        exec_set_failure(c, c->verdict.code, 0);
    }
    c->done(&c->base, &c->res, c->ctx);
}

static void exec_judge_step(exec_call *c)
{
    exec_ev *e = (exec_ev *)c->base.ev;
    if (fn_verdict_step(c->judging, &c->verdict) == 1) {
        loop_defer_post(e->cfg.loop, &c->judge_next);
        return;
    }
    fn_verdict_stop(c->judging);
    c->judging = NULL;
    exec_judged(c);
}

static void exec_judge_resume(loop *l, void *ctx)
{
    (void)l;
    exec_judge_step(ctx);
}

static void exec_judge(exec_call *c)
{
    if (c->job->spawn == FN_JOB_SPAWN_FAILED) {   /* the spawner could not start it */
        fn_verdict_spawn_failed(c->image, c->job->spawn_error.data ? c->job->spawn_error.data : "",
                                &c->verdict);
        exec_set_failure(c, c->verdict.code, 0);
        log_error("%s", c->verdict.message.data ? c->verdict.message.data : "out of memory");
        c->done(&c->base, &c->res, c->ctx);
        return;
    }
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
    if (c->input == EXEC_INPUT_STREAMING) {
        exec_set_input(c, EXEC_INPUT_JOB_ENDED);   /* judged once the request is known to be good */
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
    buf why = {0};
    int fd = -1;
    c->setup = NULL;
    int found = e->cfg.lookup(e->cfg.lookup_ctx, c->image, c->tag, &c->path, &fd, &c->setup,
                              &why);
    if (found > 0 && c->path.len) {
        c->argv[0] = c->path.data;
        if (fd >= 0) {
            c->exec_fd = fd;
            snprintf(c->exec_path, sizeof c->exec_path, "/proc/self/fd/%d", fd);
        }
        return c->argv;
    }
    if (fd >= 0)
        close(fd);
    if (found < 0) {
        buf_append_str(&c->verdict.message, "Failed to execute function ");
        go_quote(c->image, &c->verdict.message);
        buf_printf(&c->verdict.message, ": %s", why.data ? why.data : "refused");
        buf_free(&why);
        log_error("%s", c->verdict.message.data);
        exec_set_failure(c, GRPC_FAILED_PRECONDITION, 0);
        return NULL;
    }
    buf_free(&c->missing_why);   /* looked up again after a wait for a slot */
    c->missing_why = why;        /* the message is written when it is answered */
    c->res = (ev_result){.code = GRPC_NOT_FOUND, .not_found = 1};
    return NULL;
}

static void exec_close_binary(exec_call *c)
{
    if (c->exec_fd >= 0)
        close(c->exec_fd);
    c->exec_fd = -1;
}

static exec_call *exec_call_new(evaluator *base, const ev_request *req, ev_done_fn *done,
                                void *ctx)
{
    exec_call *c = calloc(1, sizeof *c);
    if (!c || !(c->image = strdup(req->image ? req->image : "")) ||
        !(c->tag = strdup(req->tag ? req->tag : ""))) {
        if (c)
            free(c->image);
        free(c);
        return NULL;
    }
    c->base.ev = base;
    c->done = done;
    c->ctx = ctx;
    c->exec_fd = -1;
    loop_defer_init(&c->deferred, exec_deliver_deferred, c);
    loop_defer_init(&c->judge_next, exec_judge_resume, c);
    return c;
}

/* Starts the function; the caller has taken a function slot, which the job
 * gives back when its process is reaped (or this gives back at once when
 * the spawn fails). */
static fn_job *exec_spawn(exec_ev *e, exec_call *c, char *const *argv, const ev_request *req,
                          int growing, size_t ready, buf *why)
{
    fn_job_spec spec = {
        .argv = argv,
        .exec_path = c->exec_fd >= 0 ? c->exec_path : NULL,
        .input = (const char *)req->input,
        .input_len = req->input_len,
        .input_growing = growing,
        .input_ready = ready,
        .max_stdout = e->cfg.max_stdout,
        .max_stderr = e->cfg.max_stderr,
        .holds_slot = 1,
        .child_setup = c->setup,
    };
    /* a process of this function may be waiting already (fn_prespawn.h):
     * of the fixed argv, or of the very file the lookup opened */
    fn_job *job = fn_prespawn_take(argv, c->exec_fd, &spec, exec_job_done, c);
    if (!job)
        job = fn_job_start(e->cfg.loop, &spec, exec_job_done, c, why);
    if (!job)
        fn_slots_give_back();
    return job;
}

/* Runs the call's function now that it has a slot (looking its binary up
 * again after a wait). 0, or -1 with the failure in c->res. */
static int exec_run(exec_ev *e, exec_call *c)
{
    if (!c->run_argv) {
        buf_reset(&c->path);
        if (!(c->run_argv = exec_resolve(e, c))) {
            fn_slots_give_back();
            return -1;
        }
    }
    buf why = {0};
    c->job = exec_spawn(e, c, c->run_argv, &c->req, 0, 0, &why);
    exec_close_binary(c);   /* the child has its own copy now */
    if (!c->job) {
        fn_verdict_spawn_failed(c->image, why.data ? why.data : "", &c->verdict);
        exec_set_failure(c, c->verdict.code, 0);
    }
    buf_free(&why);
    return c->job ? 0 : -1;
}

/* A queued call got its slot (from the loop). */
static void exec_slot_granted(fn_slot_wait *w)
{
    exec_call *c = w->ctx;
    log_v(3, "function for \"%s\" starts after waiting for a slot", c->image);
    if (exec_run((exec_ev *)c->base.ev, c) < 0)
        exec_answer_failure(c);
}

static void exec_refuse_busy(exec_call *c)
{
    buf_printf(&c->verdict.message,
               "too many calls: every function slot is taken (--max-concurrent-functions %zu) "
               "and the queue is full (%zu calls holding %zu request bytes wait; at most %zu "
               "calls, --max-waiting-calls, and %zu bytes, --max-pending-request-bytes); try "
               "again later", fn_slots_max_running(), fn_slots_waiting(),
               fn_slots_waiting_bytes(), fn_slots_max_waiting(), fn_slots_max_waiting_bytes());
    exec_set_failure(c, GRPC_RESOURCE_EXHAUSTED, 0);
    log_warn("refused a call for \"%s\": %s", c->image, c->verdict.message.data);
}

static ev_call *exec_start(evaluator *base, const ev_request *req, ev_done_fn *done, void *ctx)
{
    exec_ev *e = (exec_ev *)base;
    exec_call *c = exec_call_new(base, req, done, ctx);
    if (!c)
        return NULL;
    char *const *argv = exec_resolve(e, c);
    if (argv) {
        if (!e->cfg.argv)
            log_info("Evaluating \"%s\" in executable mode", c->image);
        c->run_argv = argv;
        c->req = *req;
        c->wait = (fn_slot_wait){.granted = exec_slot_granted, .ctx = c, .bytes = req->input_len};
        int got = fn_slots_take(&c->wait);
        if (got > 0 && exec_run(e, c) == 0)
            return &c->base;
        if (got == 0) {
            log_v(3, "call for \"%s\" waits for a function slot (%zu running, %zu waiting)",
                  c->image, fn_slots_running(), fn_slots_waiting());
            if (!e->cfg.argv) {   /* no descriptor held while waiting: looked up again */
                exec_close_binary(c);
                c->run_argv = NULL;
            }
            return &c->base;
        }
        if (got < 0)
            exec_refuse_busy(c);
    }
    c->base.declined = c->res.not_found;
    loop_defer_post(e->cfg.loop, &c->deferred);
    return &c->base;
}

static ev_call *exec_start_streaming(evaluator *base, const ev_request *req, size_t ready,
                                     ev_done_fn *done, void *ctx)
{
    exec_ev *e = (exec_ev *)base;
    if (!e->cfg.argv || !e->cfg.argv[0])
        return NULL;   /* lookup mode needs the image; no entrypoint is answered at the end */
    if (!fn_slots_try_take())
        return NULL;   /* all busy: the complete request queues like any other */
    exec_call *c = exec_call_new(base, req, done, ctx);
    if (!c) {
        fn_slots_give_back();
        return NULL;
    }
    buf why = {0};
    c->job = exec_spawn(e, c, e->cfg.argv, req, 1, ready, &why);
    buf_free(&why);   /* the complete request tries again and reports it */
    if (!c->job) {
        free(c->image);
        free(c->tag);
        free(c);
        return NULL;
    }
    exec_set_input(c, EXEC_INPUT_STREAMING);
    return &c->base;
}

static void exec_input_ready(ev_call *base, size_t ready)
{
    exec_call *c = (exec_call *)base;
    if (c->input != EXEC_INPUT_COMPLETE)
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
    exec_input was = c->input;
    exec_set_input(c, EXEC_INPUT_COMPLETE);
    if (was == EXEC_INPUT_JOB_ENDED)
        exec_judge(c);   /* done may run inside input_done: see evaluator.h */
}

static void exec_free_call(ev_call *base)
{
    exec_call *c = (exec_call *)base;
    loop_defer_cancel(&c->deferred);
    loop_defer_cancel(&c->judge_next);
    fn_verdict_stop(c->judging);   /* cancelled while judging; NULL after done */
    if (c->job)
        fn_job_free(c->job);
    exec_close_binary(c);
    fn_verdict_free(&c->verdict);
    buf_free(&c->path);
    buf_free(&c->missing_why);
    free(c->image);
    free(c->tag);
    free(c);
}

static void exec_cancel(ev_call *base, ev_gone_fn *gone, void *gone_ctx)
{
    exec_call *c = (exec_call *)base;
    exec_ev *e = (exec_ev *)base->ev;
    fn_job *job = c->job;
    fn_slots_leave(&c->wait);
    if (job && job->phase == FN_JOB_FINISHED)
        job = NULL;   /* reaped, its output being judged: exec_free_call frees it */
    else
        c->job = NULL;
    exec_free_call(base);
    if (job)
        fn_job_cancel(job, e->cfg.kill_grace_ns, gone, gone_ctx);   /* frees itself once reaped */
    else if (gone)
        gone(gone_ctx);
}

static void exec_deadline_note(ev_call *base, buf *why)
{
    fn_slots_deadline_note(&((exec_call *)base)->wait, why);
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
    .deadline_note = exec_deadline_note,
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
