/* bench-standing: what a sandbox kept per function ("standing") would cost
 * a call, against spawning the function bare and today's sandboxed spawn
 * (issue 24; docs/sandbox.md, "Next: a sandbox kept per function").
 *
 * Why: a sandboxed spawn pays for its namespaces, mounts, Landlock rules
 * and seccomp filter, and its exit waits for the namespaces' teardown. A
 * sandbox made once per function and reused would pay the namespaces once;
 * this measures, before anything is built into serve, whether it would
 * meet the targets (1.2x of spawning bare, 1.05x of an unsandboxed
 * pre-started process). Four modes, each call a run of PROG with the input
 * written to its stdin and its stdout read to EOF, timed from the start
 * until the caller has the exit status:
 *
 *   a  bare: spawn_in_group (posix_spawn: vfork + exec), waitpid.
 *   b  sandboxed: today's spawn, spawn_in_group_setup with the sandbox of
 *      lib/runtime/sandbox (sandbox_start, --sandbox auto's layers).
 *   c  standing: one host process made at start in new user, mount, PID
 *      and IPC namespaces (below a user namespace owning an empty network
 *      namespace, as the shared one today), its tmpfs /tmp and /proc
 *      mounted once, not dumpable. Per call the caller sends it the
 *      function's three descriptors over a socket; it spawns the function
 *      (under the layers it took itself, or taking them: --layers), waits
 *      for it and sends the wait status back; then resets: kill(-1,
 *      SIGKILL) in its PID namespace and everything reaped, /tmp emptied
 *      (or a new tmpfs: --reset), System V IPC objects removed.
 *   d  the same, the function spawned in advance: the caller sends the
 *      next call's descriptors as a call starts, and the host spawns that
 *      process once it has reset (it waits on its stdin).
 *   e  bare, spawned in advance: as a starts, the next call's process is
 *      spawned (serve's --prespawn 1 --sandbox off).
 *
 *   bench-standing --cmd PROG --input FILE [--expect FILE] [--calls N]
 *                  [--rounds N] [--modes abcde] [--layers host|per-call]
 *                  [--reset empty|remount] [--ahead vfork|fork]
 *                  [--own-domain no|yes]
 *
 * --layers host (the default): the host takes no_new_privs, the Landlock
 * ruleset, the rlimits and the seccomp filter itself once set up, and the
 * functions it spawns inherit them (their child only execs); per-call: each
 * function's child takes them (landlock_restrict_self with the ruleset the
 * host made, rlimits, the filter's load). --reset empty (the default):
 * /tmp emptied after a call; remount: a new tmpfs, and a new ruleset for
 * it (with --layers per-call only: a confined host may not mount).
 * --ahead fork: d's processes started with fork, the host not held until
 * their exec as by vfork (with --layers host). --own-domain yes: with
 * --layers host, each call's child takes one more Landlock layer of its
 * own (own_domain), so that calls are apart as today.
 *
 * Modes alternate in rounds (--calls per mode over --rounds rounds). One
 * line per mode: mode=X calls=N errors=N p50_us p90_us mean_us, and for c
 * and d the host's reset (p50/p90), the caller's time from a status to
 * its next request (the reset is off the call's path when shorter), the
 * relay (from the host's waitpid to the caller having the status) and, for
 * d, how many statuses the host had just after starting the next process
 * (they waited behind that spawn). Exit
 * status 0 when every call gave the expected output and exit 0. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/fdio.h"
#include "core/numparse.h"
#include "core/spawn.h"
#include "runtime/sandbox.h"
#include "runtime/sandbox_landlock.h"
#include "runtime/sandbox_seccomp.h"
#include "stats.h"

#define INPUT_MAX 65536   /* written at once into the pipe: within its buffer */

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void die(const char *what)
{
    fprintf(stderr, "bench-standing: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* ---- the standing sandbox's host ------------------------------------------- */

typedef struct host_reply {
    int32_t status;        /* the function's wait status; -1: not spawned */
    int32_t err;           /* the spawn's errno */
    int64_t reset_ns;      /* the previous call's reset */
    int64_t reaped_ns;     /* when the host had the status (CLOCK_MONOTONIC) */
    int64_t spawned_ns;    /* when the host's spawn for this request returned */
} host_reply;

typedef struct host_state {
    const char *path;
    char *const *argv;
    sandbox_landlock ll;
    int ruleset;           /* for the current /tmp */
    struct sock_fprog bpf;
    int confined;          /* the host took the layers itself: its children inherit them */
    int remount;           /* reset: a new tmpfs on /tmp (else emptied) */
    int fork_ahead;        /* d's processes started with fork, not vfork */
    int own_domain;        /* a confined host's calls each take one more, empty, layer */
} host_state;

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fd_write_all(fd, text, strlen(text));
    close(fd);
    return rc;
}

/* Root of a new user namespace is our uid (gid) in the one above. */
static void map_ids(uid_t uid, gid_t gid)
{
    char map[48];
    if (write_file("/proc/self/setgroups", "deny") < 0)
        die("write setgroups");
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)uid);
    if (write_file("/proc/self/uid_map", map) < 0)
        die("write uid_map");
    snprintf(map, sizeof map, "0 %u 1\n", (unsigned)gid);
    if (write_file("/proc/self/gid_map", map) < 0)
        die("write gid_map");
}

static void mount_tmp(void)
{
    if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1024m,mode=1777") < 0)
        die("mount tmpfs on /tmp");
}

/* The ruleset for the /tmp mounted now (its root is a new inode). */
static void make_ruleset(host_state *h)
{
    const char *step;
    if (h->ruleset >= 0)
        close(h->ruleset);
    h->ruleset = sandbox_landlock_ruleset(&h->ll, h->path, &step);
    if (h->ruleset < 0) {
        errno = -h->ruleset;
        die(step);
    }
}

/* The layers a function runs under besides the namespaces: no_new_privs,
 * Landlock, rlimits, seccomp. */
static int confine(const host_state *h, const char **step)
{
    int err;
    *step = "no_new_privs";
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return errno;
    if ((err = sandbox_landlock_restrict(h->ruleset, step)))
        return err;
    const rlim_t mib = 1024 * 1024;
    struct rlimit limits[] = {{1024 * mib, 1024 * mib}, {300, 301}, {1024 * mib, 1024 * mib},
                              {1024, 1024}, {0, 0}};
    int resources[] = {RLIMIT_DATA, RLIMIT_CPU, RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_CORE};
    *step = "setrlimit";
    for (size_t i = 0; i < sizeof resources / sizeof *resources; i++)
        if (setrlimit(resources[i], &limits[i]) < 0)
            return errno;
    *step = "seccomp";
    return sandbox_seccomp_apply(&h->bpf);
}

/* In the function's child of a confined host (--own-domain): one more
 * Landlock layer, which refuses nothing a function needs (making block
 * devices), so that each call is a domain of its own: a sibling domain
 * may not ptrace it or open its /proc/PID/fd, as the next call's process,
 * started ahead, could be otherwise. */
static int own_domain(const void *ctx, const char *path, const char **step)
{
    (void)ctx;
    (void)path;
    struct landlock_ruleset_attr attr = {.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_BLOCK};
    *step = "landlock: landlock_create_ruleset";
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr.handled_access_fs, 0);
    if (ruleset < 0)
        return errno;
    int err = sandbox_landlock_restrict(ruleset, step);
    close(ruleset);
    return err;
}

/* In the function's child, when the host is not confined itself. */
static int function_setup(const void *ctx, const char *path, const char **step)
{
    (void)path;
    return confine(ctx, step);
}

/* Removes what is beneath the directory dir (held open), not dir. */
static void empty_dir(int dir)
{
    DIR *d = fdopendir(dup(dir));
    if (!d)
        die("fdopendir");
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (unlinkat(dir, e->d_name, 0) == 0)
            continue;
        int sub = openat(dir, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0)
            die("open a directory left in /tmp");
        empty_dir(sub);
        close(sub);
        if (unlinkat(dir, e->d_name, AT_REMOVEDIR) < 0)
            die("remove a directory left in /tmp");
    }
    closedir(d);
}

/* System V IPC objects left in our IPC namespace: removed. */
static void remove_ipc(void)
{
    static const struct { const char *list; int kind; } kinds[] = {
        {"/proc/sysvipc/shm", 0}, {"/proc/sysvipc/sem", 1}, {"/proc/sysvipc/msg", 2}};
    for (size_t k = 0; k < 3; k++) {
        buf text = {0};
        if (file_read_all(kinds[k].list, &text, 0) < 0)
            continue;
        char *line = strchr(text.data ? text.data : "", '\n');   /* past the header */
        while (line && *++line) {
            int key, id;
            if (sscanf(line, "%d %d", &key, &id) == 2) {
                if (kinds[k].kind == 0)
                    shmctl(id, IPC_RMID, NULL);
                else if (kinds[k].kind == 1)
                    semctl(id, 0, IPC_RMID);
                else
                    msgctl(id, IPC_RMID, NULL);
            }
            line = strchr(line, '\n');
        }
        buf_free(&text);
    }
}

/* Every process of our PID namespace but us and spared (the next call's,
 * waiting) killed and reaped: listed from our /proc again until none is
 * left (one forking while listed shows in the next listing). */
static void kill_all_but(pid_t spared)
{
    for (int left = 1; left;) {
        left = 0;
        DIR *d = opendir("/proc");
        if (!d)
            die("opendir /proc");
        struct dirent *e;
        while ((e = readdir(d))) {
            char *end;
            long pid = strtol(e->d_name, &end, 10);
            if (*end || pid <= 1 || pid == spared)
                continue;
            kill((pid_t)pid, SIGKILL);
            /* ours, reaped; one whose parent was killed is ours at the next
             * listing. Not waitpid(-1): spared may have ended meanwhile, and
             * its status is the next call's. */
            while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR) {
            }
            left = 1;
        }
        closedir(d);
    }
}

/* Everything of the last call gone: every other process of our PID
 * namespace killed and reaped, a fresh /tmp, no System V IPC object. */
static void reset(host_state *h, int tmp, pid_t spared)
{
    if (spared) {
        kill_all_but(spared);
    } else {
        kill(-1, SIGKILL);
        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR) {
        }
    }
    if (h->remount) {
        if (umount2("/tmp", MNT_DETACH) < 0)
            die("umount /tmp");
        mount_tmp();
        make_ruleset(h);   /* its root is a new inode */
    } else {
        empty_dir(tmp);
    }
    remove_ipc();
}

/* Receives one request: its kind ('c': run now, 'd': start ahead and end
 * the one started before, 'e': end that one), with three descriptors for
 * c and d. 0 at the caller's end. */
static char receive_call(int sock, int fds[3])
{
    char kind;
    char control[CMSG_SPACE(3 * sizeof(int))];
    struct iovec iov = {.iov_base = &kind, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    ssize_t n;
    while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (n <= 0)
        return 0;
    if (kind == 'e')
        return kind;
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(3 * sizeof(int))) {
        errno = EPROTO;
        die("host: a request without three descriptors");
    }
    memcpy(fds, CMSG_DATA(c), 3 * sizeof(int));
    return kind;
}

static void wait_for(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0)
        if (errno != EINTR)
            die("host: waitpid");
}

/* The process for the next call, started with fork (the host goes on at
 * once: it is not held until the exec, as by vfork) when the host has taken
 * the layers itself. 0 or an errno. */
static int fork_exec(const host_state *h, const int fds[3], pid_t *pid)
{
    if (!h->confined)
        return EINVAL;
    *pid = fork();
    if (*pid < 0)
        return errno;
    if (*pid == 0) {
        setpgid(0, 0);
        for (int i = 0; i < 3; i++)
            if (dup2(fds[i], i) < 0)
                _exit(127);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execv(h->path, h->argv);
        _exit(127);
    }
    return 0;
}

static void host_loop(int sock, host_state *h) __attribute__((noreturn));
static void host_loop(int sock, host_state *h)
{
    spawn_child_setup setup = {.run = h->confined ? own_domain : function_setup, .ctx = h};
    int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (tmp < 0)
        die("open /tmp");
    int64_t reset_ns = 0;
    pid_t ahead = 0;   /* started for a call not yet ended (d) */
    int fds[3];
    char kind;
    while ((kind = receive_call(sock, fds))) {
        host_reply r = {.status = -1, .reset_ns = reset_ns};
        pid_t pid = 0, ended;
        const char *step;
        if (kind != 'e') {
            r.err = kind == 'd' && h->fork_ahead ? fork_exec(h, fds, &pid)
                    : h->confined && !h->own_domain
                        ? spawn_in_group(h->path, 0, h->argv, NULL, fds, &pid)
                        : spawn_in_group_setup(h->path, h->argv, NULL, fds, &setup, &pid, &step);
            for (int i = 0; i < 3; i++)
                close(fds[i]);
            r.spawned_ns = now_ns();
        }
        if (kind == 'c') {
            ended = r.err ? 0 : pid;
            pid = 0;
        } else {   /* the process started before ends this call; pid waits */
            ended = ahead;
            ahead = r.err ? 0 : pid;
            if (!ended)
                continue;   /* the first of a round: nothing to end yet */
            r.err = 0;
        }
        if (ended)
            wait_for(ended, &r.status);
        r.reaped_ns = now_ns();
        if (send(sock, &r, sizeof r, MSG_NOSIGNAL) != sizeof r)
            _exit(0);
        int64_t t0 = now_ns();
        reset(h, tmp, ahead);
        reset_ns = now_ns() - t0;
    }
    _exit(0);
}

/* The host: PID 1 of new user, mount, PID and IPC namespaces below a user
 * namespace that owns a new (empty) network namespace. Returns the socket
 * to it. */
static int start_host(const char *path, char *const *argv, int confined, int remount,
                      int fork_ahead, int own)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        die("socketpair");
    uid_t uid = geteuid();
    gid_t gid = getegid();
    pid_t middle = fork();
    if (middle < 0)
        die("fork");
    if (middle > 0) {
        close(sv[1]);
        return sv[0];
    }
    close(sv[0]);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
        die("unshare the shared user and network namespaces");
    map_ids(uid, gid);
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) < 0)
        die("unshare the host's namespaces");
    map_ids(0, 0);
    pid_t host = fork();
    if (host < 0)
        die("fork the host");
    if (host > 0) {   /* holds nothing: waits for the host, as long as it lives */
        close(sv[1]);
        int status;
        while (waitpid(host, &status, 0) < 0 && errno == EINTR) {
        }
        _exit(0);
    }
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        die("mount --make-rprivate /");
    mount_tmp();
    if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        die("mount proc");
    if (write_file("/proc/sys/kernel/pid_max", "1025") < 0)
        die("write pid_max");
    prctl(PR_SET_DUMPABLE, 0);
    static const char *const roots[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                        "/libx32", "/etc", "/opt", "/proc", "/sys"};
    static host_state h = {.ruleset = -1};
    h.path = path;
    h.argv = argv;
    h.ll.abi = sandbox_landlock_abi();
    if (h.ll.abi < 1)
        die("no Landlock here");
    for (size_t i = 0; i < sizeof roots / sizeof *roots; i++)
        h.ll.read[h.ll.n_read++] = roots[i];
    h.ll.writable = "/tmp";
    if (!(h.ll.held = sandbox_landlock_paths_new()))
        die("out of memory");
    const char *step;
    int err = sandbox_landlock_prepare(&h.ll, &step);
    if (err) {
        errno = err;
        die(step);
    }
    make_ruleset(&h);
    buf why = {0};
    if (sandbox_seccomp_build(0, &h.bpf, &why) < 0) {
        fprintf(stderr, "bench-standing: seccomp: %s\n", why.data ? why.data : "?");
        exit(1);
    }
    h.confined = confined;
    h.remount = remount && !confined;   /* a confined host may not mount */
    h.fork_ahead = fork_ahead && confined;
    h.own_domain = own && confined;
    if (confined && (err = confine(&h, &step))) {
        errno = err;
        die(step);
    }
    host_loop(sv[1], &h);
}

/* ---- the caller ----------------------------------------------------------- */

typedef struct opts {
    const char *cmd, *input, *expect, *modes;
    unsigned long long calls, rounds;
    int per_call_layers;   /* --layers per-call: each function's child takes them */
    int remount;           /* --reset remount */
    int fork_ahead;        /* --ahead fork */
    int own_domain;        /* --own-domain yes */
} opts;

typedef struct call_io {   /* our ends, and the function's three */
    int in, out;           /* its stdin's write end, its stdout's read end */
    int theirs[3];
} call_io;

static char *const *fn_argv;
static const char *fn_path;
static buf input, expected;
static int dev_null;
static const spawn_child_setup *sandboxed;
static int host = -1;

static void open_io(call_io *io)
{
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        die("pipe");
    *io = (call_io){.in = in[1], .out = out[0], .theirs = {in[0], out[1], dev_null}};
}

static void close_theirs(call_io *io)
{
    close(io->theirs[0]);
    close(io->theirs[1]);
}

static void send_io(call_io *io, char kind)
{
    char byte = kind;
    char control[CMSG_SPACE(3 * sizeof(int))] = {0};
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(3 * sizeof(int));
    memcpy(CMSG_DATA(c), io->theirs, 3 * sizeof(int));
    if (sendmsg(host, &msg, MSG_NOSIGNAL) < 0)
        die("send to the host");
    close_theirs(io);
}

/* Input in, output read to EOF; whether it is the expected one. */
static int exchange(call_io *io, const buf *want)
{
    static buf got;
    buf_reset(&got);
    int ok = fd_write_all(io->in, input.data, input.len) == 0;
    close(io->in);
    ok &= fd_read_all(io->out, &got, 0) == 0;
    close(io->out);
    return ok && got.len == want->len && !memcmp(got.data, want->data, got.len);
}

static int host_status(host_reply *r)
{
    ssize_t n;
    while ((n = recv(host, r, sizeof *r, 0)) < 0 && errno == EINTR) {
    }
    if (n != sizeof *r) {
        errno = n < 0 ? errno : EPROTO;
        die("the host's answer");
    }
    return !r->err && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0;
}

static int wait_status(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            die("waitpid");
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

typedef struct mode_stats {
    int64_t *lat, *reset, *gap, *relay;
    size_t n, n_reset, n_gap, n_relay;
    unsigned long long errors;
    unsigned long long behind_spawn;   /* statuses had just after the host's spawn (d) */
} mode_stats;

static int64_t last_status_ns;   /* when the caller last had a host's status */

static void note_reply(mode_stats *m, const host_reply *r, int64_t asked_ns)
{
    if (r->reset_ns > 0)
        m->reset[m->n_reset++] = r->reset_ns;
    if (last_status_ns)
        m->gap[m->n_gap++] = asked_ns - last_status_ns;
    last_status_ns = now_ns();
    m->relay[m->n_relay++] = last_status_ns - r->reaped_ns;
    /* reaped within 20 us of the spawn's end: the process had ended while
     * the host was starting the next one, its status waited */
    m->behind_spawn += r->spawned_ns && r->reaped_ns - r->spawned_ns < 20000;
}

/* One call of mode a, b or c; its time, and ok. */
static int64_t one_call(char mode, mode_stats *m, int *ok)
{
    call_io io;
    int64_t t0 = now_ns();
    open_io(&io);
    if (mode == 'c') {
        send_io(&io, 'c');
        *ok = exchange(&io, &expected);
        host_reply r;
        *ok &= host_status(&r);
        int64_t took = now_ns() - t0;
        note_reply(m, &r, t0);
        return took;
    }
    pid_t pid;
    const char *step;
    int err = mode == 'a' ? spawn_in_group(fn_path, 0, fn_argv, NULL, io.theirs, &pid)
                          : spawn_in_group_setup(fn_path, fn_argv, NULL, io.theirs, sandboxed, &pid,
                                                 &step);
    close_theirs(&io);
    if (err) {
        errno = err;
        die("spawn");
    }
    *ok = exchange(&io, &expected);
    *ok &= wait_status(pid);
    return now_ns() - t0;
}

/* A process for the next call, started now: by the host (d) or here, bare
 * (e). Its pid for e. */
static pid_t start_ahead(char mode, call_io *io)
{
    open_io(io);
    if (mode == 'd') {
        send_io(io, 'd');
        return 0;
    }
    pid_t pid;
    int err = spawn_in_group(fn_path, 0, fn_argv, NULL, io->theirs, &pid);
    close_theirs(io);
    if (err) {
        errno = err;
        die("spawn");
    }
    return pid;
}

static void run_round(char mode, unsigned long long calls, mode_stats *m)
{
    last_status_ns = 0;
    if (mode != 'd' && mode != 'e') {
        for (unsigned long long i = 0; i < calls + 2; i++) {   /* 2 warm-up calls */
            int ok;
            int64_t took = one_call(mode, m, &ok);
            if (i >= 2) {
                m->lat[m->n++] = took;
                m->errors += !ok;
            }
        }
        return;
    }
    call_io waiting;   /* the process spawned in advance */
    pid_t waiting_pid = start_ahead(mode, &waiting);
    for (unsigned long long i = 0; i < calls + 2; i++) {
        int64_t t0 = now_ns();
        call_io next;
        pid_t next_pid = start_ahead(mode, &next);   /* its replacement, as the call takes it */
        int ok = exchange(&waiting, &expected);
        host_reply r;
        if (mode == 'd')
            ok &= host_status(&r);
        else
            ok &= wait_status(waiting_pid);
        int64_t took = now_ns() - t0;
        if (mode == 'd')
            note_reply(m, &r, t0);
        if (i >= 2) {
            m->lat[m->n++] = took;
            m->errors += !ok;
        }
        waiting = next;
        waiting_pid = next_pid;
    }
    close(waiting.in);   /* the last one ends at EOF, its output dropped */
    static buf drop;
    fd_read_all(waiting.out, &drop, 0);
    close(waiting.out);
    host_reply r;
    if (mode == 'd') {
        char end = 'e';
        if (send(host, &end, 1, MSG_NOSIGNAL) != 1)
            die("send to the host");
        host_status(&r);
    } else {
        wait_status(waiting_pid);
    }
}

static double at(int64_t *v, size_t n, double q)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, bench_cmp_i64);
    size_t i = (size_t)(q * (double)n);
    return (double)v[i < n ? i : n - 1] / 1e3;
}

static void report(char mode, mode_stats *m)
{
    double sum = 0;
    for (size_t i = 0; i < m->n; i++)
        sum += (double)m->lat[i];
    printf("mode=%c calls=%zu errors=%llu p50_us=%.1f p90_us=%.1f mean_us=%.1f", mode, m->n,
           m->errors, at(m->lat, m->n, 0.5), at(m->lat, m->n, 0.9),
           m->n ? sum / (double)m->n / 1e3 : 0.0);
    if (m->n_reset)
        printf(" reset_p50_us=%.1f reset_p90_us=%.1f next_ask_p50_us=%.1f relay_p50_us=%.1f "
               "relay_p90_us=%.1f behind_spawn=%llu", at(m->reset, m->n_reset, 0.5),
               at(m->reset, m->n_reset, 0.9), at(m->gap, m->n_gap, 0.5),
               at(m->relay, m->n_relay, 0.5), at(m->relay, m->n_relay, 0.9), m->behind_spawn);
    printf("\n");
}

static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){.cmd = "cat", .modes = "abcde", .calls = 1000, .rounds = 10};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *name = argv[i], *value = argv[i + 1];
        if (!strcmp(name, "--calls") || !strcmp(name, "--rounds")) {
            if (parse_uint(value, 1000000, !strcmp(name, "--calls") ? &o->calls : &o->rounds) < 0)
                return -1;
        } else if (!strcmp(name, "--cmd")) {
            o->cmd = value;
        } else if (!strcmp(name, "--input")) {
            o->input = value;
        } else if (!strcmp(name, "--expect")) {
            o->expect = value;
        } else if (!strcmp(name, "--modes")) {
            o->modes = value;
        } else if (!strcmp(name, "--layers") &&
                   (!strcmp(value, "per-call") || !strcmp(value, "host"))) {
            o->per_call_layers = !strcmp(value, "per-call");
        } else if (!strcmp(name, "--own-domain") && (!strcmp(value, "yes") || !strcmp(value, "no"))) {
            o->own_domain = !strcmp(value, "yes");
        } else if (!strcmp(name, "--ahead") && (!strcmp(value, "fork") || !strcmp(value, "vfork"))) {
            o->fork_ahead = !strcmp(value, "fork");
        } else if (!strcmp(name, "--reset") &&
                   (!strcmp(value, "remount") || !strcmp(value, "empty"))) {
            o->remount = !strcmp(value, "remount");
        } else {
            return -1;
        }
    }
    if (argc % 2 == 0 || !o->input || !o->calls || !o->rounds || o->calls < o->rounds ||
        strspn(o->modes, "abcde") != strlen(o->modes))
        return -1;
    return 0;
}

/* PROG as an absolute path (spawns with a setup never search PATH). */
static char *resolve(const char *cmd)
{
    if (strchr(cmd, '/'))
        return realpath(cmd, NULL);
    const char *path = getenv("PATH");
    for (const char *p = path ? path : "/usr/bin:/bin"; *p; p += *p == ':') {
        size_t n = strcspn(p, ":");
        char full[4096];
        snprintf(full, sizeof full, "%.*s/%s", (int)n, p, cmd);
        if (access(full, X_OK) == 0)
            return realpath(full, NULL);
        p += n;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_args(argc, argv, &o) < 0) {
        fprintf(stderr, "usage: bench-standing --cmd PROG --input FILE [--expect FILE] "
                        "[--calls N] [--rounds N (<= calls)] [--modes abcde] "
                        "[--layers host|per-call] [--reset empty|remount] [--ahead vfork|fork] "
                        "[--own-domain no|yes]\n");
        return 2;
    }
    static char *path;
    if (!(path = resolve(o.cmd))) {
        fprintf(stderr, "bench-standing: %s: not found\n", o.cmd);
        return 2;
    }
    fn_path = path;
    static char *args[2];
    args[0] = (char *)o.cmd;
    fn_argv = args;
    if (file_read_all(o.input, &input, INPUT_MAX) < 0 ||
        file_read_all(o.expect ? o.expect : o.input, &expected, 0) < 0)
        die(o.input);
    if ((dev_null = open("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
        die("/dev/null");
    signal(SIGPIPE, SIG_IGN);
    if (strchr(o.modes, 'b')) {
        sandbox_config cfg = {.mode = SANDBOX_AUTO, .limits = SANDBOX_DEFAULT_LIMITS};
        buf why = {0};
        sandbox *sb = sandbox_start(&cfg, &why);
        if (!sb || !(sandboxed = sandbox_child_setup(sb))) {
            fprintf(stderr, "bench-standing: sandbox: %s\n", why.data ? why.data : "no layer");
            return 1;
        }
    }
    if (strpbrk(o.modes, "cd"))
        host = start_host(fn_path, fn_argv, !o.per_call_layers, o.remount, o.fork_ahead,
                          o.own_domain);
    size_t n_modes = strlen(o.modes);
    mode_stats *stats = calloc(n_modes, sizeof *stats);
    for (size_t k = 0; stats && k < n_modes; k++) {
        stats[k].lat = calloc(o.calls + o.rounds * 2, sizeof(int64_t));
        stats[k].reset = calloc(o.calls + o.rounds * 4, sizeof(int64_t));
        stats[k].gap = calloc(o.calls + o.rounds * 4, sizeof(int64_t));
        stats[k].relay = calloc(o.calls + o.rounds * 4, sizeof(int64_t));
        if (!stats[k].lat || !stats[k].reset || !stats[k].gap || !stats[k].relay)
            stats = NULL;
    }
    if (!stats)
        die("out of memory");
    for (unsigned long long r = 0; r < o.rounds; r++)
        for (size_t k = 0; k < n_modes; k++)
            run_round(o.modes[k], o.calls / o.rounds, &stats[k]);
    unsigned long long errors = 0;
    for (size_t k = 0; k < n_modes; k++) {
        report(o.modes[k], &stats[k]);
        errors += stats[k].errors;
    }
    return errors ? 1 : 0;
}
