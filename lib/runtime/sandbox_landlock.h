/* sandbox_landlock: the files a sandboxed function may touch, as a Landlock
 * ruleset made in its child (after its private /tmp and /proc are mounted:
 * rules hold inodes, and a rule on the directory a mount covers does not
 * cover what is mounted there) and applied before exec. The roots that are
 * the same for every spawn are opened once by the process that spawns and
 * inherited (14 opens a spawn less).
 *
 * Landlock allows; it cannot deny a path beneath an allowed one. So the
 * view is a list of roots: the system's (/usr, /bin, /sbin, /lib*, /etc,
 * /opt, /proc, /sys) and those the operator adds, read and execute only;
 * /dev to read and write its files; the writable temporary directory; and
 * the function's own binary. Everything else (/var with the
 * service-account token, /root and /home with the docker configs, the
 * runner's files wherever they are) cannot be opened at all. From ABI 4
 * TCP bind and connect are refused too (the network is denied twice), and
 * from ABI 6 signals to and abstract sockets of processes outside the
 * sandbox. Landlock also keeps a sandboxed process from ptracing, or
 * reading /proc/PID/environ of, any process outside. */
#ifndef KRM_SANDBOX_LANDLOCK_H
#define KRM_SANDBOX_LANDLOCK_H

#include <stddef.h>

#define SANDBOX_LANDLOCK_MAX_PATHS 32

typedef struct sandbox_landlock_paths sandbox_landlock_paths;

typedef struct sandbox_landlock {
    int abi;                    /* kernel's Landlock ABI version; <1: none */
    int allow_network;
    const char *read[SANDBOX_LANDLOCK_MAX_PATHS];   /* read and execute beneath */
    size_t n_read;
    const char *writable;       /* the temporary directory */
    const char *write[SANDBOX_LANDLOCK_MAX_PATHS];   /* also writable (--sandbox-write) */
    size_t n_write;
    int own_proc;               /* the child mounts /proc: its rule is made there */
    sandbox_landlock_paths *held;   /* the roots opened once; a variant's is its base's */
} sandbox_landlock;

/* The kernel's Landlock ABI version, or -1 with errno (ENOSYS, EOPNOTSUPP:
 * not built or not enabled with lsm=). */
int sandbox_landlock_abi(void);

sandbox_landlock_paths *sandbox_landlock_paths_new(void);
/* Closes those this process opened; the next spawn opens them again. */
void sandbox_landlock_paths_forget(sandbox_landlock_paths *p);
void sandbox_landlock_paths_free(sandbox_landlock_paths *p);

/* In the process that spawns, before the child is made: the roots of ll
 * that are the same for every spawn opened into ll->held (O_PATH,
 * close-on-exec), once per process. 0, or an errno with *step. */
int sandbox_landlock_prepare(const sandbox_landlock *ll, const char **step);

/* The ruleset for ll (the held roots, /proc when own_proc, the writable
 * directory) plus binary (NULL: none), as a descriptor (close-on-exec), or
 * a negative errno with *step naming the call that failed. */
int sandbox_landlock_ruleset(const sandbox_landlock *ll, const char *binary, const char **step);

/* sandbox_landlock_ruleset with the writable directory's and /proc's
 * rules on descriptors held (O_PATH; -1: opened by path): a kept
 * sandbox's, whose /tmp and /proc are mounts of its host's namespace. */
int sandbox_landlock_ruleset_fds(const sandbox_landlock *ll, const char *binary, int writable_fd,
                                 int proc_fd, const char **step);

/* ruleset applied to this process (no_new_privs must be set). 0, or an
 * errno with *step. */
int sandbox_landlock_restrict(int ruleset, const char **step);

/* In the child: the rules for ll (the held roots, /proc when own_proc,
 * the writable directory) plus binary (the file about to be executed),
 * applied to this process (no_new_privs must be set). 0, or an errno with
 * *step naming the call that failed. */
int sandbox_landlock_apply(const sandbox_landlock *ll, const char *binary, const char **step);

#endif
