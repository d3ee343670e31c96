/* orphans: the processes a function leaves behind, found and killed.
 *
 * A call's kill targets the function's process group (fn_job), and a
 * function can leave it: setsid, a double fork, a daemon. Such a process
 * outlives the call unless someone looks for it. The server is a child
 * subreaper (PR_SET_CHILD_SUBREAPER, set by orphans_adopt; PID 1 is one by
 * nature), so when a function's process dies, its children become ours:
 * our children are the functions themselves (fn_job's live table) and the
 * orphans they made. Each orphan is SIGKILLed (it had the function's grace
 * already), logged once at verbosity 3 and counted in
 * krm_orphans_killed_total; when it dies, its own children are re-parented
 * to us in turn, and the SIGCHLD that reaps it starts the next pass.
 *
 * Which call owns an orphan is not recorded anywhere, so the rule is by
 * time: a process can only descend from a call that was running when it
 * started. An orphan is killed once every call running at its start has
 * ended, i.e. when it started before the oldest call still running (start
 * times in clock ticks since boot, /proc/PID/stat field 22; a tie counts
 * as "maybe owned", which only delays it); with no call running, at once.
 * So one call's cleanup never kills a process of another call still in
 * flight, and an orphan of a long call waits for that call to end.
 *
 * When passes run and what they cost (a small call must not pay for this):
 *   - a call ends (orphans_check): with no other function process alive,
 *     one waitid(WNOWAIT) says whether we have any child at all (1 syscall;
 *     the common case ends there); otherwise one pread of our children list
 *     (/proc/thread-self/children, kept open), and when it holds more pids
 *     than there are live functions, a pass;
 *   - a child no function owns was reaped (orphans_reaped): a pass;
 *   - a pass left an orphan waiting for a call: every call's end passes
 *     again until none waits;
 *   - while pre-started functions wait (fn_job's looks, up to once a
 *     second): as when a call ends. Their orphans send us no signal.
 * A pass reads /proc/PID/stat once per unowned child (3 syscalls), at most
 * ORPHANS_PER_PASS of them; the kills' SIGCHLDs bring the next pass. Without
 * the children list (a kernel built without CONFIG_PROC_CHILDREN) a pass
 * reads every /proc/PID/stat looking for PPid == us, 3 syscalls per
 * process in our PID namespace, and only the two sure signs above start one (a waitid with
 * no function alive, a stray reaped), not the children count.
 *
 * An orphan is our child until we reap it, so its pid cannot be reused
 * between reading its stat and the kill: the kill never hits a stranger.
 * As PID 1, processes started in the container by other means (kubectl
 * exec) that orphan themselves are re-parented to us too and count as
 * orphans: a function container runs nothing else. */
#ifndef KRM_ORPHANS_H
#define KRM_ORPHANS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What fn_job's live table says about ownership. */
typedef struct orphans_owners {
    /* pid is a function process not yet reaped: never an orphan */
    int (*is_function)(pid_t pid);
    /* how many such processes there are (each is a child of ours) */
    size_t functions;
    /* start (orphans_clock_ns) of the oldest call still running, INT64_MAX
     * when none is; asked only when there is an orphan to judge */
    int64_t (*oldest_call_ns)(void);
} orphans_owners;

/* Become a child subreaper (unless PID 1) and open our children list.
 * Logs a warning naming the errno when either fails: the server still
 * works, orphans then go to init as before. */
void orphans_adopt(void);

/* Now on the clock /proc/PID/stat's start times count on (CLOCK_BOOTTIME,
 * in ns): stamp a call's start with it before spawning. */
int64_t orphans_clock_ns(void);

/* A call ended: kill what no running call can own. Cheap when there is
 * nothing to find (see above). */
void orphans_check(const orphans_owners *owners);

/* A child that was no function was reaped: the next check passes. */
void orphans_reaped(pid_t pid);

/* 1 while we have a child, reaped or not, and can kill orphans (for the
 * exit path, once no function runs). */
int orphans_left(void);

/* Release the children list and the bookkeeping (on exit). */
void orphans_close(void);

#endif
