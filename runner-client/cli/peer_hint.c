/* peer_hint: what a peer that broke a call speaks; see peer_hint.h. */
#include "cli/peer_hint.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "grpc/grpc_status.h"

/* The HTTP/2 client preface and an empty SETTINGS frame (RFC 9113 §3.4). */
static const char preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
                              "\x00\x00\x00\x04\x00\x00\x00\x00\x00";
#define PREFACE_LEN (sizeof preface - 1)

#define FRAME_HEADER_LEN 9
#define FRAME_SETTINGS 0x04

peer_kind peer_hint_classify(const uint8_t *b, size_t n, int closed, int timed_out)
{
    if (n == 0)
        return closed ? PEER_CLOSED : timed_out ? PEER_SILENT : PEER_UNKNOWN;
    if (n >= 5 && !memcmp(b, "HTTP/", 5))
        return PEER_HTTP1;
    if (b[0] == '<')
        return PEER_HTML;
    if (n >= FRAME_HEADER_LEN && b[3] == FRAME_SETTINGS && !(b[5] & 0x7f) && !b[6] && !b[7] && !b[8])
        return PEER_HTTP2;
    if (n >= 3 && (b[0] == 0x15 || b[0] == 0x16) && b[1] == 0x03)
        return PEER_TLS;
    return PEER_OTHER;
}

/* Up to max bytes of b, up to the first line end, printable ASCII kept and
 * the rest as \xNN. */
static void quote_bytes(const uint8_t *b, size_t n, size_t max, buf *out)
{
    buf_append_str(out, "\"");
    size_t i = 0;
    for (; i < n && i < max && b[i] != '\r' && b[i] != '\n'; i++) {
        if (b[i] >= 0x20 && b[i] < 0x7f && b[i] != '"' && b[i] != '\\')
            buf_printf(out, "%c", b[i]);
        else
            buf_printf(out, "\\x%02x", b[i]);
    }
    buf_append_str(out, i < n && i == max ? "...\"" : "\"");
}

int peer_hint_describe(peer_kind kind, const char *addr, const uint8_t *b, size_t n, buf *hint)
{
    if (kind == PEER_HTTP2 || kind == PEER_UNKNOWN)
        return 0;
    buf_printf(hint, " (is %s a gRPC server? ", addr);
    switch (kind) {
    case PEER_HTTP1:
        buf_append_str(hint, "It answers HTTP/1.x: ");
        quote_bytes(b, n, 80, hint);
        break;
    case PEER_HTML:
        buf_append_str(hint, "It answers HTML, as an HTTP/1 server does: ");
        quote_bytes(b, n, 80, hint);
        break;
    case PEER_TLS:
        buf_append_str(hint, "It answers TLS; runner-client speaks cleartext HTTP/2 (h2c)");
        break;
    case PEER_CLOSED:
        buf_append_str(hint, "It closed the connection without sending HTTP/2 SETTINGS");
        break;
    case PEER_SILENT:
        buf_printf(hint, "It accepted the connection but sent no HTTP/2 SETTINGS within %ds",
                   PEER_HINT_WAIT_MS / 1000);
        break;
    default:
        buf_append_str(hint, "Its first bytes are not HTTP/2: ");
        quote_bytes(b, n, 32, hint);
        break;
    }
    buf_append_str(hint, ")");
    return 1;
}

/* ---- the probe ------------------------------------------------------------ */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
    struct pollfd p = {.fd = fd, .events = events};
    for (;;) {
        int64_t left = deadline - now_ms();
        if (left <= 0)
            return 0;
        int n = poll(&p, 1, (int)left);
        if (n >= 0 || errno != EINTR)
            return n;
    }
}

static int connect_by(const struct addrinfo *ai, int64_t deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -1;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return fd;
    if (errno == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) > 0 &&
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
        return fd;
    close(fd);
    return -1;
}

static int probe_connect(const char *addr, int64_t deadline)
{
    char host[256], port[32];
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    /* "[v6]:port" or "host:port", as the call that just connected took it */
    if ((sscanf(addr, "[%255[^]]]:%31s", host, port) != 2 &&
         sscanf(addr, "%255[^:]:%31s", host, port) != 2) ||
        getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = -1;
    for (const struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next)
        fd = connect_by(ai, deadline);
    freeaddrinfo(res);
    return fd;
}

/* Whether what has arrived is enough to judge. */
static int enough(const uint8_t *b, size_t n)
{
    return memchr(b, '\n', n) || peer_hint_classify(b, n, 0, 0) == PEER_HTTP2 ||
           peer_hint_classify(b, n, 0, 0) == PEER_TLS;
}

/* Sends the preface and reads the answer's first bytes into b. */
static peer_kind probe(const char *addr, uint8_t *b, size_t cap, size_t *n)
{
    int64_t deadline = now_ms() + PEER_HINT_WAIT_MS;
    int fd = probe_connect(addr, deadline);
    *n = 0;
    if (fd < 0)
        return PEER_UNKNOWN;
    int closed = 0, timed_out = 0;
    if (send(fd, preface, PREFACE_LEN, MSG_NOSIGNAL) != (ssize_t)PREFACE_LEN) {
        closed = 1;   /* reset before we could speak */
    } else {
        while (*n < cap && !enough(b, *n)) {
            int ready = wait_fd(fd, POLLIN, deadline);
            if (ready <= 0) {
                timed_out = ready == 0;
                break;
            }
            ssize_t got = recv(fd, b + *n, cap - *n, 0);
            if (got < 0 && (errno == EINTR || errno == EAGAIN))
                continue;
            if (got <= 0) {
                closed = 1;
                break;
            }
            *n += (size_t)got;
        }
    }
    close(fd);
    return peer_hint_classify(b, *n, closed, timed_out);
}

void peer_hint_apply(const char *addr, int connected, int status, char **message)
{
    if (!connected || (status != GRPC_UNAVAILABLE && status != GRPC_DEADLINE_EXCEEDED))
        return;
    uint8_t bytes[256];
    size_t n;
    peer_kind kind = probe(addr, bytes, sizeof bytes, &n);
    buf text = {0};
    if (buf_append_str(&text, *message ? *message : "") < 0 ||
        !peer_hint_describe(kind, addr, bytes, n, &text) || !text.data) {
        buf_free(&text);
        return;
    }
    free(*message);
    *message = buf_steal(&text, NULL);
}
