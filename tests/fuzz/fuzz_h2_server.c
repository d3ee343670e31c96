/* Fuzzes the server's HTTP/2 side end to end: a real rpc_server in this
 * process (the health service behind it), a real TCP connection, and the
 * input as what the client sends after the connection preface: frames,
 * HPACK header blocks, DATA, resets, in any order (or, when the first byte
 * is odd, the raw bytes with no preface at all: the protocol sniffing and
 * HTTP/1.1 path). The client then half-closes; whatever it sent, the
 * server must close the connection (it read EOF) without crashing,
 * leaking or hanging.
 *
 * Input: [flags] [span_at] [span_len] [reps] bytes...
 * As in fuzz_http1, a span of the bytes is repeated reps * 64 times, so a
 * four-byte change makes a header value or a frame sequence tens of KiB
 * long: libFuzzer's inputs grow slowly from a 4 KiB maximum, and limits
 * (HPACK's, the 8 KiB HTTP/1.1 head) are only reached by long inputs. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"
#include "grpc/rpc_server.h"
#include "runtime/services.h"
#include "fuzz_common.h"

#define MAX_INPUT (128 * 1024)

static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

static loop *L;
static server *S;

/* The client's side, driven by the same loop as the server: it writes the
 * input as the server takes it, half-closes, and reads until EOF. */
typedef struct client {
    int fd;
    const uint8_t *bytes;
    size_t len, off;
    int closed;
} client;

static void on_client(loop *l, int fd, uint32_t events, void *ctx)
{
    client *c = ctx;
    if ((events & LOOP_WRITE) && c->off < c->len) {
        ssize_t w = send(fd, c->bytes + c->off, c->len - c->off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0)
            c->off += (size_t)w;
        else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            c->off = c->len;   /* the server closed: the rest is moot */
        if (c->off == c->len) {
            shutdown(fd, SHUT_WR);
            loop_watch(l, fd, LOOP_READ, on_client, c);
        }
    }
    char chunk[65536];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0)
        ;
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        c->closed = 1;
        loop_unwatch(l, fd);
        loop_stop(l);
    }
}

static void hung(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    FUZZ_CHECK(!"the server did not close a half-closed connection within 5 s");
}

static void start_server(void)
{
    static const rpc_method *const methods[] = {
        &health_check_method, &health_list_method, &health_watch_method, NULL,
    };
    L = loop_new();
    FUZZ_CHECK(L != NULL);
    rpc_server_config cfg = {
        .port = 0,
        .max_message = 1 << 20,
        .max_streams = 100,
        .shutdown_grace_ns = 1000000000,
        .max_pending_conn_bytes = 4 << 20,
        .max_pending_bytes = 16 << 20,
        .methods = methods,
    };
    S = rpc_server_new(L, &cfg);
    buf err = {0};
    FUZZ_CHECK(S != NULL && rpc_server_listen(S, &err) == 0);
    buf_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    if (!S) {
        log_verbosity = 0;
        start_server();
    }
    static uint8_t bytes[sizeof preface + 2 * MAX_INPUT];
    size_t n = 0;
    if (!(data[0] & 1)) {
        memcpy(bytes, preface, sizeof preface - 1);
        n = sizeof preface - 1;
    }
    n += fuzz_stretch(data, data + 4, size - 4, bytes + n, MAX_INPUT);

    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    FUZZ_CHECK(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)rpc_server_port(S)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    FUZZ_CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0 || errno == EINPROGRESS);
    client c = {.fd = fd, .bytes = bytes, .len = n};
    FUZZ_CHECK(loop_watch(L, fd, LOOP_READ | (n ? LOOP_WRITE : 0), on_client, &c) == 0);
    if (!n)
        shutdown(fd, SHUT_WR);   /* after the connect completes: queued behind the SYN */
    loop_timer *t = loop_timer_add(L, 5000000000LL, hung, NULL);
    while (!c.closed)
        FUZZ_CHECK(loop_run(L) == 0);
    loop_timer_cancel(L, t);
    close(fd);
    return 0;
}
