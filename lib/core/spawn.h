/* spawn: starting a program in a process group of its own, its stdio on
 * descriptors the caller chose, with signals as a fresh program expects.
 *
 * Why: the functions the servers run (lib/runtime/fn_job) and the exec
 * credential plugins kubeconfigs name (lib/kube/kubeconfig) are programs
 * we do not control; what they start must be killable with them, so each
 * leads its own process group and is ended by killing the group. And our
 * processes ignore or block some signals, which exec would pass on: every
 * signal is reset to its default and none is blocked, not a list that
 * could fall behind. The C library walks all signals in the child either
 * way; glibc then sets each instead of asking first (55 fewer syscalls per
 * spawn, measured). glibc leaves its two internal signals (32, 33)
 * ignored; it cannot be asked otherwise. */
#ifndef KRM_SPAWN_H
#define KRM_SPAWN_H

#include <sys/types.h>

/* Starts path (search_path: a bare name is looked up in PATH, as
 * execvp does) with argv and envp (NULL: our environment), stdio[0..2]
 * as its standard input, output and error, as the leader of a new process
 * group (its id is *pid). Returns 0, or an errno. */
int spawn_in_group(const char *path, int search_path, char *const *argv, char *const *envp,
                   const int stdio[3], pid_t *pid);

/* Namespaces a spawn may join: the shared user and network ones, then a
 * kept sandbox's user, network, mount, IPC and PID ones. */
#define SPAWN_MAX_JOIN_NS 7

/* What a caller adds to the child between fork and exec (the functions'
 * sandbox, lib/runtime/sandbox). The child shares our memory until it
 * execs (as posix_spawn's does) and must do nothing but system calls: no
 * malloc, no stdio, no locks; whatever it needs is prepared beforehand. */
typedef struct spawn_child_setup {
    /* Namespaces (CLONE_NEW*) the child is created in: with CLONE_NEWPID it
     * is PID 1 of its own tree. 0: none. */
    int clone_flags;
    /* Namespaces made once and shared (descriptors of /proc/PID/ns files, a
     * user namespace first, then those it owns), joined before the
     * child's own are made: n_join_ns of them, 0: none. A new user or PID
     * namespace is always made below its maker's, so a first child joins
     * them and makes the one that execs (with CLONE_PARENT: still ours),
     * then exits once the second has execed (a vfork, as ours is);
     * *pid is the second's. */
    int join_ns[SPAWN_MAX_JOIN_NS];
    int n_join_ns;
    /* Runs here before the child is made (NULL: nothing to): what run
     * needs that is the same for every spawn and costs to make (the
     * Landlock roots' descriptors), made at the first and kept. Returns 0,
     * or an errno with *step. */
    int (*prepare)(const void *ctx, const char **step);
    /* Runs in the child once its stdio and process group are set, with the
     * file about to be executed. Returns 0, or an errno with *step naming
     * what failed (a string constant). */
    int (*run)(const void *ctx, const char *path, const char **step);
    const void *ctx;
    char *const *envp;   /* the child's environment when the caller passes none */
} spawn_child_setup;

/* spawn_in_group (path as given, never searched), with setup run in the
 * child before exec. On failure returns an errno; *step names the setup
 * step that failed ("clone" when the namespaces were refused, "setns"
 * when a shared one could not be joined), or is NULL when it was the
 * spawn or the exec. */
int spawn_in_group_setup(const char *path, char *const *argv, char *const *envp,
                         const int stdio[3], const spawn_child_setup *setup, pid_t *pid,
                         const char **step);

/* spawn_in_group_setup (setup not NULL) for a process spawning on its
 * parent's behalf (lib/runtime/sandbox_spawner): every process it makes is
 * our parent's child (CLONE_PARENT), so the function is, and waits for
 * its exit status there. helpers[0..1] are the pids of those that exited
 * at once (the first child of a two-child spawn; a failed one's), which
 * the parent reaps and ignores; 0: none. */
int spawn_in_group_as_sibling(const char *path, char *const *argv, char *const *envp,
                              const int stdio[3], const spawn_child_setup *setup, pid_t *pid,
                              pid_t helpers[2], const char **step);

/* spawn_in_group_as_sibling, and *pidfd a pidfd of the function (close-on-
 * exec) made by the clone itself: its exit can be watched from here
 * although it is our parent's child, with no window in which our parent
 * could reap it and its pid be reused. Needs a two-child setup
 * (n_join_ns > 0); otherwise *pidfd is pidfd_open's, or -1. */
int spawn_in_group_as_sibling_pidfd(const char *path, char *const *argv, char *const *envp,
                                    const int stdio[3], const spawn_child_setup *setup,
                                    pid_t *pid, pid_t helpers[2], int *pidfd, const char **step);

/* From now on the calling process runs with the shortest scheduler slice
 * the kernel takes (0.1 ms; Linux 6.12+, older kernels ignore it), on: 1,
 * or the default one again, on: 0. A task whose slice is shorter than the
 * running one's preempts it when it wakes (EEVDF), so a process that does
 * short work for others as soon as they ask (the sandbox spawner) runs at
 * once instead of after the task it woke beside. The programs it spawns
 * set the default back before they exec. Policy and nice value are kept;
 * a refusal is ignored (it costs only the gain). */
void spawn_short_slice(int on);

/* Runs fn(ctx) in a child made in new namespaces (clone_flags, CLONE_NEW*)
 * that shares our memory and descriptors (what it opens stays open here),
 * and waits for it. fn gets the same rules as a child setup's run: system
 * calls only. Returns fn's result (an errno), or clone's errno. */
int spawn_run_in_namespaces(int clone_flags, int (*fn)(void *ctx), void *ctx);

#endif
