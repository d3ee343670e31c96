/* fn_prespawn: processes started before their call; see fn_prespawn.h.
 *
 * Each pool holds its waiting jobs; each job's done callback (while it
 * waits) is prespawn_early, with the pool as context, which cancels it. A
 * refill runs from a zero-delay timer, so neither configure nor take
 * spawns inside the call that asked. A binary's pool keeps its own
 * close-on-exec descriptor of the file and starts processes through a
 * short-lived inheritable duplicate of it (/proc/self/fd/N, as ev_exec
 * runs a call's binary: a #! script's interpreter reopens that name), so
 * nothing done to the path later changes what the pool runs.
 *
 * A start that fails (descriptors or memory short: pipe2's EMFILE, fork's
 * EAGAIN) leaves its pool short, and before, only the next call's take
 * refilled it, after paying a full spawn. So a short refill is retried:
 * at once when the server's listener resumes after EMFILE
 * (fn_prespawn_retry: descriptors may be back), and from a timer meanwhile,
 * its interval doubling from PRESPAWN_RETRY_MIN_NS to _MAX_NS (a start
 * that keeps failing costs a failed pipe2 or spawn every 2 s). */
#include "runtime/fn_prespawn.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "grpc/metrics.h"

#define PRESPAWN_RETRY_MIN_NS (100 * 1000000LL)
#define PRESPAWN_RETRY_MAX_NS (2000 * 1000000LL)

typedef struct pool {
    char *const *argv;          /* what its processes run */
    char *own_argv[2];          /* a binary's: {path, NULL} */
    int fd;                     /* a binary's descriptor (close-on-exec); -1: fixed argv */
    struct stat id;             /* that file when the pool was made */
    /* what its processes are set up with (their sandbox: a function's own
     * settings make it another pool of the same file); NULL: fn_job's */
    const spawn_child_setup *setup;
    fn_job *waiting[FN_PRESPAWN_MAX];
    size_t n_waiting;
    int64_t last_call_ns;
    unsigned strikes;           /* early exits since the last hit */
    int disabled;               /* by strikes */
} pool;

static struct {
    loop *loop;
    size_t per_pool;            /* --prespawn N */
    size_t total;               /* waiting processes in all pools, at most */
    int64_t idle_ns;            /* a binary's pool not called this long is released */
    pool *pools[FN_PRESPAWN_POOLS];
    size_t n_pools;
    size_t n_waiting;           /* in all pools */
    loop_defer refill;
    loop_timer idle;            /* the next look for pools not called */
    loop_timer retry;           /* a refill came short: try again */
    int64_t retry_ns;           /* its next interval */
    int stopped;                /* draining */
} pre;

_Static_assert(FN_PRESPAWN_POOLS <= 64, "prespawn_refill marks the pools it tried in 64 bits");

static const char *pool_name(const pool *p)
{
    return p->argv[0];
}

/* waiting[i] out, the order of the others kept (oldest first) */
static fn_job *pool_remove_at(pool *p, size_t i)
{
    fn_job *job = p->waiting[i];
    memmove(&p->waiting[i], &p->waiting[i + 1], (p->n_waiting - i - 1) * sizeof p->waiting[0]);
    p->n_waiting--;
    pre.n_waiting--;
    return job;
}

static void pool_remove_job(pool *p, fn_job *job)
{
    for (size_t i = 0; i < p->n_waiting; i++)
        if (p->waiting[i] == job) {
            pool_remove_at(p, i);
            return;
        }
}

static void pool_kill_waiting(pool *p)
{
    while (p->n_waiting) {
        fn_job *job = p->waiting[--p->n_waiting];
        pre.n_waiting--;
        fn_job_cancel(job, 0, NULL, NULL);   /* reaped like any cancelled job */
    }
}

/* Kills its processes and forgets it. */
static void pool_release(size_t i)
{
    pool *p = pre.pools[i];
    pool_kill_waiting(p);
    if (p->fd >= 0)
        close(p->fd);
    free(p->own_argv[0]);
    free(p);
    pre.pools[i] = pre.pools[--pre.n_pools];
}

static void prespawn_refill_soon(void);
static void prespawn_retry_later(void);

/* A waiting process exited or wrote (fn_job_start_waiting): drop it and its output. */
static void prespawn_early(fn_job *job, void *ctx)
{
    pool *p = ctx;
    pool_remove_job(p, job);
    if (job->spawn == FN_JOB_SPAWN_FAILED) {   /* the spawner's: no strike, retried later */
        log_v(3, "cannot pre-start %s: %s", pool_name(p),
              job->spawn_error.data ? job->spawn_error.data : "out of memory");
        fn_job_cancel(job, 0, NULL, NULL);
        prespawn_retry_later();
        return;
    }
    if (job->exited)
        log_warn("pre-started function %d (%s) exited before it was given a call (wait status "
                 "%d); dropped", (int)job->pid, pool_name(p), job->wait_status);
    else
        log_warn("pre-started function %d (%s) wrote output, over %d KiB of stderr, or closed "
                 "one of them (exited?) before it was given a call; killed, its output dropped",
                 (int)job->pid, pool_name(p), FN_JOB_WAITING_STDERR_MAX / 1024);
    fn_job_cancel(job, 0, NULL, NULL);
    if (++p->strikes >= FN_PRESPAWN_STRIKES && !p->disabled) {
        p->disabled = 1;
        log_warn("--prespawn turned off for %s: %u pre-started functions in a row exited or "
                 "wrote before their call; every call of it now starts its own "
                 "(krm_prespawn_disabled)", pool_name(p), p->strikes);
        pool_kill_waiting(p);
        return;
    }
    prespawn_refill_soon();
}

/* Starts one process for p; 0, or -1 when it cannot (the call that misses
 * reports why in its own words). */
static int pool_start_one(pool *p)
{
    buf why = {0};
    char exec_path[32];
    int child_fd = -1;
    fn_job_spec spec = {.argv = p->argv, .child_setup = p->setup};
    if (p->fd >= 0) {
        if ((child_fd = fcntl(p->fd, F_DUPFD, 0)) < 0) {   /* inheritable, for this spawn */
            log_v(3, "cannot pre-start %s: %s", pool_name(p), strerror(errno));
            return -1;
        }
        snprintf(exec_path, sizeof exec_path, "/proc/self/fd/%d", child_fd);
        spec.exec_path = exec_path;
    }
    fn_job *job = fn_job_start_waiting(pre.loop, &spec, prespawn_early, p, &why);
    if (child_fd >= 0)
        close(child_fd);
    if (!job) {
        log_v(3, "cannot pre-start %s: %s", pool_name(p), why.data ? why.data : "");
        buf_free(&why);
        return -1;
    }
    p->waiting[p->n_waiting++] = job;
    pre.n_waiting++;
    return 0;
}

/* The most recently called pool that lacks processes and may start them,
 * not yet tried this round (bit i of tried: pools[i]); NULL: none. */
static pool *pool_to_fill(uint64_t tried, size_t *index)
{
    pool *best = NULL;
    for (size_t i = 0; i < pre.n_pools; i++) {
        pool *p = pre.pools[i];
        if (!(tried >> i & 1) && !p->disabled && p->n_waiting < pre.per_pool &&
            (!best || p->last_call_ns > best->last_call_ns)) {
            best = p;
            *index = i;
        }
    }
    return best;
}


/* Fills the pools, the most recently called first: when --prespawn-total
 * is short, the binaries called last get the processes. */
static void prespawn_refill(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    uint64_t tried = 0;
    size_t i = 0;
    int short_of = 0;
    pool *p;
    while (!pre.stopped && pre.n_waiting < pre.total && (p = pool_to_fill(tried, &i))) {
        tried |= (uint64_t)1 << i;
        while (p->n_waiting < pre.per_pool && pre.n_waiting < pre.total)
            if (pool_start_one(p) < 0) {
                short_of = 1;
                break;
            }
    }
    if (!short_of) {
        pre.retry_ns = PRESPAWN_RETRY_MIN_NS;
        return;
    }
    prespawn_retry_later();
}

/* A start came short: the refill is tried again from the retry timer. */
static void prespawn_retry_later(void)
{
    if (loop_timer_armed(&pre.retry) || pre.stopped)
        return;
    loop_timer_arm(pre.loop, &pre.retry, pre.retry_ns);
    pre.retry_ns = pre.retry_ns * 2 < PRESPAWN_RETRY_MAX_NS ? pre.retry_ns * 2
                                                            : PRESPAWN_RETRY_MAX_NS;
}

void fn_prespawn_retry(void)
{
    if (!loop_timer_armed(&pre.retry))
        return;   /* nothing came short */
    loop_timer_disarm(pre.loop, &pre.retry);
    prespawn_refill_soon();   /* from the loop, not inside the caller */
}

static void prespawn_refill_soon(void)
{
    if (pre.stopped || !pre.n_pools)
        return;
    loop_defer_post(pre.loop, &pre.refill);
}

/* Releases the binaries' pools not called for idle_ns; runs again when the
 * next one would be due. */
static void prespawn_idle_check(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    int64_t now = loop_now_ns(), next = INT64_MAX;
    for (size_t i = pre.n_pools; i-- > 0; ) {
        pool *p = pre.pools[i];
        if (p->fd < 0)
            continue;   /* the wrapper server's one function: never idle */
        if (now - p->last_call_ns >= pre.idle_ns) {
            log_v(3, "releasing %zu pre-started functions of %s: not called for %.1f s",
                  p->n_waiting, pool_name(p), (double)(now - p->last_call_ns) / 1e9);
            pool_release(i);
        } else if (p->last_call_ns + pre.idle_ns < next) {
            next = p->last_call_ns + pre.idle_ns;
        }
    }
    if (next != INT64_MAX && !pre.stopped)
        loop_timer_arm(pre.loop, &pre.idle, next - now);
    prespawn_refill_soon();   /* room for the pools that are left */
}

static void prespawn_idle_soon(void)
{
    if (loop_timer_armed(&pre.idle) || !pre.idle_ns || pre.stopped)
        return;
    loop_timer_arm(pre.loop, &pre.idle, pre.idle_ns);
}

static pool *pool_new(char *const *argv, int fd, const struct stat *id,
                      const spawn_child_setup *setup)
{
    if (pre.n_pools >= FN_PRESPAWN_POOLS)
        return NULL;
    pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->fd = -1;
    p->argv = argv;
    p->setup = setup;
    if (fd >= 0) {
        p->own_argv[0] = strdup(argv[0]);
        p->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
        if (!p->own_argv[0] || p->fd < 0) {
            if (p->fd >= 0)
                close(p->fd);
            free(p->own_argv[0]);
            free(p);
            return NULL;
        }
        p->argv = p->own_argv;
        p->id = *id;
    }
    p->last_call_ns = loop_now_ns();
    pre.pools[pre.n_pools++] = p;
    return p;
}

static void configure(loop *l, size_t per_pool, size_t total, int64_t idle_ns)
{
    fn_prespawn_stop();
    pre.loop = l;
    loop_defer_init(&pre.refill, prespawn_refill, NULL);
    loop_timer_init(&pre.idle, prespawn_idle_check, NULL);
    loop_timer_init(&pre.retry, prespawn_refill, NULL);
    pre.stopped = 0;
    pre.per_pool = per_pool < FN_PRESPAWN_MAX ? per_pool : FN_PRESPAWN_MAX;
    pre.total = total < FN_PRESPAWN_TOTAL_MAX ? total : FN_PRESPAWN_TOTAL_MAX;
    pre.idle_ns = idle_ns > 0 ? idle_ns : 0;
    pre.retry_ns = PRESPAWN_RETRY_MIN_NS;
}

void fn_prespawn_configure(loop *l, char *const *argv, size_t n)
{
    configure(l, n, n, 0);
    if (pre.per_pool && argv && argv[0] && pool_new(argv, -1, NULL, NULL))
        prespawn_refill_soon();
}

void fn_prespawn_configure_binaries(loop *l, size_t per_binary, size_t total, int64_t idle_ns)
{
    configure(l, per_binary, total, idle_ns);
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The pool for this call, made for a binary called for the first time;
 * NULL when there is none (and none can be made). */
static pool *pool_for(char *const *argv, int binary_fd, const spawn_child_setup *setup)
{
    if (binary_fd < 0) {
        for (size_t i = 0; i < pre.n_pools; i++)
            if (pre.pools[i]->fd < 0 && pre.pools[i]->argv == argv)
                return pre.pools[i];
        return NULL;
    }
    struct stat id;
    if (fstat(binary_fd, &id) < 0 || !argv[0])
        return NULL;
    for (size_t i = 0; i < pre.n_pools; i++) {
        pool *p = pre.pools[i];
        if (p->fd < 0 || strcmp(p->argv[0], argv[0]) || p->setup != setup)
            continue;
        if (same_file(&p->id, &id))
            return p;
        log_v(3, "%s changed on disk: releasing %zu pre-started functions of the old file",
              argv[0], p->n_waiting);
        pool_release(i);
        break;
    }
    pool *p = pool_new(argv, binary_fd, &id, setup);
    if (p)
        prespawn_idle_soon();
    return p;
}

fn_job *fn_prespawn_take(char *const *argv, int binary_fd, const fn_job_spec *spec,
                         fn_job_done_fn *done, void *ctx)
{
    if (!pre.per_pool || pre.stopped || !argv)
        return NULL;
    pool *p = pool_for(argv, binary_fd, spec->child_setup);
    if (!p) {
        if (binary_fd >= 0)   /* a binary with no pool: FN_PRESPAWN_POOLS are taken */
            metrics_count(METRIC_PRESPAWN_MISSES);
        return NULL;
    }
    p->last_call_ns = loop_now_ns();
    while (p->n_waiting) {
        /* the oldest: the one most likely started and waiting already (the
         * newest may be the replacement the last call asked, still being
         * spawned, while an older one waits ready) */
        fn_job *job = pool_remove_at(p, 0);
        assert(job->phase == FN_JOB_WAITING);
        if (fn_job_give(job, spec, done, ctx) == 0) {
            p->strikes = 0;
            metrics_count(METRIC_PRESPAWN_HITS);
            prespawn_refill_soon();
            return job;
        }
        prespawn_early(job, p);   /* exited or wrote, not yet told */
    }
    metrics_count(METRIC_PRESPAWN_MISSES);
    prespawn_refill_soon();
    return NULL;
}

void fn_prespawn_stop(void)
{
    if (!pre.stopped && pre.n_waiting)
        log_v(3, "killing %zu pre-started functions", pre.n_waiting);
    pre.stopped = 1;
    loop_defer_cancel(&pre.refill);
    loop_timer_disarm(pre.loop, &pre.idle);
    loop_timer_disarm(pre.loop, &pre.retry);
    while (pre.n_pools)
        pool_release(pre.n_pools - 1);
}

size_t fn_prespawn_waiting(void)
{
    return pre.n_waiting;
}

size_t fn_prespawn_disabled(void)
{
    size_t n = 0;
    for (size_t i = 0; i < pre.n_pools; i++)
        n += (size_t)pre.pools[i]->disabled;
    return n;
}
