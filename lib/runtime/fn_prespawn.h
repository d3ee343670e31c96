/* fn_prespawn: function processes started before their call arrives
 * (wrapper-server --prespawn N).
 *
 * A real function is a Go program of tens of megabytes: exec, page faults
 * and runtime init cost milliseconds, on every call. Here up to N
 * processes of the one fixed argv are started ahead (fn_job_start_waiting:
 * same argv, environment, working directory, own process group, default
 * signal dispositions, empty mask) and block reading stdin. A call takes
 * one and writes its input at once (fn_job_give); a replacement is started
 * from the loop on the next turn, off the call's path. The function sees
 * what it would have seen: its own stdin, stdout, stderr and exit status.
 *
 * A waiting process that exits or writes before it has a call is killed,
 * reaped and its output dropped; the call spawns on demand. After
 * FN_PRESPAWN_STRIKES such early exits in a row (no call served between
 * them), prespawning turns itself off, says so once in the log, and
 * krm_prespawn_disabled reads 1.
 *
 * Waiting processes hold no function slot (fn_slots): a slot bounds
 * running work, and a waiting process uses memory, not CPU. A call takes a
 * slot first, as always, and only then a waiting process, which holds the
 * call's slot from then on. So at most --max-concurrent-functions
 * processes run and N more wait. They are owned jobs (fn_job's table):
 * reaped by fn_job_reap, killed with their group, never taken for orphans.
 *
 * One table per process, like fn_slots. Unconfigured (or N 0), take
 * always misses and nothing is started. */
#ifndef KRM_FN_PRESPAWN_H
#define KRM_FN_PRESPAWN_H

#include <stddef.h>

#include "core/loop.h"
#include "runtime/fn_job.h"

#define FN_PRESPAWN_MAX 64       /* --prespawn's largest value */
#define FN_PRESPAWN_STRIKES 3    /* early exits in a row that turn it off */

/* Keep n processes of argv waiting (argv must outlive the process); the
 * first are started from the loop, not inside this call. */
void fn_prespawn_configure(loop *l, char *const *argv, size_t n);

/* A call for argv with spec's input: a waiting process, given the call (as
 * fn_job_give), or NULL when there is none (then spawn as usual). Counts a
 * hit or a miss. Only argv as configured (the same pointer) is served. */
fn_job *fn_prespawn_take(char *const *argv, const fn_job_spec *spec, fn_job_done_fn *done,
                         void *ctx);

/* Kill every waiting process and start no more (SIGTERM's drain, and
 * before fn_job_shutdown). */
void fn_prespawn_stop(void);

size_t fn_prespawn_waiting(void);
size_t fn_prespawn_disabled(void);   /* 1 once early exits turned it off */

#endif
