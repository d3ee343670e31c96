/* sandbox_spawner: a process that spawns the sandboxed functions, so that
 * serve's loop does not wait for each spawn (runner-client serve).
 *
 * A sandboxed spawn holds its caller 0.4-0.7 ms (namespaces, mounts,
 * Landlock, seccomp, the exec and the wakeups: bench/README.md), and on
 * the loop every other call and connection waited for it, the call that
 * takes a pre-started process too, behind its replacement's spawn. The
 * spawner is forked at start, once the sandbox is made and before the
 * server opens its sockets, and runs plain blocking code: it reads a
 * request (path, argv, the function's sandbox settings, its three stdio
 * descriptors and the binary's, as SCM_RIGHTS) from a SOCK_SEQPACKET
 * socketpair, spawns as the loop did (core/spawn's child setup, as our
 * sibling: CLONE_PARENT makes every process of the spawn the server's
 * child, so the server waits for the function's exit status, kills its
 * group and names its limits as before) and answers the pid, or the errno
 * and the failing step. The loop sends without blocking and reads the
 * answers when the socket is readable (fn_job's spawn state).
 *
 * Bounds: a request is at most SPAWNER_MAX_REQUEST bytes and at most
 * SPAWNER_MAX_IN_FLIGHT are sent and not answered; a spawn past either (or
 * when the socket is full) is done on the loop, as without a spawner: the
 * same process, the loop pays for it. The spawner's death (its socket's
 * hangup, its exit status) fails the spawns in flight (their calls answer
 * that the spawner exited) and is logged; it is restarted once, and when
 * it dies again every spawn is done on the loop. It dies with the server
 * (PR_SET_PDEATHSIG, and its socket's hangup), keeps only its socket,
 * stdio and the sandbox's shared namespaces open, and holds nothing the
 * server did not. */
#ifndef KRM_SANDBOX_SPAWNER_H
#define KRM_SANDBOX_SPAWNER_H

#include <sys/types.h>

#include "core/buf.h"
#include "runtime/sandbox.h"

#define SPAWNER_MAX_REQUEST (64 * 1024)
#define SPAWNER_MAX_IN_FLIGHT 64

/* Forks the spawner for sb and makes fn_job spawn sb's functions through
 * it (fn_job_set_spawner). sb must outlive it. 0, or -1 with why (the
 * server then spawns on its loop). With no layer used, nothing is started. */
int sandbox_spawner_start(sandbox *sb, buf *why);

/* Closes our descriptors from..to (close_range, or one by one where it is
 * refused); the spawner's and its hosts'. 0, or -1 with errno. */
int sandbox_spawner_close_fds(unsigned from, unsigned to);

/* The spawner's pid, 0 when none runs. */
pid_t sandbox_spawner_pid(void);

#endif
