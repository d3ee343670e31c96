/* sandbox_host_attrs: what a kept sandbox's host puts back about itself
 * after each call; see sandbox_host_attrs.h. */
#include "runtime/sandbox_host_attrs.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define IOPRIO_WHO_PROCESS 1

static int get_sched(krm_sched_attr *s)
{
    memset(s, 0, sizeof *s);
    return (int)syscall(SYS_sched_getattr, 0, s, sizeof *s, 0) < 0 ? errno : 0;
}

/* What a process may change about another; size and flags are how the
 * kernel reports them, not settings. */
static int same_sched(const krm_sched_attr *a, const krm_sched_attr *b)
{
    return a->policy == b->policy && a->nice == b->nice && a->priority == b->priority &&
           a->runtime == b->runtime && a->deadline == b->deadline && a->period == b->period &&
           a->util_min == b->util_min && a->util_max == b->util_max;
}

int host_attrs_save(host_attrs *a, const char **step)
{
    a->last_pid_fd = -1;
    for (int i = 0; i < HOST_ATTRS_RLIMITS; i++)
        if (getrlimit(i, &a->limits[i]) < 0) {
            *step = "getrlimit";
            return errno;
        }
    int err = get_sched(&a->sched);
    if (err) {
        *step = "sched_getattr";
        return err;
    }
    if (sched_getaffinity(0, sizeof a->affinity, &a->affinity) < 0) {
        *step = "sched_getaffinity";
        return errno;
    }
    if ((a->ioprio = (int)syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0)) < 0) {
        *step = "ioprio_get";
        return errno;
    }
    /* the writer's PID namespace's counter, whichever /proc it is in;
     * read-only in a pod's /proc without the proc layer */
    a->last_pid_fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
    a->last_pid_err = a->last_pid_fd < 0 ? errno : 0;
    return 0;
}

static int restore_limits(const host_attrs *a)
{
    for (int i = 0; i < HOST_ATTRS_RLIMITS; i++) {
        struct rlimit now;
        if (getrlimit(i, &now) < 0)
            return errno;
        if (now.rlim_cur == a->limits[i].rlim_cur && now.rlim_max == a->limits[i].rlim_max)
            continue;
        /* a hard limit lowered cannot be raised again without a capability
         * we do not hold: EPERM, and the host is ended */
        if (setrlimit(i, &a->limits[i]) < 0)
            return errno;
    }
    return 0;
}

static int restore_sched(const host_attrs *a)
{
    krm_sched_attr now;
    int err = get_sched(&now);
    if (err || same_sched(&now, &a->sched))
        return err;
    krm_sched_attr want = a->sched;
    want.size = sizeof want;
    want.flags |= SCHED_ATTR_UTIL_CLAMP;
    if (syscall(SYS_sched_setattr, 0, &want, 0) < 0)
        return errno;   /* a nice value raised cannot be lowered: EPERM */
    if ((err = get_sched(&now)))
        return err;
    return same_sched(&now, &a->sched) ? 0 : EPERM;
}

static int restore_affinity(const host_attrs *a)
{
    cpu_set_t now;
    if (sched_getaffinity(0, sizeof now, &now) < 0)
        return errno;
    if (CPU_EQUAL(&now, &a->affinity))
        return 0;
    return sched_setaffinity(0, sizeof a->affinity, &a->affinity) < 0 ? errno : 0;
}

static int restore_ioprio(const host_attrs *a)
{
    int now = (int)syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
    if (now < 0)
        return errno;
    if (now == a->ioprio)
        return 0;
    return syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, a->ioprio) < 0 ? errno : 0;
}

int host_attrs_restore(const host_attrs *a, const char **step)
{
    int err;
    if ((err = restore_limits(a))) {
        *step = "set its resource limits back";
        return err;
    }
    if ((err = restore_sched(a))) {
        *step = "set its scheduling back";
        return err;
    }
    if ((err = restore_affinity(a))) {
        *step = "set its CPU affinity back";
        return err;
    }
    if ((err = restore_ioprio(a))) {
        *step = "set its I/O priority back";
        return err;
    }
    /* the next pid is 2, as in a new namespace (or the next free one, while
     * the server has yet to reap the last call's function) */
    if (a->last_pid_fd >= 0 && pwrite(a->last_pid_fd, "1", 1, 0) != 1) {
        *step = "write ns_last_pid";
        return errno;
    }
    return 0;
}
