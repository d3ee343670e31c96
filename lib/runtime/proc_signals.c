/* proc_signals: what each signal does to a server, one table; see proc_signals.h. */
#include "runtime/proc_signals.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "core/log.h"
#include "runtime/fn_job.h"

typedef enum ps_action {
    PS_REAP,     /* SIGCHLD */
    PS_DRAIN,    /* stop serving, finish the calls in flight */
    PS_HUP,      /* the owner's on_hup, else as PS_NOTE */
    PS_NOTE,     /* log, otherwise ignore */
    PS_IGNORE,   /* SIG_IGN, not routed */
} ps_action;

/* Every signal whose default action would end the process, save the
 * faults (proc_signals.h), plus SIGCHLD; the real-time range is added at
 * run time. Names are ours: strsignal's words differ between C libraries. */
static const struct ps_route {
    int signo;
    const char *name;
    ps_action action;
} routes[] = {
    {SIGCHLD, "SIGCHLD", PS_REAP},
    {SIGTERM, "SIGTERM", PS_DRAIN},
    {SIGINT, "SIGINT", PS_DRAIN},
    {SIGQUIT, "SIGQUIT", PS_DRAIN},
    {SIGHUP, "SIGHUP", PS_HUP},
    {SIGUSR1, "SIGUSR1", PS_NOTE},
    {SIGUSR2, "SIGUSR2", PS_NOTE},
    {SIGALRM, "SIGALRM", PS_NOTE},
    {SIGIO, "SIGIO", PS_NOTE},
#ifdef SIGPWR
    {SIGPWR, "SIGPWR", PS_NOTE},
#endif
#ifdef SIGSTKFLT
    {SIGSTKFLT, "SIGSTKFLT", PS_NOTE},
#endif
    {SIGXCPU, "SIGXCPU", PS_NOTE},
    {SIGXFSZ, "SIGXFSZ", PS_NOTE},
    {SIGPIPE, "SIGPIPE", PS_IGNORE},
    {SIGPROF, "SIGPROF", PS_IGNORE},
    {SIGVTALRM, "SIGVTALRM", PS_IGNORE},
};
#define PS_ROUTES (sizeof routes / sizeof routes[0])

struct proc_signals {
    loop *loop;
    int fd;
    server *srv;
    proc_hup_fn *on_hup;
    void *ctx;
    uint64_t noted[2];   /* PS_NOTE signals seen once already, by number */
};

static const struct ps_route *route_of(int signo)
{
    for (size_t i = 0; i < PS_ROUTES; i++)
        if (routes[i].signo == signo)
            return &routes[i];
    return NULL;
}

static const char *signal_name(int signo, char *text, size_t len)
{
    const struct ps_route *r = route_of(signo);
    if (r)
        return r->name;
    if (signo >= SIGRTMIN && signo <= SIGRTMAX)
        snprintf(text, len, "SIGRTMIN+%d", signo - SIGRTMIN);
    else
        snprintf(text, len, "signal %d", signo);
    return text;
}

/* Logged and ignored; only the first of each kind at the normal level, so
 * a function sending one in a loop cannot flood the log. */
static void proc_note(proc_signals *ps, int signo, const char *what)
{
    char text[32];
    const char *name = signal_name(signo, text, sizeof text);
    unsigned bit = (unsigned)signo % 128;
    int first = !(ps->noted[bit / 64] & (UINT64_C(1) << (bit % 64)));
    ps->noted[bit / 64] |= UINT64_C(1) << (bit % 64);
    if (first)
        log_info("received %s: %s (more are logged at verbosity 3)", name, what);
    else
        log_v(3, "received %s: %s", name, what);
}

static void proc_dispatch(proc_signals *ps, int signo)
{
    const struct ps_route *r = route_of(signo);
    char text[32];
    switch (r ? r->action : PS_NOTE) {
    case PS_REAP:
        fn_job_reap();
        break;
    case PS_DRAIN:
        log_v(3, "received %s", signal_name(signo, text, sizeof text));
        rpc_server_drain(ps->srv);
        break;
    case PS_HUP:
        if (!ps->on_hup) {
            proc_note(ps, signo, "nothing to reload, ignored");
            break;
        }
        log_v(3, "received %s", signal_name(signo, text, sizeof text));
        ps->on_hup(ps->ctx);
        break;
    case PS_NOTE:
    case PS_IGNORE:   /* not routed; here only if someone blocked it for us */
        proc_note(ps, signo, "ignored");
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

/* The routed set (blocked, read from the signalfd); ignores the rest. */
static int proc_dispositions(sigset_t *routed)
{
    sigemptyset(routed);
    for (size_t i = 0; i < PS_ROUTES; i++) {
        if (routes[i].action != PS_IGNORE) {
            sigaddset(routed, routes[i].signo);
            continue;
        }
        struct sigaction sa = {.sa_handler = SIG_IGN};
        sigemptyset(&sa.sa_mask);
        if (sigaction(routes[i].signo, &sa, NULL) < 0) {
            log_error("cannot ignore %s: %s", routes[i].name, strerror(errno));
            return -1;
        }
    }
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
        sigaddset(routed, s);
    if (sigprocmask(SIG_BLOCK, routed, NULL) < 0) {
        log_error("cannot block the signals to route: %s", strerror(errno));
        return -1;
    }
    return 0;
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
    if (proc_dispositions(&set) < 0) {
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
