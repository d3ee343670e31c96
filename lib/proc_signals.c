/* proc_signals: signalfd routing of SIGCHLD/SIGTERM/SIGINT/SIGHUP; see proc_signals.h. */
#include "proc_signals.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "fn_job.h"
#include "log.h"

struct proc_signals {
    loop *loop;
    int fd;
    server *srv;
    proc_hup_fn *on_hup;
    void *ctx;
};

static void proc_dispatch(proc_signals *ps, int signo)
{
    switch (signo) {
    case SIGCHLD:
        fn_job_reap();
        break;
    case SIGTERM:
    case SIGINT:
        log_v(3, "received %s", strsignal(signo));
        server_drain(ps->srv);
        break;
    case SIGHUP:
        log_v(3, "received %s", strsignal(signo));
        ps->on_hup(ps->ctx);
        break;
    default:
        break;
    }
}

static void proc_on_signal(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)events;
    struct signalfd_siginfo info;
    for (;;) {
        ssize_t n = read(fd, &info, sizeof info);
        if (n != (ssize_t)sizeof info) {
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                log_error("read signalfd: %s", strerror(errno));
            return;
        }
        proc_dispatch(ctx, (int)info.ssi_signo);
    }
}

proc_signals *proc_signals_open(loop *l, server *srv, proc_hup_fn *on_hup, void *ctx)
{
    proc_signals *ps = calloc(1, sizeof *ps);
    if (!ps) {
        log_error("cannot set up signal handling: out of memory");
        return NULL;
    }
    *ps = (proc_signals){.loop = l, .fd = -1, .srv = srv, .on_hup = on_hup, .ctx = ctx};
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (on_hup)
        sigaddset(&set, SIGHUP);
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR || sigprocmask(SIG_BLOCK, &set, NULL) < 0) {
        log_error("cannot set up signal handling: %s", strerror(errno));
        free(ps);
        return NULL;
    }
    ps->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (ps->fd < 0) {
        log_error("signalfd: %s", strerror(errno));
        free(ps);
        return NULL;
    }
    if (loop_watch(l, ps->fd, LOOP_READ, proc_on_signal, ps) < 0) {
        log_error("cannot watch the signalfd");
        proc_signals_close(ps);
        return NULL;
    }
    return ps;
}

void proc_signals_close(proc_signals *ps)
{
    if (!ps)
        return;
    if (ps->fd >= 0) {
        loop_unwatch(ps->loop, ps->fd);
        close(ps->fd);
    }
    free(ps);
}
