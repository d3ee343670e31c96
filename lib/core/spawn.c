/* spawn: a program in its own process group; see spawn.h. */
#include "core/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sched_attr.h"

/* <linux/futex.h>'s value: the static (musl) build has no kernel headers */
#ifndef FUTEX_WAIT
#define FUTEX_WAIT 0
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define SPAWN_JOINER_SLICE_NS 100000   /* the shortest the kernel takes */

/* Under AddressSanitizer the child's frames poison the shadow of its stack
 * (redzones), and nothing clears that when the stack is unmapped: the next
 * mapping at that address (a connection's read buffer) would be reported
 * as a stack overflow. The stack's shadow is cleared before the unmap. */
#if defined(__SANITIZE_ADDRESS__)
#define SPAWN_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPAWN_ASAN 1
#endif
#endif
#ifdef SPAWN_ASAN
#include <sanitizer/asan_interface.h>

#define stack_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define stack_unpoison(p, n) ((void)(p), (void)(n))
#endif

extern char **environ;

int spawn_in_group(const char *path, int search_path, char *const *argv, char *const *envp,
                   const int stdio[3], pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc)
        return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    sigemptyset(&none);
    sigfillset(&defaults);
    for (int i = 0; i < 3 && !rc; i++)
        rc = posix_spawn_file_actions_adddup2(&fa, stdio[i], i);
    if (rc ||
        (rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                  POSIX_SPAWN_SETSIGDEF)) ||
        (rc = posix_spawnattr_setpgroup(&attr, 0)) ||
        (rc = posix_spawnattr_setsigmask(&attr, &none)) ||
        (rc = posix_spawnattr_setsigdefault(&attr, &defaults)))
        goto out;
    rc = (search_path ? posix_spawnp : posix_spawn)(pid, path, &fa, &attr, argv, envp ? envp : environ);
out:
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* ---- with a child setup: clone, as posix_spawn does it, plus the hook -- */

/* What the child is given, and where it leaves why it failed: it shares
 * our memory (CLONE_VM) until it execs or exits. */
typedef struct child_args {
    const char *path;
    char *const *argv, *const *envp;
    const int *stdio;
    const spawn_child_setup *setup;
    char *exec_stack;   /* top of the stack of the child that execs, made by
                           the first one when it joins namespaces */
    int err;
    const char *step;
    pid_t pid;          /* the child that execs, when the first one made it
                           (the kernel stores it: CLONE_PARENT_SETTID) */
    pid_t exec_tid;     /* -1 until that child execs or exits: the kernel
                           clears it then and wakes us (CLONE_CHILD_CLEARTID) */
    int want_pidfd;     /* the second child made with CLONE_PIDFD ... */
    int pidfd;          /* ... which the kernel stores here (our table: CLONE_FILES) */
    int short_slice;    /* the child that execs inherits a short slice (ours, or the
                           first child's: set_slice) and sets the default back */
} child_args;

#define CHILD_STACK_SIZE (256 * 1024)   /* the setup's frames; ASan's are larger */

/* stdio[i] on descriptor i. One already there keeps its number and loses
 * close-on-exec, as posix_spawn's dup2 action does. */
static int child_stdio(const int stdio[3])
{
    for (int i = 0; i < 3; i++) {
        if (stdio[i] == i) {
            int flags = fcntl(i, F_GETFD);
            if (flags < 0 || fcntl(i, F_SETFD, flags & ~FD_CLOEXEC) < 0)
                return errno;
        } else if (dup2(stdio[i], i) < 0) {
            return errno;
        }
    }
    return 0;
}

/* Our scheduler slice, in ns (0: the kernel's default), policy and nice
 * value kept. Linux 6.12+ only (older kernels ignore it); a refusal costs
 * nothing but the gain, so it is not checked. */
static void set_slice(uint64_t slice_ns)
{
#ifdef SYS_sched_setattr
    krm_sched_attr attr = {.size = sizeof attr, .flags = SCHED_ATTR_KEEP_POLICY,
                          .nice = getpriority(PRIO_PROCESS, 0), .runtime = slice_ns};
    (void)syscall(SYS_sched_setattr, 0, &attr, 0);
#else
    (void)slice_ns;
#endif
}

/* Ends a child that runs on our memory (CLONE_VM) and a stack we mapped.
 * Not _exit: a call the compiler knows never returns is preceded, under
 * AddressSanitizer, by __asan_handle_no_return, which clears the shadow of
 * the stack ASan knows for this thread, ours; the child's stack pointer is
 * outside it, so ASan warns ("ignoring requested __asan_handle_no_return",
 * once per spawn) and clears nothing. The system call is not noreturn to
 * the compiler, and skips _exit's interceptor, whose bookkeeping is our
 * process's, not this child's. exit_group, as _exit: without CLONE_THREAD
 * the child is a thread group of its own, so it ends only itself. */
static int child_end(int code)
{
    (void)syscall(SYS_exit_group, code);
    return code;   /* not reached */
}

/* spawn_short_slice: we run with the short slice, so what we spawn sets the
 * default back before it execs (a child inherits its maker's). */
static int own_short_slice;

void spawn_short_slice(int on)
{
    set_slice(on ? SPAWN_JOINER_SLICE_NS : 0);
    own_short_slice = on;
}

/* The child that execs: its own process group, stdio, the setup, exec. */
static int child_exec(void *arg)
{
    child_args *a = arg;
    sigset_t none;
    sigemptyset(&none);
    if (a->short_slice)
        set_slice(0);   /* the function runs with the default one, not its maker's */
    int err = setpgid(0, 0) < 0 ? errno : child_stdio(a->stdio);
    if (!err)
        err = a->setup->run(a->setup->ctx, a->path, &a->step);
    if (!err) {
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(a->path, a->argv, a->envp);
        err = errno;
        a->step = NULL;
    }
    a->err = err;
    return child_end(127);
}

static int child_main(void *arg)
{
    child_args *a = arg;
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int s = 1; s < NSIG; s++)
        (void)sigaction(s, &dfl, NULL);   /* SIGKILL, SIGSTOP and glibc's own refuse: fine */
    const spawn_child_setup *setup = a->setup;
    if (!setup->n_join_ns)
        return child_exec(arg);
    /* A short slice: our wake-up at the new child's exec then preempts
     * it on the CPU we share (EEVDF lets a task that has just started its
     * slice run on unless the wakee's slice is shorter than its own), and
     * our exit lets our caller run. Without it, a quarter to half of the
     * spawns still waited 0.4-0.5 ms for the function to block (the join
     * loop's p90 0.54-0.59 ms, with it 0.15-0.22). The new child inherits
     * it and sets the default back. */
    if (!own_short_slice)
        set_slice(SPAWN_JOINER_SLICE_NS);
    a->short_slice = 1;
    for (int i = 0; i < setup->n_join_ns; i++)
        if (setns(setup->join_ns[i], 0) < 0) {
            a->err = errno;
            a->step = "setns";
            return child_end(127);
        }
    /* The handlers reset above are the new child's too (no CLONE_SIGHAND).
     * A vfork: this child exits only once the new one has execed, and our
     * caller, asleep in its own vfork since it made us, is woken by that
     * exit. Our caller must not wait for the exec itself (exec_tid): it
     * would have run just before (woken by this child's exit) and the
     * scheduler then lets the function keep the CPU they share when the
     * exec wakes it, for as long as the function runs without blocking
     * (joining a kept sandbox to exec /bin/true: p50 0.52-0.54 ms instead
     * of 0.10-0.16, bench/README.md "Ninth pass"). exec_tid still guards
     * our memory when this child is killed in its wait. */
    /* With CLONE_PARENT the kernel gives the child our own exit signal
     * (SIGCHLD: we were made with it), not the one asked here. */
    /* CLONE_PIDFD stores the pidfd where CLONE_PARENT_SETTID would store
     * the pid (the two exclude each other): the pid is then stored here */
    pid_t pid = clone(child_exec, a->exec_stack,
                      CLONE_VM | CLONE_VFORK | CLONE_PARENT |
                          (a->want_pidfd ? CLONE_PIDFD : CLONE_PARENT_SETTID) |
                          CLONE_CHILD_CLEARTID | SIGCHLD | setup->clone_flags,
                      a, a->want_pidfd ? (void *)&a->pidfd : (void *)&a->pid, NULL, &a->exec_tid);
    if (pid < 0) {
        a->err = errno;
        a->step = "clone";
        return child_end(127);
    }
    if (a->want_pidfd)
        __atomic_store_n(&a->pid, pid, __ATOMIC_RELEASE);
    return child_end(0);
}

/* Until a second child execs or exits: it runs on our memory and a stack
 * we are about to unmap. Its maker waits for that before it exits (a
 * vfork), unless it was killed in its wait. */
static void wait_second(child_args *a)
{
    /* The kernel stores the pid (or the pidfd) when it makes the child;
     * with a pidfd, the first child stores the pid after its vfork: it
     * may be killed before. */
    if (a->pid <= 0 && a->pidfd < 0)
        return;   /* there is none */
    while (__atomic_load_n(&a->exec_tid, __ATOMIC_ACQUIRE) != 0)
        (void)syscall(SYS_futex, &a->exec_tid, FUTEX_WAIT, -1, NULL, NULL, 0);
}

/* Blocks every signal (no handler of ours may run in a child sharing our
 * memory before it resets them: its copy of the mask is cleared just
 * before exec), clones fn on a stack of its own, waits for a second child
 * when `second` says so, restores the mask. */
static pid_t clone_masked(int (*fn)(void *), char *stack_top, int flags, void *arg, int *err,
                          child_args *second)
{
    sigset_t all, was;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &was);
    pid_t child = clone(fn, stack_top, flags, arg);
    *err = child < 0 ? errno : 0;
    if (child > 0 && second)
        wait_second(second);
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    return child;
}

static void reap(pid_t pid)
{
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

/* The children's stacks (CHILDREN_STACK_SIZE: a first child's and, in a
 * two-child spawn, the second's below it). One is kept mapped and reused:
 * a fresh mapping each spawn cost its page faults and the unmap, 10-30 us
 * of a kept sandbox's call (bench/README.md, tenth pass). A spawn returns
 * only once its children no longer run on it (exec, exit, wait_second).
 * Another thread spawning meanwhile gets a mapping of its own, unmapped
 * after, as before. */
#define CHILDREN_STACK_SIZE (2 * CHILD_STACK_SIZE)

static char *kept_stack;
static atomic_flag kept_stack_taken = ATOMIC_FLAG_INIT;

/* A stack, or NULL with errno; *kept: it is the kept one. */
static char *children_stack_take(int *kept)
{
    *kept = !atomic_flag_test_and_set(&kept_stack_taken);
    if (*kept && kept_stack)
        return kept_stack;
    char *s = mmap(NULL, CHILDREN_STACK_SIZE, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (s == MAP_FAILED) {
        int err = errno;
        if (*kept)
            atomic_flag_clear(&kept_stack_taken);
        errno = err;
        return NULL;
    }
    if (*kept)
        kept_stack = s;
    return s;
}

static void children_stack_give_back(char *stack, int kept)
{
    if (kept)
        atomic_flag_clear(&kept_stack_taken);
    else
        munmap(stack, CHILDREN_STACK_SIZE);
}

/* spawn_in_group_setup; as_sibling: every process made is our parent's
 * child (CLONE_PARENT), its reaping theirs, and *helpers (2) the pids of
 * those that exit at once (0: none). */
static int spawn_setup(const char *path, char *const *argv, char *const *envp, const int stdio[3],
                       const spawn_child_setup *setup, int as_sibling, pid_t *pid,
                       pid_t helpers[2], int *pidfd, const char **step)
{
    *step = NULL;
    helpers[0] = helpers[1] = 0;
    if (pidfd)
        *pidfd = -1;
    child_args a = {.path = path, .argv = argv, .envp = envp ? envp : setup->envp ? setup->envp : environ, .stdio = stdio,
                    .setup = setup, .exec_tid = -1, .want_pidfd = pidfd != NULL, .pidfd = -1,
                    .short_slice = own_short_slice};
    int prepared = setup->prepare ? setup->prepare(setup->ctx, step) : 0;
    if (prepared)
        return prepared;
    int two = setup->n_join_ns > 0;   /* a first child joins, a second execs */
    size_t size = (two ? 2 : 1) * CHILD_STACK_SIZE;
    int kept;
    char *stack = children_stack_take(&kept);
    if (!stack)
        return errno;
    a.exec_stack = stack + CHILD_STACK_SIZE;
    int clone_err;
    /* A first child shares our descriptors (CLONE_FILES): it only joins
     * and clones, and a copy of a table of thousands (a busy server's
     * connections) costs as much to make and close again as the rest of
     * the spawn (5,000 open: 1.4-2.0 ms a spawn with it, 0.95-1.0 without,
     * measured). The second one copies the table, as a child must. */
    pid_t child = clone_masked(child_main, stack + size,
                               CLONE_VM | CLONE_VFORK | SIGCHLD | (as_sibling ? CLONE_PARENT : 0) |
                                   (two ? CLONE_FILES : setup->clone_flags),
                               &a, &clone_err, two ? &a : NULL);
    int err = child < 0 ? clone_err : a.err;
    if (child < 0 && setup->clone_flags)
        a.step = "clone";   /* namespaces refused */
    if (child > 0 && two && !err && a.pid <= 0) {   /* the first was killed before it told */
        err = ECHILD;
        a.step = "clone";
    }
    stack_unpoison(stack, size);
    children_stack_give_back(stack, kept);
    /* Those that have exited: reaped here, as posix_spawn does, or by our
     * parent when they are its children. */
    pid_t exited[2] = {child > 0 && (two || err) ? child : 0, two && a.pid > 0 && err ? a.pid : 0};
    for (int i = 0; i < 2; i++) {
        if (exited[i] && as_sibling)
            helpers[i] = exited[i];
        else if (exited[i])
            reap(exited[i]);
    }
    if (err) {
        if (a.pidfd >= 0)
            close(a.pidfd);
        *step = a.step;
        return err;
    }
    *pid = two ? a.pid : child;
    if (pidfd)
        *pidfd = a.pidfd >= 0 ? a.pidfd : (int)syscall(SYS_pidfd_open, *pid, 0);
    return 0;
}

int spawn_in_group_setup(const char *path, char *const *argv, char *const *envp,
                         const int stdio[3], const spawn_child_setup *setup, pid_t *pid,
                         const char **step)
{
    pid_t helpers[2];
    *step = NULL;
    if (!setup)
        return spawn_in_group(path, 0, argv, envp, stdio, pid);
    return spawn_setup(path, argv, envp, stdio, setup, 0, pid, helpers, NULL, step);
}

int spawn_in_group_as_sibling(const char *path, char *const *argv, char *const *envp,
                              const int stdio[3], const spawn_child_setup *setup, pid_t *pid,
                              pid_t helpers[2], const char **step)
{
    return spawn_setup(path, argv, envp, stdio, setup, 1, pid, helpers, NULL, step);
}

int spawn_in_group_as_sibling_pidfd(const char *path, char *const *argv, char *const *envp,
                                    const int stdio[3], const spawn_child_setup *setup,
                                    pid_t *pid, pid_t helpers[2], int *pidfd, const char **step)
{
    return spawn_setup(path, argv, envp, stdio, setup, 1, pid, helpers, pidfd, step);
}

typedef struct ns_args {
    int (*fn)(void *ctx);
    void *ctx;
    int err;
} ns_args;

static int ns_main(void *arg)
{
    ns_args *a = arg;
    a->err = a->fn(a->ctx);
    return child_end(0);
}

int spawn_run_in_namespaces(int clone_flags, int (*fn)(void *ctx), void *ctx)
{
    char *stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return errno;
    ns_args a = {.fn = fn, .ctx = ctx};
    int err;
    pid_t child = clone_masked(ns_main, stack + CHILD_STACK_SIZE,
                               CLONE_VM | CLONE_VFORK | CLONE_FILES | SIGCHLD | clone_flags, &a,
                               &err, NULL);
    stack_unpoison(stack, CHILD_STACK_SIZE);
    munmap(stack, CHILD_STACK_SIZE);
    if (child < 0)
        return err;
    reap(child);
    return a.err;
}
