/* bench-pipefloor: the floor the wrapper server is measured against.
 *
 * Why: an EvaluateFunction call with `cat` as the function costs a process
 * spawn plus moving the ResourceList through pipes, and on a small VM the
 * spawn alone dominates. To tell what the server adds (HTTP/2, gRPC, the
 * verdict on the output) we run the same work without the server: spawn
 * `cat` with posix_spawnp, write the same bytes to its stdin, read its
 * stdout until EOF, waitpid, check the echo. Pipes for lists over 64 KiB
 * get 1 MiB, as the server gives them. Up to --concurrency jobs run
 * at once on one poll() loop, single-threaded like the server.
 *
 *   bench-pipefloor [--cmd PROG] [--concurrency N] [--calls N] [--warmup N]
 *                   [--expect FILE] [--running] --input FILE
 *
 * The input is the file bench-loadgen --dump wrote, so both see identical
 * bytes; the output must be the input again (cat), or the bytes of
 * --expect (another function, spawned the same way).
 *
 * --running measures the other floor, of a function already started: one
 * process of PROG (cat) runs for the whole program, and each call is a
 * round trip through its pipes: write the input, read as many bytes back.
 * What a call to a pre-started function (--prespawn) cannot go below. Output: the key=value line of bench/stats.h (cpu_us: this
 * process's CPU per run, the children's not counted, to compare with the
 * server's). Exit status 0 when
 * every run echoed its input and exited 0, 1 otherwise, 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/fdio.h"
#include "core/loop.h"
#include "core/numparse.h"
#include "stats.h"

#define READ_CHUNK 65536
#define FLOOR_BIG_PIPE (1024 * 1024)

extern char **environ;

typedef struct opts {
    const char *cmd, *input, *expect;
    unsigned long long concurrency, calls, warmup;
    int running;
} opts;

typedef struct job {   /* one run of the command */
    pid_t pid;         /* 0: slot idle */
    int in_fd, out_fd; /* our ends; -1 once closed */
    size_t in_off;
    buf out;
    int64_t started_ns;
} job;

typedef struct floor_run {
    const opts *o;
    const char *data;   /* the input bytes */
    size_t len;
    const char *want;   /* the output expected */
    size_t want_len;
    job *jobs;
    size_t n_jobs;
    unsigned long long total, issued, done, errors;
    int64_t *lat_ns;
} floor_run;

/* ---- command line ---------------------------------------------------------- */

static int set_option(opts *o, const char *name, const char *value)
{
    unsigned long long *count = !strcmp(name, "--concurrency") ? &o->concurrency
                              : !strcmp(name, "--calls")       ? &o->calls
                              : !strcmp(name, "--warmup")      ? &o->warmup
                                                               : NULL;
    if (count)
        return parse_uint(value, 1ULL << 32, count);
    if (!strcmp(name, "--expect"))
        o->expect = value;
    else if (!strcmp(name, "--cmd"))
        o->cmd = value;
    else if (!strcmp(name, "--input"))
        o->input = value;
    else
        return -1;
    return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){.cmd = "cat", .concurrency = 1, .calls = 1000};
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "--running")) {
            o->running = 1;
            i--;
            continue;
        }
        if (i + 1 >= argc || set_option(o, argv[i], argv[i + 1]) < 0) {
            fprintf(stderr, "bench-pipefloor: bad option %s%s%s\n", argv[i],
                    i + 1 < argc ? " " : "", i + 1 < argc ? argv[i + 1] : "");
            return -1;
        }
    }
    if (!o->input || o->concurrency == 0 || o->calls == 0 || (o->running && o->concurrency != 1)) {
        fprintf(stderr, "usage: bench-pipefloor [--cmd PROG] [--concurrency N] [--calls N] "
                        "[--warmup N] [--expect FILE] [--running (concurrency 1)] --input FILE\n");
        return -1;
    }
    return 0;
}

/* ---- one job --------------------------------------------------------------- */

static void close_fd(int *fd)
{
    if (*fd >= 0 && close(*fd) < 0)
        fprintf(stderr, "bench-pipefloor: close: %s\n", strerror(errno));
    *fd = -1;
}

/* Pipes for stdin and stdout (close-on-exec, so concurrent children do not
 * hold each other's ends), then posix_spawnp with them on fds 0 and 1. */
static int spawn_cat(const char *cmd, int in[2], int out[2], pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0 && !(rc = posix_spawn_file_actions_adddup2(&fa, in[0], 0)) &&
        !(rc = posix_spawn_file_actions_adddup2(&fa, out[1], 1))) {
        char *argv[] = {(char *)cmd, NULL};
        rc = posix_spawnp(pid, cmd, &fa, NULL, argv, environ);
    }
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        fprintf(stderr, "bench-pipefloor: posix_spawnp %s: %s\n", cmd, strerror(rc));
    return rc ? -1 : 0;
}

static int job_start(floor_run *r, job *j)
{
    int in[2], out[2];
    j->started_ns = loop_now_ns();
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0) {
        fprintf(stderr, "bench-pipefloor: pipe2: %s\n", strerror(errno));
        return -1;   /* a leaked pair on this path ends the program anyway */
    }
    if (r->len > 65536) {   /* the server's pipe size for big lists (fn_job.c): the same footing */
        (void)fcntl(in[1], F_SETPIPE_SZ, FLOOR_BIG_PIPE);
        (void)fcntl(out[1], F_SETPIPE_SZ, FLOOR_BIG_PIPE);
    }
    int rc = spawn_cat(r->o->cmd, in, out, &j->pid);
    close_fd(&in[0]);
    close_fd(&out[1]);
    j->in_fd = in[1];
    j->out_fd = out[0];
    if (rc < 0 || fcntl(j->in_fd, F_SETFL, O_NONBLOCK) < 0 ||
        fcntl(j->out_fd, F_SETFL, O_NONBLOCK) < 0) {
        if (rc == 0)
            fprintf(stderr, "bench-pipefloor: fcntl: %s\n", strerror(errno));
        return -1;
    }
    j->in_off = 0;
    buf_reset(&j->out);
    r->issued++;
    if (r->len == 0)
        close_fd(&j->in_fd);
    return 0;
}

/* stdout reached EOF: reap the child and record the run. */
static int job_finish(floor_run *r, job *j)
{
    int status;
    while (waitpid(j->pid, &status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "bench-pipefloor: waitpid: %s\n", strerror(errno));
            return -1;
        }
    }
    r->lat_ns[r->done++] = loop_now_ns() - j->started_ns;
    j->pid = 0;
    close_fd(&j->in_fd);   /* still open if the child quit before reading it all */
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || j->out.len != r->want_len ||
        memcmp(j->out.data ? j->out.data : "", r->want ? r->want : "", r->want_len) != 0) {
        if (!r->errors++)
            fprintf(stderr, "bench-pipefloor: %s did not echo its input (status 0x%x)\n",
                    r->o->cmd, (unsigned)status);
    }
    if (r->issued < r->total)
        return job_start(r, j);
    return 0;
}

static int job_write(floor_run *r, job *j)
{
    ssize_t n = write(j->in_fd, r->data + j->in_off, r->len - j->in_off);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n < 0) {   /* EPIPE: the child quit; job_finish counts the error */
        close_fd(&j->in_fd);
        return 0;
    }
    j->in_off += (size_t)n;
    if (j->in_off == r->len)
        close_fd(&j->in_fd);
    return 0;
}

static int job_read(floor_run *r, job *j)
{
    if (buf_reserve(&j->out, READ_CHUNK) < 0) {
        fprintf(stderr, "bench-pipefloor: out of memory\n");
        return -1;
    }
    ssize_t n = read(j->out_fd, j->out.data + j->out.len, READ_CHUNK);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return 0;
    if (n < 0) {
        fprintf(stderr, "bench-pipefloor: read: %s\n", strerror(errno));
        return -1;
    }
    if (n > 0) {
        j->out.len += (size_t)n;
        return 0;
    }
    close_fd(&j->out_fd);
    return job_finish(r, j);
}

/* ---- the poll loop ------------------------------------------------------------ */

/* One poll() round over every open pipe end; dispatches what is ready. */
static int poll_round(floor_run *r, struct pollfd *pfds, size_t *owner)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_jobs; i++) {
        if (r->jobs[i].in_fd >= 0) {
            pfds[n] = (struct pollfd){.fd = r->jobs[i].in_fd, .events = POLLOUT};
            owner[n++] = i;
        }
        if (r->jobs[i].out_fd >= 0) {
            pfds[n] = (struct pollfd){.fd = r->jobs[i].out_fd, .events = POLLIN};
            owner[n++] = i;
        }
    }
    if (poll(pfds, n, -1) < 0) {
        if (errno == EINTR)
            return 0;
        fprintf(stderr, "bench-pipefloor: poll: %s\n", strerror(errno));
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        job *j = &r->jobs[owner[k]];
        if (!pfds[k].revents)
            continue;
        int rc = pfds[k].fd == j->in_fd ? job_write(r, j)
               : pfds[k].fd == j->out_fd ? job_read(r, j) : 0;
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Runs `calls` jobs, at most n_jobs at once. Returns elapsed ns or -1. */
static int64_t run_jobs(floor_run *r, unsigned long long calls)
{
    struct pollfd *pfds = calloc(2 * r->n_jobs, sizeof *pfds);
    size_t *owner = calloc(2 * r->n_jobs, sizeof *owner);
    int64_t t0 = loop_now_ns(), rc = pfds && owner ? 0 : -1;
    r->total = calls;
    r->issued = r->done = r->errors = 0;
    for (size_t i = 0; rc == 0 && i < r->n_jobs && r->issued < calls; i++)
        rc = job_start(r, &r->jobs[i]);
    while (rc == 0 && r->done < r->total)
        rc = poll_round(r, pfds, owner);
    free(pfds);
    free(owner);
    return rc < 0 ? -1 : loop_now_ns() - t0;
}

/* ---- --running: round trips through one process started once ----------------- */

/* Writes the input and reads want_len bytes back, both at once on poll (a
 * big input would fill the pipe both ways). 0, or -1. */
static int round_trip(floor_run *r, job *j)
{
    size_t in_off = 0;
    buf_reset(&j->out);
    if (buf_reserve(&j->out, r->want_len + 1) < 0)
        return -1;
    while (j->out.len < r->want_len) {
        struct pollfd p[2] = {{.fd = j->out_fd, .events = POLLIN},
                              {.fd = in_off < r->len ? j->in_fd : -1, .events = POLLOUT}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (p[1].revents) {
            ssize_t n = write(j->in_fd, r->data + in_off, r->len - in_off);
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                return -1;
            in_off += n > 0 ? (size_t)n : 0;
        }
        if (p[0].revents) {
            ssize_t n = read(j->out_fd, j->out.data + j->out.len, r->want_len - j->out.len);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                return -1;   /* it exited, or worse */
            j->out.len += n > 0 ? (size_t)n : 0;
        }
    }
    return in_off == r->len ? 0 : -1;
}

static int64_t run_running(floor_run *r, unsigned long long calls)
{
    job *j = &r->jobs[0];
    int64_t t0 = loop_now_ns();
    r->done = r->errors = 0;
    for (unsigned long long i = 0; i < calls; i++) {
        int64_t start = loop_now_ns();
        if (round_trip(r, j) < 0) {
            fprintf(stderr, "bench-pipefloor: round trip through the running %s failed\n",
                    r->o->cmd);
            return -1;
        }
        r->lat_ns[r->done++] = loop_now_ns() - start;
        if (memcmp(j->out.data, r->want, r->want_len) != 0 && !r->errors++)
            fprintf(stderr, "bench-pipefloor: %s did not echo its input\n", r->o->cmd);
    }
    return loop_now_ns() - t0;
}

/* Runs the calls of one measurement (or the warm-up). */
static int64_t run_mode(floor_run *r, unsigned long long calls)
{
    return r->o->running ? run_running(r, calls) : run_jobs(r, calls);
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_args(argc, argv, &o) < 0)
        return 2;
    if (signal(SIGPIPE, SIG_IGN) == SIG_ERR) {
        fprintf(stderr, "bench-pipefloor: signal: %s\n", strerror(errno));
        return 1;
    }
    buf input = {0}, expect = {0};
    if (file_read_all(o.input, &input, 0) < 0 ||
        (o.expect && file_read_all(o.expect, &expect, 0) < 0)) {
        fprintf(stderr, "bench-pipefloor: reading %s: %s\n",
                input.data || !o.expect ? o.expect : o.input, strerror(errno));
        return 1;
    }
    const buf *want = o.expect ? &expect : &input;
    unsigned long long most = o.warmup > o.calls ? o.warmup : o.calls;
    floor_run r = {.o = &o, .data = input.data, .len = input.len,
                   .want = want->data, .want_len = want->len,
                   .n_jobs = (size_t)o.concurrency, .lat_ns = malloc(most * sizeof(int64_t)),
                   .jobs = calloc((size_t)o.concurrency, sizeof(job))};
    if (!r.lat_ns || !r.jobs) {
        fprintf(stderr, "bench-pipefloor: out of memory\n");
        return 1;
    }
    for (size_t i = 0; i < r.n_jobs; i++)
        r.jobs[i].in_fd = r.jobs[i].out_fd = -1;
    if (o.running && job_start(&r, &r.jobs[0]) < 0)
        return 1;
    if (o.warmup && run_mode(&r, o.warmup) < 0)
        return 1;
    int64_t cpu0 = bench_cpu_ns();
    int64_t elapsed = run_mode(&r, o.calls);
    if (elapsed < 0)
        return 1;
    if (o.running) {   /* EOF lets it exit; reaped so that nothing outlives us */
        close_fd(&r.jobs[0].in_fd);
        waitpid(r.jobs[0].pid, NULL, 0);
    }
    bench_print_stats(r.lat_ns, (size_t)r.done, r.errors, elapsed, bench_cpu_ns() - cpu0);
    return r.errors ? 1 : 0;
}
