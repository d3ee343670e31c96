/* orphans: finding and killing what functions leave behind; see orphans.h. */
#include "runtime/orphans.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "grpc/metrics.h"

#define ORPHANS_PER_PASS 256   /* unowned children judged (stat read) per pass */
#define ORPHANS_CHILDREN "/proc/thread-self/children"

static struct {
    /* Our children list, kept open: a pread from 0 regenerates it, so the
     * per-call check is one syscall. -1: not opened (then opened per use);
     * children_missing: the kernel has no such file, scan /proc instead. */
    int children_fd;
    int children_missing;
    int pass_wanted;        /* a stray was reaped or an orphan waits for a call */
    int foreign_proc;       /* /proc numbers another PID namespace's processes */
    /* Orphans killed and not reaped yet: a later pass must not kill, log or
     * count them again. They are our children, so their pids stay theirs. */
    pid_t *killed;
    size_t n_killed, cap_killed;
} orph = {.children_fd = -1};

/* ---- set-up --------------------------------------------------------------- */

static int open_children_list(void)
{
    int fd = open(ORPHANS_CHILDREN, O_RDONLY | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        orph.children_missing = 1;
    return fd;
}

/* /proc shows pids as its mounter's PID namespace numbers them, kill()
 * takes ours: a container without its own /proc mount (unshare --pid
 * without --mount-proc) would have us kill by the wrong numbers. */
static int proc_is_ours(void)
{
    char link[32];
    ssize_t n = readlink("/proc/self", link, sizeof link - 1);
    if (n <= 0)
        return 1;   /* no /proc: the listing fails and says so */
    link[n] = '\0';
    return strtol(link, NULL, 10) == (long)getpid();
}

void orphans_adopt(void)
{
    if (!proc_is_ours()) {
        orph.foreign_proc = 1;
        log_warn("/proc belongs to another PID namespace: processes functions leave behind "
                 "are reaped but not killed (mount /proc in the container)");
        return;
    }
    /* As PID 1 every orphan of the namespace is ours already. */
    if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
        log_warn("prctl(PR_SET_CHILD_SUBREAPER): %s; processes functions leave behind go to "
                 "init instead of being killed", strerror(errno));
    if (orph.children_fd < 0 && !orph.children_missing) {
        orph.children_fd = open_children_list();
        if (orph.children_fd < 0 && !orph.children_missing)
            log_warn("open %s: %s", ORPHANS_CHILDREN, strerror(errno));
    }
    if (orph.children_missing)
        log_v(3, "%s is missing (kernel without CONFIG_PROC_CHILDREN): orphans are found by "
              "scanning /proc", ORPHANS_CHILDREN);
}

void orphans_close(void)
{
    if (orph.children_fd >= 0)
        close(orph.children_fd);
    orph.children_fd = -1;
    free(orph.killed);
    orph.killed = NULL;
    orph.n_killed = orph.cap_killed = 0;
}

int64_t orphans_clock_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
        return 0;   /* cannot happen on Linux; 0 makes every orphan "maybe owned" */
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- our children ---------------------------------------------------------- */

typedef int child_fn(pid_t pid, void *ctx);   /* nonzero: stop the walk */

/* Calls fn for each pid in our children list, read in chunks (a number cut
 * by a chunk's end is carried over). Returns how many pids, or -1 (errno)
 * when the list cannot be read. */
static long children_walk(child_fn *fn, void *ctx)
{
    int fd = orph.children_fd >= 0 ? orph.children_fd : open_children_list();
    if (fd < 0)
        return -1;
    char chunk[4096];
    long count = 0, pid = 0;
    int in_number = 0, stop = 0;
    off_t off = 0;
    for (;;) {
        ssize_t n = pread(fd, chunk, sizeof chunk, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            if (fd != orph.children_fd)
                close(fd);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        off += n;
        for (ssize_t i = 0; i < n && !stop; i++) {
            if (chunk[i] >= '0' && chunk[i] <= '9') {
                pid = pid * 10 + (chunk[i] - '0');
                in_number = 1;
            } else if (in_number) {
                count++;
                stop = fn && fn((pid_t)pid, ctx);
                pid = 0;
                in_number = 0;
            }
        }
        if (stop)
            break;
    }
    if (in_number && !stop) {
        count++;
        if (fn)
            fn((pid_t)pid, ctx);
    }
    if (fd != orph.children_fd)
        close(fd);
    return count;
}

/* The fields of /proc/PID/stat a pass needs. */
typedef struct proc_info {
    char state;
    pid_t ppid;
    unsigned long long start_ticks;
    char comm[32];
} proc_info;

static int read_stat(pid_t pid, proc_info *pi)
{
    char path[32], text[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, text, sizeof text - 1);
    int e = errno;
    close(fd);
    if (n <= 0) {
        errno = n < 0 ? e : ENODATA;
        return -1;
    }
    text[n] = '\0';
    /* "pid (comm) S ppid ...": comm may hold anything, ')' included, so the
     * fields start after the last ')'. */
    char *open_paren = strchr(text, '('), *close_paren = strrchr(text, ')');
    if (!open_paren || !close_paren || close_paren < open_paren) {
        errno = EPROTO;
        return -1;
    }
    snprintf(pi->comm, sizeof pi->comm, "%.*s", (int)(close_paren - open_paren - 1),
             open_paren + 1);
    /* after ')': field 3 (state), 4 (ppid), ... 22 (starttime) */
    char *p = close_paren + 1, *end;
    int ppid = 0;
    if (sscanf(p, " %c %d", &pi->state, &ppid) != 2) {
        errno = EPROTO;
        return -1;
    }
    pi->ppid = ppid;
    for (int field = 3; field < 22; field++) {
        p = strchr(p + 1, ' ');
        if (!p) {
            errno = EPROTO;
            return -1;
        }
    }
    errno = 0;
    pi->start_ticks = strtoull(p + 1, &end, 10);
    if (errno || end == p + 1) {
        errno = EPROTO;
        return -1;
    }
    return 0;
}

/* Without a children list: every process of our PID namespace whose parent
 * is us. Same contract as children_walk. */
static long children_scan(child_fn *fn, void *ctx)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    pid_t self = getpid();
    long count = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        proc_info pi;
        if (*end || pid <= 0 || read_stat((pid_t)pid, &pi) < 0 || pi.ppid != self)
            continue;
        count++;
        if (fn && fn((pid_t)pid, ctx))
            break;
    }
    closedir(d);
    return count;
}

static long children_each(child_fn *fn, void *ctx)
{
    long n = orph.children_missing ? -1 : children_walk(fn, ctx);
    if (n < 0 && orph.children_missing)
        n = children_scan(fn, ctx);
    return n;
}

/* ---- the killed set --------------------------------------------------------- */

static int killed_has(pid_t pid)
{
    for (size_t i = 0; i < orph.n_killed; i++)
        if (orph.killed[i] == pid)
            return 1;
    return 0;
}

static void killed_add(pid_t pid)
{
    if (orph.n_killed == orph.cap_killed) {
        size_t cap = orph.cap_killed ? orph.cap_killed * 2 : 16;
        pid_t *grown = realloc(orph.killed, cap * sizeof *grown);
        if (!grown)
            return;   /* it may be logged and counted twice; it is killed all the same */
        orph.killed = grown;
        orph.cap_killed = cap;
    }
    orph.killed[orph.n_killed++] = pid;
}

void orphans_reaped(pid_t pid)
{
    orph.pass_wanted = 1;   /* its children are ours now */
    for (size_t i = 0; i < orph.n_killed; i++)
        if (orph.killed[i] == pid) {
            orph.killed[i] = orph.killed[--orph.n_killed];
            return;
        }
}

/* ---- a pass -------------------------------------------------------------------- */

typedef struct pass {
    const orphans_owners *owners;
    int64_t oldest_ns;          /* asked on the first unowned child */
    int asked;
    long ns_per_tick;
    int judged, waiting;
} pass;

static void kill_orphan(pid_t pid, const proc_info *pi)
{
    if (kill(pid, SIGKILL) < 0) {
        log_error("kill(%d, SIGKILL) of a process a function left behind: %s", (int)pid,
                  strerror(errno));
        return;
    }
    log_v(3, "killed process %d (%s), left behind by a function", (int)pid, pi->comm);
    metrics_orphan_killed();
    killed_add(pid);
}

static int pass_judge(pid_t pid, void *ctx)
{
    pass *ps = ctx;
    if (ps->owners->is_function(pid) || killed_has(pid))
        return 0;
    if (ps->judged++ == ORPHANS_PER_PASS) {
        ps->waiting++;   /* the rest next pass */
        return 1;
    }
    proc_info pi;
    if (read_stat(pid, &pi) < 0) {
        log_error("read /proc/%d/stat: %s", (int)pid, strerror(errno));
        return 0;
    }
    if (pi.state == 'Z' || pi.state == 'X')
        return 0;   /* dead already; reaping it brings the next pass */
    if (!ps->asked) {
        ps->oldest_ns = ps->owners->oldest_call_ns();
        ps->asked = 1;
    }
    /* Compared in whole ticks, as the kernel rounds (down) a start time: a
     * process started in the same tick as the oldest call may be its own. */
    if (ps->oldest_ns != INT64_MAX &&
        pi.start_ticks >= (unsigned long long)(ps->oldest_ns / ps->ns_per_tick)) {
        ps->waiting++;
        return 0;
    }
    kill_orphan(pid, &pi);
    return 0;
}

static void orphans_pass(const orphans_owners *owners)
{
    long hz = sysconf(_SC_CLK_TCK);
    pass ps = {.owners = owners, .ns_per_tick = hz > 0 ? 1000000000L / hz : 10000000L};
    if (children_each(pass_judge, &ps) < 0) {
        /* said once as an error: it would repeat on every call */
        static int said;
        if (!said++)
            log_error("cannot list our child processes (%s): %s",
                      orph.children_missing ? "/proc" : ORPHANS_CHILDREN, strerror(errno));
        return;
    }
    orph.pass_wanted = ps.waiting > 0;
}

/* ---- when to pass -------------------------------------------------------------- */

static int any_child(void)
{
    siginfo_t si;
    /* WNOWAIT: only look; fn_job_reap reaps, so each status reaches its job. */
    for (;;) {
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
            return 1;
        if (errno != EINTR)
            return 0;   /* ECHILD */
    }
}

/* Could a child of ours be something other than a live function? Cheap:
 * with no function alive, any child is; else compare the number of our
 * children with the number of functions (each is one of them, until we
 * reap it). */
static int stray_possible(const orphans_owners *owners)
{
    if (owners->functions == 0)
        return any_child();
    if (orph.children_missing)
        return 0;   /* counting would mean scanning /proc on every call */
    long n = children_walk(NULL, NULL);
    return n < 0 || (size_t)n > owners->functions;
}

int orphans_left(void)
{
    return !orph.foreign_proc && any_child();
}

void orphans_check(const orphans_owners *owners)
{
    if (orph.foreign_proc)
        return;
    if (orph.pass_wanted || stray_possible(owners))
        orphans_pass(owners);
}
