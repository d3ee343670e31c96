/* fn_job: a KRM function run as a child process; see fn_job.h.
 *
 * Life of a job:
 *   start   -> pipes made, child spawned in a new process group
 *   running -> stdin written, stdout/stderr read, as the pipes allow
 *   exited  -> SIGCHLD reaped the child; keep reading until both output
 *              pipes reach EOF, or FN_JOB_DRAIN_NS passes
 *   finish  -> pipes closed, leftovers in the group SIGKILLed, orphans
 *              no running call can own killed (orphans.h), done() called
 * A cancelled job skips done() and frees itself at finish. */
#include "runtime/fn_job.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/spawn_pipes.h"
#include "core/state_step.h"
#include "grpc/metrics.h"
#include "runtime/fn_slots.h"
#include "runtime/orphans.h"

#define FN_JOB_DRAIN_NS (2 * 1000000000LL)   /* wait for pipes after exit */
/* Small outputs are read through a chunk on the stack, at the depth of the
 * socket reads' buffer (h2_io.c) and no bigger, so that neither the chunk
 * nor what runs below it (judging the output, answering the call) reaches
 * stack pages those reads do not: RSS keeps every page touched once. */
#define FN_JOB_READ_CHUNK (8 * 1024)
#define FN_JOB_BIG_PIPE (1024 * 1024)
#define FN_JOB_INPUT_BATCH (128 * 1024)   /* streaming input: bytes per write */

static fn_job *live_jobs;   /* every job not yet freed */
static const spawn_child_setup *child_setup;   /* fn_job_set_child_setup */
static const fn_job_spawner *spawner;          /* fn_job_set_spawner */

void fn_job_set_child_setup(const spawn_child_setup *setup)
{
    child_setup = setup;
}

void fn_job_set_spawner(const fn_job_spawner *s)
{
    spawner = s;
}

/* ---- its phase ----------------------------------------------------------- */

static const char *const phase_names[] = {
    [FN_JOB_WAITING] = "WAITING", [FN_JOB_RUNNING] = "RUNNING", [FN_JOB_DRAINING] = "DRAINING",
    [FN_JOB_FINISHED] = "FINISHED", [FN_JOB_CANCELLED] = "CANCELLED",
};

static const unsigned phase_next[] = {
    [FN_JOB_WAITING] = STATE_BIT(FN_JOB_RUNNING) | STATE_BIT(FN_JOB_CANCELLED),
    [FN_JOB_RUNNING] = STATE_BIT(FN_JOB_DRAINING) | STATE_BIT(FN_JOB_FINISHED) | STATE_BIT(FN_JOB_CANCELLED),
    [FN_JOB_DRAINING] = STATE_BIT(FN_JOB_FINISHED) | STATE_BIT(FN_JOB_CANCELLED),
    [FN_JOB_FINISHED] = 0,
    [FN_JOB_CANCELLED] = 0,
};

static void fn_job_set_phase(fn_job *job, fn_job_phase next)
{
    int legal = state_step(phase_next, phase_names, job->phase, next, "function %d", (int)job->pid);
    assert(legal);
    (void)legal;   /* NDEBUG */
    job->phase = next;
}

/* ---- its process, when a spawner starts it ----------------------------------- */

static const char *const spawn_names[] = {
    [FN_JOB_SPAWNED] = "SPAWNED", [FN_JOB_SPAWN_ASKED] = "SPAWN_ASKED",
    [FN_JOB_SPAWN_FAILED] = "SPAWN_FAILED",
};

static const unsigned spawn_next[] = {
    [FN_JOB_SPAWNED] = 0,
    [FN_JOB_SPAWN_ASKED] = STATE_BIT(FN_JOB_SPAWNED) | STATE_BIT(FN_JOB_SPAWN_FAILED),
    [FN_JOB_SPAWN_FAILED] = 0,
};

static size_t n_spawns_asked;   /* jobs in FN_JOB_SPAWN_ASKED */
static int shutting_down;       /* fn_job_shutdown: answers only name the processes */

static void fn_job_set_spawn(fn_job *job, fn_job_spawn_state next)
{
    int legal = state_step(spawn_next, spawn_names, job->spawn, next, "function %d: spawn",
                           (int)job->pid);
    assert(legal);
    (void)legal;   /* NDEBUG */
    n_spawns_asked--;   /* every step is out of ASKED */
    job->spawn = next;
}

/* sig to the job's process group; kept for when it is known while the
 * spawn is asked (a kill(-0) would signal our own group). 0, or -1 with
 * errno (ESRCH: no process). */
static int fn_job_signal(fn_job *job, int sig)
{
    if (job->spawn == FN_JOB_SPAWN_ASKED) {
        if (job->signal_pending != SIGKILL)
            job->signal_pending = sig;
        return 0;
    }
    if (job->pid <= 0) {
        errno = ESRCH;
        return -1;
    }
    return kill(-job->pid, sig);
}

/* ---- spawning ---------------------------------------------------------- */

/* Go's os/exec error strings are strerror() with a lowercase first letter. */
static void errno_text(int err, char *out, size_t len)
{
    snprintf(out, len, "%s", strerror(err));
    if (out[0] >= 'A' && out[0] <= 'Z' && !(out[1] >= 'A' && out[1] <= 'Z'))
        out[0] = (char)(out[0] - 'A' + 'a');
}

static int is_executable_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISDIR(st.st_mode) && (st.st_mode & 0111);
}

/* exec.LookPath: a name without '/' is searched in $PATH. */
static int lookup_path_walk(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
    for (const char *p = path;; ) {
        const char *end = strchrnul(p, ':');
        int dir_len = (int)(end - p);
        int n = dir_len ? snprintf(out, len, "%.*s/%s", dir_len, p, name)
                        : snprintf(out, len, "./%s", name);
        if (n > 0 && (size_t)n < len && is_executable_file(out))
            return 0;
        if (!*end)
            break;
        p = end + 1;
    }
    return -1;
}

/* The last bare name found in PATH and where. The wrapper server runs the
 * same entrypoint on every call, and walking PATH cost a stat per directory
 * each time; now one stat checks the remembered file is still executable,
 * else it is forgotten and PATH walked again (same answers, same messages). */
static struct {
    char name[256];
    char path[4096];
} path_cache;

static void path_cache_forget(void)
{
    path_cache.name[0] = '\0';
}

/* Where to exec `name` from: itself when it has a '/', else the file found
 * in $PATH, left in path_cache.path (the walk writes its candidates there)
 * until the next lookup; NULL when there is none. Not copied to a buffer
 * on the stack: fn_job_start runs inside nghttp2's callbacks, below the
 * socket reads' buffer (h2_io.c), and musl's posix_spawn needs 5.7 KiB
 * more below it; a 4 KiB copy pushed all that a page deeper, and RSS keeps
 * every stack page touched once. */
static const char *lookup_path(const char *name)
{
    if (strchr(name, '/'))
        return name;
    if (path_cache.name[0] && !strcmp(path_cache.name, name)) {
        if (is_executable_file(path_cache.path))
            return path_cache.path;
    }
    path_cache_forget();
    if (lookup_path_walk(name, path_cache.path, sizeof path_cache.path) < 0)
        return NULL;
    size_t name_len = strlen(name);
    if (name_len < sizeof path_cache.name)
        memcpy(path_cache.name, name, name_len + 1);
    return path_cache.path;
}

int fn_job_can_run(const char *argv0, buf *why)
{
    if (!strchr(argv0, '/')) {
        if (lookup_path(argv0))
            return 0;
        buf_printf(why, "exec: \"%s\": executable file not found in $PATH", argv0);
        return -1;
    }
    struct stat st;
    if (stat(argv0, &st) < 0) {
        buf_printf(why, "fork/exec %s: %s", argv0, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode) || !(st.st_mode & 0111) || access(argv0, X_OK) < 0) {
        buf_printf(why, "fork/exec %s: permission denied", argv0);
        return -1;
    }
    return 0;
}

/* Our ends of fresh pipes carry no status flags yet, so O_NONBLOCK can be
 * set without reading them first (F_SETFL ignores the access mode). */
static void set_nonblocking(int fd)
{
    if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
        log_error("fcntl(O_NONBLOCK) on fd %d: %s", fd, strerror(errno));
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* ---- the job's pipes ---------------------------------------------------- */

static void fn_job_maybe_finish(fn_job *job);

static void fn_job_unlink(fn_job *job)
{
    for (fn_job **p = &live_jobs; *p; p = &(*p)->next)
        if (*p == job) {
            *p = job->next;
            return;
        }
}

static void fn_job_close_pipe(fn_job *job, int *fd)
{
    if (*fd < 0)
        return;
    loop_unwatch(job->loop, *fd);
    close_fd(fd);
}

static void fn_job_close_pipes(fn_job *job)
{
    int *const pipes[] = {&job->fd_in, &job->fd_out, &job->fd_err};
    for (size_t i = 0; i < sizeof pipes / sizeof *pipes; i++)
        fn_job_close_pipe(job, pipes[i]);
}

static void fn_job_on_stdin(loop *l, int fd, uint32_t events, void *ctx);

/* Watch stdin for writability only while there is input to write: a
 * streaming job that has written all that has arrived waits for the client,
 * not for the pipe. */
static void fn_job_watch_stdin(fn_job *job, uint32_t events)
{
    if (job->fd_in < 0 || job->in_events == events)
        return;
    if (loop_watch(job->loop, job->fd_in, events, fn_job_on_stdin, job) < 0) {
        /* cannot be told when the pipe has room: the function would wait
         * for input forever, so end it now (it sees a cut input and the
         * verdict tells) rather than at the deadline */
        log_error("function %d stdin: cannot watch the pipe; closing it after %zu of %zu bytes",
                  (int)job->pid, job->input_off, job->spec.input_len);
        fn_job_close_pipe(job, &job->fd_in);
        return;
    }
    job->in_events = events;
}

static void fn_job_on_stdin(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)events;
    fn_job *job = ctx;
    while (job->input_off < job->input_ready) {
        ssize_t n = write(fd, job->spec.input + job->input_off, job->input_ready - job->input_off);
        if (n < 0) {
            if (errno == EAGAIN) {
                fn_job_watch_stdin(job, LOOP_WRITE);
                return;
            }
            if (errno == EINTR)
                continue;
            /* EPIPE: the function stopped reading; that is its business */
            if (errno != EPIPE)
                log_v(3, "function %d stdin: %s", (int)job->pid, strerror(errno));
            fn_job_close_pipe(job, &job->fd_in);
            return;
        }
        job->input_off += (size_t)n;
    }
    if (job->input_off < job->spec.input_len) {
        fn_job_watch_stdin(job, 0);   /* the rest is still on its way */
        return;
    }
    fn_job_close_pipe(job, &job->fd_in);
}

void fn_job_input_ready(fn_job *job, size_t ready)
{
    if (ready > job->spec.input_len)
        ready = job->spec.input_len;
    if (ready <= job->input_ready)
        return;
    job->input_ready = ready;
    /* Input arrives a DATA frame (16 KiB) at a time: a write and a wakeup
     * of the function for each would cost more than the overlap gains, so
     * write when a batch has gathered, or the last bytes came. A pipe that
     * was full is being watched and takes what is ready when it drains. */
    if (job->fd_in < 0 || job->in_events == LOOP_WRITE)
        return;
    if (ready - job->input_off >= FN_JOB_INPUT_BATCH || ready == job->spec.input_len)
        fn_job_on_stdin(job->loop, job->fd_in, LOOP_WRITE, job);
}

/* One read of stdout. Straight into job->out when it has room to spare (a
 * big output, presized in fn_job_start), else through `chunk`, appending
 * only what arrived: reserving a whole chunk ahead for every small output
 * would make each call allocate (and, with musl, map and unmap) 64 KiB and
 * more. Returns read()'s result; -1 with errno ENOMEM when out of memory. */
static ssize_t fn_job_read_stdout(fn_job *job, int fd, char *chunk)
{
    size_t room = job->out.data ? job->out.cap - job->out.len : 0;
    if (room >= FN_JOB_READ_CHUNK / 4) {
        ssize_t n = read(fd, job->out.data + job->out.len, room);
        if (n > 0) {
            job->out.len += (size_t)n;
            job->out.data[job->out.len] = '\0';
        }
        return n;
    }
    ssize_t n = read(fd, chunk, FN_JOB_READ_CHUNK);
    if (n > 0 && buf_append(&job->out, chunk, (size_t)n) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return n;
}

static void fn_job_on_stdout(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)events;
    fn_job *job = ctx;
    if (job->phase == FN_JOB_WAITING) {   /* wrote before its call: the owner cancels it */
        job->done(job, job->ctx);
        return;
    }
    char chunk[FN_JOB_READ_CHUNK];
    for (;;) {
        ssize_t n = fn_job_read_stdout(job, fd, chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n < 0 && errno == ENOMEM) {
            log_error("function %d stdout: out of memory", (int)job->pid);
            job->output_too_large = 1;
            break;
        }
        if (n <= 0)
            break;
        if (job->out.len > job->spec.max_stdout) {
            job->output_too_large = 1;
            fn_job_signal(job, SIGKILL);
            break;
        }
    }
    fn_job_close_pipe(job, &job->fd_out);
    fn_job_maybe_finish(job);
}

/* What a waiting process writes on stderr before its call (a start-up
 * message) is kept for that call, which sees it as it would had the process
 * started with it. Past FN_JOB_WAITING_STDERR_MAX, or when it closes its
 * stderr, the process is spoiled. 0, or -1 when spoiled. */
static int fn_job_read_waiting_stderr(fn_job *job)
{
    char chunk[FN_JOB_READ_CHUNK];
    for (;;) {
        ssize_t n = read(job->fd_err, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0 || job->err.len + (size_t)n > FN_JOB_WAITING_STDERR_MAX ||
            buf_append(&job->err, chunk, (size_t)n) < 0)
            return -1;
    }
}

static void fn_job_on_stderr(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)events;
    fn_job *job = ctx;
    if (job->phase == FN_JOB_WAITING) {   /* spoiled: the owner cancels it */
        if (fn_job_read_waiting_stderr(job) < 0)
            job->done(job, job->ctx);
        return;
    }
    char chunk[FN_JOB_READ_CHUNK];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0)
            break;
        size_t room = job->spec.max_stderr > job->err.len ? job->spec.max_stderr - job->err.len : 0;
        size_t keep = (size_t)n < room ? (size_t)n : room;
        if (keep && buf_append(&job->err, chunk, keep) < 0)
            keep = 0;
        job->err_dropped += (size_t)n - keep;
    }
    fn_job_close_pipe(job, &job->fd_err);
    fn_job_maybe_finish(job);
}

/* ---- ownership, as orphans.c asks it --------------------------------------- */

static pid_t fn_job_spawner_process(void)
{
    return spawner ? spawner->process(spawner->ctx) : 0;
}

static int fn_job_is_function(pid_t pid)
{
    if (pid == fn_job_spawner_process())
        return 1;   /* no function, but ours all the same */
    for (fn_job *j = live_jobs; j; j = j->next)
        if (j->pid == pid && !j->exited)
            return 1;
    return 0;
}

/* A job runs, for ownership, until finished: its group is killed then. A
 * waiting job (fn_prespawn) is no call: what it leaves behind has no owner.
 * But a job whose spawn is asked owns what started since it was made: its
 * process (and the spawner's first child) are ours before we know the pid. */
static int64_t fn_job_oldest_call_ns(void)
{
    int64_t oldest = INT64_MAX;
    for (fn_job *j = live_jobs; j; j = j->next)
        if (((j->phase != FN_JOB_FINISHED && j->phase != FN_JOB_WAITING) ||
             j->spawn == FN_JOB_SPAWN_ASKED) && j->boot_ns < oldest)
            oldest = j->boot_ns;
    return oldest;
}

static void fn_job_check_orphans(void)
{
    orphans_owners owners = {
        .is_function = fn_job_is_function,
        .functions = fn_job_live_count() + (fn_job_spawner_process() > 0),
        .oldest_call_ns = fn_job_oldest_call_ns,
    };
    orphans_check(&owners);
}

/* ---- what a waiting process leaves behind ----------------------------------- */

/* A waiting process is no call, so what it leaves outside its group has no
 * owner and goes at once. Nothing tells us when that appears: a process
 * re-parented to us alive sends no SIGCHLD (its parent, which died, was the
 * function's child, not ours). So while processes wait we look: soon after
 * one starts (daemons are mostly made at start-up), then at intervals
 * doubling to FN_JOB_LOOK_MAX_NS. A look is orphans_check: one pread of our
 * children list when there is nothing to find. */
#define FN_JOB_LOOK_FIRST_NS (20 * 1000000LL)
#define FN_JOB_LOOK_MAX_NS (1000 * 1000000LL)

static struct {
    loop *loop;
    loop_timer timer;
    int64_t interval_ns;
    int64_t due_ns;        /* of timer */
} look;

static int fn_job_any_waiting(void)
{
    for (fn_job *j = live_jobs; j; j = j->next)
        if (j->phase == FN_JOB_WAITING && !j->exited)
            return 1;
    return 0;
}

static void fn_job_look_after(loop *l, int64_t delay_ns);

static void fn_job_look(loop *l, void *ctx)
{
    (void)ctx;
    if (!fn_job_any_waiting())
        return;          /* the next waiting process starts the looks again */
    fn_job_check_orphans();
    int64_t next = look.interval_ns * 2;
    fn_job_look_after(l, next < FN_JOB_LOOK_MAX_NS ? next : FN_JOB_LOOK_MAX_NS);
}

static void fn_job_look_after(loop *l, int64_t delay_ns)
{
    /* A look due sooner stays: processes started one after another (a
     * busy server replaces one at each call) must not keep pushing it back. */
    if (loop_timer_armed(&look.timer) && look.due_ns <= loop_deadline_ns(delay_ns))
        return;
    loop_timer_disarm(look.loop, &look.timer);
    look.loop = l;
    look.interval_ns = delay_ns;
    look.due_ns = loop_deadline_ns(delay_ns);
    loop_timer_init(&look.timer, fn_job_look, NULL);
    loop_timer_arm(l, &look.timer, delay_ns);
}

/* ---- finishing ---------------------------------------------------------- */

static void fn_job_finish(fn_job *job)
{
    assert(job->exited || job->phase == FN_JOB_CANCELLED);
    if (job->phase != FN_JOB_CANCELLED)
        fn_job_set_phase(job, FN_JOB_FINISHED);
    if (job->err_dropped)   /* never cut silently */
        buf_printf(&job->err, "\n[stderr truncated: %zu more bytes were not kept]\n",
                   job->err_dropped);
    fn_job_close_pipes(job);
    loop_timer_disarm(job->loop, &job->drain_timer);
    loop_timer_disarm(job->loop, &job->kill_timer);
    /* Whatever the function left behind in its group goes with it. */
    if (job->spawn == FN_JOB_SPAWNED && kill(-job->pid, SIGKILL) == 0)
        log_v(4, "function %d: killed leftover processes of its group", (int)job->pid);
    /* and whatever left the group, once no running call can own it */
    fn_job_check_orphans();
    if (job->phase == FN_JOB_CANCELLED) {
        fn_job_gone_fn *gone = job->gone;
        void *gone_ctx = job->gone_ctx;
        fn_job_unlink(job);
        buf_free(&job->out);
        buf_free(&job->err);
        buf_free(&job->spawn_error);
        free(job);
        if (gone)
            gone(gone_ctx);
        return;
    }
    job->done(job, job->ctx);
}

static void fn_job_maybe_finish(fn_job *job)
{
    if (job->phase != FN_JOB_FINISHED && job->exited && job->fd_out < 0 && job->fd_err < 0)
        fn_job_finish(job);
}

static void fn_job_drain_expired(loop *l, void *ctx)
{
    (void)l;
    fn_job *job = ctx;
    log_v(3, "function %d exited but its output pipes stayed open; closing them", (int)job->pid);
    fn_job_finish(job);
}

static void fn_job_kill_expired(loop *l, void *ctx)
{
    (void)l;
    fn_job *job = ctx;
    if (fn_job_signal(job, SIGKILL) == 0)
        log_v(3, "function %d: SIGKILL after the grace period", (int)job->pid);
}

static void fn_job_exited(fn_job *job, int status)
{
    job->exited = 1;
    job->wait_status = status;
    if (job->phase == FN_JOB_WAITING) {   /* exited before its call: the owner cancels it */
        job->done(job, job->ctx);
        return;
    }
    if (job->spec.holds_slot)
        fn_slots_give_back();
    fn_job_close_pipe(job, &job->fd_in);
    if (job->fd_out < 0 && job->fd_err < 0) {
        fn_job_finish(job);
        return;
    }
    if (job->phase == FN_JOB_CANCELLED) {   /* nobody wants the output */
        fn_job_finish(job);
        return;
    }
    fn_job_set_phase(job, FN_JOB_DRAINING);
    loop_timer_arm(job->loop, &job->drain_timer, FN_JOB_DRAIN_NS);
}

/* ---- public ------------------------------------------------------------- */

/* stdin is written at once, as far as the pipe takes it (all of a small
 * list: a fresh pipe holds 64 KiB), and watched only if it fills up. */
static int fn_job_watch_pipes(fn_job *job)
{
    if (loop_watch(job->loop, job->fd_out, LOOP_READ, fn_job_on_stdout, job) < 0 ||
        loop_watch(job->loop, job->fd_err, LOOP_READ, fn_job_on_stderr, job) < 0)
        return -1;
    job->in_events = 0;
    if (job->fd_in >= 0 && job->input_ready > 0)
        fn_job_on_stdin(job->loop, job->fd_in, LOOP_WRITE, job);
    return 0;
}

/* Sizes the pipes and the output buffer for spec's input, and takes its
 * input and limits. */
static void fn_job_set_input(fn_job *job, const fn_job_spec *spec)
{
    if (spec->input_len > 65536) {   /* fewer wakeups for big lists; best effort */
        (void)fcntl(job->fd_in, F_SETPIPE_SZ, FN_JOB_BIG_PIPE);
        (void)fcntl(job->fd_out, F_SETPIPE_SZ, FN_JOB_BIG_PIPE);
        /* A function's output is usually about as big as its input: room
         * for that up front spares the copies of a growing buffer. */
        size_t guess = spec->input_len + spec->input_len / 8;
        (void)buf_reserve(&job->out, guess < spec->max_stdout ? guess : spec->max_stdout + 1);
    }
    /* A waiting job given its call takes the call's argv too: argv and
     * exec_path are read only to spawn, and the call's outlive the job,
     * where the pool that started it (fn_prespawn) may be released first. */
    job->spec = *spec;
    job->input_ready = spec->input_growing ? spec->input_ready : spec->input_len;
    if (job->input_ready > spec->input_len)
        job->input_ready = spec->input_len;
    if (spec->input_len == 0)
        fn_job_close_pipe(job, &job->fd_in);
}

/* Why a spawn failed, in the words Go's os/exec uses. */
static void fn_job_spawn_why(int err, const char *step, const char *shown, buf *why)
{
    char text[256];
    errno_text(err, text, sizeof text);
    if (step && !strcmp(step, "pipe"))
        buf_printf(why, "cannot create pipes: %s", text);
    else
        buf_printf(why, "fork/exec %s: %s%s%s", shown, step ? step : "", step ? ": " : "", text);
}

/* Spawns the process (or asks the spawner to) and links the job; its
 * pipes are not watched yet. */
static fn_job *fn_job_spawn(loop *l, const fn_job_spec *spec, fn_job_done_fn *done, void *ctx,
                            buf *why)
{
    const char *path = spec->exec_path ? spec->exec_path : lookup_path(spec->argv[0]);
    const char *shown = spec->exec_path ? spec->argv[0] : path;   /* in messages */
    if (!path) {
        buf_printf(why, "exec: \"%s\": executable file not found in $PATH", spec->argv[0]);
        return NULL;
    }
    fn_job *job = calloc(1, sizeof *job);
    if (!job) {
        buf_printf(why, "out of memory");
        return NULL;
    }
    job->boot_ns = orphans_clock_ns();   /* before: its processes start after it */
    job->loop = l;   /* the spawner's answers come through it */
    const spawn_child_setup *setup = spec->child_setup ? spec->child_setup : child_setup;
    const char *step;
    int theirs[3], ours[3];
    int rc = spawn_pipes_make(1, theirs, ours, &step);
    if (!rc) {
        if (setup && spawner && spawner->ask(spawner->ctx, job, path, spec->argv, setup, theirs) == 0) {
            job->spawn = FN_JOB_SPAWN_ASKED;   /* its first */
            n_spawns_asked++;
        }
        else
            rc = setup ? spawn_in_group_setup(path, spec->argv, NULL, theirs, setup, &job->pid, &step)
                       : spawn_in_group(path, 0, spec->argv, NULL, theirs, &job->pid);
        spawn_pipes_close(theirs);   /* the child's ends are its own (or the spawner's) now */
        if (rc)
            spawn_pipes_close(ours);
    }
    if (rc) {
        fn_job_spawn_why(rc, step, shown, why);
        free(job);
        return NULL;
    }
    job->loop = l;
    loop_timer_init(&job->drain_timer, fn_job_drain_expired, job);
    loop_timer_init(&job->kill_timer, fn_job_kill_expired, job);
    job->done = done;
    job->ctx = ctx;
    job->fd_in = ours[0];
    job->fd_out = ours[1];
    job->fd_err = ours[2];
    job->started_ns = loop_now_ns();
    set_nonblocking(job->fd_in);
    set_nonblocking(job->fd_out);
    set_nonblocking(job->fd_err);
    job->next = live_jobs;
    live_jobs = job;
    if (job->spawn == FN_JOB_SPAWN_ASKED)
        log_v(4, "function asked of the spawner: %s", shown);
    else
        log_v(4, "function %d started: %s", (int)job->pid, shown);
    return job;
}

/* Cannot drive it: let it die, it will be reaped as a cancelled job. */
static void fn_job_abandon(fn_job *job, buf *why)
{
    fn_job_set_phase(job, FN_JOB_CANCELLED);
    job->spec.holds_slot = 0;   /* a failed start: the caller gives the slot back */
    fn_job_close_pipes(job);
    fn_job_signal(job, SIGKILL);
    buf_append_str(why, "cannot watch the function's pipes");
}

fn_job *fn_job_start(loop *l, const fn_job_spec *spec, fn_job_done_fn *done, void *ctx,
                     buf *why)
{
    fn_job *job = fn_job_spawn(l, spec, done, ctx, why);
    if (!job)
        return NULL;
    job->phase = FN_JOB_RUNNING;   /* its first */
    fn_job_set_input(job, spec);
    if (fn_job_watch_pipes(job) < 0) {
        fn_job_abandon(job, why);
        return NULL;
    }
    return job;
}

fn_job *fn_job_start_waiting(loop *l, const fn_job_spec *spec, fn_job_done_fn *done, void *ctx,
                             buf *why)
{
    fn_job_spec argv_only = {.argv = spec->argv, .exec_path = spec->exec_path,
                             .child_setup = spec->child_setup};
    fn_job *job = fn_job_spawn(l, &argv_only, done, ctx, why);
    if (!job)
        return NULL;
    job->spec = argv_only;
    job->phase = FN_JOB_WAITING;   /* its first */
    /* Asked of the spawner: watched once spawned, so that a failed spawn
     * (the spawner closing the pipes) is not taken for a spoiled process */
    if (job->spawn == FN_JOB_SPAWN_ASKED) {
        job->watch_pending = 1;
        return job;
    }
    /* stdout and stderr are watched so that a process writing while it
     * waits is noticed (and dropped) before a call could read that */
    if (fn_job_watch_pipes(job) < 0) {
        fn_job_abandon(job, why);
        return NULL;
    }
    fn_job_look_after(l, FN_JOB_LOOK_FIRST_NS);
    return job;
}

/* Whether a waiting process has exited, written on stdout or spoiled its
 * stderr, though neither SIGCHLD nor the pipes have been serviced yet this
 * round; stderr written since the last loop turn is read into the call's.
 * Two syscalls per call when nothing was written. */
static int fn_job_spoiled(fn_job *job)
{
    siginfo_t info = {0};
    if (waitid(P_PID, (id_t)job->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid)
        return 1;
    struct pollfd fds[2] = {{.fd = job->fd_out, .events = POLLIN},
                            {.fd = job->fd_err, .events = POLLIN}};
    int n = poll(fds, 2, 0);
    if (n <= 0)
        return n < 0;   /* cannot tell: not worth the risk */
    return fds[0].revents != 0 || (fds[1].revents && fn_job_read_waiting_stderr(job) < 0);
}

/* Dead but not yet reaped: its SIGCHLD waits in the same batch of events
 * as the call about to be given to it, which would get no answer. Looked
 * at without reaping it (WNOWAIT): the reaper still hears of it. */
static int fn_job_died_unseen(const fn_job *job)
{
    siginfo_t info = {0};
    return waitid(P_PID, job->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == job->pid;
}

int fn_job_give(fn_job *job, const fn_job_spec *spec, fn_job_done_fn *done, void *ctx)
{
    int asked = job->spawn == FN_JOB_SPAWN_ASKED;   /* no process to look at yet */
    if (job->phase != FN_JOB_WAITING || job->exited || job->fd_in < 0 ||
        (!asked && (fn_job_spoiled(job) || fn_job_died_unseen(job))))
        return -1;
    fn_job_set_phase(job, FN_JOB_RUNNING);
    /* its call starts now: only processes started from now on are its own;
     * but one whose spawn is asked may have started since it was made,
     * and must stay its own */
    if (!asked)
        job->boot_ns = orphans_clock_ns();
    job->done = done;
    job->ctx = ctx;
    job->started_ns = loop_now_ns();   /* the call's run starts now */
    fn_job_set_input(job, spec);
    if (job->watch_pending) {
        job->watch_pending = 0;
        if (fn_job_watch_pipes(job) < 0) {   /* cannot drive it: its call fails as a cut output */
            log_error("function: cannot watch its pipes; killing it");
            fn_job_close_pipes(job);
            fn_job_signal(job, SIGKILL);
        }
        return 0;
    }
    if (job->fd_in >= 0 && job->input_ready > 0)
        fn_job_on_stdin(job->loop, job->fd_in, LOOP_WRITE, job);
    return 0;
}

void fn_job_cancel(fn_job *job, int64_t grace_ns, fn_job_gone_fn *gone, void *gone_ctx)
{
    fn_job_set_phase(job, FN_JOB_CANCELLED);
    job->gone = gone;
    job->gone_ctx = gone_ctx;
    if (job->exited) {
        fn_job_finish(job);
        return;
    }
    fn_job_close_pipes(job);
    loop_timer_disarm(job->loop, &job->drain_timer);
    if (fn_job_signal(job, SIGTERM) < 0 && errno != ESRCH)
        log_error("kill(-%d, SIGTERM): %s", (int)job->pid, strerror(errno));
    loop_timer_arm(job->loop, &job->kill_timer, grace_ns);
}

void fn_job_free(fn_job *job)
{
    if (!job)
        return;
    fn_job_unlink(job);
    loop_timer_disarm(job->loop, &job->drain_timer);
    loop_timer_disarm(job->loop, &job->kill_timer);
    buf_free(&job->out);
    buf_free(&job->err);
    buf_free(&job->spawn_error);
    free(job);
}

/* ---- the spawner's answers, and what is reaped before them ------------------ */

/* A spawned function may exit, and be reaped, before its spawner's answer
 * is read (both arrive in the same round): its status waits here for the
 * answer. So do the spawner's processes that exit at once (helpers), which
 * are reaped and ignored, before or after their answer names them. Both
 * are bounded by the requests in flight (the spawner's limit), and a pid
 * they cannot hold is taken as a stray, as before there was a spawner. */
#define FN_JOB_EARLY_MAX 128

typedef struct early_exit {
    pid_t pid;
    int status;
    int64_t cpu_ns;
} early_exit;

static early_exit early[FN_JOB_EARLY_MAX];   /* reaped, owner not known yet */
static size_t n_early;
static pid_t helpers_named[FN_JOB_EARLY_MAX];   /* answered, not reaped yet */
static size_t n_helpers_named;

static void fn_job_stray_reaped(pid_t pid)
{
    log_v(4, "reaped orphan process %d", (int)pid);
    orphans_reaped(pid);
}

/* Takes pid's early exit out of the table: 1 and *e, or 0. */
static int early_take(pid_t pid, early_exit *e)
{
    for (size_t i = 0; i < n_early; i++)
        if (early[i].pid == pid) {
            *e = early[i];
            early[i] = early[--n_early];
            return 1;
        }
    return 0;
}

/* With no spawn asked, what is left reaped early has no job: strays. */
static void early_flush(void)
{
    if (n_spawns_asked || !n_early)
        return;
    while (n_early)
        fn_job_stray_reaped(early[--n_early].pid);
    fn_job_check_orphans();
}

/* A cancelled job's argv is its call's, gone with it: nothing is said. */
static void fn_job_spawn_failed(fn_job *job, int err, const char *step)
{
    if (job->phase != FN_JOB_CANCELLED) {
        fn_job_spawn_why(err, step, job->spec.argv[0], &job->spawn_error);
        log_v(3, "spawner: %s", job->spawn_error.data ? job->spawn_error.data : "out of memory");
    }
    fn_job_set_spawn(job, FN_JOB_SPAWN_FAILED);
    if (job->spec.holds_slot)
        fn_slots_give_back();
    job->spec.holds_slot = 0;
    fn_job_close_pipes(job);
    job->exited = 1;
    job->wait_status = 127 << 8;   /* as a child whose exec failed */
    if (job->phase == FN_JOB_WAITING)
        job->done(job, job->ctx);   /* its owner sees spawn FAILED and cancels it */
    else
        fn_job_finish(job);
}

void fn_job_spawned(fn_job *job, pid_t pid, const pid_t helpers[2], int err, const char *step)
{
    for (int i = 0; i < 2; i++) {
        early_exit e;
        if (helpers[i] > 0 && !early_take(helpers[i], &e) && n_helpers_named < FN_JOB_EARLY_MAX)
            helpers_named[n_helpers_named++] = helpers[i];
    }
    if (shutting_down) {   /* no callback: the jobs are being freed */
        job->pid = err ? 0 : pid;
        job->exited = err != 0;
        fn_job_set_spawn(job, err ? FN_JOB_SPAWN_FAILED : FN_JOB_SPAWNED);
        return;
    }
    if (err) {
        fn_job_spawn_failed(job, err, step);
        early_flush();
        return;
    }
    job->pid = pid;
    fn_job_set_spawn(job, FN_JOB_SPAWNED);
    log_v(4, "function %d started by the spawner", (int)pid);
    if (job->signal_pending)
        kill(-pid, job->signal_pending);
    job->signal_pending = 0;
    if (job->watch_pending && job->phase == FN_JOB_WAITING) {
        job->watch_pending = 0;
        if (fn_job_watch_pipes(job) < 0) {   /* cannot tell when it spoils: drop it */
            log_error("function %d: cannot watch its pipes; killing it", (int)pid);
            kill(-pid, SIGKILL);
            job->done(job, job->ctx);
        } else {
            fn_job_look_after(job->loop, FN_JOB_LOOK_FIRST_NS);
        }
    }
    early_exit e;
    if (early_take(pid, &e)) {
        job->cpu_ns = e.cpu_ns;
        metrics_function_exited(e.status);
        fn_job_exited(job, e.status);
    }
    early_flush();
}

/* A reaped pid that is no job's: the spawner's own, a helper of its (named
 * or still to be), or a stray. */
static int fn_job_reaped_unknown(pid_t pid, int status, int64_t cpu_ns)
{
    if (spawner && spawner->reaped(spawner->ctx, pid, status))
        return 0;
    for (size_t i = 0; i < n_helpers_named; i++)
        if (helpers_named[i] == pid) {
            helpers_named[i] = helpers_named[--n_helpers_named];
            return 0;
        }
    if (n_spawns_asked && n_early < FN_JOB_EARLY_MAX) {
        early[n_early++] = (early_exit){.pid = pid, .status = status, .cpu_ns = cpu_ns};
        return 0;
    }
    fn_job_stray_reaped(pid);
    return 1;
}

int fn_job_reap(void)
{
    int reaped = 0, strays = 0;
    for (;;) {
        int status;
        struct rusage usage;
        pid_t pid = wait4(-1, &status, WNOHANG, &usage);
        if (pid <= 0) {
            if (pid < 0 && errno == EINTR)
                continue;
            break;
        }
        reaped++;
        int64_t cpu_ns = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000000000LL +
                         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1000LL;
        fn_job *job = live_jobs;
        while (job && (job->pid != pid || job->exited || job->spawn != FN_JOB_SPAWNED))
            job = job->next;
        if (job) {
            job->cpu_ns = cpu_ns;
            metrics_function_exited(status);
            fn_job_exited(job, status);
        }
        else {
            strays += fn_job_reaped_unknown(pid, status, cpu_ns);
        }
    }
    if (strays)   /* their children are ours now */
        fn_job_check_orphans();
    return reaped;
}

size_t fn_job_live_count(void)
{
    size_t n = 0;
    for (fn_job *j = live_jobs; j; j = j->next)
        n += !j->exited;
    return n;
}

void fn_job_shutdown(void)
{
    loop_timer_disarm(look.loop, &look.timer);
    shutting_down = 1;
    if (spawner)   /* it forgets what it has not answered: those jobs are freed below */
        spawner->drain(spawner->ctx);
    for (fn_job *j = live_jobs; j; j = j->next)
        if (j->phase != FN_JOB_FINISHED && j->spawn == FN_JOB_SPAWNED)
            kill(-j->pid, SIGKILL);
    while (live_jobs) {
        fn_job *j = live_jobs;
        live_jobs = j->next;
        if (!j->exited && j->spawn == FN_JOB_SPAWNED &&
            waitpid(j->pid, &j->wait_status, 0) < 0 && errno != ECHILD)
            log_error("waitpid(%d): %s", (int)j->pid, strerror(errno));
        fn_job_close_pipes(j);
        loop_timer_disarm(j->loop, &j->drain_timer);
        loop_timer_disarm(j->loop, &j->kill_timer);
        fn_job_gone_fn *gone = j->phase == FN_JOB_CANCELLED ? j->gone : NULL;
        void *gone_ctx = j->gone_ctx;
        buf_free(&j->out);
        buf_free(&j->err);
        buf_free(&j->spawn_error);
        free(j);
        if (gone)
            gone(gone_ctx);   /* reaped: whoever waited for it lets go */
    }
    if (spawner && spawner->end)
        spawner->end(spawner->ctx);
    /* No call runs now: every orphan goes, and each one's children, re-parented
     * to us as it dies, in the next round. */
    for (int round = 0; round < 100 && orphans_left(); round++) {
        fn_job_reap();
        fn_job_check_orphans();
        struct timespec tick = {0, 10 * 1000000};
        if (orphans_left())
            nanosleep(&tick, NULL);
    }
    fn_job_reap();
    orphans_close();
}
