/* fn_job: one run of a KRM function as a child process, driven by the loop.
 *
 * The function gets the ResourceList on stdin and answers on stdout, with
 * diagnostics on stderr. All three pipes are non-blocking and serviced
 * together, so a function that writes megabytes before reading its input
 * cannot deadlock against us, and one that closes stdin early is fine.
 *
 * The child runs in its own process group so that cancelling a call (a
 * deadline, a client reset, shutdown) reaches everything it started:
 * SIGTERM to the group, then SIGKILL after a grace period. When the direct
 * child exits we keep reading until its pipes close, for at most a short
 * delay (a grandchild may hold them), then SIGKILL the group so no stray
 * process outlives the call.
 *
 * A process that left the group (setsid, a double fork) is not reached by
 * that kill: once its parent dies it is re-parented to us (a subreaper, or
 * PID 1), and lib/runtime/orphans.c kills it when no call still running can own it.
 * fn_job asks for that check when a call ends, when a child that is no
 * job is reaped, and while processes wait for a call (fn_job_start_waiting:
 * what they leave has no owner, and its arrival sends us no signal).
 *
 * Exit statuses arrive through fn_job_reap(), which the owner of SIGCHLD
 * calls; it reaps every child, orphans included (we may be PID 1), and hands
 * each status to the job that owns the pid. */
#ifndef KRM_FN_JOB_H
#define KRM_FN_JOB_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"
#include "core/loop.h"
#include "core/spawn.h"

typedef struct fn_job fn_job;
typedef void fn_job_done_fn(fn_job *job, void *ctx);

typedef struct fn_job_spec {
    char *const *argv;      /* argv[0] is looked up in PATH when it has no '/' */
    /* When set, the file executed instead of argv[0] (read by fn_job_start
     * only): e.g. /proc/self/fd/N for a binary opened beneath a directory,
     * so that no path swapped since can change what runs. argv[0] is still
     * what the function sees and what messages name. */
    const char *exec_path;
    const char *input;      /* stdin bytes; must stay valid until done or cancel */
    size_t input_len;       /* all of them, even those still to arrive */
    /* Streaming input: only the first input_ready bytes are there yet (the
     * rest is still arriving from the client; fn_job_input_ready tells of
     * more). The input must not move meanwhile. 0: all input_len are there. */
    int input_growing;
    size_t input_ready;
    size_t max_stdout;      /* more than this: output_too_large, group killed */
    size_t max_stderr;      /* bytes kept; the rest are counted and dropped */
    /* The caller took a function slot (fn_slots) for this run: it is given
     * back when the process is reaped, however the job ends. */
    int holds_slot;
    /* What the child is set up with (the function's sandbox); NULL: what
     * fn_job_set_child_setup set. */
    const spawn_child_setup *child_setup;
} fn_job_spec;

/* A cancelled job's process has been reaped: its work has stopped. */
typedef void fn_job_gone_fn(void *ctx);

/* A job's life; it changes in fn_job_set_phase only (fn_job.c), whose table
 * holds the legal steps: [WAITING ->] RUNNING [-> DRAINING] -> FINISHED, or
 * CANCELLED from any of the first three (freed once its process is reaped). */
typedef enum fn_job_phase {
    FN_JOB_WAITING,     /* started without a call (fn_job_start_waiting) */
    FN_JOB_RUNNING,     /* its call's: input written, output read */
    FN_JOB_DRAINING,    /* exited; its output pipes still open (a grandchild): read a while */
    FN_JOB_FINISHED,    /* its output complete: done was told */
    FN_JOB_CANCELLED,   /* nobody wants its output: killed, freed once reaped */
} fn_job_phase;

/* Its process, when a spawner (fn_job_set_spawner) starts it: the job is
 * made and its pipes are driven at once (input is written into the pipe
 * before the process exists), its pid known when the spawner answers.
 * Changes in fn_job_set_spawn only: ASKED -> SPAWNED or FAILED. */
typedef enum fn_job_spawn_state {
    FN_JOB_SPAWNED,         /* pid known (spawned here, or answered) */
    FN_JOB_SPAWN_ASKED,     /* the spawner has the request; pid 0 */
    FN_JOB_SPAWN_FAILED,    /* it could not: spawn_error says why; exited is set */
} fn_job_spawn_state;

struct fn_job {
    pid_t pid;              /* also the process group id; 0 while the spawn is asked */
    fn_job_phase phase;
    fn_job_spawn_state spawn;
    buf spawn_error;        /* FAILED: in fn_job_start's words */
    /* Wait status collected: the process's own fact beside the phase (a
     * waiting or cancelled job's process may be reaped or not yet; every
     * DRAINING and FINISHED one is). */
    int exited;
    int wait_status;        /* as from waitpid */
    int64_t cpu_ns;         /* CPU time it used (user + system), once exited */
    buf out;                /* stdout */
    buf err;                /* stderr, up to max_stderr */
    size_t err_dropped;     /* stderr bytes beyond max_stderr */
    int output_too_large;   /* stdout passed max_stdout */
    int64_t started_ns;
    int64_t boot_ns;        /* start on the clock of /proc start times (orphans.h) */

    /* private */
    loop *loop;
    fn_job_spec spec;
    size_t input_off;       /* bytes written to stdin */
    size_t input_ready;     /* bytes of input there to write */
    uint32_t in_events;     /* what the loop watches fd_in for */
    int fd_in, fd_out, fd_err;
    fn_job_done_fn *done;
    void *ctx;
    loop_timer drain_timer; /* armed while exited with output pipes open */
    loop_timer kill_timer;  /* armed while cancelled and given its grace */
    int signal_pending;     /* sent to its group once the pid is known (SIGKILL wins) */
    int watch_pending;      /* waiting, spawn asked: its pipes are watched once spawned */
    fn_job_gone_fn *gone;   /* cancelled: told when the process is reaped */
    void *gone_ctx;
    fn_job *next;           /* in the table of live jobs */
};

/* Start the function. On success returns the job; done(job, ctx) is called
 * once, from the loop, when the child has exited and its output is read.
 * Returns NULL and appends to *why when it could not be started, in the
 * words Go's os/exec uses, so messages match Porch's: `exec: "foo":
 * executable file not found in $PATH` or `fork/exec /fn: permission denied`.
 * A buf, allocated only on failure: a fixed 4.5 KiB array in the caller's
 * frame pushed every spawn (which runs below the socket reads' buffer,
 * h2_io.c) a page deeper into the stack, and RSS keeps that page. */
fn_job *fn_job_start(loop *l, const fn_job_spec *spec, fn_job_done_fn *done, void *ctx,
                     buf *why);

/* Start the function with no call yet (fn_prespawn.h): the process is
 * spawned exactly as fn_job_start spawns it and blocks reading stdin.
 * Only spec's argv and exec_path are read. What it writes on stderr while
 * it waits (a start-up message), up to FN_JOB_WAITING_STDERR_MAX bytes, is
 * kept and becomes the start of its call's stderr, as it would have been
 * without prespawning. done(job, ctx) while it waits means it exited, wrote
 * to stdout, wrote more than that on stderr or closed it: its owner must
 * cancel it then (its stdout is not read; nobody asked). NULL and *why as
 * fn_job_start. */
#define FN_JOB_WAITING_STDERR_MAX (64 * 1024)
fn_job *fn_job_start_waiting(loop *l, const fn_job_spec *spec, fn_job_done_fn *done, void *ctx,
                             buf *why);

/* Give a waiting job its call: spec's input, limits and holds_slot apply
 * from now (spec's argv must name what the job runs), started_ns is now, and done(job, ctx) is
 * called as for fn_job_start. Returns 0; or -1 when the process has already
 * exited or written to stdout (perhaps not yet told by SIGCHLD or the
 * pipes), or spoiled its stderr as above: the job
 * is unchanged, still waiting, and the caller cancels it. */
int fn_job_give(fn_job *job, const fn_job_spec *spec, fn_job_done_fn *done, void *ctx);

/* Every function spawned from now on (waiting ones too) runs setup in its
 * child before exec (lib/runtime/sandbox); NULL: none. setup must outlive
 * the jobs. */
void fn_job_set_child_setup(const spawn_child_setup *setup);

/* A process that spawns sandboxed functions for us (lib/runtime/
 * sandbox_spawner), off the loop. NULL: every spawn is done here. */
typedef struct fn_job_spawner {
    /* Sends the request to start path (argv) with setup, stdio[0..2] its
     * standard streams (the spawner has its own copies once this returns):
     * 0, and fn_job_spawned is called with the answer, from the loop; -1:
     * not sent (the spawner is gone or full), the job spawns here. */
    int (*ask)(void *ctx, fn_job *job, const char *path, char *const *argv,
               const spawn_child_setup *setup, const int stdio[3]);
    /* A reaped pid none of ours: 1 when it was the spawner's own process
     * (it handles its death), else 0. */
    int (*reaped)(void *ctx, pid_t pid, int wait_status);
    /* The spawner's own process, a child of ours that is no orphan; 0: none. */
    pid_t (*process)(void *ctx);
    /* On shutdown: waits (a while) for the answers in flight, so that the
     * processes spawned are known and killed with the rest; then forgets
     * the jobs it has not answered (they are freed). */
    void (*drain)(void *ctx);
    /* On shutdown, once every job is killed and reaped: the spawner's
     * process ended (a kept sandbox's host, PID 1 of its namespace, can
     * only end once the server has reaped the functions in it). NULL: none. */
    void (*end)(void *ctx);
    void *ctx;
} fn_job_spawner;

void fn_job_set_spawner(const fn_job_spawner *spawner);

/* The spawner's answer for job: its pid, or err (an errno) with step (the
 * setup step that failed, NULL: the spawn or exec). helpers[0..1]: pids
 * the spawn made that exited at once, ours to reap and ignore (0: none).
 * A job whose call failed with it gets done() as a finished job with
 * spawn FN_JOB_SPAWN_FAILED. */
void fn_job_spawned(fn_job *job, pid_t pid, const pid_t helpers[2], int err, const char *step);

/* Whether argv0 can be run as fn_job_start would run it (found in PATH when
 * it has no '/', an executable file): 0, or -1 with why in the words
 * fn_job_start would use. For a server to say at start that it cannot serve. */
int fn_job_can_run(const char *argv0, buf *why);

/* Streaming input: the first `ready` bytes of the input are there now. */
void fn_job_input_ready(fn_job *job, size_t ready);

/* Abandon a running job: done is not called, the process group gets SIGTERM
 * and, after grace_ns, SIGKILL; the job frees itself once reaped, and then
 * calls gone(gone_ctx) if gone is not NULL (inside this call when the
 * process was already reaped). */
void fn_job_cancel(fn_job *job, int64_t grace_ns, fn_job_gone_fn *gone, void *gone_ctx);

/* Free a job whose done callback has run. */
void fn_job_free(fn_job *job);

/* Reap every exited child (call on SIGCHLD). Returns how many were reaped. */
int fn_job_reap(void);

/* Number of jobs whose process has not been reaped yet. */
size_t fn_job_live_count(void);

/* On exit: SIGKILL every job's process group, wait for them, free all jobs;
 * then kill what they left behind (for at most a second). */
void fn_job_shutdown(void);

#endif
