/* fn_prespawn: function processes started before their call arrives
 * (wrapper-server --prespawn N, runner-client serve --prespawn N).
 *
 * A real function is a Go program of tens of megabytes: exec, page faults
 * and runtime init cost milliseconds, on every call. Here processes are
 * started ahead (fn_job_start_waiting: same argv, environment, working
 * directory, own process group, default signal dispositions, empty mask)
 * and block reading stdin. A call takes one and writes its input at once
 * (fn_job_give); a replacement is started from the loop on the next turn,
 * off the call's path. The function sees what it would have seen: its own
 * stdin, stdout, stderr and exit status.
 *
 * Processes are kept in pools, one per function:
 *   - the wrapper server's one argv (fn_prespawn_configure): N processes,
 *     from the start, for the server's life;
 *   - the function runner's binaries (fn_prespawn_configure_binaries): a
 *     pool is made by the first call of a binary and keeps N processes of
 *     it while the binary is called; one not called for idle_ns is
 *     released (its processes killed). At most `total` processes wait in
 *     all pools together: when that is short, room goes to the binaries
 *     called most recently (no waiting process is killed to make room),
 *     and at most FN_PRESPAWN_POOLS binaries have a pool. A
 *     binary is the file the call's lookup opened: its path (what the
 *     function sees as argv[0]) and the file's identity (device, inode,
 *     modification and change times), so a binary replaced or edited on
 *     disk never serves a call from a process of the old file; its old
 *     pool is released when the new file is first called.
 *
 * A waiting process that exits or writes on stdout before it has a call is
 * killed, reaped and its output dropped; the call spawns on demand. A
 * start-up message on stderr is kept for the call (fn_job_start_waiting). After
 * FN_PRESPAWN_STRIKES such early exits in a row in one pool (no call
 * served from it between them), that pool stops starting processes, says
 * so once in the log, and counts in krm_prespawn_disabled.
 *
 * Waiting processes hold no function slot (fn_slots): a slot bounds
 * running work, and a waiting process uses memory, not CPU. A call takes a
 * slot first, as always, and only then a waiting process, which holds the
 * call's slot from then on. So at most --max-concurrent-functions
 * processes run and the pools' processes wait. They are owned jobs
 * (fn_job's table): reaped by fn_job_reap, killed with their group, never
 * taken for orphans.
 *
 * One set of pools per process, like fn_slots. Unconfigured (or N 0), take
 * always misses and nothing is started. */
#ifndef KRM_FN_PRESPAWN_H
#define KRM_FN_PRESPAWN_H

#include <stddef.h>
#include <stdint.h>

#include "core/loop.h"
#include "runtime/fn_job.h"

#define FN_PRESPAWN_MAX 64         /* --prespawn's largest value (per function) */
#define FN_PRESPAWN_TOTAL_MAX 256  /* the largest bound on all waiting processes */
#define FN_PRESPAWN_POOLS 64       /* binaries with a pool at once */
#define FN_PRESPAWN_STRIKES 3      /* early exits in a row that turn a pool off */

/* The wrapper server: keep n processes of argv waiting (argv must outlive
 * the process); the first are started from the loop, not inside this call. */
void fn_prespawn_configure(loop *l, char *const *argv, size_t n);

/* The function runner: keep per_binary processes of each binary called in
 * the last idle_ns (0: never released), at most total in all. */
void fn_prespawn_configure_binaries(loop *l, size_t per_binary, size_t total, int64_t idle_ns);

/* A call for argv with spec's input: a waiting process, given the call (as
 * fn_job_give), or NULL when there is none (then spawn as usual). Counts a
 * hit or a miss. binary_fd -1: argv must be the configured one (the same
 * pointer); else binary_fd is the call's open descriptor of the file
 * argv[0] names (read, not kept), and a pool for that file is made if
 * there is none. */
fn_job *fn_prespawn_take(char *const *argv, int binary_fd, const fn_job_spec *spec,
                         fn_job_done_fn *done, void *ctx);

/* Resources may be back (the server's listener resumed after EMFILE): a
 * pool left short by a failed start refills now. A short pool also retries
 * by itself, at intervals growing from 100 ms to 2 s. */
void fn_prespawn_retry(void);

/* Kill every waiting process, free the pools and start no more (SIGTERM's
 * drain, and before fn_job_shutdown). */
void fn_prespawn_stop(void);

size_t fn_prespawn_waiting(void);    /* in all pools */
size_t fn_prespawn_disabled(void);   /* pools that early exits turned off */

#endif
