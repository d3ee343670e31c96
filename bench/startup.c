/* bench-startup: how long a program takes from exec to being useful.
 *
 * Why C: the wrapper server's start-up is well under the cost of starting a
 * Python interpreter, so the timer and the poller must themselves be cheap.
 * Each run picks a free loopback port, posix_spawns the command (with every
 * "{port}" argument replaced by that port, stdout and stderr on /dev/null)
 * and then either
 *   --until check   polls grpc.health.v1.Health/Check on 127.0.0.1:PORT
 *                   (lib/grpc/grpc_unary: non-blocking connect, then the call)
 *                   every 50 us until it answers SERVING, then SIGKILLs it;
 *   --until exit    waits for the program to exit 0 (the floor: /bin/true).
 *
 *   bench-startup [--runs N] [--until check|exit] -- PROG [ARGS...]
 *
 * Output: the key=value line of bench/stats.h over the runs, plus
 * attempts= (Check attempts per run, mean). Exit 1 if any run failed. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/loop.h"
#include "core/numparse.h"
#include "grpc/grpc_status.h"
#include "grpc/grpc_unary.h"
#include "stats.h"

#define CHECK_PATH "/grpc.health.v1.Health/Check"
#define GIVE_UP_NS 5000000000LL   /* a server not SERVING after 5 s failed */
#define POLL_PAUSE_NS 50000L      /* between Check attempts */

extern char **environ;

typedef struct opts {
    unsigned long long runs;
    int until_check;
    char **argv;   /* PROG ARGS..., NULL-terminated */
} opts;

static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){.runs = 20, .until_check = 1};
    int i = 1;
    for (; i + 1 < argc && strcmp(argv[i], "--"); i += 2) {
        if (!strcmp(argv[i], "--runs") && parse_uint(argv[i + 1], 100000, &o->runs) == 0 &&
            o->runs > 0)
            continue;
        if (!strcmp(argv[i], "--until") &&
            (!strcmp(argv[i + 1], "check") || !strcmp(argv[i + 1], "exit"))) {
            o->until_check = !strcmp(argv[i + 1], "check");
            continue;
        }
        fprintf(stderr, "bench-startup: bad option %s %s\n", argv[i], argv[i + 1]);
        return -1;
    }
    if (i >= argc || strcmp(argv[i], "--") || i + 1 >= argc) {
        fprintf(stderr, "usage: bench-startup [--runs N] [--until check|exit] -- PROG [ARGS...]\n");
        return -1;
    }
    o->argv = &argv[i + 1];
    return 0;
}

/* A loopback port nobody listens on now: bind port 0, read it back, close.
 * The server binds with SO_REUSEADDR, so the closed socket is no obstacle. */
static int free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
        fprintf(stderr, "bench-startup: finding a free port: %s\n", strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (close(fd) < 0) {
        fprintf(stderr, "bench-startup: close: %s\n", strerror(errno));
        return -1;
    }
    return ntohs(sa.sin_port);
}

/* posix_spawn argv with "{port}" replaced; stdout and stderr to /dev/null. */
static int spawn(char **argv, const char *port, pid_t *pid)
{
    size_t n = 0;
    while (argv[n])
        n++;
    char **args = calloc(n + 1, sizeof *args);
    if (!args)
        return -1;
    for (size_t i = 0; i < n; i++)
        args[i] = strcmp(argv[i], "{port}") ? argv[i] : (char *)port;
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0 && !(rc = posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0)) &&
        !(rc = posix_spawn_file_actions_adddup2(&fa, 1, 2)))
        rc = posix_spawn(pid, args[0], &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    free(args);
    if (rc)
        fprintf(stderr, "bench-startup: posix_spawn %s: %s\n", argv[0], strerror(rc));
    return rc ? -1 : 0;
}

static int reap(pid_t pid, int *status)
{
    while (waitpid(pid, status, 0) < 0) {
        if (errno != EINTR) {
            fprintf(stderr, "bench-startup: waitpid: %s\n", strerror(errno));
            return -1;
        }
    }
    return 0;
}

/* One Check; 1 when it answered SERVING, 0 when not (yet), -1 on ENOMEM. */
static int check_once(const char *addr)
{
    static const gc_unary_opts uo = {.connect_timeout_ns = 1000000000LL,
                                     .timeout_ns = 1000000000LL};
    gc_unary_result res;
    if (gc_unary(addr, CHECK_PATH, "", 0, &uo, &res) < 0)
        return -1;
    /* SERVING is field 1 = 1: exactly the bytes 08 01 */
    int ok = res.connected && res.status == GRPC_OK && res.response_len == 2 &&
             res.response[0] == 0x08 && res.response[1] == 0x01;
    gc_unary_result_free(&res);
    return ok;
}

/* Polls until SERVING; the server must not exit meanwhile. Between
 * attempts we sleep POLL_PAUSE_NS: on a 2-CPU machine a busy poller would
 * take the CPU the starting server needs. */
static int wait_serving(pid_t pid, const char *addr, int64_t t0, unsigned long long *attempts)
{
    static const struct timespec pause = {.tv_nsec = POLL_PAUSE_NS};
    for (;;) {
        ++*attempts;
        int ok = check_once(addr);
        if (ok != 0)
            return ok < 0 ? -1 : 0;
        if (nanosleep(&pause, NULL) < 0 && errno != EINTR) {
            fprintf(stderr, "bench-startup: nanosleep: %s\n", strerror(errno));
            return -1;
        }
        int status;
        pid_t w = waitpid(pid, &status, WNOHANG);
        if (w != 0) {
            fprintf(stderr, "bench-startup: %s exited before serving (%s)\n", addr,
                    w < 0 ? strerror(errno) : "see its stderr by running it by hand");
            return -1;
        }
        if (loop_now_ns() - t0 > GIVE_UP_NS) {
            fprintf(stderr, "bench-startup: no SERVING answer on %s after 5 s\n", addr);
            kill(pid, SIGKILL);
            return -1;
        }
    }
}

/* One run; returns its duration in ns, or -1. */
static int64_t run_once(const opts *o, unsigned long long *attempts)
{
    char port[16], addr[32];
    int p = o->until_check ? free_port() : 0;
    if (p < 0)
        return -1;
    snprintf(port, sizeof port, "%d", p);
    snprintf(addr, sizeof addr, "127.0.0.1:%d", p);
    pid_t pid;
    int status;
    int64_t t0 = loop_now_ns();
    if (spawn(o->argv, port, &pid) < 0)
        return -1;
    if (!o->until_check) {
        if (reap(pid, &status) < 0)
            return -1;
        int64_t t = loop_now_ns() - t0;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? t : -1;
    }
    if (wait_serving(pid, addr, t0, attempts) < 0)
        return -1;
    int64_t t = loop_now_ns() - t0;
    if (kill(pid, SIGKILL) < 0) {
        fprintf(stderr, "bench-startup: kill: %s\n", strerror(errno));
        return -1;
    }
    return reap(pid, &status) < 0 ? -1 : t;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_args(argc, argv, &o) < 0)
        return 2;
    int64_t *lat = malloc(o.runs * sizeof *lat);
    if (!lat)
        return 1;
    unsigned long long attempts = 0, errors = 0;
    int64_t t0 = loop_now_ns();
    size_t n = 0;
    for (unsigned long long i = 0; i < o.runs; i++) {
        int64_t t = run_once(&o, &attempts);
        if (t < 0)
            errors++;
        else
            lat[n++] = t;
    }
    int64_t elapsed = loop_now_ns() - t0;
    if (n == 0) {
        fprintf(stderr, "bench-startup: every run failed\n");
        return 1;
    }
    bench_print_stats(lat, n, errors, elapsed, 0);
    printf("attempts=%.1f\n", o.until_check ? (double)attempts / (double)o.runs : 0.0);
    free(lat);
    return errors ? 1 : 0;
}
