/* exec_call: eval --exec; see exec_call.h.
 *
 * While a run is under way, SIGCHLD, SIGINT and SIGTERM are blocked and
 * read from a signalfd (functions start with an empty mask): SIGCHLD hands
 * exit statuses to fn_job_reap, SIGINT and SIGTERM cancel the run so that
 * the function's process group, which a terminal's Ctrl-C does not reach,
 * is killed rather than left behind. Between runs they act as usual. */
#include "eval/exec_call.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/loop.h"
#include "grpc/grpc_status.h"
#include "runtime/ev_exec.h"
#include "runtime/fn_job.h"

#define EXEC_KILL_GRACE_NS 2000000000LL      /* SIGTERM, then SIGKILL after this */

struct exec_caller {
    loop *l;
    evaluator *ev;
    char **argv;
    char *words;           /* the command, cut in place into argv */
    int sig_fd;
    sigset_t signals;      /* routed to sig_fd while a run is under way */
    int64_t timeout_ns;
    loop_timer *deadline;
    /* the run under way */
    ev_call *call;
    fn_call_result *out;
    int answered, stopping, oom;
    const char *stopped_why; /* cancelled: a deadline or a signal */
    int code;                /* its status */
};

static void on_signal(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)events;
    exec_caller *c = ctx;
    struct signalfd_siginfo info;
    while (read(fd, &info, sizeof info) == (ssize_t)sizeof info) {
        if (info.ssi_signo == SIGCHLD) {
            fn_job_reap();
        } else if (c->call && !c->answered && !c->stopped_why) {
            c->stopped_why = info.ssi_signo == SIGINT ? "interrupted (SIGINT)"
                                                      : "terminated (SIGTERM)";
            c->code = GRPC_CANCELLED;
        }
    }
    if (c->stopped_why && c->call && !c->stopping)
        loop_stop(c->l);
}

static void on_timeout(loop *l, void *ctx)
{
    exec_caller *c = ctx;
    c->deadline = NULL; /* the loop frees it */
    c->stopped_why = "the function did not answer within --timeout";
    c->code = GRPC_DEADLINE_EXCEEDED;
    loop_stop(l);
}

static void on_gone(void *ctx)
{
    exec_caller *c = ctx;
    c->stopping = 0;
    loop_stop(c->l);
}

static void on_answer(ev_call *call, const ev_result *res, void *ctx)
{
    (void)call;
    exec_caller *c = ctx;
    c->oom = fn_call_result_set(c->out, res) < 0;
    c->answered = 1;
    loop_stop(c->l);
}

/* Cuts cmd into words; NULL with err set when there is none. */
static char **split_words(char *words, buf *err)
{
    size_t n = 0, max = strlen(words) / 2 + 2;
    char **argv = calloc(max, sizeof *argv);
    if (!argv) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    for (char *save = NULL, *w = strtok_r(words, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
        argv[n++] = w;
    if (n == 0) {
        free(argv);
        buf_printf(err, "--exec needs a command");
        return NULL;
    }
    return argv;
}

/* ev_exec's explain_failure: the sandbox limit the function reached. */
static int explain_failure(void *ctx, const fn_job *job, buf *out)
{
    return sandbox_explain_exit(ctx, job->wait_status, job->cpu_ns, job->err.data, job->err.len,
                                out);
}

exec_caller *exec_caller_new(const char *cmd, size_t max_output, int64_t timeout_ns,
                             const sandbox *sb, buf *err)
{
    exec_caller *c = calloc(1, sizeof *c);
    if (!c || !(c->words = strdup(cmd))) {
        free(c);
        buf_printf(err, "out of memory");
        return NULL;
    }
    c->sig_fd = -1;
    c->timeout_ns = timeout_ns;
    sigemptyset(&c->signals);
    sigaddset(&c->signals, SIGCHLD);
    sigaddset(&c->signals, SIGINT);
    sigaddset(&c->signals, SIGTERM);
    if (!(c->argv = split_words(c->words, err))) {
        ;
    } else if ((c->sig_fd = signalfd(-1, &c->signals, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        buf_printf(err, "--exec: signalfd: %s", strerror(errno));
    } else if (!(c->l = loop_new()) || loop_watch(c->l, c->sig_fd, LOOP_READ, on_signal, c) < 0 ||
               !(c->ev = ev_exec_new(&(ev_exec_config){ .loop = c->l, .max_stdout = max_output,
                                                        .max_stderr = EV_EXEC_MAX_STDERR,
                                                        .kill_grace_ns = EXEC_KILL_GRACE_NS,
                                                        .argv = c->argv,
                                                        .explain_failure = sb ? explain_failure
                                                                              : NULL,
                                                        .explain_ctx = (void *)sb }))) {
        buf_printf(err, "out of memory");
    } else {
        fn_job_set_child_setup(sandbox_child_setup(sb));
        return c;
    }
    exec_caller_free(c);
    return NULL;
}

void exec_caller_free(exec_caller *c)
{
    if (!c)
        return;
    fn_job_set_child_setup(NULL);   /* the sandbox may go now */
    if (c->ev)
        ev_destroy(c->ev);
    if (c->l) {
        if (c->sig_fd >= 0)
            loop_unwatch(c->l, c->sig_fd);
        loop_free(c->l);
    }
    if (c->sig_fd >= 0)
        close(c->sig_fd);
    free(c->argv);
    free(c->words);
    free(c);
}

/* Runs the call on the loop until it is answered or stopped; 0, or -1
 * when out of memory. */
static int run_call(exec_caller *c, const char *image, const char *rl, size_t len,
                    fn_call_result *out)
{
    ev_request req = { image, (const uint8_t *)rl, len };
    if (!(c->call = ev_call_start(c->ev, &req, on_answer, c)))
        return -1;
    if (c->timeout_ns > 0 && !(c->deadline = loop_timer_add(c->l, c->timeout_ns, on_timeout, c))) {
        ev_call_cancel(c->call);
        return -1;
    }
    int loop_failed = loop_run(c->l) < 0;
    if (!c->answered) {
        /* a deadline, a signal or the loop: stop the function and wait for
         * its process group to be gone before saying why */
        c->stopping = 1;
        ev_call_cancel_notify(c->call, on_gone, c);
        while (c->stopping && !loop_failed)
            loop_failed = loop_run(c->l) < 0;
        fn_call_result_free(out);
        out->status = c->stopped_why ? c->code : GRPC_INTERNAL;
        out->message = strdup(c->stopped_why ? c->stopped_why : "the event loop failed");
    } else {
        ev_call_free(c->call);
    }
    loop_timer_cancel(c->l, c->deadline);
    c->deadline = NULL;
    return 0;
}

int exec_call(void *ctx, const char *image, const char *tag, const char *rl, size_t len,
              fn_call_result *out)
{
    (void)tag;
    exec_caller *c = ctx;
    *out = (fn_call_result){ 0 };
    c->out = out;
    c->answered = c->oom = 0;
    c->stopped_why = NULL;
    sigset_t old_mask;
    if (sigprocmask(SIG_BLOCK, &c->signals, &old_mask) < 0)
        return -1;
    int rc = run_call(c, image, rl, len, out);
    c->call = NULL;
    sigprocmask(SIG_SETMASK, &old_mask, NULL);
    if (rc < 0 || c->oom || !out->message) {
        fn_call_result_free(out);
        return -1;
    }
    return 0;
}
