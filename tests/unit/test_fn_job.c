/* Unit tests for fn_job's spawns through a spawner (fn_job_set_spawner),
 * as the sandbox spawner serves them: a real `cat` on a real loop, spawned
 * by this test's spawner, which keeps the request and answers it from the
 * loop when the test says (ASKED -> SPAWNED or FAILED), so each state is
 * reached at a chosen moment: a normal run, a spawn the spawner fails (the
 * job fails with its reason), and spawns answered after their call was
 * cancelled (the job, its process and its pipes go; under ASan nothing is
 * left). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/spawn.h"
#include "runtime/fn_job.h"
#include "fd_count.h"
#include "log_capture.h"

/* ---- the spawner: one request at a time, answered when the test says ---- */

typedef struct test_spawner {
    fn_job *job;                /* asked, not answered yet */
    char path[256];
    char *const *argv;          /* the job's spec: valid while it lives */
    const spawn_child_setup *setup;
    int stdio[3];               /* our copies of the child's ends */
    int asks;
    /* the answer: 0 spawn the process; else this errno at step */
    int fail_err;
    const char *fail_step;
    pid_t pid;                  /* what was spawned */
} test_spawner;

static test_spawner ts;
static loop *lp;

static int ts_ask(void *ctx, fn_job *job, const char *path, char *const *argv,
                  const spawn_child_setup *setup, const int stdio[3])
{
    (void)ctx;
    cr_assert_null(ts.job, "a second request before the first was answered");
    ts.asks++;
    ts.job = job;
    snprintf(ts.path, sizeof ts.path, "%s", path);
    ts.argv = argv;
    ts.setup = setup;
    for (int i = 0; i < 3; i++)
        cr_assert_geq(ts.stdio[i] = dup(stdio[i]), 0, "dup: %s", strerror(errno));
    return 0;
}

static int ts_reaped(void *ctx, pid_t pid, int status)
{
    (void)ctx, (void)pid, (void)status;
    return 0;
}

static pid_t ts_process(void *ctx)
{
    (void)ctx;
    return 0;
}

static void ts_drain(void *ctx)
{
    (void)ctx;
}

static const fn_job_spawner spawner = {.ask = ts_ask, .reaped = ts_reaped, .process = ts_process,
                                       .drain = ts_drain};

/* Answers the request from the loop, as the sandbox spawner's socket does:
 * spawns the process here (our child, in its own group) or fails it. */
static void ts_answer(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    fn_job *job = ts.job;
    cr_assert_not_null(job, "nothing asked");
    ts.job = NULL;
    const pid_t none[2] = {0, 0};
    const char *step = ts.fail_step;
    int err = ts.fail_err;
    if (!err)
        err = spawn_in_group_setup(ts.path, ts.argv, NULL, ts.stdio, ts.setup, &ts.pid, &step);
    for (int i = 0; i < 3; i++)
        close(ts.stdio[i]);
    fn_job_spawned(job, err ? 0 : ts.pid, none, err, err ? step : NULL);
}

/* ---- the loop ---------------------------------------------------------------- */

typedef struct outcome {
    int done, gone;
    fn_job_spawn_state spawn;
    int exited, wait_status;
    char out[256], spawn_error[256];
} outcome;

static void on_done(fn_job *job, void *ctx)
{
    outcome *o = ctx;
    o->done++;
    o->spawn = job->spawn;
    o->exited = job->exited;
    o->wait_status = job->wait_status;
    snprintf(o->out, sizeof o->out, "%.*s", (int)job->out.len, job->out.data ? job->out.data : "");
    snprintf(o->spawn_error, sizeof o->spawn_error, "%s",
             job->spawn_error.data ? job->spawn_error.data : "");
    loop_stop(lp);
}

static void on_gone(void *ctx)
{
    ((outcome *)ctx)->gone++;
    loop_stop(lp);
}

/* SIGCHLD's stand-in: reaps every 2 ms; stops the loop at 10 s (which
 * fails the test). */
static int64_t deadline;

static void reap_tick(loop *l, void *ctx)
{
    (void)ctx;
    fn_job_reap();
    if (loop_now_ns() > deadline) {
        loop_stop(l);
        return;
    }
    loop_timer_add(l, 2000000, reap_tick, NULL);
}

static void run_loop(void)
{
    deadline = loop_now_ns() + 10000000000LL;
    loop_timer_add(lp, 0, reap_tick, NULL);
    cr_assert_eq(loop_run(lp), 0);
    cr_assert_lt(loop_now_ns(), deadline, "the loop ran for 10 s");
}

/* The spawner answers (from the loop); the loop runs until done or gone. */
static void answer_and_run(void)
{
    loop_timer_add(lp, 0, ts_answer, NULL);
    run_loop();
}

/* The spawner's next answer: err at step (as the sandbox's setup fails). */
static void spawns_fail(int err, const char *step)
{
    ts.fail_err = err;
    ts.fail_step = step;
}

/* ---- the suite ---------------------------------------------------------------- */

static const char INPUT[] = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n";
static char *cat_argv[] = {"/bin/cat", NULL};

static int run_nothing(const void *ctx, const char *path, const char **step)
{
    (void)ctx, (void)path, (void)step;
    return 0;
}

/* A setup: what makes fn_job ask the spawner (it does for sandboxed spawns
 * only); nothing done in the child. */
static const spawn_child_setup plain = {.run = run_nothing};
static int fds_before;

static fn_job *start(char **argv, outcome *o)
{
    fn_job_spec spec = {.argv = argv, .input = INPUT, .input_len = sizeof INPUT - 1,
                        .max_stdout = 1 << 20, .max_stderr = 1 << 16, .child_setup = &plain};
    buf why = {0};
    fn_job *job = fn_job_start(lp, &spec, on_done, o, &why);
    cr_assert_not_null(job, "fn_job_start: %s", why.data ? why.data : "");
    buf_free(&why);
    cr_assert_eq(ts.asks, 1, "the spawner was asked %d times", ts.asks);
    cr_assert_eq(job->spawn, FN_JOB_SPAWN_ASKED);
    cr_assert_eq(job->pid, 0);
    return job;
}

static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    memset(&ts, 0, sizeof ts);
    lp = loop_new();
    log_capture_start();
    fds_before = fd_count_open();
    fn_job_set_spawner(&spawner);
}

static void teardown(void)
{
    fn_job_shutdown();
    fn_job_set_spawner(NULL);
    loop_free(lp);
}

TestSuite(fn_job, .init = setup, .fini = teardown);

/* No process, nothing left: every job reaped and freed, no descriptor
 * open that was not before, no child of ours left to reap (and, under ASan,
 * no memory: leak_check.c checks every test as its body returns). */
static void assert_nothing_left(void)
{
    cr_assert_eq(fn_job_live_count(), 0);
    cr_assert_eq(fd_count_open(), fds_before, "descriptors: %d before, %d now", fds_before, fd_count_open());
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a child is left");
    cr_assert_eq(errno, ECHILD);
}

Test(fn_job, spawned_by_the_spawner_runs_as_any)
{
    outcome o = {0};
    fn_job *job = start(cat_argv, &o);
    answer_and_run();
    cr_assert_eq(o.done, 1);
    cr_assert_eq(o.spawn, FN_JOB_SPAWNED);
    cr_assert_eq(job->pid, ts.pid, "the answer's pid is the job's");
    cr_assert(o.exited && WIFEXITED(o.wait_status) && WEXITSTATUS(o.wait_status) == 0,
              "status %#x", o.wait_status);
    cr_assert_str_eq(o.out, INPUT, "the input written before the process existed reached it");
    cr_assert_str_eq(o.spawn_error, "");
    fn_job_free(job);
    assert_nothing_left();
    log_capture_end();
}

Test(fn_job, a_spawn_the_spawner_fails_fails_the_job_with_its_reason)
{
    outcome o = {0};
    spawns_fail(EPERM, "landlock");
    fn_job *job = start(cat_argv, &o);
    answer_and_run();
    cr_assert_eq(o.done, 1);
    cr_assert_eq(o.spawn, FN_JOB_SPAWN_FAILED);
    cr_assert(o.exited);
    cr_assert_eq(o.wait_status, 127 << 8, "as a child whose exec failed: %#x", o.wait_status);
    cr_assert_str_eq(o.spawn_error, "fork/exec /bin/cat: landlock: operation not permitted");
    fn_job_free(job);
    assert_nothing_left();
    log_capture_end();
}

/* The call went (a deadline, a client's reset) while its spawn was asked:
 * argv's job is cancelled (SIGKILL 5 s after the SIGTERM), then the
 * spawner answers; gone is told once, done never, and nothing is left.
 * Returns the time from the answer to gone. */
static int64_t cancel_then_answer(char **argv)
{
    outcome o = {0};
    fn_job *job = start(argv, &o);
    fn_job_cancel(job, 5000000000LL, on_gone, &o);
    cr_assert_eq(o.gone, 0, "gone before the spawn was answered");
    cr_assert_eq(fn_job_live_count(), 1);
    int64_t t0 = loop_now_ns();
    answer_and_run();
    int64_t took = loop_now_ns() - t0;
    cr_assert_eq(o.gone, 1);
    cr_assert_eq(o.done, 0, "a cancelled job's done ran");
    assert_nothing_left();
    return took;
}

/* The answer's process is killed at once (the SIGTERM waited for its pid;
 * sleep, unlike cat, does not end when its stdin closes), reaped, and the
 * job freed then. */
Test(fn_job, a_spawn_answered_after_its_call_was_cancelled_leaves_nothing)
{
    static char *sleep_argv[] = {"/bin/sleep", "30", NULL};
    int64_t took = cancel_then_answer(sleep_argv);
    cr_assert_gt(ts.pid, 0);
    cr_assert_lt(took, 2000000000LL, "gone after %.1f s: the SIGTERM asked before the pid was "
                 "known was not sent", (double)took / 1e9);
    log_capture_end();
}

/* The spawner failing it: freed at the answer, nothing spawned. */
Test(fn_job, a_spawn_failed_after_its_call_was_cancelled_leaves_nothing)
{
    spawns_fail(ENOMEM, "clone");
    cancel_then_answer(cat_argv);
    cr_assert_eq(ts.pid, 0, "a process was spawned");
    log_capture_end();
}
