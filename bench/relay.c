/* bench-relay: the least a TCP server can take to run `cat` on a request.
 *
 * Why: the large-call row compares a 5 MiB EvaluateFunction round trip with
 * piping the same bytes through cat directly (bench-pipefloor). A server
 * call also moves the bytes over TCP twice (request in, response out), which
 * the pipe floor does not, and on a small VM those transfers cost as much
 * CPU as cat itself. This program measures what the transport alone costs
 * here, so the table can tell it from what our server adds: a relay with
 * none of the protocol work (no HTTP/2, no protobuf, no look at the output)
 * takes a length-prefixed request on a loopback TCP connection, spawns cat,
 * streams the request into it as it arrives and sends cat's output back,
 * length first (like a gRPC message, the answer's length must be known
 * before it is sent, so the output is collected whole). The bytes are copied
 * through user space as any server that decodes a request must (read,
 * write; no splice), with the server's pipe size and read size.
 *
 * The relay is a child process serving one connection; the client is this
 * process, one call at a time, and it checks every echo byte for byte like
 * bench-loadgen.
 *
 *   bench-relay [--cmd PROG] [--calls N] [--warmup N] --input FILE
 *
 * Wire format, both ways: an 8-byte little-endian length, then the bytes. A
 * request length of RELAY_ASK_CPU asks the relay for its CPU time so far
 * (its own, then its reaped children's, in ns: two 8-byte values).
 *
 * Output: the stats line of bench/stats.h (cpu_us: this client's CPU per
 * call) followed by relay_cpu_us=X fn_cpu_us=X (the relay's own CPU and
 * cat's, per measured call). Exit status 0 when every call echoed its
 * input, 1 otherwise, 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/fdio.h"
#include "core/loop.h"
#include "core/numparse.h"
#include "stats.h"

#define RELAY_CHUNK (256 * 1024)     /* socket reads, like h2_io's bulk buffer */
#define RELAY_PIPE (1024 * 1024)     /* pipe size for big inputs, like fn_job */
#define RELAY_ASK_CPU UINT64_MAX

extern char **environ;

typedef struct opts {
    const char *cmd, *input;
    unsigned long long calls, warmup;
} opts;

static void fail(const char *what)
{
    fprintf(stderr, "bench-relay: %s: %s\n", what, strerror(errno));
    exit(1);
}

/* ---- command line ----------------------------------------------------------- */

static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){.cmd = "cat", .calls = 10};
    for (int i = 1; i < argc; i += 2) {
        const char *name = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        int rc = -1;
        if (value && !strcmp(name, "--calls"))
            rc = parse_uint(value, 1ULL << 32, &o->calls);
        else if (value && !strcmp(name, "--warmup"))
            rc = parse_uint(value, 1ULL << 32, &o->warmup);
        else if (value && !strcmp(name, "--cmd"))
            o->cmd = value, rc = 0;
        else if (value && !strcmp(name, "--input"))
            o->input = value, rc = 0;
        if (rc < 0) {
            fprintf(stderr, "bench-relay: bad option %s%s%s\n", name, value ? " " : "",
                    value ? value : "");
            return -1;
        }
    }
    if (!o->input || o->calls == 0) {
        fprintf(stderr, "usage: bench-relay [--cmd PROG] [--calls N] [--warmup N] --input FILE\n");
        return -1;
    }
    return 0;
}

/* ---- blocking helpers (each side of the relay does one thing at a time) ---- */

/* Sockets are blocking whenever this writes (relay_call sets its back). */
static void write_all(int fd, const void *data, size_t len)
{
    if (fd_write_all(fd, data, len) < 0)
        fail("write");
}

/* Returns 0, or -1 at end of file before the first byte. */
static int read_all(int fd, void *data, size_t len)
{
    char *p = data;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && got == 0)
            return -1;
        if (n <= 0) {
            errno = n == 0 ? EPIPE : errno;
            fail("read");
        }
        got += (size_t)n;
    }
    return 0;
}

static uint64_t get_le64(const uint8_t b[8])
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

static void put_le64(uint8_t b[8], uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static int64_t rusage_ns(int who)
{
    struct rusage ru;
    if (getrusage(who, &ru) < 0)
        fail("getrusage");
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

/* ---- the relay (child process) --------------------------------------------- */

static void set_nonblocking(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0)
        fail("fcntl(O_NONBLOCK)");
}

static pid_t spawn_cmd(const char *cmd, int in[2], int out[2])
{
    posix_spawn_file_actions_t fa;
    pid_t pid;
    char *argv[] = {(char *)cmd, NULL};
    if ((errno = posix_spawn_file_actions_init(&fa)) ||
        (errno = posix_spawn_file_actions_adddup2(&fa, in[0], 0)) ||
        (errno = posix_spawn_file_actions_adddup2(&fa, out[1], 1)) ||
        (errno = posix_spawnp(&pid, cmd, &fa, NULL, argv, environ)))
        fail("posix_spawnp");
    posix_spawn_file_actions_destroy(&fa);
    if (close(in[0]) < 0 || close(out[1]) < 0)
        fail("close");
    return pid;
}

/* One call: `len` request bytes are arriving on sock; stream them into the
 * command while collecting its output, then answer. */
static void relay_call(int sock, const char *cmd, uint64_t len, buf *out, char *chunk)
{
    int in[2], outp[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(outp, O_CLOEXEC) < 0)
        fail("pipe2");
    if (len > 65536) {   /* best effort, as in fn_job */
        (void)fcntl(in[1], F_SETPIPE_SZ, RELAY_PIPE);
        (void)fcntl(outp[1], F_SETPIPE_SZ, RELAY_PIPE);
    }
    pid_t pid = spawn_cmd(cmd, in, outp);
    set_nonblocking(in[1], 1);
    set_nonblocking(outp[0], 1);
    set_nonblocking(sock, 1);
    buf_reset(out);
    if (buf_reserve(out, len + len / 8 + 1) < 0)
        fail("buf_reserve");
    uint64_t left = len;                 /* request bytes still on the socket */
    size_t held = 0, held_off = 0;       /* chunk bytes not yet written to the pipe */
    int to_fn = in[1], from_fn = outp[0];
    if (left == 0 && close(to_fn) == 0)
        to_fn = -1;
    while (from_fn >= 0) {
        struct pollfd p[3] = {
            {.fd = left > 0 && held == 0 ? sock : -1, .events = POLLIN},
            {.fd = held > 0 ? to_fn : -1, .events = POLLOUT},
            {.fd = from_fn, .events = POLLIN},
        };
        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            fail("poll");
        }
        if (p[0].revents) {
            ssize_t n = read(sock, chunk, left < RELAY_CHUNK ? left : RELAY_CHUNK);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                fail("read(request)");
            if (n > 0)
                held = (size_t)n, held_off = 0, left -= (uint64_t)n;
        }
        if (p[1].revents) {
            ssize_t n = write(to_fn, chunk + held_off, held - held_off);
            if (n < 0 && errno != EAGAIN && errno != EINTR)
                fail("write(stdin)");
            if (n > 0 && (held_off += (size_t)n) == held)
                held = 0;
            if (held == 0 && left == 0) {
                if (close(to_fn) < 0)
                    fail("close(stdin)");
                to_fn = -1;
            }
        }
        if (p[2].revents) {
            for (;;) {
                if (buf_reserve(out, RELAY_CHUNK) < 0)
                    fail("buf_reserve");
                ssize_t n = read(from_fn, out->data + out->len, out->cap - out->len);
                if (n > 0) {
                    out->len += (size_t)n;
                    continue;
                }
                if (n < 0 && (errno == EAGAIN || errno == EINTR))
                    break;
                if (n < 0)
                    fail("read(stdout)");
                if (close(from_fn) < 0)
                    fail("close(stdout)");
                from_fn = -1;
                break;
            }
        }
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            fail("waitpid");
    if (to_fn >= 0 || left > 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench-relay: %s did not take all input and exit 0\n", cmd);
        exit(1);
    }
    set_nonblocking(sock, 0);
    uint8_t hdr[8];
    put_le64(hdr, out->len);
    write_all(sock, hdr, sizeof hdr);
    write_all(sock, out->data, out->len);
}

static void relay_serve(int listener, const char *cmd)
{
    int sock = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (sock < 0 || close(listener) < 0)
        fail("accept4");
    int one = 1;
    if (setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        fail("setsockopt(TCP_NODELAY)");
    buf out = {0};
    char *chunk = malloc(RELAY_CHUNK);
    if (!chunk)
        fail("malloc");
    uint8_t hdr[8];
    while (read_all(sock, hdr, sizeof hdr) == 0) {
        uint64_t len = get_le64(hdr);
        if (len != RELAY_ASK_CPU) {
            relay_call(sock, cmd, len, &out, chunk);
            continue;
        }
        uint8_t cpu[16];
        put_le64(cpu, (uint64_t)rusage_ns(RUSAGE_SELF));
        put_le64(cpu + 8, (uint64_t)rusage_ns(RUSAGE_CHILDREN));
        write_all(sock, cpu, sizeof cpu);
    }
    exit(0);
}

/* ---- the client (this process) --------------------------------------------- */

/* A relay child listening on a loopback port; returns the client's socket. */
static int start_relay(const char *cmd, pid_t *pid)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) < 0 || listen(l, 1) < 0 ||
        getsockname(l, (struct sockaddr *)&a, &alen) < 0)
        fail("listen on 127.0.0.1");
    fflush(stdout);
    *pid = fork();
    if (*pid < 0)
        fail("fork");
    if (*pid == 0)
        relay_serve(l, cmd);
    if (close(l) < 0)
        fail("close");
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) < 0 ||
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        fail("connect to the relay");
    return s;
}

/* One round trip; returns 0 when the answer echoes the input. */
static int call(int s, const buf *input, buf *answer)
{
    uint8_t hdr[8];
    put_le64(hdr, input->len);
    write_all(s, hdr, sizeof hdr);
    write_all(s, input->data, input->len);
    if (read_all(s, hdr, sizeof hdr) < 0) {
        fprintf(stderr, "bench-relay: the relay closed the connection\n");
        exit(1);
    }
    uint64_t len = get_le64(hdr);
    buf_reset(answer);
    if (len > input->len + (1u << 20) || buf_reserve(answer, len) < 0)
        return -1;
    if (len && read_all(s, answer->data, len) < 0)
        return -1;
    answer->len = len;
    return len == input->len && memcmp(answer->data, input->data, len) == 0 ? 0 : -1;
}

static void relay_cpu(int s, int64_t *self_ns, int64_t *children_ns)
{
    uint8_t hdr[8], cpu[16];
    put_le64(hdr, RELAY_ASK_CPU);
    write_all(s, hdr, sizeof hdr);
    if (read_all(s, cpu, sizeof cpu) < 0) {
        fprintf(stderr, "bench-relay: no CPU figures from the relay\n");
        exit(1);
    }
    *self_ns = (int64_t)get_le64(cpu);
    *children_ns = (int64_t)get_le64(cpu + 8);
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_args(argc, argv, &o) < 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    buf input = {0}, answer = {0};
    if (file_read_all(o.input, &input, 0) < 0)
        fail(o.input);
    pid_t relay;
    int s = start_relay(o.cmd, &relay);
    unsigned long long errors = 0;
    for (unsigned long long i = 0; i < o.warmup; i++)
        errors += call(s, &input, &answer) < 0;
    int64_t *lat = calloc(o.calls, sizeof *lat);
    if (!lat)
        fail("calloc");
    int64_t r_self0, r_kids0, r_self1, r_kids1;
    relay_cpu(s, &r_self0, &r_kids0);
    int64_t cpu0 = bench_cpu_ns(), t0 = loop_now_ns();
    for (unsigned long long i = 0; i < o.calls; i++) {
        int64_t start = loop_now_ns();
        errors += call(s, &input, &answer) < 0;
        lat[i] = loop_now_ns() - start;
    }
    int64_t elapsed = loop_now_ns() - t0, cpu = bench_cpu_ns() - cpu0;
    relay_cpu(s, &r_self1, &r_kids1);
    if (close(s) < 0)
        fail("close");
    int status;
    if (waitpid(relay, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "bench-relay: the relay failed\n");
        return 1;
    }
    if (errors)
        fprintf(stderr, "bench-relay: %llu answer(s) did not echo the input\n", errors);
    bench_print_stats(lat, o.calls, errors, elapsed, cpu);
    /* the stats line ends with a newline: the relay's figures go on a line
     * of their own, which run.sh reads the same way */
    printf("relay_cpu_us=%.1f fn_cpu_us=%.1f\n", (double)(r_self1 - r_self0) / 1e3 / (double)o.calls,
           (double)(r_kids1 - r_kids0) / 1e3 / (double)o.calls);
    free(lat);
    buf_free(&input);
    buf_free(&answer);
    return errors ? 1 : 0;
}
