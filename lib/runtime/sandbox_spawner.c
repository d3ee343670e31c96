/* sandbox_spawner: sandboxed spawns off the loop; see sandbox_spawner.h.
 *
 * One request and one answer per SOCK_SEQPACKET message; the spawner
 * answers in the order it was asked, so the loop keeps the jobs asked in a
 * ring and checks each answer's sequence number against the oldest.
 * Between answers the spawner also sends notices, unasked: how many kept
 * sandboxes' hosts are alive, each time a host ended or was made off a
 * spawn (idle, killed), so /metrics is exact without another call. */
#include "runtime/sandbox_spawner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/fd_pass.h"
#include "core/log.h"
#include "core/loop.h"
#include "grpc/metrics.h"
#include "runtime/fn_job.h"
#include "runtime/sandbox_host.h"

#define SPAWNER_MAGIC 0x6b726d73u   /* "krms" */
#define SPAWNER_MAX_ARGS 1024
#define SPAWNER_STEP_MAX 48
#define SPAWNER_NAME "krm-spawner"  /* its comm, as ps and /proc show it */

/* Followed by strings_len bytes: the path and argc arguments, each ended
 * by a NUL. Descriptors: the function's stdin, stdout, stderr and, when
 * has_binary_fd, the binary the path names as /proc/self/fd/N (ours). */
typedef struct spawn_request {
    uint32_t magic;
    uint32_t seq;
    int32_t allow_network;       /* sandbox_override's */
    uint32_t has_binary_fd;
    sandbox_limits limits;       /* sandbox_override's */
    uint32_t argc;
    uint32_t strings_len;
} spawn_request;

enum { ANSWER_SPAWN = 0, ANSWER_HOSTS_NOTICE = 1 };

/* A spawn's answer, or (kind ANSWER_HOSTS_NOTICE) a notice: hosts alone,
 * every other field 0. */
typedef struct spawn_answer {
    uint32_t kind;
    uint32_t seq;
    int32_t err;                 /* 0, or the errno */
    int32_t pid;                 /* the function's, when err is 0 */
    int32_t helpers[2];          /* processes of the spawn that exited: ours to reap */
    uint32_t hosts;              /* the kept sandboxes' hosts alive (sandbox_host.h) */
    char step[SPAWNER_STEP_MAX]; /* the failed setup step, "" when none */
} spawn_answer;

/* ---- the spawner process ------------------------------------------------------ */

static uint32_t hosts_told;   /* the count of hosts alive the server last heard */

static void answer(int fd, const spawn_answer *a)
{
    while (send(fd, a, sizeof *a, MSG_NOSIGNAL) < 0)
        if (errno != EINTR)
            _exit(0);   /* the server is gone */
    hosts_told = a->hosts;
}

/* A host ended or was made between requests (idle, killed, its reset
 * failed): the server hears the new count now, not at the next answer. */
static void tell_hosts(int fd)
{
    uint32_t alive = (uint32_t)sandbox_hosts_count();
    if (alive != hosts_told)
        answer(fd, &(spawn_answer){.kind = ANSWER_HOSTS_NOTICE, .hosts = alive});
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

/* The request's strings into path and argv (NULL-ended). 0, or EINVAL. */
static int parse_strings(const spawn_request *rq, char *strings, size_t len, const char **path,
                         char **argv)
{
    if (rq->magic != SPAWNER_MAGIC || rq->argc == 0 || rq->argc > SPAWNER_MAX_ARGS ||
        rq->strings_len != len || len == 0 || strings[len - 1] != '\0')
        return EINVAL;
    size_t n = 0;
    for (char *p = strings; p < strings + len; p += strlen(p) + 1) {
        if (n == 0)
            *path = p;
        else if (n - 1 < rq->argc)
            argv[n - 1] = p;
        n++;
    }
    if (n != rq->argc + 1)
        return EINVAL;
    argv[rq->argc] = NULL;
    return 0;
}

/* One request: spawned, and answered. */
static void serve_one(int sock, sandbox *sb, char *msg, size_t len, int *fds, size_t n_fds,
                      int refused)
{
    static char *argv[SPAWNER_MAX_ARGS + 1];
    spawn_request rq = {0};
    spawn_answer a = {0};
    const char *path = NULL;
    char binary[32];
    int err = EMSGSIZE;
    if (len >= sizeof rq)
        memcpy(&rq, msg, sizeof rq);
    a.seq = len >= sizeof rq ? rq.seq : 0;
    if (!refused && len >= sizeof rq)
        err = parse_strings(&rq, msg + sizeof rq, len - sizeof rq, &path, argv);
    if (!err && n_fds != 3 + (rq.has_binary_fd ? 1u : 0u))
        err = EBADF;
    if (!err && rq.has_binary_fd) {   /* a name in our table now, inheritable for the exec */
        snprintf(binary, sizeof binary, "/proc/self/fd/%d", fds[3]);
        path = binary;
        if (fcntl(fds[3], F_SETFD, 0) < 0)
            err = errno;
    }
    const char *step = NULL;
    if (!err) {
        buf why = {0};
        sandbox_override o = {.allow_network = rq.allow_network, .limits = rq.limits};
        const spawn_child_setup *setup = sandbox_setup_for(sb, &o, &why);
        if (!setup) {
            log_error("spawner: %s", why.data ? why.data : "out of memory");
            err = ENOMEM;
            step = "sandbox settings";
        } else {
            pid_t pid = 0, helpers[2] = {0, 0};
            int64_t started = loop_now_ns();
            err = sandbox_hosts_enabled()
                      ? sandbox_hosts_spawn(sandbox_of_setup(sb, setup), path,
                                            rq.has_binary_fd ? fds[3] : -1, argv, fds, &pid,
                                            helpers, &step)
                      : SANDBOX_HOSTS_FRESH;
            size_t n_helpers = (helpers[0] > 0) + (helpers[1] > 0);
            int fresh_spawn = err == SANDBOX_HOSTS_FRESH;
            const char *how = fresh_spawn ? "in a fresh sandbox" : "on a kept sandbox's host";
            if (fresh_spawn) {   /* no host: a fresh sandbox, its helpers after the host's */
                pid_t fresh[2];
                err = spawn_in_group_as_sibling(path, argv, NULL, fds, setup, &pid, fresh, &step);
                for (int i = 0; i < 2; i++)   /* a third (both failed) is reaped as a stray */
                    if (fresh[i] > 0 && n_helpers < 2)
                        helpers[n_helpers++] = fresh[i];
            }
            a.pid = err ? 0 : pid;
            if (!err)   /* until its exec: what the spawn costs, fresh or joined */
                log_v(4, "spawner: %s spawned %s in %lld us", argv[0], how,
                      (long long)((loop_now_ns() - started) / 1000));
            a.helpers[0] = helpers[0];
            a.helpers[1] = helpers[1];
        }
        buf_free(&why);
    }
    close_all(fds, n_fds);
    a.hosts = (uint32_t)sandbox_hosts_count();
    a.err = err;
    if (err && step)
        snprintf(a.step, sizeof a.step, "%s", step);
    answer(sock, &a);
}

static void spawner_main(int sock, sandbox *sb) __attribute__((noreturn));
static void spawner_main(int sock, sandbox *sb)
{
    static char msg[SPAWNER_MAX_REQUEST];
    static struct pollfd polled[1 + 2 * SANDBOX_HOSTS_MAX];
    for (;;) {
        /* the kept sandboxes' hosts and functions first: a call's exit
         * frees its host for the request that follows it */
        polled[0] = (struct pollfd){.fd = sock, .events = POLLIN};
        size_t n_polled = 1 + sandbox_hosts_pollfds(polled + 1, 2 * SANDBOX_HOSTS_MAX);
        if (n_polled > 1 || sandbox_hosts_timeout_ms() >= 0) {
            if (poll(polled, n_polled, sandbox_hosts_timeout_ms()) < 0 && errno != EINTR)
                _exit(1);
            sandbox_hosts_events(polled + 1, n_polled - 1);
            tell_hosts(sock);
            if (!polled[0].revents)
                continue;
        }
        int fds[4];
        size_t n, n_fds;
        buf why = {0};
        int err = fd_pass_recv(sock, msg, sizeof msg, &n, fds, 4, &n_fds, 0, &why) < 0 ? errno : 0;
        if (err == EMSGSIZE)   /* too long, or too many descriptors: answered as failed */
            log_error("spawner: %s", why.data ? why.data : "out of memory");
        buf_free(&why);
        if (err == EINTR)
            continue;
        if (n == 0 && err != EMSGSIZE) {   /* the server closed its end: it stops, or is gone */
            sandbox_hosts_end_all();
            _exit(0);
        }
        serve_one(sock, sb, msg, n, fds, n_fds, err == EMSGSIZE);
    }
}

/* close_range(2): glibc has a wrapper, musl (the static build) has not;
 * its number is the same on every architecture (Linux 5.9). */
#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* Without close_range (Linux before 5.9, or a container's seccomp profile
 * older than the call, which answers EPERM), the descriptors open are
 * listed and closed one by one: the spawner is a plain fork, so it may
 * allocate. */
static int close_listed(unsigned from, unsigned to)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int *open_fds = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        errno = 0;
        unsigned long fd = strtoul(e->d_name, &end, 10);
        if (*end || end == e->d_name || errno || fd < from || fd > to || (int)fd == dirfd(d))
            continue;
        if (n == cap) {
            size_t grown = cap ? cap * 2 : 64;
            int *bigger = realloc(open_fds, grown * sizeof *open_fds);
            if (!bigger) {
                free(open_fds);
                closedir(d);
                errno = ENOMEM;
                return -1;
            }
            open_fds = bigger;
            cap = grown;
        }
        open_fds[n++] = (int)fd;
    }
    closedir(d);
    for (size_t i = 0; i < n; i++)
        close(open_fds[i]);
    free(open_fds);
    return 0;
}

int sandbox_spawner_close_fds(unsigned from, unsigned to)
{
    if (syscall(SYS_close_range, from, to, 0u) == 0)
        return 0;
    if (errno != ENOSYS && errno != EPERM)
        return -1;
    return close_listed(from, to);
}

/* Closes every descriptor but those kept (its socket, stdio, the shared
 * namespaces the spawns join): what the server had open is not its. */
static int close_others(int sock, const spawn_child_setup *setup)
{
    int keep[5] = {2, sock, -1, -1, -1};
    size_t n = 2;
    for (int i = 0; i < setup->n_join_ns && i < 2; i++)
        keep[n++] = setup->join_ns[i];
    /* sorted, so that the gaps between them are closed */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
            int t = keep[j];
            keep[j] = keep[j - 1];
            keep[j - 1] = t;
        }
    unsigned from = 3;
    for (size_t i = 0; i < n; i++) {
        if (keep[i] < 0 || (unsigned)keep[i] < from)
            continue;
        if ((unsigned)keep[i] > from && sandbox_spawner_close_fds(from, (unsigned)keep[i] - 1) < 0)
            return -1;
        from = (unsigned)keep[i] + 1;
    }
    if (sandbox_spawner_close_fds(from, ~0u) < 0)
        return -1;
    return 0;
}

/* ---- the server's side ------------------------------------------------------- */

static struct {
    sandbox *sb;
    pid_t pid;                  /* 0: none running */
    pid_t lost[2];              /* spawners given up, not yet reaped */
    int fd;                     /* our end; -1: none */
    loop *loop;                 /* watching fd; NULL: not yet */
    fn_job *asked[SPAWNER_MAX_IN_FLIGHT];   /* a ring, oldest at head */
    size_t head, count;
    uint32_t next_seq;
    uint32_t hosts;             /* the kept sandboxes' hosts, as it last told */
    int restarted;              /* once */
    int stopping;               /* the server's shutdown: no restart */
} sp = {.fd = -1};

static int spawner_fork(buf *why);

/* The jobs in flight fail (their calls say the spawner exited); the
 * spawner is restarted once, then spawns are done on the loop. */
static void spawner_lost(const char *what, int reaped)
{
    pid_t pid = sp.pid;
    if (sp.loop)
        loop_unwatch(sp.loop, sp.fd);
    if (sp.fd >= 0)
        close(sp.fd);
    sp.fd = -1;
    sp.loop = NULL;
    if (pid > 0 && !reaped) {
        kill(pid, SIGKILL);   /* half-alive (a protocol error): its exit is reaped silently */
        sp.lost[sp.lost[0] ? 1 : 0] = pid;
    }
    sp.pid = 0;
    sp.hosts = 0;   /* they died with it */
    fn_job *failed[SPAWNER_MAX_IN_FLIGHT];
    size_t n = 0;
    for (; sp.count; sp.count--, sp.head = (sp.head + 1) % SPAWNER_MAX_IN_FLIGHT)
        failed[n++] = sp.asked[sp.head];
    buf why = {0};
    int restarted = !sp.restarted && !sp.stopping && spawner_fork(&why) == 0;
    if (restarted)
        log_warn("sandbox spawner %d %s; %zu spawns in flight failed; restarted as %d", (int)pid,
                 what, n, (int)sp.pid);
    else
        log_warn("sandbox spawner %d %s; %zu spawns in flight failed; sandboxed functions are "
                 "spawned on the server's loop from now%s%s", (int)pid, what, n,
                 why.data ? ": " : "", why.data ? why.data : "");
    buf_free(&why);
    sp.restarted = 1;
    if (!restarted)
        fn_job_set_spawner(NULL);
    const pid_t none[2] = {0, 0};
    for (size_t i = 0; i < n; i++)
        fn_job_spawned(failed[i], 0, none, EPIPE, "the sandbox spawner exited");
}

static void spawner_on_answer(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)events, (void)ctx;
    for (;;) {
        spawn_answer a;
        ssize_t n = recv(fd, &a, sizeof a, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            spawner_lost(n == 0 ? "hung up" : "cannot be read", 0);
            return;
        }
        if ((size_t)n == sizeof a && a.kind == ANSWER_HOSTS_NOTICE && a.seq == 0 &&
            a.err == 0 && a.pid == 0 && a.helpers[0] == 0 && a.helpers[1] == 0) {
            sp.hosts = a.hosts;
            continue;
        }
        if ((size_t)n != sizeof a || a.kind != ANSWER_SPAWN || !sp.count ||
            a.seq != sp.next_seq - (uint32_t)sp.count || (a.err == 0 && a.pid <= 0) ||
            a.err < 0 || a.helpers[0] < 0 || a.helpers[1] < 0) {
            spawner_lost("answered out of turn", 0);
            return;
        }
        fn_job *job = sp.asked[sp.head];
        sp.hosts = a.hosts;
        sp.head = (sp.head + 1) % SPAWNER_MAX_IN_FLIGHT;
        sp.count--;
        a.step[sizeof a.step - 1] = '\0';
        const pid_t helpers[2] = {a.helpers[0], a.helpers[1]};
        fn_job_spawned(job, a.pid, helpers, a.err, a.step[0] ? a.step : NULL);
        if (sp.fd != fd)
            return;   /* lost meanwhile (a restart's fd may reuse the number) */
    }
}

/* The descriptor a path of ours names, /proc/self/fd/N, or -1. */
static int our_fd_named(const char *path)
{
    static const char prefix[] = "/proc/self/fd/";
    if (strncmp(path, prefix, sizeof prefix - 1))
        return -1;
    char *end;
    long fd = strtol(path + sizeof prefix - 1, &end, 10);
    return *end || end == path + sizeof prefix - 1 || fd < 0 || fd > INT32_MAX ? -1 : (int)fd;
}

static int spawner_ask(void *ctx, fn_job *job, const char *path, char *const *argv,
                       const spawn_child_setup *setup, const int stdio[3])
{
    (void)ctx;
    static char msg[SPAWNER_MAX_REQUEST];
    sandbox_override o;
    if (sp.fd < 0 || sandbox_override_of(sp.sb, setup, &o) < 0)
        return -1;
    if (sp.count == SPAWNER_MAX_IN_FLIGHT) {
        log_v(3, "sandbox spawner: %d spawns in flight; spawning %s on the loop",
              SPAWNER_MAX_IN_FLIGHT, argv[0]);
        return -1;
    }
    spawn_request rq = {.magic = SPAWNER_MAGIC, .seq = sp.next_seq,
                        .allow_network = o.allow_network, .limits = o.limits};
    int fds[4] = {stdio[0], stdio[1], stdio[2], our_fd_named(path)};
    rq.has_binary_fd = fds[3] >= 0;
    size_t len = sizeof rq;
    for (size_t i = 0; i == 0 || argv[i - 1]; i++) {
        const char *s = i == 0 ? path : argv[i - 1];
        size_t n = strlen(s) + 1;
        if (n > sizeof msg - len || rq.argc > SPAWNER_MAX_ARGS) {
            log_v(3, "sandbox spawner: %s's request is over %d bytes or %d arguments; spawned "
                  "on the loop", argv[0], SPAWNER_MAX_REQUEST, SPAWNER_MAX_ARGS);
            return -1;
        }
        memcpy(msg + len, s, n);
        len += n;
        rq.argc += i > 0;
    }
    rq.strings_len = (uint32_t)(len - sizeof rq);
    memcpy(msg, &rq, sizeof rq);
    if (sp.loop != job->loop) {
        if (loop_watch(job->loop, sp.fd, LOOP_READ, spawner_on_answer, NULL) < 0)
            return -1;
        sp.loop = job->loop;
    }
    int sent = fd_pass_send(sp.fd, msg, len, fds, rq.has_binary_fd ? 4 : 3, MSG_DONTWAIT);
    if (sent < 0) {
        /* EAGAIN: its socket is full; else it is gone, which its hangup
         * tells from the loop (not here, inside a call's start) */
        log_v(3, "sandbox spawner: cannot send (%s); %s spawned on the loop", strerror(errno),
              argv[0]);
        return -1;
    }
    sp.asked[(sp.head + sp.count++) % SPAWNER_MAX_IN_FLIGHT] = job;
    sp.next_seq++;
    return 0;
}

static int spawner_reaped(void *ctx, pid_t pid, int status)
{
    (void)ctx;
    for (int i = 0; i < 2; i++)
        if (sp.lost[i] == pid) {   /* given up already: said then */
            sp.lost[i] = 0;
            return 1;
        }
    if (!sp.pid || pid != sp.pid)
        return 0;
    char what[64];
    if (WIFSIGNALED(status))
        snprintf(what, sizeof what, "was killed by signal %d", WTERMSIG(status));
    else
        snprintf(what, sizeof what, "exited with status %d", WEXITSTATUS(status));
    spawner_lost(what, 1);   /* reaped: nothing to kill or wait for */
    return 1;
}

static pid_t spawner_process(void *ctx)
{
    (void)ctx;
    return sp.pid;
}

#define SPAWNER_DRAIN_MS 1000
#define SPAWNER_END_MS 500   /* for it to end its kept sandboxes' hosts */

static void spawner_drain(void *ctx)
{
    (void)ctx;
    sp.stopping = 1;
    for (int waited = 0; sp.count && sp.fd >= 0 && waited < SPAWNER_DRAIN_MS; waited += 10) {
        struct pollfd p = {.fd = sp.fd, .events = POLLIN};
        if (poll(&p, 1, 10) > 0)
            spawner_on_answer(sp.loop, sp.fd, 0, NULL);
    }
    if (sp.count)
        log_warn("sandbox spawner: %zu spawns not answered at shutdown", sp.count);
    sp.head = sp.count = 0;
}

static void spawner_end(void *ctx)
{
    (void)ctx;
    /* It ends now, not with us: the shutdown then waits for each child of
     * ours to exit, and waited its whole second for this one (at every stop
     * of a sandboxed serve). */
    if (sp.loop)
        loop_unwatch(sp.loop, sp.fd);
    sp.loop = NULL;
    if (sp.fd >= 0)
        close(sp.fd);   /* its end of the socket: it ends its hosts, then itself */
    sp.fd = -1;
    if (sp.pid > 0) {
        for (int waited = 0; waited < SPAWNER_END_MS; waited++) {
            pid_t p = waitpid(sp.pid, NULL, WNOHANG);
            if (p == sp.pid || (p < 0 && errno == ECHILD)) {
                sp.pid = 0;
                return;
            }
            poll(NULL, 0, 1);
        }
        kill(sp.pid, SIGKILL);
        if (waitpid(sp.pid, NULL, 0) < 0 && errno != ECHILD)
            log_error("sandbox spawner: waitpid(%d): %s", (int)sp.pid, strerror(errno));
        sp.pid = 0;
    }
}

static const fn_job_spawner spawner_ops = {.ask = spawner_ask, .reaped = spawner_reaped,
                                           .process = spawner_process, .drain = spawner_drain, .end = spawner_end};

static int spawner_fork(buf *why)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        buf_printf(why, "socketpair: %s", strerror(errno));
        return -1;
    }
    /* A restart forks a server that may run an offload thread: the child
     * still allocates (a function's settings, a log line), which glibc and
     * musl (1.2.1 and later) keep working after fork in a threaded process
     * by resetting malloc's and stdio's locks in the child. */
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        buf_printf(why, "fork: %s", strerror(errno));
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    if (pid == 0) {
        close(sv[0]);
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
            _exit(0);
        (void)prctl(PR_SET_NAME, SPAWNER_NAME);
        /* woken by a request while the server and a function run, it
         * starts at once: a call that takes a pre-started process finds it
         * spawned more often (its replacement is asked as the call starts) */
        spawn_short_slice(1);
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        for (int s = 1; s < NSIG; s++)
            (void)sigaction(s, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (close_others(sv[1], sandbox_child_setup(sp.sb)) < 0) {
            log_error("sandbox spawner: closing the server's descriptors: %s", strerror(errno));
            _exit(1);
        }
        sandbox_hosts_make_room();
        spawner_main(sv[1], sp.sb);
    }
    close(sv[1]);
    if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0)
        log_error("sandbox spawner: fcntl(O_NONBLOCK): %s", strerror(errno));
    sp.fd = sv[0];
    sp.pid = pid;
    sp.head = sp.count = 0;
    return 0;
}

static size_t kept_hosts(void)
{
    return sp.hosts;
}

static size_t kept_hosts_max(void)
{
    return sandbox_hosts_max();
}

int sandbox_spawner_start(sandbox *sb, buf *why)
{
    if (!sandbox_child_setup(sb))
        return 0;   /* no layer: spawns are plain and cheap */
    if (sandbox_hosts_enabled()) {
        metrics_gauge("krm_sandbox_kept_hosts", "",
                      "Hosts of sandboxes kept per function (--sandbox-keep) alive (the spawner "
                      "tells each one made or ended).", kept_hosts);
        metrics_gauge("krm_sandbox_kept_hosts_max", "",
                      "Most hosts of kept sandboxes (--prespawn-total plus "
                      "--max-concurrent-functions); past it a call gets a fresh sandbox.",
                      kept_hosts_max);
        log_v(3, "sandbox keep: at most %zu hosts, ended after %lld ms idle",
              sandbox_hosts_max(), (long long)(sandbox_hosts_idle_ns() / 1000000));
    }
    sp.sb = sb;
    if (spawner_fork(why) < 0)
        return -1;
    fn_job_set_spawner(&spawner_ops);
    log_v(3, "sandbox spawner started as process %d", (int)sp.pid);
    return 0;
}

pid_t sandbox_spawner_pid(void)
{
    return sp.pid;
}
