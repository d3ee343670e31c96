/* fn_prespawn: processes started before their call; see fn_prespawn.h.
 *
 * The table holds the waiting jobs; each one's done callback (while it
 * waits) is prespawn_early, which cancels it. A refill runs from a
 * zero-delay timer, so neither configure nor take spawns inside the call
 * that asked. */
#include "runtime/fn_prespawn.h"

#include <assert.h>

#include "core/log.h"
#include "grpc/metrics.h"

static struct {
    loop *loop;
    char *const *argv;
    size_t want;                         /* --prespawn N */
    fn_job *waiting[FN_PRESPAWN_MAX];
    size_t n_waiting;
    loop_timer *refill;
    unsigned strikes;                    /* early exits since the last hit */
    int disabled;                        /* by strikes */
    int stopped;                         /* draining */
} pre;

static void prespawn_remove(fn_job *job)
{
    for (size_t i = 0; i < pre.n_waiting; i++)
        if (pre.waiting[i] == job) {
            pre.waiting[i] = pre.waiting[--pre.n_waiting];
            return;
        }
}

static void prespawn_refill_soon(void);

/* A waiting process exited or wrote: drop it and its output. */
static void prespawn_early(fn_job *job, void *ctx)
{
    (void)ctx;
    prespawn_remove(job);
    if (job->exited)
        log_warn("pre-started function %d exited before it was given a call (wait status %d); "
                 "dropped", (int)job->pid, job->wait_status);
    else
        log_warn("pre-started function %d wrote output or closed it (exited?) before it was "
                 "given a call; killed, its output dropped", (int)job->pid);
    fn_job_cancel(job, 0, NULL, NULL);
    if (++pre.strikes >= FN_PRESPAWN_STRIKES && !pre.disabled) {
        pre.disabled = 1;
        log_warn("--prespawn turned off: %u pre-started functions in a row exited or wrote "
                 "before their call; every call now starts its own (krm_prespawn_disabled 1)",
                 pre.strikes);
        fn_prespawn_stop();
        return;
    }
    prespawn_refill_soon();
}

static void prespawn_refill(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    pre.refill = NULL;   /* the loop frees the timer */
    while (!pre.disabled && !pre.stopped && pre.n_waiting < pre.want) {
        buf why = {0};
        fn_job_spec spec = {.argv = pre.argv};
        fn_job *job = fn_job_start_waiting(pre.loop, &spec, prespawn_early, NULL, &why);
        if (!job) {
            /* the call that misses reports it in its own words */
            log_v(3, "cannot pre-start the function: %s", why.data ? why.data : "");
            buf_free(&why);
            return;
        }
        pre.waiting[pre.n_waiting++] = job;
    }
}

static void prespawn_refill_soon(void)
{
    if (pre.refill || pre.disabled || pre.stopped || pre.n_waiting >= pre.want)
        return;
    pre.refill = loop_timer_add(pre.loop, 0, prespawn_refill, NULL);
    if (!pre.refill)
        log_error("cannot schedule starting a function ahead: out of memory");
}

void fn_prespawn_configure(loop *l, char *const *argv, size_t n)
{
    pre.loop = l;
    pre.argv = argv;
    pre.want = n < FN_PRESPAWN_MAX ? n : FN_PRESPAWN_MAX;
    if (!argv || !argv[0])
        pre.want = 0;
    prespawn_refill_soon();
}

fn_job *fn_prespawn_take(char *const *argv, const fn_job_spec *spec, fn_job_done_fn *done,
                         void *ctx)
{
    if (!pre.want || argv != pre.argv)
        return NULL;
    while (pre.n_waiting) {
        fn_job *job = pre.waiting[--pre.n_waiting];
        assert(job->waiting);
        if (fn_job_give(job, spec, done, ctx) == 0) {
            pre.strikes = 0;
            metrics_count(METRIC_PRESPAWN_HITS);
            prespawn_refill_soon();
            return job;
        }
        prespawn_early(job, NULL);   /* exited or wrote, not yet told */
    }
    metrics_count(METRIC_PRESPAWN_MISSES);
    prespawn_refill_soon();
    return NULL;
}

void fn_prespawn_stop(void)
{
    if (!pre.stopped && !pre.disabled)
        log_v(3, "killing %zu pre-started functions", pre.n_waiting);
    pre.stopped = 1;
    loop_timer_cancel(pre.loop, pre.refill);
    pre.refill = NULL;
    while (pre.n_waiting) {
        fn_job *job = pre.waiting[--pre.n_waiting];
        fn_job_cancel(job, 0, NULL, NULL);   /* reaped like any cancelled job */
    }
}

size_t fn_prespawn_waiting(void)
{
    return pre.n_waiting;
}

size_t fn_prespawn_disabled(void)
{
    return (size_t)pre.disabled;
}
