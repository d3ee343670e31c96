/* spawn: a program in its own process group; see spawn.h. */
#include "core/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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
    int err;
    const char *step;
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

static int child_main(void *arg)
{
    child_args *a = arg;
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    for (int s = 1; s < NSIG; s++)
        (void)sigaction(s, &dfl, NULL);   /* SIGKILL, SIGSTOP and glibc's own refuse: fine */
    sigset_t none;
    sigemptyset(&none);
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
    _exit(127);
}

int spawn_in_group_setup(const char *path, char *const *argv, char *const *envp,
                         const int stdio[3], const spawn_child_setup *setup, pid_t *pid,
                         const char **step)
{
    *step = NULL;
    if (!setup)
        return spawn_in_group(path, 0, argv, envp, stdio, pid);
    child_args a = {.path = path, .argv = argv, .envp = envp ? envp : setup->envp ? setup->envp : environ, .stdio = stdio,
                    .setup = setup};
    char *stack = mmap(NULL, CHILD_STACK_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED)
        return errno;
    /* No handler of ours may run in the child before it resets them all:
     * every signal is held across the clone (the child's copy of the mask
     * is cleared just before exec). */
    sigset_t all, was;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &was);
    pid_t child = clone(child_main, stack + CHILD_STACK_SIZE,
                        CLONE_VM | CLONE_VFORK | SIGCHLD | setup->clone_flags, &a);
    int err = child < 0 ? errno : a.err;
    if (child < 0 && setup->clone_flags)
        a.step = "clone";   /* namespaces refused */
    pthread_sigmask(SIG_SETMASK, &was, NULL);
    stack_unpoison(stack, CHILD_STACK_SIZE);
    munmap(stack, CHILD_STACK_SIZE);
    if (child > 0 && err)   /* it has exited: reaped here, as posix_spawn does */
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR) {
        }
    if (err) {
        *step = a.step;
        return err;
    }
    *pid = child;
    return 0;
}
