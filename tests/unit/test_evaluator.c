/* Unit tests for the evaluators: ev_exec runs real processes (cat, false,
 * sleep) on a real loop, and ev_multi chains real ev_exec instances whose
 * lookups know different images, so the fallback rules are checked on the
 * real code paths: next runtime only on NOT_FOUND, any other error final. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grpc/grpc_status.h"
#include "runtime/ev_exec.h"
#include "runtime/ev_multi.h"
#include "runtime/fn_job.h"
#include "runtime/fn_prespawn.h"
#include "log_capture.h"

/* opened: hand over an open descriptor of this file, named path, as the
 * runner's lookup does; a path "refuse:WHY" is a binary that may not run,
 * "missing:WHY" none, for the reason WHY (as a Tag that matches no tag). */
typedef struct known { const char *image, *path, *opened; } known;

static int table_lookup(void *ctx, const char *image, const char *tag, buf *path, int *fd,
                        const spawn_child_setup **setup, buf *why)
{
    (void)tag;
    (void)setup;
    for (const known *k = ctx; k->image; k++) {
        if (strcmp(k->image, image))
            continue;
        if (!strncmp(k->path, "refuse:", 7))
            return buf_append_str(why, k->path + 7), -1;
        if (!strncmp(k->path, "missing:", 8))
            return buf_append_str(why, k->path + 8), 0;
        if (k->opened)
            cr_assert_geq(*fd = open(k->opened, O_PATH), 0, "open %s: %s", k->opened, strerror(errno));
        return buf_append_str(path, k->path) == 0;
    }
    return 0;
}

typedef struct outcome {
    int calls;
    int code, not_found;
    char message[512];
    char out[256];
} outcome;

static void record(ev_call *call, const ev_result *r, void *ctx)
{
    outcome *o = ctx;
    o->calls++;
    o->code = r->code;
    o->not_found = r->not_found;
    snprintf(o->message, sizeof o->message, "%s", r->message ? r->message : "");
    snprintf(o->out, sizeof o->out, "%.*s", (int)r->out_len, r->out ? (const char *)r->out : "");
    ev_call_free(call);
}

static loop *lp;

/* SIGCHLD stand-in: poll the reaper; stop when the outcome arrived (or at a
 * 10 s safety limit, which fails the test). */
typedef struct pump { outcome *o; int64_t until; int live_zero; } pump;

static void pump_tick(loop *l, void *ctx)
{
    pump *p = ctx;
    fn_job_reap();
    int done = p->live_zero ? fn_job_live_count() == 0 : p->o->calls > 0;
    if (done || loop_now_ns() > p->until) {
        loop_stop(l);
        return;
    }
    loop_timer_add(l, 2000000, pump_tick, p);
}

static void run_until(outcome *o, int live_zero)
{
    pump p = {.o = o, .until = loop_now_ns() + 10000000000LL, .live_zero = live_zero};
    loop_timer_add(lp, 0, pump_tick, &p);
    cr_assert_eq(loop_run(lp), 0);
}

static evaluator *exec_with(const known *table)
{
    ev_exec_config cfg = {.loop = lp, .max_stdout = 1 << 20, .max_stderr = 1 << 16,
                          .kill_grace_ns = 100000000, .lookup = table_lookup,
                          .lookup_ctx = (void *)table};
    return ev_exec_new(&cfg);
}

static const char *RL = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n";

static void evaluate(evaluator *e, const char *image, outcome *o)
{
    ev_request req = {.image = image, .input = (const uint8_t *)RL, .input_len = strlen(RL)};
    ev_call *c = ev_call_start(e, &req, record, o);
    cr_assert_not_null(c);
    cr_assert_eq(o->calls, 0, "done must not run inside start");
    run_until(o, 0);
    cr_assert_eq(o->calls, 1);
}

/* As in the servers (proc_signals): a function that exits before reading
 * its input must be an EPIPE, not a SIGPIPE that kills the test. */
/* The runtimes' log lines ("Evaluating ... in executable mode") are
 * captured, shown only when a test fails: each test's last statement is
 * log_capture_end() (not the .fini, which runs after a failure too). */
static void setup(void)
{
    signal(SIGPIPE, SIG_IGN);
    lp = loop_new();
    log_capture_start();
}
static void teardown(void) { fn_prespawn_stop(); fn_job_shutdown(); loop_free(lp); }

TestSuite(evaluator, .init = setup, .fini = teardown);

static const known CAT[] = {{"a", "/bin/cat"}, {"x", "/bin/cat"}, {NULL, NULL}};
static const known FALSE[] = {{"b", "/bin/false"}, {"x", "/bin/false"}, {NULL, NULL}};

Test(evaluator, exec_runs_the_mapped_binary)
{
    evaluator *e = exec_with(CAT);
    outcome o = {0};
    evaluate(e, "a", &o);
    cr_assert_eq(o.code, GRPC_OK, "%s", o.message);
    cr_assert_str_eq(o.out, RL);
    ev_destroy(e);
    log_capture_end();
}

Test(evaluator, exec_unknown_image_is_not_found)
{
    evaluator *e = exec_with(CAT);
    outcome o = {0};
    evaluate(e, "ghcr.io/x/unknown:v1", &o);
    cr_assert_eq(o.code, GRPC_NOT_FOUND);
    cr_assert(o.not_found);
    cr_assert_str_eq(o.message, "function \"ghcr.io/x/unknown:v1\" not found");
    ev_destroy(e);
    log_capture_end();
}

Test(evaluator, exec_fixed_argv_without_entrypoint_fails_clearly)
{
    char *argv[] = {NULL};
    ev_exec_config cfg = {.loop = lp, .max_stdout = 1024, .max_stderr = 1024, .argv = argv};
    evaluator *e = ev_exec_new(&cfg);
    outcome o = {0};
    evaluate(e, "img", &o);
    cr_assert_eq(o.code, GRPC_INTERNAL);
    cr_assert(!o.not_found);
    cr_assert(strstr(o.message, "no entrypoint"), "%s", o.message);
    ev_destroy(e);
    log_capture_end();
}

Test(evaluator, exec_spawn_failure_uses_go_wording)
{
    static const known MISSING[] = {{"m", "/nonexistent/fn"}, {NULL, NULL}};
    evaluator *e = exec_with(MISSING);
    outcome o = {0};
    evaluate(e, "m", &o);
    cr_assert_eq(o.code, GRPC_INTERNAL);
    cr_assert(strstr(o.message, "fork/exec /nonexistent/fn: no such file or directory"), "%s",
              o.message);
    ev_destroy(e);
    log_capture_end();
}

/* Run by descriptor: the file opened at lookup runs, not what its name
 * leads to (here nothing), and a failure still names the name. */
Test(evaluator, exec_runs_the_looked_up_descriptor_not_the_name)
{
    static const known OPENED[] = {{"a", "/nonexistent/fn", "/bin/cat"},
                                   {"d", "/nonexistent/dir", "/"}, {NULL, NULL}};
    evaluator *e = exec_with(OPENED);
    outcome o = {0};
    evaluate(e, "a", &o);
    cr_assert_eq(o.code, GRPC_OK, "%s", o.message);
    cr_assert_str_eq(o.out, RL);
    outcome d = {0};
    evaluate(e, "d", &d);
    cr_assert_eq(d.code, GRPC_INTERNAL);
    cr_assert(strstr(d.message, "fork/exec /nonexistent/dir: permission denied"), "%s", d.message);
    ev_destroy(e);
    log_capture_end();
}

Test(evaluator, exec_refused_binary_is_failed_precondition_and_final)
{
    static const known REFUSED[] = {{"a", "refuse:\"x\" resolves outside --functions d"}, {NULL, NULL}};
    evaluator *evs[] = {exec_with(REFUSED), exec_with(CAT)};
    evaluator *m = ev_multi_new(lp, evs, 2);
    outcome o = {0};
    evaluate(m, "a", &o);
    cr_assert_eq(o.code, GRPC_FAILED_PRECONDITION, "%s", o.message);
    cr_assert(!o.not_found);
    cr_assert_str_eq(o.message,
                     "Failed to execute function \"a\": \"x\" resolves outside --functions d");
    ev_destroy(m);
    log_capture_end();
}

Test(evaluator, multi_falls_through_not_found)
{
    evaluator *evs[] = {exec_with(FALSE), exec_with(CAT)};
    evaluator *m = ev_multi_new(lp, evs, 2);
    outcome o = {0};
    evaluate(m, "a", &o);       /* FALSE has no "a"; CAT runs it */
    cr_assert_eq(o.code, GRPC_OK, "%s", o.message);
    cr_assert_str_eq(o.out, RL);
    ev_destroy(m);
    log_capture_end();
}

/* A lookup of `table` that counts its calls. */
typedef struct counted { const known *table; int lookups; } counted;

static int counted_lookup(void *ctx, const char *image, const char *tag, buf *path, int *fd,
                          const spawn_child_setup **setup, buf *why)
{
    counted *k = ctx;
    k->lookups++;
    return table_lookup((void *)k->table, image, tag, path, fd, setup, why);
}

/* The first runtime knows at once it has no such function (the exec
 * runtime's lookup): the next is asked within the same start, not a round
 * of the loop later (a pod call's request went out one epoll_wait later). */
Test(evaluator, multi_asks_the_next_runtime_at_once_when_one_declines_at_start)
{
    counted second = {.table = CAT};
    ev_exec_config cfg = {.loop = lp, .max_stdout = 1 << 20, .max_stderr = 1 << 16,
                          .kill_grace_ns = 100000000, .lookup = counted_lookup,
                          .lookup_ctx = &second};
    evaluator *evs[] = {exec_with(FALSE), ev_exec_new(&cfg)};
    evaluator *m = ev_multi_new(lp, evs, 2);
    outcome o = {0};
    ev_request req = {.image = "a", .input = (const uint8_t *)RL, .input_len = strlen(RL)};
    cr_assert_not_null(ev_call_start(m, &req, record, &o));
    cr_assert_eq(second.lookups, 1, "the second runtime was asked %d times within start",
                 second.lookups);
    cr_assert_eq(o.calls, 0, "done must not run inside start");
    run_until(&o, 0);
    cr_assert_eq(o.calls, 1, "the declined call's NOT_FOUND was delivered too");
    cr_assert_eq(o.code, GRPC_OK, "%s", o.message);
    cr_assert_str_eq(o.out, RL);
    ev_destroy(m);
    log_capture_end();
}

Test(evaluator, multi_other_errors_are_final)
{
    evaluator *evs[] = {exec_with(FALSE), exec_with(CAT)};
    evaluator *m = ev_multi_new(lp, evs, 2);
    outcome o = {0};
    evaluate(m, "x", &o);       /* both know "x": FALSE fails, CAT must not be tried */
    cr_assert_eq(o.code, GRPC_INTERNAL);
    cr_assert(!o.not_found);
    cr_assert(strstr(o.message, "failed to parse the output of function \"x\""), "%s", o.message);
    ev_destroy(m);
    log_capture_end();
}

Test(evaluator, multi_all_not_found_reports_the_last)
{
    evaluator *evs[] = {exec_with(FALSE), exec_with(CAT)};
    evaluator *m = ev_multi_new(lp, evs, 2);
    outcome o = {0};
    evaluate(m, "zzz", &o);
    cr_assert_eq(o.code, GRPC_NOT_FOUND);
    cr_assert_str_eq(o.message, "function \"zzz\" not found");
    ev_destroy(m);
    log_capture_end();
}

/* describe_missing: counts its calls, adds what serve adds. */
static int described;

static void describe_configured(void *ctx, const char *image, const char *tag, buf *why)
{
    (void)ctx;
    (void)image;
    (void)tag;
    described++;
    buf_append_str(why, "; configured: b, x");
}

static evaluator *exec_describing(const known *table)
{
    ev_exec_config cfg = {.loop = lp, .max_stdout = 1 << 20, .max_stderr = 1 << 16,
                          .kill_grace_ns = 100000000, .lookup = table_lookup,
                          .lookup_ctx = (void *)table, .describe_missing = describe_configured};
    return ev_exec_new(&cfg);
}

/* Every call of a pod-served image passes the exec runtime first: its
 * NOT_FOUND, dropped by ev_multi, is never written (it was, for each call,
 * with what the runner's configuration would have matched). */
Test(evaluator, exec_declined_in_a_chain_writes_no_message)
{
    static const known TAGGED[] = {{"a", "missing:; no binaryExecutor tag satisfies Tag \"v9\""},
                                   {NULL, NULL}};
    described = 0;
    evaluator *evs[] = {exec_describing(TAGGED), exec_describing(FALSE), exec_with(CAT)};
    evaluator *m = ev_multi_new(lp, evs, 3);
    for (int i = 0; i < 3; i++) {
        outcome o = {0};
        evaluate(m, "a", &o);
        cr_assert_eq(o.code, GRPC_OK, "%s", o.message);
    }
    cr_assert_eq(described, 0, "the NOT_FOUND message of a declined call was written %d times",
                 described);
    ev_destroy(m);
    log_capture_end();
}

/* The last runtime's NOT_FOUND is the answer: written once, word for word
 * as before (the lookup's reason, then what describe_missing adds). */
Test(evaluator, exec_not_found_answered_keeps_its_message)
{
    static const known TAGGED[] = {{"t", "missing:; Tag: invalid constraint"}, {NULL, NULL}};
    described = 0;
    evaluator *evs[] = {exec_describing(FALSE), exec_describing(TAGGED)};
    evaluator *m = ev_multi_new(lp, evs, 2);
    outcome o = {0};
    evaluate(m, "zzz", &o);
    cr_assert_eq(o.code, GRPC_NOT_FOUND);
    cr_assert(o.not_found);
    cr_assert_str_eq(o.message, "function \"zzz\" not found; configured: b, x");
    cr_assert_eq(described, 1, "described %d times", described);
    outcome t = {0};
    evaluate(m, "t", &t);
    cr_assert_str_eq(t.message, "function \"t\" not found; Tag: invalid constraint; configured: b, x");
    cr_assert_eq(described, 2, "described %d times", described);
    outcome alone = {0};
    evaluator *e = exec_with(CAT);
    evaluate(e, "q\"uote", &alone);
    cr_assert_str_eq(alone.message, "function \"q\\\"uote\" not found");
    ev_destroy(e);
    ev_destroy(m);
    log_capture_end();
}

Test(evaluator, multi_without_runtimes_fails_precondition)
{
    evaluator *m = ev_multi_new(lp, NULL, 0);
    outcome o = {0};
    evaluate(m, "a", &o);
    cr_assert_eq(o.code, GRPC_FAILED_PRECONDITION);
    cr_assert(strstr(o.message, "no function runtime"), "%s", o.message);
    ev_destroy(m);
    log_capture_end();
}

Test(evaluator, cancel_kills_the_function_and_never_calls_done)
{
    char *argv[] = {"/bin/sleep", "30", NULL};
    ev_exec_config cfg = {.loop = lp, .max_stdout = 1024, .max_stderr = 1024,
                          .kill_grace_ns = 100000000, .argv = argv};
    evaluator *slow = ev_exec_new(&cfg);
    outcome o = {0};
    ev_request req = {.image = "s", .input = (const uint8_t *)RL, .input_len = strlen(RL)};
    ev_call *c = ev_call_start(slow, &req, record, &o);
    cr_assert_not_null(c);
    cr_assert_eq(fn_job_live_count(), 1);
    ev_call_cancel(c);
    run_until(&o, 1);                   /* until the killed job is reaped */
    cr_assert_eq(fn_job_live_count(), 0);
    cr_assert_eq(o.calls, 0);
    ev_destroy(slow);
    log_capture_end();
}

Test(evaluator, cancel_before_an_immediate_result_is_delivered)
{
    evaluator *e = exec_with(CAT);
    outcome o = {0};
    ev_request req = {.image = "nope", .input = (const uint8_t *)RL, .input_len = strlen(RL)};
    ev_call *c = ev_call_start(e, &req, record, &o);
    ev_call_cancel(c);
    outcome dummy = {0};
    evaluate(e, "a", &dummy);           /* runs the loop past the cancelled timer */
    cr_assert_eq(o.calls, 0);
    ev_destroy(e);
    log_capture_end();
}

/* ---- streaming input (a large request's ResourceList still arriving) ---- */

static evaluator *exec_fixed(char **argv)
{
    ev_exec_config cfg = {.loop = lp, .max_stdout = 1 << 20, .max_stderr = 1 << 16,
                          .kill_grace_ns = 100000000, .argv = argv};
    return ev_exec_new(&cfg);
}

typedef struct feeder { ev_call *call; size_t step, ready, len; const char *image; } feeder;

/* Hands the function `step` more bytes every 2 ms, then says the request is
 * complete. */
static void feed_tick(loop *l, void *ctx)
{
    feeder *f = ctx;
    if (f->ready < f->len) {
        f->ready = f->ready + f->step < f->len ? f->ready + f->step : f->len;
        ev_call_input_ready(f->call, f->ready);
        loop_timer_add(l, 2000000, feed_tick, f);
        return;
    }
    ev_call_input_done(f->call, f->image);
}

Test(evaluator, streaming_feeds_the_function_as_the_input_arrives)
{
    char *argv[] = {"/bin/cat", NULL};
    evaluator *e = exec_fixed(argv);
    outcome o = {0};
    ev_request req = {.image = "", .input = (const uint8_t *)RL, .input_len = strlen(RL)};
    ev_call *c = ev_call_start_streaming(e, &req, 7, record, &o);
    cr_assert_not_null(c);
    cr_assert_eq(fn_job_live_count(), 1, "the function runs before the input is complete");
    feeder f = {.call = c, .step = 9, .ready = 7, .len = strlen(RL), .image = "img"};
    loop_timer_add(lp, 2000000, feed_tick, &f);
    run_until(&o, 0);
    cr_assert_eq(o.calls, 1);
    cr_assert_eq(o.code, GRPC_OK, "%s", o.message);
    cr_assert_str_eq(o.out, RL);
    ev_destroy(e);
    log_capture_end();
}

static void stop_loop(loop *l, void *ctx)
{
    (void)ctx;
    loop_stop(l);
}

Test(evaluator, streaming_verdict_waits_for_the_complete_request)
{
    /* exits at once, reading nothing: its failure must not be answered
     * while the request may still turn out bad; the image arrives last */
    char *argv[] = {"/bin/false", NULL};
    evaluator *e = exec_fixed(argv);
    outcome o = {0};
    ev_request req = {.image = "", .input = (const uint8_t *)RL, .input_len = strlen(RL)};
    ev_call *c = ev_call_start_streaming(e, &req, 0, record, &o);
    cr_assert_not_null(c);
    run_until(&o, 1);                   /* until the function is reaped */
    loop_timer_add(lp, 100000000, stop_loop, NULL);   /* and its pipes are read to EOF */
    cr_assert_eq(loop_run(lp), 0);
    cr_assert_eq(o.calls, 0, "done ran before the request was complete");
    ev_call_input_done(c, "example.com/late:v1");
    if (o.calls == 0)
        run_until(&o, 0);
    cr_assert_eq(o.calls, 1);
    cr_assert_eq(o.code, GRPC_INTERNAL);
    cr_assert(strstr(o.message, "\"example.com/late:v1\""), "%s", o.message);
    ev_destroy(e);
    log_capture_end();
}

Test(evaluator, streaming_cancel_kills_the_function)
{
    char *argv[] = {"/bin/cat", NULL};
    evaluator *e = exec_fixed(argv);
    outcome o = {0};
    ev_request req = {.image = "", .input = (const uint8_t *)RL, .input_len = strlen(RL)};
    ev_call *c = ev_call_start_streaming(e, &req, 5, record, &o);
    cr_assert_not_null(c);
    ev_call_cancel(c);                  /* cat waits for more stdin: only the kill ends it */
    run_until(&o, 1);
    cr_assert_eq(fn_job_live_count(), 0);
    cr_assert_eq(o.calls, 0);
    ev_destroy(e);
    log_capture_end();
}

Test(evaluator, streaming_is_refused_where_the_image_must_come_first)
{
    evaluator *lookup = exec_with(CAT);
    evaluator *evs[] = {exec_with(CAT)};
    evaluator *m = ev_multi_new(lp, evs, 1);
    outcome o = {0};
    ev_request req = {.image = "", .input = (const uint8_t *)RL, .input_len = strlen(RL)};
    cr_assert_null(ev_call_start_streaming(lookup, &req, 0, record, &o));
    cr_assert_null(ev_call_start_streaming(m, &req, 0, record, &o));
    cr_assert_eq(fn_job_live_count(), 0);
    ev_destroy(lookup);
    ev_destroy(m);
    log_capture_end();
}

/* --prespawn: the call is given the process started before it (same pid),
 * a replacement follows from the loop, and one that exits while waiting is
 * dropped: the call spawns its own; three in a row turn prespawning off. */
Test(evaluator, fixed_argv_takes_a_prestarted_process)
{
    char *argv[] = {"/bin/cat", NULL};
    evaluator *e = exec_fixed(argv);
    fn_prespawn_configure(lp, argv, 1);
    loop_timer_add(lp, 50000000, stop_loop, NULL);
    cr_assert_eq(loop_run(lp), 0);
    cr_assert_eq(fn_prespawn_waiting(), 1);
    size_t live = fn_job_live_count();
    outcome o = {0};
    evaluate(e, "img", &o);
    cr_assert_eq(o.code, GRPC_OK, "%s", o.message);
    cr_assert_str_eq(o.out, RL);
    loop_timer_add(lp, 50000000, stop_loop, NULL);
    cr_assert_eq(loop_run(lp), 0);
    cr_assert_eq(fn_prespawn_waiting(), 1, "no replacement");
    cr_assert_eq(fn_job_live_count(), live);
    fn_prespawn_stop();
    cr_assert_eq(fn_prespawn_waiting(), 0);
    ev_destroy(e);
    log_capture_end();
}

Test(evaluator, prestarted_processes_that_exit_early_turn_it_off)
{
    char *argv[] = {"/bin/true", NULL};
    evaluator *e = exec_fixed(argv);
    fn_prespawn_configure(lp, argv, 1);
    for (int i = 0; i < 50 && !fn_prespawn_disabled(); i++) {
        fn_job_reap();
        loop_timer_add(lp, 10000000, stop_loop, NULL);
        cr_assert_eq(loop_run(lp), 0);
    }
    cr_assert_eq(fn_prespawn_disabled(), 1);
    cr_assert_eq(fn_prespawn_waiting(), 0);
    outcome o = {0};
    evaluate(e, "img", &o);   /* spawned for the call: true exits 0, no output */
    cr_assert_eq(o.calls, 1);
    ev_destroy(e);
    buf log = {0};
    log_capture_text(&log);
    cr_assert(strstr(log.data ? log.data : "",
                     "--prespawn turned off for /bin/true: 3 pre-started functions in a row exited "
                     "or wrote before their call"), "the warning says why: %s", log.data);
    buf_free(&log);
    log_capture_end();
}
