/* sandbox_host_attrs: what a kept sandbox's host (sandbox_host.h) must put
 * back after each call, about itself.
 *
 * A call's function runs as the host's uid, root of the host's user
 * namespace, and sees it as PID 1: the kernel lets a process of the same
 * uid (or with the capability in the target's user namespace) set another
 * one's resource limits (prlimit), nice value and scheduling policy
 * (setpriority, sched_setattr), CPU affinity and I/O priority, and read
 * them back. Landlock and seccomp refuse none of these, so a call could
 * leave a value on the host for the next call to read. The host saves its
 * own at set-up and, at each reset, sets them back and checks that they
 * are: a value it cannot set back (a lowered hard limit, a raised nice
 * value) fails the reset, and the host is ended.
 *
 * The pid counter of the host's PID namespace is set back too
 * (ns_last_pid, where /proc/sys is writable: not in a pod's /proc): the
 * next call's pids do not tell how many processes the last one made. */
#ifndef KRM_SANDBOX_HOST_ATTRS_H
#define KRM_SANDBOX_HOST_ATTRS_H

#include <sched.h>
#include <stdint.h>
#include <sys/resource.h>

#include "core/sched_attr.h"

#define HOST_ATTRS_RLIMITS 16   /* RLIMIT_NLIMITS on every Linux architecture */


typedef struct host_attrs {
    struct rlimit limits[HOST_ATTRS_RLIMITS];
    krm_sched_attr sched;
    cpu_set_t affinity;
    int ioprio;
    int last_pid_fd;   /* /proc/sys/kernel/ns_last_pid, written at each reset */
    int last_pid_err;  /* why it cannot be (last_pid_fd -1), or 0 */
} host_attrs;

/* In the host at set-up, as PID 1 of its namespaces with its /proc
 * mounted. 0 (ns_last_pid's failure kept in last_pid_err), or an errno
 * with *step. */
int host_attrs_save(host_attrs *a, const char **step);

/* In the host at each reset, once no other process of its namespace is
 * left: every saved value set back and read again. 0, or an errno (EPERM
 * for a value that could not be set back) with *step. */
int host_attrs_restore(const host_attrs *a, const char **step);

#endif
