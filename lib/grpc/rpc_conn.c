/* rpc_conn: one client connection of the gRPC server, from accept to close
 * (the server as a whole: rpc_server.c; each call on it: rpc_call.c).
 *
 * The first bytes of a connection decide its protocol (conn_sniff): the
 * HTTP/2 preface means gRPC; anything else that looks like HTTP/1.1 goes to
 * http1.c for the probe and scrape endpoints (/healthz, /readyz, /metrics).
 * Our own SETTINGS wait until then, so an HTTP/1.1 client reads a clean
 * response, and only a peer that sent the preface costs an HTTP/2 session.
 *
 * An HTTP/2 connection is an nghttp2 server session that h2_io feeds and
 * drains. Its callbacks are where a call's life is driven from: each finds
 * the call of its stream and hands the event to rpc_call.c (refusing a
 * stream when the connection's slots are taken, held slots included; see
 * rpc_hold_slot in rpc.h). rpc_conn_flush writes what the session queued and
 * closes a connection whose socket takes nothing for --stalled-send-timeout.
 * Two more timers bound what a peer holds: the handshake (preface and
 * SETTINGS within 10 s) and idleness (GOAWAY after --idle-timeout without a
 * call). Closing a connection cancels its calls. */
#include "grpc/rpc_server_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "core/log.h"
#include "grpc/h2_io.h"
#include "grpc/http1.h"
#include "grpc/metrics.h"

#define SERVER_WINDOW (1 << 20)            /* per stream receive window */
#define SERVER_CONN_WINDOW (16 << 20)      /* per connection receive window */
#define SERVER_HANDSHAKE_NS (10 * 1000000000LL) /* preface + SETTINGS must arrive by then */
#define SERVER_LINGER_NS (1000000000LL)    /* after a refusing GOAWAY: the client's rest */

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
_Static_assert(sizeof h2_preface - 1 == H2_PREFACE_LEN, "H2_PREFACE_LEN");

static void conn_on_io(loop *l, int fd, uint32_t events, void *ctx);
static int conn_start_session(conn *c);
static void conn_handshake_expired(loop *l, void *ctx);
static void conn_idle_expired(loop *l, void *ctx);
static void conn_check_write_stall(loop *l, void *ctx);
static void conn_linger_expired(loop *l, void *ctx);
static void conn_http1_request(void *ctx, const char *path, const char *query, http1_response *r);
static void conn_http1_io(conn *c);
static nghttp2_session_callbacks *server_callbacks(void);
static void hold_unlink(rpc_slot_hold *h);

/* ---- a new connection and its timers ------------------------------------- */

void rpc_conn_new(server *s, int cfd)
{
    conn *c = calloc(1, sizeof *c);
    if (!c) {
        close(cfd);
        return;
    }
    c->srv = s;
    c->io.fd = cfd;
    c->next = s->conns;
    s->conns = c;
    loop_timer_init(&c->handshake_timer, conn_handshake_expired, c);
    loop_timer_init(&c->idle_timer, conn_idle_expired, c);
    loop_timer_init(&c->write_timer, conn_check_write_stall, c);
    loop_timer_init(&c->linger_timer, conn_linger_expired, c);
    loop_timer_arm(s->loop, &c->handshake_timer, SERVER_HANDSHAKE_NS);
    rpc_conn_arm_idle(c);
    log_v(4, "connection fd %d accepted", cfd);
    /* Our SETTINGS go out once the first bytes say HTTP/2 (conn_sniff). */
    if (loop_watch(s->loop, cfd, LOOP_READ, conn_on_io, c) == 0)
        c->watching = LOOP_READ;
    else
        rpc_conn_close(c);
}

/* A peer that does not complete the HTTP/2 handshake in time (a port
 * scanner, a slow-trickle attack) loses its connection. */
static void conn_handshake_expired(loop *l, void *ctx)
{
    (void)l;
    conn *c = ctx;
    log_v(2, "connection fd %d: no %s within %lld s; closing", c->io.fd,
          c->mode == CONN_HTTP1 ? "complete HTTP/1.1 request" : "HTTP/2 preface and SETTINGS",
          SERVER_HANDSHAKE_NS / 1000000000LL);
    rpc_conn_close(c);
}

/* A connection without calls for --idle-timeout is sent GOAWAY; clients
 * reconnect when they need to (grpc-go's MaxConnectionIdle). */
static void conn_idle_expired(loop *l, void *ctx)
{
    (void)l;
    conn *c = ctx;
    log_v(3, "connection fd %d idle; closing", c->io.fd);
    if (c->mode != CONN_HTTP2) {
        rpc_conn_close(c);
        return;
    }
    if (!c->final_goaway) {
        c->final_goaway = 1;
        nghttp2_submit_goaway(c->io.session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(c->io.session),
                              NGHTTP2_NO_ERROR, (const uint8_t *)"idle", 4);
    }
    rpc_conn_flush(c);
}

void rpc_conn_arm_idle(conn *c)
{
    int64_t idle = c->srv->cfg->idle_timeout_ns;
    if (idle <= 0 || c->closing || loop_timer_armed(&c->idle_timer))
        return;
    loop_timer_arm(c->srv->loop, &c->idle_timer, idle);
}

/* ---- the first bytes ----------------------------------------------------- */

/* 1: the bytes start with an HTTP/1.1 method and a space, 0: they may
 * still, -1: they cannot. */
static int http1_method_prefix(const uint8_t *p, size_t n)
{
    static const char *const methods[] = {"GET ", "HEAD ", "POST ", "PUT ", "DELETE ",
                                          "OPTIONS ", "PATCH ", "TRACE ", "CONNECT "};
    int maybe = 0;
    for (size_t i = 0; i < sizeof methods / sizeof *methods; i++) {
        size_t m = strlen(methods[i]);
        if (!memcmp(p, methods[i], n < m ? n : m)) {
            if (n >= m)
                return 1;
            maybe = 1;
        }
    }
    return maybe ? 0 : -1;
}

/* Reads the first bytes and decides the protocol. Returns -1 when the
 * connection is to be closed (peer gone, or neither protocol). */
static int conn_sniff(conn *c)
{
    ssize_t n = read(c->io.fd, c->first + c->first_len, H2_PREFACE_LEN - c->first_len);
    if (n == 0)
        return -1;
    if (n < 0)
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    c->first_len += (size_t)n;
    if (!memcmp(c->first, h2_preface, c->first_len)) {
        if (c->first_len < H2_PREFACE_LEN)
            return 0;                       /* so far so good: wait for the rest */
        /* the session (about 20 KiB with nghttp2's frame buffers) only now:
         * a probe, a scraper or a port scanner never costs one */
        if (conn_start_session(c) < 0) {
            log_error("connection fd %d: cannot start an HTTP/2 session: out of memory", c->io.fd);
            return -1;
        }
        c->mode = CONN_HTTP2;
        return h2_io_feed(&c->io, c->first, c->first_len) == H2_IO_CLOSED ? -1 : 0;
    }
    int h1 = http1_method_prefix(c->first, c->first_len);
    if (h1 == 0)
        return 0;   /* may still become "GET ": wait for more */
    if (h1 < 0) {
        /* RFC 9113 §3.4: a bad preface is a connection error, and the
         * GOAWAY may be left out for a peer that does not speak HTTP/2;
         * an HTTP/1.1 answer would be read as a frame header by one that
         * does */
        log_v(2, "connection fd %d: neither the HTTP/2 preface nor an HTTP/1.1 request "
              "(first byte 0x%02x%s); closing", c->io.fd, c->first[0],
              c->first[0] == 0x16 ? ", a TLS handshake?" : "");
        return -1;
    }
    c->mode = CONN_HTTP1;
    c->h1 = http1_new(c->io.fd, c->first, c->first_len, conn_http1_request, c);
    return c->h1 ? 0 : -1;
}

static void conn_on_io(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)fd;
    conn *c = ctx;
    if (c->mode == CONN_SNIFFING && conn_sniff(c) < 0) {
        rpc_conn_close(c);
        return;
    }
    if (c->mode == CONN_SNIFFING)
        return;
    if (c->mode == CONN_HTTP1) {
        conn_http1_io(c);
        return;
    }
    if ((events & ~LOOP_WRITE) && h2_io_read(&c->io) == H2_IO_CLOSED) {
        rpc_conn_close(c);
        return;
    }
    rpc_conn_flush(c);
}

/* ---- HTTP/1.1: probes and metrics ---------------------------------------- */

static void conn_http1_request(void *ctx, const char *path, const char *query, http1_response *r)
{
    conn *c = ctx;
    server *s = c->srv;
    const char *not_ready = NULL;
    if (!strcmp(path, "/readyz") && !s->draining && s->cfg->not_ready)
        not_ready = s->cfg->not_ready(s->cfg->app);
    if (not_ready) {
        /* alive (/healthz stays 200: a restart would not help) but unable
         * to serve: the pod must not turn Ready */
        r->status = 503;
        buf_printf(&r->body, "not ready: %s\n", not_ready);
    } else if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz")) {
        r->status = s->draining ? 503 : 200;
        buf_append_str(&r->body, s->draining ? "draining\n" : "ok\n");
    } else if (!strcmp(path, "/metrics")) {
        r->content_type = "text/plain; version=0.0.4; charset=utf-8";
        metrics_render(&r->body, s->active_calls);
    } else if (s->cfg->http_get && s->cfg->http_get(s->cfg->http_ctx, path, query, r)) {
        return;
    } else {
        r->status = 404;
        buf_printf(&r->body, "%s is not served: this port speaks gRPC over HTTP/2, and serves "
                   "/healthz, /readyz and /metrics over HTTP/1.1\n", path);
    }
}

static void conn_http1_io(conn *c)
{
    uint32_t want = http1_on_io(c->h1);
    if (!want) {
        rpc_conn_close(c);
        return;
    }
    if (want != c->watching && loop_watch(c->srv->loop, c->io.fd, want, conn_on_io, c) == 0)
        c->watching = want;
}

/* ---- the HTTP/2 session -------------------------------------------------- */

/* The GOAWAY text of a header block nghttp2 gave up on (h2_io.h). */
static const char *headers_refusal(void)
{
    static char text[192];
    if (!text[0])
        snprintf(text, sizeof text, "request headers in more than %u CONTINUATION frames (a "
                 "header block of %u MiB): far over the %u-byte limit of request metadata "
                 "(SETTINGS_MAX_HEADER_LIST_SIZE)", SERVER_MAX_CONTINUATIONS,
                 SERVER_MAX_HEADER_BLOCK >> 20, SERVER_MAX_HEADER_LIST);
    return text;
}

static int conn_start_session(conn *c)
{
    nghttp2_option *opt;
    if (nghttp2_option_new(&opt) != 0)
        return -1;
    /* grpc-go sends PINGs (BDP estimation) after every burst: answer them all */
    nghttp2_option_set_no_auto_ping_ack(opt, 0);
    /* Otherwise a server session keeps up to MAX_CONCURRENT_STREAMS (1000)
     * closed streams for RFC 7540 priorities, which gRPC clients do not use:
     * about 290 KiB more RSS, held until the connection closes, once it
     * has carried 1,000 calls. */
    nghttp2_option_set_no_closed_streams(opt, 1);
    nghttp2_option_set_max_continuations(opt, SERVER_MAX_CONTINUATIONS);
    int rv = nghttp2_session_server_new2(&c->io.session, server_callbacks(), c, opt);
    nghttp2_option_del(opt);
    if (rv != 0)
        return -1;
    /* ... so h2_io tells frames on forgotten streams apart itself */
    h2_io_check_closed_streams(&c->io);
    c->io.headers_refusal = headers_refusal();
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, c->srv->cfg->max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, SERVER_WINDOW},
        {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, SERVER_MAX_FRAME},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, SERVER_MAX_HEADER_LIST},
    };
    if (nghttp2_submit_settings(c->io.session, NGHTTP2_FLAG_NONE, settings,
                                sizeof settings / sizeof *settings) != 0 ||
        nghttp2_session_set_local_window_size(c->io.session, NGHTTP2_FLAG_NONE, 0,
                                              SERVER_CONN_WINDOW) != 0)
        return -1;
    return 0;
}

/* ---- nghttp2 callbacks --------------------------------------------------- */

static rpc_call *stream_call(nghttp2_session *session, int32_t stream_id)
{
    return nghttp2_session_get_stream_user_data(session, stream_id);
}

static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    conn *cn = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    if (cn->n_calls + cn->n_holds >= cn->srv->cfg->max_streams) {
        /* nghttp2 counts open streams only; ended calls whose functions
         * are still dying count too (rpc_hold_slot). REFUSED_STREAM: no
         * work was done, the client may retry (RFC 9113 §8.7). */
        log_v(3, "stream %d refused: %zu calls and %zu cancelled calls still stopping hold all "
              "%u slots of the connection", frame->hd.stream_id, cn->n_calls, cn->n_holds,
              cn->srv->cfg->max_streams);
        metrics_count(METRIC_STREAMS_REFUSED);
        return nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                         NGHTTP2_REFUSED_STREAM) == 0
                   ? 0
                   : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    rpc_call *c = rpc_call_new(cn, frame->hd.stream_id);
    if (!c)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    nghttp2_session_set_stream_user_data(session, frame->hd.stream_id, c);
    return 0;
}

static void keep_header(char **slot, const uint8_t *value, size_t len)
{
    free(*slot);
    *slot = strndup((const char *)value, len);
}

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name,
                     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
                     void *user_data)
{
    (void)flags, (void)user_data;
    rpc_call *c = stream_call(session, frame->hd.stream_id);
    if (!c || c->phase != RPC_CALL_HEADERS)
        return 0;   /* trailers from the client carry nothing we use */
    /* RFC 9113 §6.5.2's measure, saturating: HPACK references let a small
     * block decode to gigabytes; judged when the block ends */
    size_t field = namelen + valuelen + 32;
    c->header_bytes = field > SIZE_MAX - c->header_bytes ? SIZE_MAX : c->header_bytes + field;
    if (c->header_bytes > SERVER_MAX_HEADER_LIST)
        return 0;   /* refused anyway: nothing more is kept */
#define IS(s) (namelen == sizeof(s) - 1 && !memcmp(name, s, namelen))
    if (IS(":method"))
        c->bad_method = !(valuelen == 4 && !memcmp(value, "POST", 4));
    else if (IS(":path"))
        keep_header(&c->path, value, valuelen);
    else if (IS("content-type"))
        keep_header(&c->content_type, value, valuelen);
    else if (IS("grpc-timeout"))
        keep_header(&c->timeout_text, value, valuelen);
    else if (IS("grpc-encoding"))
        keep_header(&c->encoding, value, valuelen);
#undef IS
    return 0;
}

static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    conn *cn = user_data;
    if (frame->hd.type == NGHTTP2_SETTINGS && !(frame->hd.flags & NGHTTP2_FLAG_ACK) &&
        !cn->got_settings) {
        cn->got_settings = 1;
        loop_timer_disarm(cn->srv->loop, &cn->handshake_timer);
    }
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) &&
        !memcmp(frame->ping.opaque_data, rpc_server_drain_ping, 8) && cn->srv->draining &&
        !cn->final_goaway) {
        cn->final_goaway = 1;
        nghttp2_submit_goaway(session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(session), NGHTTP2_NO_ERROR,
                              NULL, 0);
        return 0;
    }
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    rpc_call *c = stream_call(session, frame->hd.stream_id);
    if (!c)
        return 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        rpc_call_check_headers(c);
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        rpc_call_on_request_end(c);
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
    (void)flags, (void)user_data;
    rpc_call *c = stream_call(session, stream_id);
    if (c)
        rpc_call_on_data(c, data, len);
    return 0;
}

/* nghttp2 ends a connection whose header block it cannot decode (HPACK
 * allows one header of at most 64 KiB there: a bigger one, or a broken
 * block) with GOAWAY COMPRESSION_ERROR by itself: said here, once at the
 * default verbosity, since every call on the connection ends with it. */
static void note_compression_goaway(conn *cn)
{
    static int said;
    const char *what = "GOAWAY COMPRESSION_ERROR: a request's headers could not be decoded (a "
                       "header over nghttp2's 64 KiB, or a broken HPACK block); the connection "
                       "and its calls end";
    if (!said++)
        log_warn("fd %d: %s (more are logged at verbosity 3)", cn->io.fd, what);
    else
        log_v(3, "fd %d: %s", cn->io.fd, what);
    metrics_count(METRIC_HEADERS_REFUSED);
}

/* A GOAWAY nghttp2 sent on its own for a protocol error of the client's
 * (e.g. RST_STREAM on a stream it never opened, RFC 9113 §5.1): its text
 * is nghttp2's (fixed words and numbers), logged so that the client's
 * UNAVAILABLE has a cause on our side. */
static void note_error_goaway(const conn *cn, const nghttp2_goaway *g)
{
    int len = g->opaque_data_len > 200 ? 200 : (int)g->opaque_data_len;
    log_v(3, "fd %d: GOAWAY %s sent: %.*s", cn->io.fd, nghttp2_http2_strerror(g->error_code), len,
          g->opaque_data ? (const char *)g->opaque_data : "");
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code == NGHTTP2_COMPRESSION_ERROR)
        note_compression_goaway(user_data);
    else if (frame->hd.type == NGHTTP2_GOAWAY && frame->goaway.error_code == NGHTTP2_PROTOCOL_ERROR)
        note_error_goaway(user_data, &frame->goaway);
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    rpc_call *c = stream_call(session, frame->hd.stream_id);
    if (c && c->phase == RPC_CALL_TRAILERS_ONLY &&
        !nghttp2_session_get_stream_remote_close(session, frame->hd.stream_id))
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                  NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code,
                           void *user_data)
{
    conn *cn = user_data;
    rpc_call *c = stream_call(session, stream_id);
    if (!c)
        return 0;
    if (!rpc_call_finished(c) && error_code != NGHTTP2_NO_ERROR)
        log_v(3, "stream %d %s: reset by the client (%s); cancelling", stream_id,
              c->path ? c->path : "", nghttp2_http2_strerror(error_code));
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    rpc_call_free(c);
    if (cn->srv->draining)
        rpc_server_check_drained(cn->srv);
    return 0;
}

static int on_send_data(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *source, void *user_data)
{
    (void)session;
    conn *cn = user_data;
    return h2_io_queue_data(&cn->io, frame, framehd, length, rpc_call_copy_body, source->ptr);
}

static nghttp2_session_callbacks *server_callbacks(void)
{
    static nghttp2_session_callbacks *cbs;
    if (!cbs) {
        if (nghttp2_session_callbacks_new(&cbs) != 0)
            return NULL;
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
        nghttp2_session_callbacks_set_send_data_callback(cbs, on_send_data);
    }
    return cbs;
}

/* ---- writing ------------------------------------------------------------- */

/* The socket has not taken our bytes for a while: the client does not
 * read. Close once a whole SERVER_SEND_STALL_NS passed without one byte
 * written (a slow reader that makes progress keeps its connection). */
static void conn_check_write_stall(loop *l, void *ctx)
{
    conn *c = ctx;
    if (c->io.written == c->written_at_check) {
        log_v(2, "connection fd %d: the client read nothing for --stalled-send-timeout; closing",
              c->io.fd);
        metrics_count(METRIC_SEND_STALLS);
        rpc_conn_close(c);
        return;
    }
    c->written_at_check = c->io.written;
    loop_timer_arm(l, &c->write_timer, c->srv->cfg->send_stall_ns);
}

static void conn_linger_expired(loop *l, void *ctx)
{
    (void)l;
    conn *c = ctx;
    rpc_conn_close(c);
}

/* The GOAWAY of a refused header block is out, and the client is likely
 * still sending that block: closing now, with its bytes unread, would
 * reset the connection, and a client that sees the reset first never reads
 * the GOAWAY. So our side is shut and what comes is read and dropped
 * (h2_io) until the client closes, for at most SERVER_LINGER_NS. */
static void conn_linger(conn *c)
{
    if (c->lingering)
        return;
    c->lingering = 1;
    if (shutdown(c->io.fd, SHUT_WR) < 0) {
        rpc_conn_close(c);
        return;
    }
    loop_timer_disarm(c->srv->loop, &c->write_timer);
    loop_timer_arm(c->srv->loop, &c->linger_timer, SERVER_LINGER_NS);
    if (c->watching != LOOP_READ &&
             loop_watch(c->srv->loop, c->io.fd, LOOP_READ, conn_on_io, c) == 0)
        c->watching = LOOP_READ;
}

/* Write what the session has queued, then close the connection if it is
 * done, or watch for writability if the socket is full. */
void rpc_conn_flush(conn *c)
{
    if (c->mode != CONN_HTTP2 || c->lingering)
        return;   /* nothing of ours goes out before the protocol is known, or after the end */
    int rv = h2_io_flush(&c->io);
    if (rv == H2_IO_DEFERRED)
        return;
    if (rv == H2_IO_OK && c->io.refused && h2_io_finished(&c->io)) {
        conn_linger(c);
        return;
    }
    if (rv == H2_IO_CLOSED || (rv == H2_IO_OK && h2_io_finished(&c->io))) {
        rpc_conn_close(c);
        return;
    }
    if (rv == H2_IO_BLOCKED && !loop_timer_armed(&c->write_timer)) {
        c->written_at_check = c->io.written;
        loop_timer_arm(c->srv->loop, &c->write_timer, c->srv->cfg->send_stall_ns);
    } else if (rv == H2_IO_OK) {
        loop_timer_disarm(c->srv->loop, &c->write_timer);
    }
    uint32_t want = LOOP_READ | (rv == H2_IO_BLOCKED ? LOOP_WRITE : 0);
    if (want != c->watching && loop_watch(c->srv->loop, c->io.fd, want, conn_on_io, c) == 0)
        c->watching = want;
}

/* ---- closing ------------------------------------------------------------- */

void rpc_conn_close(conn *c)
{
    server *s = c->srv;
    for (conn **p = &s->conns; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    loop_unwatch(s->loop, c->io.fd);
    c->closing = 1;            /* no idle timer from the calls freed below */
    while (c->calls)
        rpc_call_free(c->calls);   /* a lost connection cancels its calls */
    while (c->holds)
        hold_unlink(c->holds);   /* their work goes on; nothing to hold for */
    loop_timer_disarm(s->loop, &c->handshake_timer);
    loop_timer_disarm(s->loop, &c->idle_timer);
    loop_timer_disarm(s->loop, &c->write_timer);
    loop_timer_disarm(s->loop, &c->linger_timer);
    log_v(4, "connection fd %d closed", c->io.fd);
    http1_free(c->h1);
    h2_io_free(&c->io);
    free(c);
    if (s->accept_paused)
        rpc_server_resume_accept(s);   /* its descriptor is free: the next one may come in */
    s->conns_freed = 1;
    if (!s->active_calls)
        rpc_server_spares_idle(s, 0);
    if (s->draining)
        rpc_server_check_drained(s);
}

/* ---- slots held past the end of a call (see rpc.h) ----------------------- */

struct rpc_slot_hold {
    conn *conn;                  /* NULL once the connection is gone */
    struct rpc_slot_hold *next, **pprev;
};

rpc_slot_hold *rpc_hold_slot(rpc_call *c)
{
    rpc_slot_hold *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    conn *cn = c->conn;
    h->conn = cn;
    h->next = cn->holds;
    if (cn->holds)
        cn->holds->pprev = &h->next;
    h->pprev = &cn->holds;
    cn->holds = h;
    cn->n_holds++;
    return h;
}

static void hold_unlink(rpc_slot_hold *h)
{
    *h->pprev = h->next;
    if (h->next)
        h->next->pprev = h->pprev;
    h->conn->n_holds--;
    h->conn = NULL;
}

void rpc_release_slot(rpc_slot_hold *h)
{
    if (!h)
        return;
    if (h->conn)
        hold_unlink(h);
    free(h);
}
