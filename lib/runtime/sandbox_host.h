/* sandbox_host: a sandbox kept per function (serve --sandbox-keep), in the
 * spawner (sandbox_spawner.h); the "join" variant of docs/sandbox.md.
 *
 * A host is a process made per function variant (its binary and its
 * sandbox settings) at the variant's first sandboxed spawn: PID 1 of new
 * user, mount, PID and IPC namespaces below the shared ones, as a call's
 * child makes them today, with its mounts done once (/ private, the tmpfs
 * /tmp, the binds into it, its /proc), not dumpable, its signals ignored.
 * It serves a request loop on a socketpair with the spawner (RESET, EXIT)
 * and reaps whatever is reparented to it.
 *
 * A call on a host: the spawner's first child joins the host's namespaces
 * (descriptors the host sent at set-up, its IPC one again after each
 * reset) and clones the function as serve's child (CLONE_PARENT: fn_job's
 * waitpid, group kill, limit messages and CPU time are as without a host),
 * which restricts itself with a Landlock ruleset the spawner made for the
 * host, again after each reset (each call its own domain), sets
 * no_new_privs, the rlimits and the seccomp filter, and execs.
 *
 * One call per host at a time: the spawner watches the function's exit
 * with a pidfd and then has the host RESET (every other process of its
 * namespace killed and reaped, a new /tmp made as it was at set-up,
 * sandbox_host_tmp.h; what a call may set on the host, its PID 1,
 * set back, sandbox_host_attrs.h; a new IPC namespace, which the next call
 * joins, so none of the last call's System V or POSIX IPC objects, nor
 * their ids) before it takes another call. A spawn
 * whose variant's hosts are all busy makes a new host, up to
 * max_hosts; past it (or when a host cannot be made, dies or does not
 * answer) the spawn takes a fresh sandbox, as without --sandbox-keep.
 * Hosts idle past idle_ns are ended. */
#ifndef KRM_SANDBOX_HOST_H
#define KRM_SANDBOX_HOST_H

#include <poll.h>
#include <stdint.h>
#include <sys/types.h>

#include "runtime/sandbox.h"

typedef struct sandbox_keep_config {
    size_t max_hosts;   /* 0: no host is kept */
    int64_t idle_ns;    /* a free host idle this long is ended */
    int asked;          /* --sandbox-keep given: its having no effect is a warning */
} sandbox_keep_config;

#define SANDBOX_HOSTS_MAX 1024   /* max_hosts at most */
#define SANDBOX_HOST_NAME "krm-sbx-host"   /* a host's comm, as ps shows it */

/* Set in serve before the spawner is forked (which inherits it). */
void sandbox_hosts_configure(const sandbox_keep_config *cfg);

/* Whether hosts are kept (max_hosts > 0), and the configuration's figures. */
int sandbox_hosts_enabled(void);
int sandbox_hosts_asked(void);
size_t sandbox_hosts_max(void);
int64_t sandbox_hosts_idle_ns(void);

/* sandbox_hosts_spawn's answer when no host could take the spawn: not an
 * errno (1 is EPERM, which a spawn on a host can fail with). */
#define SANDBOX_HOSTS_FRESH (-1)

/* In the spawner: spawns path (binary_fd, the file it names, or -1) on a
 * free host of v's, made when none is. 0: spawned (*pid; helpers[] the
 * processes that exited at once, the server's to reap); SANDBOX_HOSTS_FRESH:
 * no host could take it (helpers[] may name some still): spawn it fresh;
 * else the spawn's errno with *step, as a fresh spawn's would be. */
int sandbox_hosts_spawn(const sandbox *v, const char *path, int binary_fd, char *const *argv,
                        const int stdio[3], pid_t *pid, pid_t helpers[2], const char **step);

/* The descriptors to poll (each host's death, each running function's
 * exit): at most 2 * SANDBOX_HOSTS_MAX, into p; their count. */
size_t sandbox_hosts_pollfds(struct pollfd *p, size_t room);

/* What poll said of them (p as filled, n of them): resets, deaths, and
 * ends the idle hosts. */
void sandbox_hosts_events(const struct pollfd *p, size_t n);

/* poll's timeout until the next idle host is to end, -1: none. */
int sandbox_hosts_timeout_ms(void);

/* In the spawner, at its start: its soft limit of open files raised
 * toward the hard one, to hold every host the bound allows (said once when
 * the hard limit holds fewer: calls past them get a fresh sandbox). */
void sandbox_hosts_make_room(void);

/* How many hosts are alive. */
size_t sandbox_hosts_count(void);
/* In the spawner, as it ends: every host killed and reaped here, so that
 * none outlives it to be reparented to the server (which would take it
 * for a process a function left behind). */
void sandbox_hosts_end_all(void);

#endif
