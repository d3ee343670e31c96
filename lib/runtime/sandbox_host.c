/* sandbox_host: a sandbox kept per function; see sandbox_host.h. */
#include "runtime/sandbox_host.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/fd_pass.h"
#include "core/log.h"
#include "runtime/sandbox_host_attrs.h"
#include "runtime/sandbox_host_tmp.h"
#include "runtime/sandbox_spawner.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define HOST_STEP_MAX 48
#define HOST_ANSWER_MS 2000        /* a host's set-up or reset, at most */
#define HOST_RESET_WAIT_MS 5       /* a spawn waits this long for its host's reset, then
                                      makes another host: a function whose leftovers
                                      take long to clear holds up no other spawn */
#define HOST_STACK_SIZE (256 * 1024)
#define HOST_NS_MAX 5              /* user, net, mnt, ipc, pid */
#define HOST_NS_IPC_FROM_END 2     /* ipc: the last but one of these */

enum { MSG_PID = 1, MSG_READY, MSG_RESET_DONE };
enum { ASK_RESET = 'R', ASK_EXIT = 'E' };

/* Host -> spawner (the launcher's MSG_PID too). */
typedef struct host_msg {
    int32_t kind;
    int32_t err;     /* 0, or the errno of step */
    int32_t pid;     /* MSG_PID: the host's, as the spawner numbers it */
    int32_t n_fds;   /* MSG_READY: its namespaces, then /tmp and, with proc, /proc;
                        MSG_RESET_DONE: its new IPC namespace, /tmp and /proc */
    int32_t pid_counter_err;   /* MSG_READY: why the pid counter cannot be set back, 0 */
    char step[HOST_STEP_MAX];
} host_msg;

static sandbox_keep_config keep;

void sandbox_hosts_configure(const sandbox_keep_config *cfg)
{
    keep = *cfg;
    if (keep.max_hosts > SANDBOX_HOSTS_MAX)
        keep.max_hosts = SANDBOX_HOSTS_MAX;
}

int sandbox_hosts_enabled(void)
{
    return keep.max_hosts > 0;
}

int sandbox_hosts_asked(void)
{
    return keep.asked;
}

size_t sandbox_hosts_max(void)
{
    return keep.max_hosts;
}

int64_t sandbox_hosts_idle_ns(void)
{
    return keep.idle_ns;
}

/* ---- the host process ------------------------------------------------------ */

static int send_msg(int sock, const host_msg *m, const int *fds, size_t n_fds)
{
    return fd_pass_send(sock, m, sizeof *m, fds, n_fds, 0);
}

static void reap_all(int block)
{
    for (;;) {
        pid_t p = waitpid(-1, NULL, __WALL | (block ? 0 : WNOHANG));
        if (p > 0 || (p < 0 && errno == EINTR))
            continue;
        return;   /* ECHILD: none left; 0: none exited yet */
    }
}

/* After a call: everything else of the namespace killed and reaped (the
 * function itself, the server's child, has exited: its zombie is the
 * server's), what a call may change about the host set back
 * (sandbox_host_attrs.h), a new /tmp (sandbox_host_tmp.h) and a new IPC
 * namespace: its System V objects and POSIX message queues go with the old
 * one, and the ids of the next call's objects do not count the last
 * call's (which removing them one by one would leave). The descriptors of
 * the new namespace and /tmp in fds[0] and fds[1], and of /proc in fds[2]
 * with own_proc (for the ruleset the spawner makes again). */
static int host_reset(host_tmp *tmp, const host_attrs *attrs, int own_proc, int fds[3],
                      const char **step)
{
    /* From PID 1, kill(-1) reaches every other process of the namespace
     * (a fork under way included: the kernel hands such a signal to the new
     * child too); orphans come to us as their parents die. Not looped on
     * kill's answer: the function's zombie, the server's to reap, counts. */
    kill(-1, SIGKILL);
    reap_all(1);
    int err = host_attrs_restore(attrs, step);
    if (err || (err = host_tmp_remake(tmp, "/tmp", step)))
        return err;
    *step = "unshare a new IPC namespace";   /* about 40 us */
    if (unshare(CLONE_NEWIPC) < 0 || (fds[0] = open("/proc/self/ns/ipc", O_RDONLY | O_CLOEXEC)) < 0)
        return errno;
    *step = "open the new /tmp";
    if ((fds[1] = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        (own_proc && (fds[2] = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0))
        return errno;
    *step = NULL;
    return 0;
}

typedef struct host_args {
    const sandbox *v;
    int sock;
} host_args;

static const char *const ns_names[] = {"user", "net", "mnt", "ipc", "pid"};

/* PID 1 of the host's namespaces: set up once, then RESET and EXIT. */
static int host_main(void *arg)
{
    const host_args *a = arg;
    host_msg m = {.kind = MSG_READY};
    int fds[HOST_NS_MAX + 2];
    int n = 0;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        _exit(1);
    (void)prctl(PR_SET_NAME, SANDBOX_HOST_NAME);
    spawn_short_slice(0);   /* the spawner's, inherited: its resets must not preempt a call */
    int sock = a->sock == 3 ? 3 : dup2(a->sock, 3);
    if (sock != 3 || sandbox_spawner_close_fds(4, ~0u) < 0)
        _exit(1);
    const char *step = NULL;
    const spawn_child_setup *setup = sandbox_child_setup(a->v);
    m.err = sandbox_host_mounts(a->v, &step);
    for (size_t i = 0; i < HOST_NS_MAX && !m.err; i++) {
        if (!strcmp(ns_names[i], "net") && !(setup->clone_flags & CLONE_NEWNET))
            continue;
        char path[32];
        snprintf(path, sizeof path, "/proc/self/ns/%s", ns_names[i]);
        if ((fds[n] = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
            m.err = errno;
            step = "open its namespaces";
        }
        n++;
    }
    if (!m.err) {
        if ((fds[n++] = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
            ((sandbox_layers(a->v) & SANDBOX_PROC) &&
             (fds[n++] = open("/proc", O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)) {
            m.err = errno;
            step = "open its /tmp and /proc";
        }
    }
    /* not dumpable: a function, root in these namespaces, cannot open our
     * /proc/1/fd or ptrace us (seccomp refuses ptrace too) */
    if (!m.err && prctl(PR_SET_DUMPABLE, 0) < 0) {
        m.err = errno;
        step = "prctl(PR_SET_DUMPABLE)";
    }
    static host_tmp tmp;   /* large: not on the host's stack */
    if (!m.err)
        m.err = host_tmp_record(&tmp, "/tmp", sandbox_tmpfs_options(a->v), &step);
    host_attrs attrs;
    if (!m.err) {
        m.err = host_attrs_save(&attrs, &step);
        m.pid_counter_err = m.err ? 0 : attrs.last_pid_err;
    }
    /* Every signal ignored but SIGCHLD (blocked, read from a signalfd):
     * ignored, a signal is dropped when sent; blocked, it would stay
     * pending on us, and a call could leave signals (real-time ones queued
     * with a value) for the next to find in /proc/1/status, where Landlock
     * below ABI 6 does not refuse it the kill. */
    struct sigaction ignore = {.sa_handler = SIG_IGN};
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGCHLD && sig != SIGKILL && sig != SIGSTOP)
            (void)sigaction(sig, &ignore, NULL);   /* the C library's own refuse it */
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_SETMASK, &chld, NULL);
    int sig_fd = m.err ? -1 : signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
    if (!m.err && sig_fd < 0) {
        m.err = errno;
        step = "signalfd";
    }
    if (m.err && step)
        snprintf(m.step, sizeof m.step, "%s", step);
    m.n_fds = m.err ? 0 : n;
    if (send_msg(sock, &m, fds, (size_t)m.n_fds) < 0 || m.err)
        _exit(1);
    for (int i = 0; i < n; i++)
        close(fds[i]);
    for (;;) {
        struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = sig_fd, .events = POLLIN}};
        if (poll(p, 2, -1) < 0)
            continue;   /* EINTR */
        if (p[1].revents) {
            struct signalfd_siginfo si;
            while (read(sig_fd, &si, sizeof si) == (ssize_t)sizeof si) {
            }
            reap_all(0);
        }
        if (!p[0].revents)
            continue;
        char ask;
        ssize_t got = recv(sock, &ask, 1, 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != 1 || ask != ASK_RESET)
            _exit(0);   /* EXIT, or the spawner is gone */
        host_msg done = {.kind = MSG_RESET_DONE};
        step = NULL;
        int new_fds[3] = {-1, -1, -1};
        int own_proc = (sandbox_layers(a->v) & SANDBOX_PROC) != 0;
        done.err = host_reset(&tmp, &attrs, own_proc, new_fds, &step);
        if (step)
            snprintf(done.step, sizeof done.step, "%s", step);
        done.n_fds = done.err ? 0 : 2 + own_proc;
        if (send_msg(sock, &done, new_fds, (size_t)done.n_fds) < 0)
            _exit(0);
        for (int i = 0; i < 3; i++)
            if (new_fds[i] >= 0)
                close(new_fds[i]);
    }
}

/* ---- the spawner's side ------------------------------------------------------ */

/* FREE -> BUSY (a call's function runs) -> RESETTING (asked, not yet
 * answered) -> FREE; DYING: killed, until its pidfd says it exited. */
typedef enum { HOST_FREE, HOST_BUSY, HOST_RESETTING, HOST_DYING } host_state;

typedef struct host {
    const sandbox *v;
    dev_t dev;                  /* the binary's */
    ino_t ino;
    pid_t pid;
    int pidfd;                  /* the host's, polled for its death */
    int sock;
    int binary_fd;              /* O_PATH, for the ruleset (a spawn's path may be
                                   /proc/self/fd/N, N another file later) */
    int ruleset;                /* -1 without Landlock */
    int ns[HOST_NS_MAX];
    int n_ns;
    spawn_child_setup setup;    /* a call's on this host */
    host_state state;
    int fn_pidfd;               /* HOST_BUSY: the function's */
    int64_t idle_since_ns;
    int64_t reset_deadline_ns;  /* HOST_RESETTING: ended if not answered by then */
} host;

static host *hosts[SANDBOX_HOSTS_MAX];
static size_t n_hosts;
static int make_failure_said;

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* What a host holds open in the spawner at most (struct host): its pidfd
 * and socket, its binary, the ruleset, its namespaces, a busy host's
 * function's pidfd, and its /tmp and /proc while its ruleset is made. */
#define HOST_FDS (7 + HOST_NS_MAX)
/* The spawner's own besides: its socket, a request's descriptors, a spawn's
 * pipes and pidfds, a host being made, with room to spare. */
#define SPAWNER_OWN_FDS 64

void sandbox_hosts_make_room(void)
{
    struct rlimit lim;
    if (!keep.max_hosts || getrlimit(RLIMIT_NOFILE, &lim) < 0)
        return;
    /* a soft limit of 1024 (the usual default, a pod's too) holds about 90
     * hosts: a machine with many CPUs allows more (--max-concurrent-functions
     * is twice the CPUs); as Go's runtime does for every program, the soft
     * limit is raised toward the hard one */
    rlim_t want = SPAWNER_OWN_FDS + (rlim_t)HOST_FDS * keep.max_hosts;
    if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
        rlim_t was = lim.rlim_cur;
        lim.rlim_cur = lim.rlim_max != RLIM_INFINITY && lim.rlim_max < want ? lim.rlim_max : want;
        if (lim.rlim_cur > was && setrlimit(RLIMIT_NOFILE, &lim) < 0) {
            log_warn("sandbox keep: raising the spawner's open files limit from %llu to %llu: %s",
                     (unsigned long long)was, (unsigned long long)lim.rlim_cur, strerror(errno));
            lim.rlim_cur = was;
        }
    }
    if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < want) {
        rlim_t fit = lim.rlim_cur > SPAWNER_OWN_FDS ? (lim.rlim_cur - SPAWNER_OWN_FDS) / HOST_FDS : 0;
        log_warn("sandbox keep: an open files limit of %llu (hard) holds about %llu kept sandboxes "
                 "of the %zu allowed; calls past them get a fresh sandbox",
                 (unsigned long long)lim.rlim_cur, (unsigned long long)fit, keep.max_hosts);
    }
}

size_t sandbox_hosts_count(void)
{
    size_t alive = 0;
    for (size_t i = 0; i < n_hosts; i++)
        alive += hosts[i]->state != HOST_DYING;
    return alive;
}

static void close_if(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void host_close(host *h)
{
    close_if(&h->sock);
    close_if(&h->binary_fd);
    close_if(&h->ruleset);
    close_if(&h->fn_pidfd);
    for (int i = 0; i < h->n_ns; i++)
        close_if(&h->ns[i]);
    h->n_ns = 0;
}

/* Ends h (its namespace with it); reaped when its pidfd says it exited. */
static void host_kill(host *h, const char *why)
{
    if (h->state == HOST_DYING)
        return;
    log_v(3, "sandbox keep: host %d ended: %s (%zu hosts of %zu left)", (int)h->pid, why,
          sandbox_hosts_count() - 1, keep.max_hosts);
    kill(h->pid, SIGKILL);
    host_close(h);
    h->state = HOST_DYING;
}

static void host_forget(size_t i)
{
    host *h = hosts[i];
    host_close(h);
    close_if(&h->pidfd);
    while (waitpid(h->pid, NULL, __WALL) < 0 && errno == EINTR) {
    }
    free(h);
    hosts[i] = hosts[--n_hosts];
}

void sandbox_hosts_end_all(void)
{
    for (size_t i = 0; i < n_hosts; i++)
        kill(hosts[i]->pid, SIGKILL);   /* all first: they die side by side */
    while (n_hosts)
        host_forget(n_hosts - 1);
}

/* One message from h within HOST_ANSWER_MS (fds: those it carries, at
 * most room). 0, or -1. */
static int host_recv(int sock, host_msg *m, int *fds, size_t room, size_t *n_fds)
{
    struct pollfd p = {.fd = sock, .events = POLLIN};
    int r;
    *n_fds = 0;
    while ((r = poll(&p, 1, HOST_ANSWER_MS)) < 0 && errno == EINTR) {
    }
    if (r <= 0)
        return -1;
    buf why = {0};
    size_t got;
    int err = fd_pass_recv(sock, m, sizeof *m, &got, fds, room, n_fds, MSG_DONTWAIT, &why) < 0
                  ? errno : 0;
    if (err == EMSGSIZE)
        log_error("sandbox host's answer: %s", why.data ? why.data : "out of memory");
    buf_free(&why);
    if (err)
        return -1;
    if (got != sizeof *m) {   /* closed, or short */
        for (size_t i = 0; i < *n_fds; i++)
            close(fds[i]);
        *n_fds = 0;
        return -1;
    }
    m->step[sizeof m->step - 1] = '\0';
    return 0;
}

/* The launcher: a fork that joins the variant's shared namespaces and
 * clones the host in its own (CLONE_PARENT: our child), tells its pid and
 * exits. */
static void launch(const sandbox *v, int sock) __attribute__((noreturn));
static void launch(const sandbox *v, int sock)
{
    const spawn_child_setup *setup = sandbox_child_setup(v);
    host_msg m = {.kind = MSG_PID};
    for (int i = 0; i < setup->n_join_ns && !m.err; i++)
        if (setns(setup->join_ns[i], 0) < 0) {
            m.err = errno;
            snprintf(m.step, sizeof m.step, "setns");
        }
    char *stack = m.err ? NULL : malloc(HOST_STACK_SIZE);
    if (!m.err && !stack) {
        m.err = ENOMEM;
        snprintf(m.step, sizeof m.step, "malloc");
    }
    host_args args = {.v = v, .sock = sock};
    if (!m.err) {
        pid_t pid = clone(host_main, stack + HOST_STACK_SIZE,
                          CLONE_PARENT | setup->clone_flags | SIGCHLD, &args);
        if (pid < 0) {
            m.err = errno;
            snprintf(m.step, sizeof m.step, "clone");
        }
        m.pid = pid;
    }
    send_msg(sock, &m, NULL, 0);
    _exit(0);
}

static int call_confine(const void *ctx, const char *path, const char **step)
{
    (void)path;   /* in the ruleset already */
    const host *h = ctx;
    return sandbox_confine_call(h->v, h->ruleset, step);
}

/* A new host for v and the binary path names. NULL with why. */
static host *host_make(const sandbox *v, const char *path, dev_t dev, ino_t ino, buf *why)
{
    const spawn_child_setup *setup = sandbox_child_setup(v);
    if (!(setup->clone_flags & CLONE_NEWPID)) {
        buf_append_str(why, "no namespaces");
        return NULL;
    }
    host *h = calloc(1, sizeof *h);
    if (!h) {
        buf_append_str(why, "out of memory");
        return NULL;
    }
    *h = (host){.v = v, .dev = dev, .ino = ino, .pidfd = -1, .sock = -1, .ruleset = -1,
                .fn_pidfd = -1, .state = HOST_FREE, .binary_fd = open(path, O_PATH | O_CLOEXEC)};
    int sv[2], fds[HOST_NS_MAX + 2];
    int tmp_fd = -1, proc_fd = -1;   /* its /tmp and /proc, until the ruleset is made */
    size_t n_fds = 0;
    if (h->binary_fd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        buf_printf(why, "%s: %s", h->binary_fd < 0 ? "open the binary" : "socketpair",
                   strerror(errno));
        close_if(&h->binary_fd);
        free(h);
        return NULL;
    }
    pid_t launcher = fork();
    if (launcher == 0) {
        close(sv[0]);
        launch(v, sv[1]);
    }
    close(sv[1]);
    h->sock = sv[0];
    if (launcher < 0) {
        buf_printf(why, "fork: %s", strerror(errno));
        goto fail;
    }
    while (waitpid(launcher, NULL, 0) < 0 && errno == EINTR) {
    }
    host_msg m;
    for (int got = 0; got < 2; got++) {   /* the launcher's and the host's, in either order */
        if (host_recv(h->sock, &m, fds, HOST_NS_MAX + 2, &n_fds) < 0) {
            buf_append_str(why, "no answer");
            goto fail;
        }
        if (m.err) {
            buf_printf(why, "%s: %s", m.step, strerror(m.err));
            goto fail;
        }
        if (m.kind == MSG_PID) {
            h->pid = m.pid;
            if ((h->pidfd = (int)syscall(SYS_pidfd_open, h->pid, 0)) < 0) {
                buf_printf(why, "pidfd_open: %s", strerror(errno));
                goto fail;
            }
            continue;
        }
        int own_proc = (sandbox_layers(v) & SANDBOX_PROC) != 0;
        if (m.kind != MSG_READY || n_fds != (size_t)m.n_fds || m.n_fds < 5 + own_proc) {
            buf_append_str(why, "a bad answer");
            goto fail;
        }
        h->n_ns = m.n_fds - 1 - own_proc;
        memcpy(h->ns, fds, (size_t)h->n_ns * sizeof *fds);
        tmp_fd = fds[h->n_ns];
        proc_fd = own_proc ? fds[h->n_ns + 1] : -1;
        n_fds = 0;
        if (m.pid_counter_err)
            log_v(3, "sandbox keep: a host cannot set its pid counter back after a call: a "
                  "call's pids tell how many processes the calls before it made (open "
                  "/proc/sys/kernel/ns_last_pid: %s)", strerror(m.pid_counter_err));
    }
    if (h->pidfd < 0 || tmp_fd < 0) {
        buf_append_str(why, "a bad answer");
        goto fail;
    }
    const char *step = NULL;
    h->ruleset = sandbox_host_ruleset(v, path, tmp_fd, proc_fd, &step);
    close_if(&tmp_fd);   /* in the ruleset now: fewer descriptors a host */
    close_if(&proc_fd);
    if (h->ruleset < -1) {
        buf_printf(why, "%s: %s", step, strerror(-h->ruleset));
        h->ruleset = -1;
        goto fail;
    }
    /* the shared namespaces first (a user namespace, then what it owns),
     * then the host's: its user namespace, then those it owns */
    h->setup = (spawn_child_setup){.run = call_confine, .ctx = h, .envp = setup->envp};
    for (int i = 0; i < setup->n_join_ns; i++)
        h->setup.join_ns[h->setup.n_join_ns++] = setup->join_ns[i];
    for (int i = 0; i < h->n_ns; i++)
        h->setup.join_ns[h->setup.n_join_ns++] = h->ns[i];
    h->idle_since_ns = now_ns();
    return h;
fail:
    for (size_t i = 0; i < n_fds; i++)
        close(fds[i]);
    if (h->pid > 0) {
        kill(h->pid, SIGKILL);
        while (waitpid(h->pid, NULL, __WALL) < 0 && errno == EINTR) {
        }
    }
    close_if(&tmp_fd);
    close_if(&proc_fd);
    host_close(h);
    close_if(&h->pidfd);
    free(h);
    return NULL;
}

/* After its call: RESET asked; the spawner's loop reads the answer
 * (host_reset_done) while it serves other spawns. */
static void host_reset_ask(host *h)
{
    close_if(&h->fn_pidfd);
    char ask = ASK_RESET;
    if (send(h->sock, &ask, 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1) {
        host_kill(h, "its reset cannot be asked");
        return;
    }
    h->state = HOST_RESETTING;
    h->reset_deadline_ns = now_ns() + (int64_t)HOST_ANSWER_MS * 1000000;
}

/* Its socket is readable: the reset's answer, or the host is ended. */
static void host_reset_done(host *h)
{
    host_msg m;
    int fds[3];
    size_t n_fds;
    size_t own_proc = (sandbox_layers(h->v) & SANDBOX_PROC) != 0;
    if (host_recv(h->sock, &m, fds, 3, &n_fds) < 0 || m.kind != MSG_RESET_DONE ||
        n_fds != (m.err ? 0u : 2u + own_proc)) {
        for (size_t i = 0; i < n_fds; i++)
            close(fds[i]);
        host_kill(h, "it answered its reset wrongly");
        return;
    }
    if (m.err) {
        char why[HOST_STEP_MAX + 64];
        snprintf(why, sizeof why, "its reset failed at %s: %s", m.step, strerror(m.err));
        host_kill(h, why);
        return;
    }
    /* its new IPC namespace, which the next call joins */
    close(h->ns[h->n_ns - HOST_NS_IPC_FROM_END]);
    h->ns[h->n_ns - HOST_NS_IPC_FROM_END] = fds[0];
    h->setup.join_ns[h->setup.n_join_ns - HOST_NS_IPC_FROM_END] = fds[0];
    /* and its new /tmp, another inode: the ruleset made again */
    const char *step = NULL;
    char binary[32];
    snprintf(binary, sizeof binary, "/proc/self/fd/%d", h->binary_fd);
    int ruleset = sandbox_host_ruleset(h->v, binary, fds[1], own_proc ? fds[2] : -1, &step);
    close(fds[1]);
    if (own_proc)
        close(fds[2]);
    if (ruleset < -1) {
        char why[128];
        snprintf(why, sizeof why, "its ruleset cannot be made again: %s: %s", step,
                 strerror(-ruleset));
        host_kill(h, why);
        return;
    }
    close_if(&h->ruleset);
    h->ruleset = ruleset;
    h->state = HOST_FREE;
    h->idle_since_ns = now_ns();
}

/* A free host of v's for the binary (dev, ino): one free now, or one
 * whose reset is answered within HOST_RESET_WAIT_MS. NULL: none. */
static host *host_take(const sandbox *v, dev_t dev, ino_t ino)
{
    host *resetting = NULL;
    for (size_t i = 0; i < n_hosts; i++) {
        host *h = hosts[i];
        if (h->v != v || h->dev != dev || h->ino != ino)
            continue;
        if (h->state == HOST_FREE)
            return h;
        if (h->state == HOST_RESETTING && !resetting)
            resetting = h;
    }
    if (!resetting)
        return NULL;
    struct pollfd p = {.fd = resetting->sock, .events = POLLIN};
    if (poll(&p, 1, HOST_RESET_WAIT_MS) <= 0)
        return NULL;
    host_reset_done(resetting);
    return resetting->state == HOST_FREE ? resetting : NULL;
}

int sandbox_hosts_spawn(const sandbox *v, const char *path, int binary_fd, char *const *argv,
                        const int stdio[3], pid_t *pid, pid_t helpers[2], const char **step)
{
    helpers[0] = helpers[1] = 0;
    struct stat st;
    if (!v || (binary_fd >= 0 ? fstat(binary_fd, &st) : stat(path, &st)) < 0)
        return SANDBOX_HOSTS_FRESH;   /* the fresh spawn says why */
    host *h = host_take(v, st.st_dev, st.st_ino);
    if (!h) {
        if (sandbox_hosts_count() >= keep.max_hosts || n_hosts == SANDBOX_HOSTS_MAX) {
            log_v(3, "sandbox keep: all %zu hosts taken; %s spawned in a fresh sandbox",
                  keep.max_hosts, argv[0]);
            return SANDBOX_HOSTS_FRESH;
        }
        buf why = {0};
        h = host_make(v, path, st.st_dev, st.st_ino, &why);
        if (!h) {
            if (!make_failure_said++)
                log_warn("sandbox keep: cannot make a host for %s (%s); its calls get a fresh "
                         "sandbox each (said once)", argv[0], why.data ? why.data : "out of memory");
            buf_free(&why);
            return SANDBOX_HOSTS_FRESH;
        }
        buf_free(&why);
        hosts[n_hosts++] = h;
        log_v(3, "sandbox keep: host %d made for %s (%zu hosts of %zu)", (int)h->pid, argv[0],
              sandbox_hosts_count(), keep.max_hosts);
    }
    int fn_pidfd = -1;
    int err = spawn_in_group_as_sibling_pidfd(path, argv, NULL, stdio, &h->setup, pid, helpers,
                                              &fn_pidfd, step);
    if (err && *step && !strcmp(*step, "setns")) {   /* the host is not what it was */
        host_kill(h, "its namespaces cannot be joined");
        return SANDBOX_HOSTS_FRESH;
    }
    if (err || fn_pidfd < 0) {
        if (!err)
            close_if(&fn_pidfd);
        host_reset_ask(h);   /* what the failed spawn left, if anything */
        return err ? err : SANDBOX_HOSTS_FRESH;
    }
    h->state = HOST_BUSY;
    h->fn_pidfd = fn_pidfd;
    return 0;
}

size_t sandbox_hosts_pollfds(struct pollfd *p, size_t room)
{
    size_t n = 0;
    for (size_t i = 0; i < n_hosts && n + 2 <= room; i++) {
        p[n++] = (struct pollfd){.fd = hosts[i]->pidfd, .events = POLLIN};
        const host *h = hosts[i];
        p[n++] = (struct pollfd){.fd = h->state == HOST_BUSY ? h->fn_pidfd
                                       : h->state == HOST_RESETTING ? h->sock : -1,
                                 .events = POLLIN};
    }
    return n;
}

void sandbox_hosts_events(const struct pollfd *p, size_t n)
{
    /* p was filled from hosts[] in order, 2 a host: read back before any
     * is forgotten (which moves the last into its place) */
    host *seen[SANDBOX_HOSTS_MAX];
    short died[SANDBOX_HOSTS_MAX], ended[SANDBOX_HOSTS_MAX];
    size_t k = 0;
    for (size_t i = 0; i + 1 < n && k < n_hosts; i += 2, k++) {
        seen[k] = hosts[k];
        died[k] = p[i].revents;
        ended[k] = p[i + 1].revents;
    }
    for (size_t i = 0; i < k; i++) {
        host *h = seen[i];
        if (died[i]) {
            if (h->state != HOST_DYING)
                log_warn("sandbox keep: host %d exited unasked; its variant's next call makes "
                         "another", (int)h->pid);
            h->state = HOST_DYING;
            for (size_t j = 0; j < n_hosts; j++)
                if (hosts[j] == h) {
                    host_forget(j);
                    break;
                }
            continue;
        }
        if (ended[i] && h->state == HOST_BUSY)
            host_reset_ask(h);   /* its function exited */
        else if (ended[i] && h->state == HOST_RESETTING)
            host_reset_done(h);
    }
    int64_t now = now_ns();
    for (size_t i = 0; i < n_hosts; i++) {
        host *h = hosts[i];
        if (h->state == HOST_RESETTING && now >= h->reset_deadline_ns)
            host_kill(h, "it did not answer its reset");
        if (h->state == HOST_FREE && keep.idle_ns > 0 && now - h->idle_since_ns >= keep.idle_ns) {
            char ask = ASK_EXIT;
            (void)send(h->sock, &ask, 1, MSG_NOSIGNAL);
            host_kill(h, "idle");
        }
    }
}

int sandbox_hosts_timeout_ms(void)
{
    int64_t next = -1, now = now_ns();
    for (size_t i = 0; i < n_hosts; i++) {
        int64_t at = hosts[i]->state == HOST_RESETTING ? hosts[i]->reset_deadline_ns
                     : hosts[i]->state == HOST_FREE && keep.idle_ns > 0
                         ? (keep.idle_ns > INT64_MAX - hosts[i]->idle_since_ns
                                ? INT64_MAX : hosts[i]->idle_since_ns + keep.idle_ns)
                         : -1;
        if (at < 0)
            continue;
        int64_t left = at - now;
        if (left < 0)
            left = 0;
        if (next < 0 || left < next)
            next = left;
    }
    if (next < 0)
        return -1;
    int64_t ms = next / 1000000 + 1;
    return ms > INT_MAX ? INT_MAX : (int)ms;
}
