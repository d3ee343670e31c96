/* grpc_client: unary gRPC client on nghttp2 and the event loop; see
 * grpc_client.h.
 *
 * A call is: HEADERS (POST, :path, te: trailers, grpc-timeout) + one
 * length-prefixed message with END_STREAM; the answer is HEADERS, DATA
 * with one message, and trailers carrying grpc-status (or a single
 * Trailers-Only HEADERS frame). */
#include "grpc/grpc_client.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "core/log.h"
#include "core/numparse.h"
#include "grpc/grpc_frame.h"
#include "grpc/grpc_status.h"
#include "grpc/grpc_timeout.h"
#include "grpc/h2_io.h"

typedef struct gc_call_state {
    gc_conn *conn;
    int32_t stream_id;
    gc_done_fn *done;
    void *ctx;
    uint8_t prefix[GRPC_PREFIX_LEN];
    const uint8_t *body;    /* the caller's request, borrowed until done; NULL after */
    size_t body_len;
    size_t sent;            /* bytes of prefix + body handed to nghttp2 */
    grpc_reader reader;
    buf response;           /* the first response message */
    int got_message;
    int http_status;
    int grpc_status;        /* -1 until seen */
    buf grpc_message;
    char timeout_text[10];
    int reported;
    int local_status;       /* set when we end the call ourselves */
    int transport;          /* ended by the connection, not by an answer */
    const char *local_message;
    loop_timer deadline;    /* armed while its timeout runs */
    struct gc_call_state *next;
} gc_call_state;

struct gc_conn {
    loop *loop;
    h2_io io;
    char authority[256];
    uint32_t max_message;
    uint32_t watching;
    int broken;
    const char *user_agent;
    const char *const *extra;   /* name, value, name, value, ... */
    size_t n_extra;
    gc_call_state *calls;
    loop_defer flush_later;     /* gc_call_start's write, from the loop */
};

static void gc_flush(gc_conn *c);
static void flush_now(loop *l, void *ctx);

/* ---- finishing a call --------------------------------------------------- */

static void call_report(gc_call_state *cs)
{
    if (cs->reported)
        return;
    cs->reported = 1;
    gc_result r = {.status = GRPC_UNKNOWN, .message = ""};
    buf msg = {0};
    if (cs->local_status >= 0 && cs->local_message) {
        r.status = cs->local_status;
        r.message = cs->local_message;
    } else if (cs->grpc_status >= 0) {
        r.status = cs->grpc_status;
        grpc_message_decode(cs->grpc_message.data ? cs->grpc_message.data : "",
                            cs->grpc_message.len, &msg);
        r.message = msg.data ? msg.data : "";
        if (r.status == GRPC_OK && !cs->got_message) {
            r.status = GRPC_INTERNAL;
            r.message = "cardinality violation: received no response message from "
                        "non-server-streaming RPC";
        }
    } else if (cs->http_status && cs->http_status != 200) {
        buf_printf(&msg, "unexpected HTTP status code received from server: %d",
                   cs->http_status);
        r.status = cs->http_status == 400 ? GRPC_INTERNAL
                 : cs->http_status == 401 ? GRPC_UNAUTHENTICATED
                 : cs->http_status == 403 ? GRPC_PERMISSION_DENIED
                 : cs->http_status == 404 ? GRPC_UNIMPLEMENTED
                 : (cs->http_status == 429 || cs->http_status >= 502) ? GRPC_UNAVAILABLE
                 : GRPC_UNKNOWN;
        r.message = msg.data;
    } else {
        r.status = GRPC_INTERNAL;
        r.message = "server closed the stream without sending trailers";
    }
    r.transport = cs->transport && r.status == GRPC_UNAVAILABLE;
    if (r.status == GRPC_OK) {
        r.response = (const uint8_t *)cs->response.data;
        r.response_len = cs->response.len;
        r.response_buf = &cs->response;
    }
    cs->body = NULL;   /* the caller may free the request from now on */
    cs->done(&r, cs->ctx);
    buf_free(&msg);
}

static void call_free(gc_call_state *cs)
{
    gc_conn *c = cs->conn;
    for (gc_call_state **p = &c->calls; *p; p = &(*p)->next)
        if (*p == cs) {
            *p = cs->next;
            break;
        }
    loop_timer_disarm(c->loop, &cs->deadline);
    buf_free(&cs->response);
    buf_free(&cs->grpc_message);
    grpc_reader_free(&cs->reader);
    free(cs);
}

static void call_end_locally(gc_call_state *cs, int status, const char *message)
{
    if (cs->local_status < 0) {
        cs->local_status = status;
        cs->local_message = message;
    }
}

/* ---- nghttp2 callbacks -------------------------------------------------- */

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    (void)flags, (void)user_data;
    gc_call_state *cs = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!cs)
        return 0;
    if (namelen == 7 && !memcmp(name, ":status", 7)) {
        cs->http_status = atoi((const char *)value);
    } else if (namelen == 11 && !memcmp(name, "grpc-status", 11)) {
        cs->grpc_status = grpc_code_parse((const char *)value, valuelen);
        if (cs->grpc_status < 0)
            cs->grpc_status = GRPC_UNKNOWN;
    } else if (namelen == 12 && !memcmp(name, "grpc-message", 12)) {
        buf_reset(&cs->grpc_message);
        buf_append(&cs->grpc_message, value, valuelen);
    }
    return 0;
}

static int on_response_message(void *ctx, uint8_t flag, const uint8_t *msg, size_t len)
{
    gc_call_state *cs = ctx;
    if (flag != 0) {
        call_end_locally(cs, GRPC_INTERNAL, "the server sent a compressed message");
        return 1;
    }
    if (cs->got_message) {
        call_end_locally(cs, GRPC_INTERNAL,
                         "cardinality violation: more than one response message");
        return 1;
    }
    cs->got_message = 1;
    /* takes the reader's buffer when the message was assembled there: a
     * large response is not copied again */
    return grpc_reader_take(&cs->reader, msg, len, &cs->response) < 0 ? 1 : 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
    (void)flags, (void)user_data;
    gc_call_state *cs = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!cs || cs->local_status >= 0)
        return 0;
    int rv = grpc_reader_feed(&cs->reader, data, len, on_response_message, cs);
    if (rv == -1 && cs->reader.state == GRPC_READER_TOO_LARGE)
        call_end_locally(cs, GRPC_RESOURCE_EXHAUSTED, "grpc: received message larger than max");
    else if (rv == -1)
        call_end_locally(cs, GRPC_INTERNAL, "grpc: received unexpected payload format");
    if (rv != 0 || cs->local_status >= 0)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    (void)user_data;
    gc_call_state *cs = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!cs)
        return 0;
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    /* refused: the server did not process it (RFC 9113 8.7), safe to retry */
    cs->transport = cs->grpc_status < 0 && error_code == NGHTTP2_REFUSED_STREAM;
    if (cs->grpc_status < 0 && error_code != NGHTTP2_NO_ERROR)
        call_end_locally(cs, error_code == NGHTTP2_REFUSED_STREAM ? GRPC_UNAVAILABLE
                             : error_code == NGHTTP2_CANCEL       ? GRPC_CANCELLED
                                                                  : GRPC_INTERNAL,
                         error_code == NGHTTP2_REFUSED_STREAM ? "the server refused the stream"
                                                              : "the server reset the stream");
    call_report(cs);
    call_free(cs);
    return 0;
}

static int on_send_data(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *source, void *user_data);

static nghttp2_session_callbacks *client_callbacks(void)
{
    static nghttp2_session_callbacks *cbs;
    if (!cbs) {
        if (nghttp2_session_callbacks_new(&cbs) != 0)
            return NULL;
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
        nghttp2_session_callbacks_set_send_data_callback(cbs, on_send_data);
    }
    return cbs;
}

/* ---- connection --------------------------------------------------------- */

static void gc_fail_all(gc_conn *c, const char *why)
{
    c->broken = 1;
    while (c->calls) {
        gc_call_state *cs = c->calls;
        cs->transport = 1;
        call_end_locally(cs, GRPC_UNAVAILABLE, why);
        call_report(cs);
        call_free(cs);
    }
}

static void gc_on_io(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)fd;
    gc_conn *c = ctx;
    if (events & ~LOOP_WRITE) {
        if (h2_io_read(&c->io) == H2_IO_CLOSED) {
            loop_unwatch(c->loop, c->io.fd);
            c->watching = 0;
            gc_fail_all(c, "connection closed by the server");
            return;
        }
    }
    gc_flush(c);
}

static void gc_flush(gc_conn *c)
{
    if (c->broken)
        return;
    int rv = h2_io_flush(&c->io);
    if (rv == H2_IO_DEFERRED)
        return;
    if (rv == H2_IO_CLOSED) {
        loop_unwatch(c->loop, c->io.fd);
        c->watching = 0;
        gc_fail_all(c, "connection lost");
        return;
    }
    uint32_t want = LOOP_READ | (rv == H2_IO_BLOCKED ? LOOP_WRITE : 0);
    if (want != c->watching && loop_watch(c->loop, c->io.fd, want, gc_on_io, c) == 0)
        c->watching = want;
}

static int split_addr(const char *addr, char *host, size_t hlen, char *port, size_t plen)
{
    const char *colon;
    if (addr[0] == '[') {
        const char *end = strchr(addr, ']');
        if (!end || end[1] != ':')
            return -1;
        snprintf(host, hlen, "%.*s", (int)(end - addr - 1), addr + 1);
        colon = end + 1;
    } else {
        colon = strrchr(addr, ':');
        if (!colon)
            return -1;
        snprintf(host, hlen, "%.*s", (int)(colon - addr), addr);
    }
    snprintf(port, plen, "%s", colon + 1);
    return host[0] && port[0] ? 0 : -1;
}

/* Connect with a timeout; returns a non-blocking socket or -1 (errno set). */
int gc_addr_check(const char *addr, buf *err)
{
    char host[256], port[32];
    unsigned long long n;
    if (split_addr(addr, host, sizeof host, port, sizeof port) < 0 ||
        parse_uint(port, 65535, &n) < 0 || n == 0) {
        buf_printf(err, "invalid address \"%s\": want HOST:PORT, e.g. localhost:9446", addr);
        return -1;
    }
    return 0;
}

static int connect_one(const struct addrinfo *ai, int64_t timeout_ns)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0)
        return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0) {
        if (errno != EINPROGRESS) {
            int e = errno;
            close(fd);
            errno = e;
            return -1;
        }
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        /* whole milliseconds, rounded up (a sub-millisecond timeout is not
         * "now") and saturated at poll's int */
        int64_t ms64 = timeout_ns > 0 ? timeout_ns / 1000000 + (timeout_ns % 1000000 != 0) : -1;
        int ms = ms64 > INT_MAX ? INT_MAX : (int)ms64;
        int n;
        while ((n = poll(&p, 1, ms)) < 0 && errno == EINTR)
            ;
        int soerr = 0;
        socklen_t len = sizeof soerr;
        if (n == 0)
            soerr = ETIMEDOUT;
        else if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
            soerr = errno;
        if (soerr) {
            close(fd);
            errno = soerr;
            return -1;
        }
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static int open_socket(const char *addr, int64_t timeout_ns, buf *err)
{
    char host[256], port[32];
    if (split_addr(addr, host, sizeof host, port, sizeof port) < 0) {
        buf_printf(err, "invalid address \"%s\": want HOST:PORT", addr);
        return -1;
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 && !strcasecmp(host, "localhost")) {
        /* RFC 6761: localhost is loopback, even in a root with no /etc/hosts
         * (a probe exec'd in a scratch function image). */
        hints.ai_flags = AI_NUMERICHOST;
        rc = getaddrinfo("127.0.0.1", port, &hints, &res);
    }
    if (rc != 0) {
        buf_printf(err, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, last_errno = 0;
    for (struct addrinfo *ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = connect_one(ai, timeout_ns);
        if (fd < 0)
            last_errno = errno;
    }
    freeaddrinfo(res);
    if (fd < 0)
        buf_printf(err, "failed to connect to %s: %s", addr, strerror(last_errno));
    return fd;
}

/* The HTTP/2 session on a connected socket (taken over: closed on failure). */
static gc_conn *conn_on_fd(loop *l, int fd, const char *addr, uint32_t max_message, buf *err)
{
    gc_conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(fd);
        buf_printf(err, "out of memory");
        return NULL;
    }
    c->loop = l;
    loop_defer_init(&c->flush_later, flush_now, c);
    c->io.fd = fd;
    c->max_message = max_message;
    snprintf(c->authority, sizeof c->authority, "%s", addr);
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20},
    };
    if (nghttp2_session_client_new(&c->io.session, client_callbacks(), c) != 0 ||
        nghttp2_submit_settings(c->io.session, NGHTTP2_FLAG_NONE, settings, 2) != 0 ||
        nghttp2_session_set_local_window_size(c->io.session, NGHTTP2_FLAG_NONE, 0, 16 << 20) != 0) {
        buf_printf(err, "cannot start an HTTP/2 session");
        h2_io_free(&c->io);
        free(c);
        return NULL;
    }
    gc_flush(c);
    return c;
}

gc_conn *gc_connect(loop *l, const char *addr, int64_t connect_timeout_ns, uint32_t max_message,
                    buf *err)
{
    int fd = open_socket(addr, connect_timeout_ns, err);
    return fd < 0 ? NULL : conn_on_fd(l, fd, addr, max_message, err);
}

/* ---- connecting on the loop --------------------------------------------- */

struct gc_dialing {
    loop *loop;
    int fd;
    char addr[256];
    uint32_t max_message;
    loop_timer deadline;   /* armed while a timeout runs */
    gc_connected_fn *fn;
    void *ctx;
};

static void dial_end(gc_dialing *d, int soerr)
{
    loop_unwatch(d->loop, d->fd);
    loop_timer_disarm(d->loop, &d->deadline);
    buf err = {0};
    gc_conn *c = NULL;
    if (soerr) {
        close(d->fd);
        buf_printf(&err, "failed to connect to %s: %s", d->addr, strerror(soerr));
    } else {
        int one = 1;
        setsockopt(d->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c = conn_on_fd(d->loop, d->fd, d->addr, d->max_message, &err);
    }
    d->fn(c, c ? NULL : err.data ? err.data : "out of memory", d->ctx);
    buf_free(&err);
    free(d);
}

static void dial_ready(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l;
    (void)events;
    int soerr = 0;
    socklen_t len = sizeof soerr;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
        soerr = errno;
    dial_end(ctx, soerr);
}

static void dial_timeout(loop *l, void *ctx)
{
    (void)l;
    dial_end(ctx, ETIMEDOUT);
}

gc_dialing *gc_connect_start(loop *l, const char *addr, int64_t timeout_ns, uint32_t max_message,
                             gc_connected_fn *fn, void *ctx, buf *err)
{
    char host[256], port[32];
    if (split_addr(addr, host, sizeof host, port, sizeof port) < 0) {
        buf_printf(err, "invalid address \"%s\": want IP:PORT", addr);
        return NULL;
    }
    /* numeric only: a resolver call would block the loop */
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV}, *res;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        buf_printf(err, "invalid address \"%s\": want a numeric IP:PORT (%s)", addr,
                   gai_strerror(rc));
        return NULL;
    }
    gc_dialing *d = calloc(1, sizeof *d);
    int fd = d ? socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        res->ai_protocol) : -1;
    if (fd < 0) {
        buf_printf(err, "cannot connect to %s: %s", addr, d ? strerror(errno) : "out of memory");
        freeaddrinfo(res);
        free(d);
        return NULL;
    }
    *d = (gc_dialing){.loop = l, .fd = fd, .max_message = max_message, .fn = fn, .ctx = ctx};
    snprintf(d->addr, sizeof d->addr, "%s", addr);
    loop_timer_init(&d->deadline, dial_timeout, d);
    int e = connect(fd, res->ai_addr, res->ai_addrlen) < 0 ? errno : 0;
    freeaddrinfo(res);
    if (e && e != EINPROGRESS) {
        close(fd);
        free(d);
        buf_printf(err, "failed to connect to %s: %s", addr, strerror(e));
        return NULL;
    }
    /* even a connect that completed at once is reported from the loop, so
     * fn never runs inside this call */
    if (loop_watch(l, fd, LOOP_WRITE, dial_ready, d) < 0) {
        close(fd);
        free(d);
        buf_printf(err, "cannot connect to %s: out of memory", addr);
        return NULL;
    }
    if (timeout_ns > 0)
        loop_timer_arm(l, &d->deadline, timeout_ns);
    return d;
}

void gc_connect_cancel(gc_dialing *d)
{
    if (!d)
        return;
    loop_unwatch(d->loop, d->fd);
    loop_timer_disarm(d->loop, &d->deadline);
    close(d->fd);
    free(d);
}

/* ---- calls -------------------------------------------------------------- */

/* Writes the next len bytes of the request (prefix, then the borrowed
 * body) at dst; h2_io_queue_data calls it. */
static void copy_request(void *src, uint8_t *dst, size_t len)
{
    gc_call_state *cs = src;
    size_t n = 0;
    if (cs->sent < GRPC_PREFIX_LEN) {
        n = GRPC_PREFIX_LEN - cs->sent < len ? GRPC_PREFIX_LEN - cs->sent : len;
        memcpy(dst, cs->prefix + cs->sent, n);
        cs->sent += n;
    }
    if (len > n) {
        memcpy(dst + n, cs->body + (cs->sent - GRPC_PREFIX_LEN), len - n);
        cs->sent += len - n;
    }
}

/* nghttp2 asks what the next DATA frame carries: count it (NO_COPY; the
 * bytes are copied once, by copy_request, when the frame is queued). */
static ssize_t read_request(nghttp2_session *session, int32_t stream_id, uint8_t *dst, size_t len,
                            uint32_t *flags, nghttp2_data_source *source, void *user_data)
{
    (void)session, (void)stream_id, (void)dst, (void)user_data;
    gc_call_state *cs = source->ptr;
    if (!cs->body)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;   /* ended: the bytes are gone */
    size_t left = GRPC_PREFIX_LEN + cs->body_len - cs->sent;
    size_t n = left < len ? left : len;
    if (n == left)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    if (n)
        *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    return (ssize_t)n;
}

static int on_send_data(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *source, void *user_data)
{
    (void)session;
    gc_conn *c = user_data;
    gc_call_state *cs = source->ptr;
    if (!cs->body)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;   /* ended: reset the stream */
    return h2_io_queue_data(&c->io, frame, framehd, length, copy_request, cs);
}

static void call_deadline(loop *l, void *ctx)
{
    (void)l;
    gc_call_state *cs = ctx;
    call_end_locally(cs, GRPC_DEADLINE_EXCEEDED, "context deadline exceeded");
    nghttp2_submit_rst_stream(cs->conn->io.session, NGHTTP2_FLAG_NONE, cs->stream_id,
                              NGHTTP2_CANCEL);
    gc_flush(cs->conn);
}

#define NV(name, value)                                                              \
    {(uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, strlen(value),           \
     NGHTTP2_NV_FLAG_NONE}

/* The request on a new stream, not written yet; NULL when it cannot start. */
static gc_call_state *call_submit(gc_conn *c, const char *path, const void *request, size_t len,
                                  int64_t timeout_ns, gc_done_fn *done, void *ctx)
{
    if (c->broken || len > UINT32_MAX)
        return NULL;
    gc_call_state *cs = calloc(1, sizeof *cs);
    if (!cs)
        return NULL;
    cs->conn = c;
    cs->done = done;
    cs->ctx = ctx;
    cs->grpc_status = -1;
    cs->local_status = -1;
    loop_timer_init(&cs->deadline, call_deadline, cs);
    grpc_reader_init(&cs->reader, c->max_message);
    grpc_frame_prefix(cs->prefix, (uint32_t)len);
    cs->body = len ? request : (const uint8_t *)"";
    cs->body_len = len;

    nghttp2_nv *nva = calloc(8 + c->n_extra, sizeof *nva);
    if (!nva) {
        grpc_reader_free(&cs->reader);
        free(cs);
        return NULL;
    }
    size_t n = 0;
    nva[n++] = (nghttp2_nv)NV(":method", "POST");
    nva[n++] = (nghttp2_nv)NV(":scheme", "http");
    nva[n++] = (nghttp2_nv)NV(":path", path);
    nva[n++] = (nghttp2_nv)NV(":authority", c->authority);
    nva[n++] = (nghttp2_nv)NV("content-type", "application/grpc");
    nva[n++] = (nghttp2_nv)NV("user-agent", c->user_agent ? c->user_agent : "runner-client/0.1");
    nva[n++] = (nghttp2_nv)NV("te", "trailers");
    if (timeout_ns > 0) {
        grpc_timeout_format(timeout_ns, cs->timeout_text);
        nva[n++] = (nghttp2_nv)NV("grpc-timeout", cs->timeout_text);
    }
    for (size_t i = 0; i < c->n_extra; i++)
        nva[n++] = (nghttp2_nv){(uint8_t *)c->extra[2 * i], (uint8_t *)c->extra[2 * i + 1],
                                strlen(c->extra[2 * i]), strlen(c->extra[2 * i + 1]),
                                NGHTTP2_NV_FLAG_NONE};
    nghttp2_data_provider prd = {.source.ptr = cs, .read_callback = read_request};
    cs->stream_id = nghttp2_submit_request(c->io.session, NULL, nva, n, &prd, cs);
    free(nva);   /* nghttp2 copied the headers */
    if (cs->stream_id < 0) {
        grpc_reader_free(&cs->reader);
        free(cs);
        return NULL;
    }
    cs->next = c->calls;
    c->calls = cs;
    if (timeout_ns > 0)
        loop_timer_arm(c->loop, &cs->deadline, timeout_ns);
    return cs;
}

int gc_call(gc_conn *c, const char *path, const void *request, size_t len, int64_t timeout_ns,
            gc_done_fn *done, void *ctx)
{
    if (!call_submit(c, path, request, len, timeout_ns, done, ctx))
        return -1;
    gc_flush(c);
    return 0;
}

static void flush_now(loop *l, void *ctx)
{
    (void)l;
    gc_flush(ctx);
}

gc_stream *gc_call_start(gc_conn *c, const char *path, const void *request, size_t len,
                         int64_t timeout_ns, gc_done_fn *done, void *ctx)
{
    if (!gc_usable(c))
        return NULL;
    gc_call_state *cs = call_submit(c, path, request, len, timeout_ns, done, ctx);
    if (cs)
        loop_defer_post_in_batch(c->loop, &c->flush_later);   /* once per turn, whatever the calls */
    return cs;
}

void gc_call_cancel(gc_stream *cs)
{
    if (!cs || cs->reported)
        return;
    cs->reported = 1;   /* done will not run; the state goes when the stream closes */
    cs->body = NULL;    /* the caller may free the request now */
    loop_timer_disarm(cs->conn->loop, &cs->deadline);
    nghttp2_submit_rst_stream(cs->conn->io.session, NGHTTP2_FLAG_NONE, cs->stream_id, NGHTTP2_CANCEL);
    loop_defer_post(cs->conn->loop, &cs->conn->flush_later);
}

int gc_usable(const gc_conn *c)
{
    return c && !c->broken && nghttp2_session_check_request_allowed(c->io.session);
}



void gc_set_metadata(gc_conn *c, const char *user_agent, const char *const *pairs, size_t n_pairs)
{
    c->user_agent = user_agent;
    c->extra = pairs;
    c->n_extra = n_pairs;
}

size_t gc_pending(const gc_conn *c)
{
    size_t n = 0;
    for (const gc_call_state *cs = c->calls; cs; cs = cs->next)
        n++;
    return n;
}

void gc_close(gc_conn *c)
{
    if (!c)
        return;
    while (c->calls) {
        gc_call_state *cs = c->calls;
        call_end_locally(cs, GRPC_CANCELLED, "the connection was closed by the client");
        call_report(cs);
        call_free(cs);
    }
    loop_defer_cancel(&c->flush_later);
    loop_unwatch(c->loop, c->io.fd);
    h2_io_free(&c->io);
    free(c);
}
