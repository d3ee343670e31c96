/* rpc_server: the gRPC transport of wrapper-server and runner-client serve.
 *
 * Listens on [::]:PORT (dual stack), runs one nghttp2 server session per
 * connection, and turns each request stream into an rpc_call handed to a
 * method handler (see rpc.h). Everything happens on the event loop; no call
 * blocks. The path of a request:
 *
 *   accept -> conn_on_io -> h2_io_read -> nghttp2 callbacks:
 *     on_begin_headers  allocate the call
 *     on_header         collect :method, :path, content-type, grpc-timeout
 *     on_frame_recv     headers complete: route and check; END_STREAM: check
 *                       that exactly one message came
 *     on_data_chunk     deframe; the first complete message goes to the handler
 *     on_stream_close   tell the handler to let go, free the call
 *   handler answers -> rpc_reply/rpc_fail -> nghttp2 submit -> conn_flush
 *
 * The first bytes of a connection decide its protocol: the HTTP/2 preface
 * means gRPC; anything else that looks like HTTP/1.1 goes to http1.c for
 * the probe and scrape endpoints (/healthz, /readyz, /metrics). Our own
 * SETTINGS wait until then, so an HTTP/1.1 client reads a clean response.
 *
 * Draining (SIGTERM): stop accepting, GOAWAY with a shutdown notice and a
 * PING, then the final GOAWAY once the PING is acknowledged; in-flight calls
 * run to completion within the grace period, then are cancelled. */
#include "grpc/rpc_server.h"

#include <arpa/inet.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "core/log.h"
#include "core/utf8.h"
#include "grpc/grpc_frame.h"
#include "grpc/grpc_status.h"
#include "grpc/grpc_timeout.h"
#include "grpc/h2_io.h"
#include "grpc/http1.h"
#include "grpc/metrics.h"

#define SERVER_WINDOW (1 << 20)            /* per stream receive window */
#define SERVER_CONN_WINDOW (16 << 20)      /* per connection receive window */
#define SERVER_GOAWAY_WAIT_NS 1000000000LL /* final GOAWAY if the PING is not acked */
#define SERVER_KILL_GRACE_NS 1000000000LL  /* SIGTERM -> SIGKILL for cancelled functions */
#define SERVER_MAX_MESSAGE_HEADER 6144     /* encoded grpc-message; C-core allows 8 KiB of metadata */
#define SERVER_HANDSHAKE_NS (10 * 1000000000LL) /* preface + SETTINGS must arrive by then */
#define SERVER_SPARES_IDLE_NS (2 * 1000000000LL)  /* spare memory is kept this long after the last call */
#define SERVER_LARGE_MESSAGE (1024 * 1024)  /* a call this big: its connection's buffers become spares */
#define SERVER_ACCEPT_BACKOFF_NS (100 * 1000000LL) /* out of descriptors: next accept try */
#define SERVER_SEND_STALL_NS (30 * 1000000000LL)    /* default of rpc_server_config.send_stall_ns */

static const uint8_t drain_ping[8] = {0x01, 0x06, 0x01, 0x08, 0x00, 0x03, 0x03, 0x09};

/* What the first bytes said. */
enum conn_mode { CONN_SNIFFING, CONN_HTTP2, CONN_HTTP1 };

static const char h2_preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
#define H2_PREFACE_LEN (sizeof h2_preface - 1)

typedef struct conn {
    server *srv;
    enum conn_mode mode;
    uint8_t first[H2_PREFACE_LEN];   /* bytes read while sniffing */
    size_t first_len;
    http1_conn *h1;
    h2_io io;
    rpc_call *calls;
    size_t n_calls;        /* in `calls` */
    struct rpc_slot_hold *holds;   /* slots of ended calls whose work goes on */
    size_t n_holds;
    size_t pending_bytes;  /* reserved by this connection's unfinished requests */
    int final_goaway;      /* last-stream-id GOAWAY sent */
    uint32_t watching;     /* events the loop watches for */
    int got_settings;      /* the client's SETTINGS arrived: handshake done */
    int closing;
    loop_timer *handshake_timer;
    loop_timer *idle_timer;   /* armed while the connection has no calls */
    loop_timer *write_timer;  /* armed while the socket does not take our bytes */
    uint64_t written_at_check;
    int large_call;           /* a message of SERVER_LARGE_MESSAGE or more since idle */
    struct conn *next;
} conn;

struct server {
    loop *loop;
    rpc_server_config cfg_copy;
    const rpc_server_config *cfg;
    int listen_fd;
    int port;
    conn *conns;
    size_t active_calls;   /* unary calls not yet freed (Watch excluded) */
    size_t pending_bytes;  /* reserved by all unfinished requests */
    int draining;
    int stopping;          /* grace expired: calls are being cancelled */
    loop_timer *grace_timer;
    loop_timer *goaway_timer;
    loop_timer *exit_timer;
    loop_timer *drain_step_timer;
    loop_timer *spares_timer;   /* armed while idle with spare memory held */
    int conns_freed;            /* connections closed since the last release */
    int accept_paused;          /* the listener is not watched: out of descriptors */
    int64_t accept_trouble_ns;  /* when accepting last started failing; 0: it works */
    loop_timer *accept_timer;   /* retries accepting while paused */
};

static void conn_flush(conn *c);
static void conn_close(conn *c);
static void server_spares_idle(server *s, int parked);
static void conn_arm_idle(conn *c);
static void server_check_drained(server *s);
static void server_resume_accept(server *s);

/* ---- helpers for handlers ---------------------------------------------- */

int server_is_draining(const server *s) { return s->draining; }
uint32_t server_max_message(const server *s) { return s->cfg->max_message; }
loop *server_loop(const server *s) { return s->loop; }
void *server_app(const server *s) { return s->cfg->app; }

/* ---- calls --------------------------------------------------------------- */

static rpc_call *call_new(conn *cn, int32_t stream_id)
{
    rpc_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->srv = cn->srv;
    c->conn = cn;
    c->stream_id = stream_id;
    c->started_ns = loop_now_ns();
    c->next_in_conn = cn->calls;
    cn->calls = c;
    cn->n_calls++;
    loop_timer_cancel(cn->srv->loop, cn->idle_timer);
    cn->idle_timer = NULL;
    return c;
}

/* Tell the handler to let go. Safe to call more than once. */
static void call_end_handler(rpc_call *c)
{
    if (c->ended || !c->started)
        return;
    c->ended = 1;
    if (c->method->end)
        c->method->end(c, c->finished);
}

/* ---- the budget of unfinished requests ---------------------------------------
 *
 * A request's bytes are held until its message is whole, and a client
 * decides how many requests it leaves unfinished: without a bound, 100
 * streams each declaring 6 MB and sending all but the last byte hold
 * 600 MB, per connection. As soon as a message's 5-byte prefix arrives
 * (before its body is buffered) its declared size is reserved against the
 * connection's budget and the server's; a message that does not fit is
 * refused with RESOURCE_EXHAUSTED and its bytes are dropped as they come.
 * A whole message leaves the budget: it is the handler's then, bounded by
 * the function slots and their queue. Small messages that arrive in one
 * piece never touch it. */
static int call_reserve(rpc_call *c, size_t n)
{
    conn *cn = c->conn;
    server *s = c->srv;
    const rpc_server_config *cfg = s->cfg;
    if ((cfg->max_pending_conn_bytes && n > cfg->max_pending_conn_bytes - cn->pending_bytes) ||
        (cfg->max_pending_bytes && n > cfg->max_pending_bytes - s->pending_bytes))
        return -1;
    c->reserved = n;
    cn->pending_bytes += n;
    s->pending_bytes += n;
    return 0;
}

static void call_unreserve(rpc_call *c)
{
    c->conn->pending_bytes -= c->reserved;
    c->srv->pending_bytes -= c->reserved;
    c->reserved = 0;
}

static void call_fail_http(rpc_call *c, const char *http_status, int code, const char *message);

static void call_refuse_over_budget(rpc_call *c, size_t n)
{
    const rpc_server_config *cfg = c->srv->cfg;
    buf msg = {0};
    buf_printf(&msg, "grpc: too many bytes of unfinished requests: this message declares %zu "
               "bytes, and %zu of %zu bytes for this connection "
               "(--max-pending-request-bytes-per-connection) and %zu of %zu for all "
               "(--max-pending-request-bytes) are held by requests still arriving; send it "
               "again once they are done", n, c->conn->pending_bytes, cfg->max_pending_conn_bytes,
               c->srv->pending_bytes, cfg->max_pending_bytes);
    metrics_count(METRIC_REQUESTS_OVER_BUDGET);
    call_end_handler(c);   /* a method started on it (streaming) stops */
    call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, msg.data ? msg.data : "over budget");
    buf_free(&msg);
    grpc_reader_free(c->reader);   /* what arrived of it goes now */
}

static void call_free(rpc_call *c)
{
    conn *cn = c->conn;
    server *srv = c->srv;
    for (rpc_call **p = &cn->calls; *p; p = &(*p)->next_in_conn)
        if (*p == c) {
            *p = c->next_in_conn;
            cn->n_calls--;
            break;
        }
    call_end_handler(c);
    loop_timer_cancel(c->srv->loop, c->deadline_timer);
    loop_timer_cancel(c->srv->loop, c->stall_timer);
    if (c->method)
        metrics_call_handled(c->method, c->finished ? c->status : GRPC_CANCELLED,
                             loop_now_ns() - c->started_ns);
    c->srv->active_calls -= (size_t)c->counted;
    call_unreserve(c);
    if (c->reader) {
        grpc_reader_free(c->reader);
        free(c->reader);
    }
    free(c->content_type);
    free(c->path);
    free(c->timeout_text);
    free(c->encoding);
    buf_free(&c->stream_out);
    buf_free(&c->status_message);
    free(c);
    int parked = 0;
    if (!cn->calls) {
        parked = h2_io_idle(&cn->io, cn->large_call);   /* no large body on its way now */
        cn->large_call = 0;
        conn_arm_idle(cn);
    }
    if (srv->active_calls == 0)
        server_spares_idle(srv, parked);
}

/* ---- slots held past the end of a call (see rpc.h) ------------------------- */

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

/* ---- responses ----------------------------------------------------------- */

#define NV(name, value)                                                              \
    {(uint8_t *)(name), (uint8_t *)(value), sizeof(name) - 1, strlen(value),           \
     NGHTTP2_NV_FLAG_NONE}

static const char *call_content_type(const rpc_call *c)
{
    return c->content_type ? c->content_type : "application/grpc";
}

/* grpc-message value: percent-encoded, cut (visibly) so that the trailers
 * stay within what clients accept as metadata. */
static void encode_status_message(const rpc_call *c, buf *out)
{
    buf_reset(out);
    buf text = {0};
    utf8_sanitize(c->status_message.data ? c->status_message.data : "", c->status_message.len,
                  &text);
    grpc_message_encode(text.data ? text.data : "", text.len, out);
    buf_free(&text);
    if (out->len <= SERVER_MAX_MESSAGE_HEADER)
        return;
    size_t cut = SERVER_MAX_MESSAGE_HEADER - 64;
    while (cut > 0 && out->data[cut - 1] != '%' && cut >= 2 && out->data[cut - 2] == '%')
        cut--;   /* do not split a %XX escape */
    if (cut >= 1 && out->data[cut - 1] == '%')
        cut--;
    size_t dropped = out->len - cut;
    out->len = cut;
    buf_printf(out, "%%0A... [message truncated: %zu more encoded bytes]", dropped);
}

static int submit_trailers(rpc_call *c)
{
    char code[12];
    buf msg = {0};
    snprintf(code, sizeof code, "%d", c->status);
    encode_status_message(c, &msg);
    nghttp2_nv nva[] = {NV("grpc-status", code), NV("grpc-message", msg.data ? msg.data : "")};
    size_t n = msg.len ? 2 : 1;
    int rv = nghttp2_submit_trailer(c->conn->io.session, c->stream_id, nva, n);
    buf_free(&msg);
    return rv;
}

/* Trailers-Only: one HEADERS frame with END_STREAM carrying the status. */
static void submit_trailers_only(rpc_call *c, const char *http_status)
{
    char code[12];
    buf msg = {0};
    snprintf(code, sizeof code, "%d", c->status);
    encode_status_message(c, &msg);
    nghttp2_nv nva[] = {
        NV(":status", http_status),
        NV("content-type", call_content_type(c)),
        NV("grpc-status", code),
        NV("grpc-message", msg.data ? msg.data : ""),
        NV("grpc-accept-encoding", "identity"),
    };
    size_t n = msg.len ? 4 : 3;
    if (c->status == GRPC_UNIMPLEMENTED && c->encoding)
        nva[n++] = nva[4];
    int rv = nghttp2_submit_response(c->conn->io.session, c->stream_id, nva, n, NULL);
    if (rv)
        log_error("stream %d: cannot submit status: %s", c->stream_id, nghttp2_strerror(rv));
    buf_free(&msg);
}

/* Writes the next len bytes of the response body (the handler's segments,
 * then what rpc_send queued) at dst; h2_io_queue_data calls it. */
static void call_copy_body(void *src, uint8_t *dst, size_t len)
{
    rpc_call *c = src;
    size_t n = 0;
    while (n < len && c->seg_index < c->n_segs) {
        const rpc_segment *s = &c->segs[c->seg_index];
        size_t take = s->len - c->seg_off;
        if (take > len - n)
            take = len - n;
        memcpy(dst + n, (const uint8_t *)s->data + c->seg_off, take);
        n += take;
        c->seg_off += take;
        if (c->seg_off == s->len) {
            c->seg_index++;
            c->seg_off = 0;
        }
    }
    if (n < len) {
        memcpy(dst + n, c->stream_out.data + c->stream_off, len - n);
        c->stream_off += len - n;
        if (c->stream_off == c->stream_out.len) {
            buf_reset(&c->stream_out);
            c->stream_off = 0;
        }
    }
}

/* Bytes of the response body not yet handed to nghttp2. */
static size_t call_body_left(const rpc_call *c)
{
    size_t left = c->stream_out.len - c->stream_off;
    for (int i = c->seg_index; i < c->n_segs; i++)
        left += c->segs[i].len - (i == c->seg_index ? c->seg_off : 0);
    return left;
}

/* nghttp2 asks what the next DATA frame carries: count it (NO_COPY; the
 * bytes are copied once, by call_copy_body, when the frame is queued), and
 * at the end of the body submit the trailers. */
static ssize_t call_read_body(nghttp2_session *session, int32_t stream_id, uint8_t *dst,
                              size_t len, uint32_t *flags, nghttp2_data_source *source,
                              void *user_data)
{
    (void)session, (void)stream_id, (void)dst, (void)user_data;
    rpc_call *c = source->ptr;
    size_t left = call_body_left(c);
    size_t n = left < len ? left : len;
    if (n == left && c->body_final) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        if (submit_trailers(c) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    } else if (n == 0) {
        return NGHTTP2_ERR_DEFERRED;
    }
    if (n)
        *flags |= NGHTTP2_DATA_FLAG_NO_COPY;
    return (ssize_t)n;
}

static int on_send_data(nghttp2_session *session, nghttp2_frame *frame, const uint8_t *framehd,
                        size_t length, nghttp2_data_source *source, void *user_data)
{
    (void)session;
    conn *cn = user_data;
    return h2_io_queue_data(&cn->io, frame, framehd, length, call_copy_body, source->ptr);
}

static void submit_headers_with_body(rpc_call *c)
{
    nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", call_content_type(c))};
    nghttp2_data_provider prd = {.source.ptr = c, .read_callback = call_read_body};
    int rv = nghttp2_submit_response(c->conn->io.session, c->stream_id, nva, 2, &prd);
    if (rv)
        log_error("stream %d: cannot submit response: %s", c->stream_id, nghttp2_strerror(rv));
    c->responded = 1;
}

/* After answering a request the client is still sending (an early error),
 * reset the stream so the client stops and frees it, as grpc-go does. The
 * reset must follow the status on the wire, so it is submitted once the
 * HEADERS frame has been sent (on_frame_send). */
static void reset_if_client_still_sending(rpc_call *c)
{
    c->reset_after_status = 1;
}

/* The status is decided. The deadline timer stays: the response may still
 * wait for the client to read it, and the deadline bounds that too. */
static void call_settle(rpc_call *c, int code, const char *message)
{
    c->finished = 1;
    c->status = code;
    buf_reset(&c->status_message);
    if (message)
        buf_append_str(&c->status_message, message);
}

/* A response the client does not take (it never opens its flow-control
 * window) would keep the call, and the function's output it borrows, for
 * as long as the connection lives. Reset the stream: on_stream_close frees
 * all of it. */
static void call_reset_unsent(rpc_call *c, const char *why)
{
    log_v(2, "stream %d %s: %s; resetting it (%zu response bytes unsent)", c->stream_id,
          c->path ? c->path : "", why, call_body_left(c));
    metrics_count(METRIC_SEND_STALLS);
    nghttp2_submit_rst_stream(c->conn->io.session, NGHTTP2_FLAG_NONE, c->stream_id,
                              NGHTTP2_CANCEL);
    conn_flush(c->conn);
}

/* Every SERVER_SEND_STALL_NS while a response body is queued: reset the
 * stream if not one byte of it went out since the last look. */
static void call_check_stall(loop *l, void *ctx)
{
    rpc_call *c = ctx;
    c->stall_timer = NULL;
    size_t left = call_body_left(c);
    if (!left)
        return;   /* all handed to the connection; its own write check goes on */
    if (left == c->stall_left) {
        call_reset_unsent(c, "the client took no response byte for --stalled-send-timeout");
        return;
    }
    c->stall_left = left;
    c->stall_timer = loop_timer_add(l, c->srv->cfg->send_stall_ns, call_check_stall, c);
}

static void call_watch_stall(rpc_call *c)
{
    if (c->stall_timer)
        return;
    c->stall_left = call_body_left(c);
    c->stall_timer = loop_timer_add(c->srv->loop, c->srv->cfg->send_stall_ns, call_check_stall, c);
}

/* Error status from the transport itself, with a given HTTP status. */
static void call_fail_http(rpc_call *c, const char *http_status, int code, const char *message)
{
    if (c->finished)
        return;
    call_settle(c, code, message);
    log_v(3, "stream %d %s: %s %s", c->stream_id, c->path ? c->path : "", grpc_code_name(code),
          message);
    if (c->responded) {
        c->body_final = 1;
        nghttp2_session_resume_data(c->conn->io.session, c->stream_id);
    } else {
        c->responded = 1;
        submit_trailers_only(c, http_status);
        reset_if_client_still_sending(c);
    }
    conn_flush(c->conn);
}

int rpc_take_message(rpc_call *c, const uint8_t *msg, size_t len, buf *out)
{
    return grpc_reader_take(c->reader, msg, len, out);
}

void rpc_fail(rpc_call *c, int code, const char *message)
{
    call_fail_http(c, "200", code, message);
}

void rpc_finish(rpc_call *c, int code, const char *message)
{
    call_fail_http(c, "200", code, message);
}

void rpc_reply(rpc_call *c, const rpc_segment *segs, int n_segs)
{
    if (c->finished)
        return;
    size_t total = 0;
    for (int i = 0; i < n_segs; i++)
        total += segs[i].len;
    if (total > c->srv->cfg->max_message) {
        char msg[160];
        snprintf(msg, sizeof msg, "grpc: trying to send message larger than max (%zu vs. %u)",
                 total, c->srv->cfg->max_message);
        call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, msg);
        return;
    }
    call_settle(c, GRPC_OK, NULL);
    c->conn->large_call |= total >= SERVER_LARGE_MESSAGE;
    grpc_frame_prefix(c->frame_prefix, (uint32_t)total);
    c->segs[0] = (rpc_segment){c->frame_prefix, GRPC_PREFIX_LEN};
    c->n_segs = 1;
    for (int i = 0; i < n_segs && i < RPC_MAX_SEGMENTS - 1; i++)
        if (segs[i].len)
            c->segs[c->n_segs++] = segs[i];
    c->body_final = 1;
    submit_headers_with_body(c);
    call_watch_stall(c);
    conn_flush(c->conn);
}

void rpc_send(rpc_call *c, const void *msg, size_t len)
{
    if (c->finished)
        return;
    uint8_t prefix[GRPC_PREFIX_LEN];
    grpc_frame_prefix(prefix, (uint32_t)len);
    buf_append(&c->stream_out, prefix, sizeof prefix);
    buf_append(&c->stream_out, msg, len);
    if (!c->responded)
        submit_headers_with_body(c);
    else
        nghttp2_session_resume_data(c->conn->io.session, c->stream_id);
    call_watch_stall(c);
    conn_flush(c->conn);
}

/* ---- request checks ------------------------------------------------------- */

static const rpc_method *find_method(const server *s, const char *path, buf *why)
{
    const char *slash = path[0] == '/' ? strchr(path + 1, '/') : NULL;
    if (!slash) {
        buf_printf(why, "malformed method name: \"%s\"", path);
        return NULL;
    }
    size_t svc_len = (size_t)(slash - path - 1);
    const char *svc = path + 1, *name = slash + 1;
    int service_known = 0;
    const rpc_method *const *methods = s->cfg->methods;
    for (size_t i = 0; methods[i]; i++) {
        if (strlen(methods[i]->service) != svc_len || memcmp(methods[i]->service, svc, svc_len))
            continue;
        service_known = 1;
        if (!strcmp(methods[i]->name, name))
            return methods[i];
    }
    if (service_known)
        buf_printf(why, "unknown method %s for service %.*s", name, (int)svc_len, svc);
    else
        buf_printf(why, "unknown service %.*s", (int)svc_len, svc);
    return NULL;
}

static int is_grpc_content_type(const char *ct)
{
    static const char base[] = "application/grpc";
    size_t n = sizeof base - 1;
    return ct && !strncmp(ct, base, n) && (ct[n] == '\0' || ct[n] == '+' || ct[n] == ';');
}

static void call_deadline_passed(loop *l, void *ctx)
{
    (void)l;
    rpc_call *c = ctx;
    c->deadline_timer = NULL;
    if (c->finished) {
        call_reset_unsent(c, "deadline passed before the client read the response");
        return;
    }
    log_v(2, "stream %d %s: deadline exceeded (grpc-timeout %s); cancelling", c->stream_id,
          c->path, c->timeout_text);
    call_end_handler(c);   /* the handler stops its work (kills the function) */
    char msg[128];
    snprintf(msg, sizeof msg, "deadline exceeded: the call did not finish within grpc-timeout %s",
             c->timeout_text);
    call_fail_http(c, "200", GRPC_DEADLINE_EXCEEDED, msg);
}

/* Headers complete: decide whether the call may go on. */
static void call_check_headers(rpc_call *c)
{
    buf why = {0};
    int64_t timeout_ns = 0;
    const rpc_method *m = NULL;
    c->headers_done = 1;
    if (c->bad_method) {
        call_fail_http(c, "405", GRPC_INTERNAL, "the :method of a gRPC request must be POST");
    } else if (!is_grpc_content_type(c->content_type)) {
        buf_printf(&why, "invalid gRPC request content-type \"%s\"",
                   c->content_type ? c->content_type : "");
        free(c->content_type);
        c->content_type = NULL;   /* answer with ours, not theirs */
        call_fail_http(c, "415", GRPC_INVALID_ARGUMENT, why.data);
    } else if (!(m = find_method(c->srv, c->path ? c->path : "", &why))) {
        call_fail_http(c, "200", GRPC_UNIMPLEMENTED, why.data);
    } else if (c->encoding && strcmp(c->encoding, "identity") != 0) {
        buf_printf(&why, "grpc: Decompressor is not installed for grpc-encoding \"%s\"",
                   c->encoding);
        call_fail_http(c, "200", GRPC_UNIMPLEMENTED, why.data);
    } else if (c->timeout_text &&
               grpc_timeout_parse(c->timeout_text, strlen(c->timeout_text), &timeout_ns) < 0) {
        buf_printf(&why, "malformed grpc-timeout: \"%s\"", c->timeout_text);
        call_fail_http(c, "400", GRPC_INTERNAL, why.data);
    } else if (!(c->reader = calloc(1, sizeof *c->reader))) {
        call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        c->method = m;
        metrics_call_started(m);
        c->counted = !m->server_streaming;
        c->srv->active_calls += (size_t)c->counted;
        if (c->counted) {   /* busy again: spare memory will be used */
            loop_timer_cancel(c->srv->loop, c->srv->spares_timer);
            c->srv->spares_timer = NULL;
        }
        grpc_reader_init(c->reader, c->srv->cfg->max_message);
        if (c->timeout_text) {
            c->deadline_ns = loop_deadline_ns(timeout_ns);
            c->deadline_timer = loop_timer_add(c->srv->loop, timeout_ns, call_deadline_passed, c);
        }
    }
    buf_free(&why);
}

static int call_on_message(void *ctx, uint8_t flag, const uint8_t *msg, size_t len)
{
    rpc_call *c = ctx;
    if (c->finished)
        return 1;   /* answered (and the answer may borrow the handler's state): drop the rest */
    if (++c->messages > 1) {
        call_end_handler(c);
        call_fail_http(c, "200", GRPC_UNIMPLEMENTED,
                       "grpc: a unary request carried more than one message");
        return 1;
    }
    if (flag != 0) {
        call_fail_http(c, "200", GRPC_INTERNAL,
                       "grpc: compressed flag set with identity or empty encoding");
        return 1;
    }
    c->started = 1;
    c->conn->large_call |= len >= SERVER_LARGE_MESSAGE;
    call_unreserve(c);   /* whole: the handler's now */
    c->method->handle(c, msg, len);
    return 0;
}

/* The unary request's message is still arriving: tell a method that wants
 * to start on it early, once the reader has room for all of it (from then
 * on the bytes do not move). */
static void call_report_progress(rpc_call *c)
{
    const grpc_reader *r = c->reader;
    if (!c->method->progress || c->finished || c->messages || r->state != GRPC_READER_BODY ||
        r->msg.cap < r->msg_len)
        return;
    c->started = 1;
    c->method->progress(c, (const uint8_t *)r->msg.data, r->msg.len, r->msg_len);
}

static void call_on_data(rpc_call *c, const uint8_t *data, size_t len)
{
    if (c->finished || !c->reader)
        return;   /* answered already: the rest is read and dropped */
    int rv = grpc_reader_feed(c->reader, data, len, call_on_message, c);
    if (rv == -1 && !c->finished) {
        char msg[160];
        if (c->reader->state == GRPC_READER_TOO_LARGE) {
            snprintf(msg, sizeof msg, "grpc: received message larger than max (%u vs. %u)",
                     c->reader->msg_len, c->reader->max_len);
            call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, msg);
        } else {
            snprintf(msg, sizeof msg, "grpc: received unexpected payload format %u",
                     c->reader->flag);
            call_fail_http(c, "200", GRPC_INTERNAL, msg);
        }
    } else if (rv == -2 && !c->finished) {
        call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, "out of memory reading the request");
    } else if (rv == 0 && !c->finished && c->reader->state == GRPC_READER_BODY && !c->reserved &&
               call_reserve(c, c->reader->msg_len) < 0) {
        call_refuse_over_budget(c, c->reader->msg_len);
    } else if (rv == 0) {
        call_report_progress(c);
    }
}

/* The client half-closed: a unary request must have brought one message. */
static void call_on_request_end(rpc_call *c)
{
    if (c->finished || !c->reader || c->messages > 0)
        return;
    if (grpc_reader_partial(c->reader)) {
        char msg[160];
        snprintf(msg, sizeof msg, "grpc: request ended inside a message (%zu of %u bytes)",
                 c->reader->msg.len, c->reader->msg_len);
        call_end_handler(c);   /* a method started on the message stops now */
        call_fail_http(c, "200", GRPC_INTERNAL, msg);
    } else {
        call_fail_http(c, "200", GRPC_UNIMPLEMENTED,
                       "grpc: a unary request must carry one message; got none");
    }
}

/* ---- nghttp2 callbacks ---------------------------------------------------- */

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
    rpc_call *c = call_new(cn, frame->hd.stream_id);
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
    if (!c || c->headers_done)
        return 0;   /* trailers from the client carry nothing we use */
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
        loop_timer_cancel(cn->srv->loop, cn->handshake_timer);
        cn->handshake_timer = NULL;
    }
    if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) &&
        !memcmp(frame->ping.opaque_data, drain_ping, 8) && cn->srv->draining && !cn->final_goaway) {
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
        call_check_headers(c);
    if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
        call_on_request_end(c);
    return 0;
}

static int on_data_chunk(nghttp2_session *session, uint8_t flags, int32_t stream_id,
                         const uint8_t *data, size_t len, void *user_data)
{
    (void)flags, (void)user_data;
    rpc_call *c = stream_call(session, stream_id);
    if (c)
        call_on_data(c, data, len);
    return 0;
}

static int on_frame_send(nghttp2_session *session, const nghttp2_frame *frame, void *user_data)
{
    (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    rpc_call *c = stream_call(session, frame->hd.stream_id);
    if (c && c->reset_after_status &&
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
    if (!c->finished && error_code != NGHTTP2_NO_ERROR)
        log_v(3, "stream %d %s: reset by the client (%s); cancelling", stream_id,
              c->path ? c->path : "", nghttp2_http2_strerror(error_code));
    nghttp2_session_set_stream_user_data(session, stream_id, NULL);
    call_free(c);
    if (cn->srv->draining)
        server_check_drained(cn->srv);
    return 0;
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

/* ---- connections ---------------------------------------------------------- */

static void conn_on_io(loop *l, int fd, uint32_t events, void *ctx);
static int conn_start_session(conn *c);

/* The socket has not taken our bytes for a while: the client does not
 * read. Close once a whole SERVER_SEND_STALL_NS passed without one byte
 * written (a slow reader that makes progress keeps its connection). */
static void conn_check_write_stall(loop *l, void *ctx)
{
    conn *c = ctx;
    c->write_timer = NULL;
    if (c->io.written == c->written_at_check) {
        log_v(2, "connection fd %d: the client read nothing for --stalled-send-timeout; closing",
              c->io.fd);
        metrics_count(METRIC_SEND_STALLS);
        conn_close(c);
        return;
    }
    c->written_at_check = c->io.written;
    c->write_timer = loop_timer_add(l, c->srv->cfg->send_stall_ns, conn_check_write_stall, c);
}

/* Write what the session has queued, then close the connection if it is
 * done, or watch for writability if the socket is full. */
static void conn_flush(conn *c)
{
    if (c->mode != CONN_HTTP2)
        return;   /* nothing of ours goes out before the protocol is known */
    int rv = h2_io_flush(&c->io);
    if (rv == H2_IO_DEFERRED)
        return;
    if (rv == H2_IO_CLOSED || (rv == H2_IO_OK && h2_io_finished(&c->io))) {
        conn_close(c);
        return;
    }
    if (rv == H2_IO_BLOCKED && !c->write_timer) {
        c->written_at_check = c->io.written;
        c->write_timer = loop_timer_add(c->srv->loop, c->srv->cfg->send_stall_ns,
                                        conn_check_write_stall, c);
    } else if (rv == H2_IO_OK && c->write_timer) {
        loop_timer_cancel(c->srv->loop, c->write_timer);
        c->write_timer = NULL;
    }
    uint32_t want = LOOP_READ | (rv == H2_IO_BLOCKED ? LOOP_WRITE : 0);
    if (want != c->watching && loop_watch(c->srv->loop, c->io.fd, want, conn_on_io, c) == 0)
        c->watching = want;
}

/* ---- HTTP/1.1: probes and metrics ------------------------------------------ */

static void conn_http1_request(void *ctx, const char *path, http1_response *r)
{
    conn *c = ctx;
    server *s = c->srv;
    if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz")) {
        r->status = s->draining ? 503 : 200;
        buf_append_str(&r->body, s->draining ? "draining\n" : "ok\n");
    } else if (!strcmp(path, "/metrics")) {
        r->content_type = "text/plain; version=0.0.4; charset=utf-8";
        metrics_render(&r->body, s->active_calls);
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
        conn_close(c);
        return;
    }
    if (want != c->watching && loop_watch(c->srv->loop, c->io.fd, want, conn_on_io, c) == 0)
        c->watching = want;
}

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
        conn_close(c);
        return;
    }
    if (c->mode == CONN_SNIFFING)
        return;
    if (c->mode == CONN_HTTP1) {
        conn_http1_io(c);
        return;
    }
    if ((events & ~LOOP_WRITE) && h2_io_read(&c->io) == H2_IO_CLOSED) {
        conn_close(c);
        return;
    }
    conn_flush(c);
}

static void conn_close(conn *c)
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
        call_free(c->calls);   /* a lost connection cancels its calls */
    while (c->holds)
        hold_unlink(c->holds);   /* their work goes on; nothing to hold for */
    loop_timer_cancel(s->loop, c->handshake_timer);
    loop_timer_cancel(s->loop, c->idle_timer);
    loop_timer_cancel(s->loop, c->write_timer);
    log_v(4, "connection fd %d closed", c->io.fd);
    http1_free(c->h1);
    h2_io_free(&c->io);
    free(c);
    if (s->accept_paused)
        server_resume_accept(s);   /* its descriptor is free: the next one may come in */
    s->conns_freed = 1;
    if (!s->active_calls)
        server_spares_idle(s, 0);
    if (s->draining)
        server_check_drained(s);
}

/* A peer that does not complete the HTTP/2 handshake in time (a port
 * scanner, a slow-trickle attack) loses its connection. */
static void conn_handshake_expired(loop *l, void *ctx)
{
    (void)l;
    conn *c = ctx;
    c->handshake_timer = NULL;
    log_v(2, "connection fd %d: no %s within %lld s; closing", c->io.fd,
          c->mode == CONN_HTTP1 ? "complete HTTP/1.1 request" : "HTTP/2 preface and SETTINGS",
          SERVER_HANDSHAKE_NS / 1000000000LL);
    conn_close(c);
}

/* A connection without calls for --idle-timeout is sent GOAWAY; clients
 * reconnect when they need to (grpc-go's MaxConnectionIdle). */
static void conn_idle_expired(loop *l, void *ctx)
{
    (void)l;
    conn *c = ctx;
    c->idle_timer = NULL;
    log_v(3, "connection fd %d idle; closing", c->io.fd);
    if (c->mode != CONN_HTTP2) {
        conn_close(c);
        return;
    }
    if (!c->final_goaway) {
        c->final_goaway = 1;
        nghttp2_submit_goaway(c->io.session, NGHTTP2_FLAG_NONE,
                              nghttp2_session_get_last_proc_stream_id(c->io.session),
                              NGHTTP2_NO_ERROR, (const uint8_t *)"idle", 4);
    }
    conn_flush(c);
}

/* Spare memory: a large call's request and output buffers (buf spares) and
 * an idle connection's grown read and write buffers (h2_io) are kept for
 * the next large call while calls keep coming, and given back once the
 * server has had no unary call for SERVER_SPARES_IDLE_NS, so an idle
 * server holds no megabytes. */
static void server_release_spares(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
    s->spares_timer = NULL;
    s->conns_freed = 0;
    buf_spares_release();
    h2_io_spare_release();
#ifdef __GLIBC__
    /* glibc serves a freed 5 MiB block's successors from its heap (it raises
     * its mmap threshold) and keeps the heap grown, and the holes that a
     * burst of closed connections leaves (about 25 KiB each) stay resident:
     * hand the pages back. musl (the static build) returns them at free. */
    malloc_trim(0);
#endif
}

/* No unary call is running. parked: a connection has just handed its
 * buffers to h2_io's spares (maybe later: its read is still running). */
static void server_spares_idle(server *s, int parked)
{
    if (s->spares_timer ||
        !(parked || s->conns_freed || h2_io_spare_bytes() || buf_spares_bytes()))
        return;
    s->spares_timer = loop_timer_add(s->loop, SERVER_SPARES_IDLE_NS, server_release_spares, s);
}

static void conn_arm_idle(conn *c)
{
    int64_t idle = c->srv->cfg->idle_timeout_ns;
    if (idle <= 0 || c->closing || c->idle_timer)
        return;
    c->idle_timer = loop_timer_add(c->srv->loop, idle, conn_idle_expired, c);
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
    int rv = nghttp2_session_server_new2(&c->io.session, server_callbacks(), c, opt);
    nghttp2_option_del(opt);
    if (rv != 0)
        return -1;
    /* ... so h2_io tells frames on forgotten streams apart itself */
    h2_io_check_closed_streams(&c->io);
    nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, c->srv->cfg->max_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, SERVER_WINDOW},
        {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, 16384},
    };
    if (nghttp2_submit_settings(c->io.session, NGHTTP2_FLAG_NONE, settings, 3) != 0 ||
        nghttp2_session_set_local_window_size(c->io.session, NGHTTP2_FLAG_NONE, 0,
                                              SERVER_CONN_WINDOW) != 0)
        return -1;
    return 0;
}

static void server_on_accept(loop *l, int fd, uint32_t events, void *ctx);

static void server_resume_accept(server *s)
{
    loop_timer_cancel(s->loop, s->accept_timer);
    s->accept_timer = NULL;
    if (!s->accept_paused || s->listen_fd < 0)
        return;
    if (loop_watch(s->loop, s->listen_fd, LOOP_READ, server_on_accept, s) == 0)
        s->accept_paused = 0;
}

static void server_accept_retry(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
    s->accept_timer = NULL;
    server_resume_accept(s);
}

/* accept() failed for want of descriptors or memory. The connection stays
 * in the backlog and the level-triggered listener would wake us again at
 * once: a busy loop and a log line each time. Stop watching it until a
 * connection of ours closes or SERVER_ACCEPT_BACKOFF_NS passes (a
 * function's pipes may free descriptors too), and log once per episode. */
static void server_pause_accept(server *s, int err)
{
    if (!s->accept_trouble_ns) {
        s->accept_trouble_ns = loop_now_ns();
        metrics_count(METRIC_ACCEPT_PAUSES);
        log_error("accept: %s; new connections wait until descriptors or memory are free "
                  "(retrying every %lld ms, and whenever a connection closes)",
                  strerror(err), SERVER_ACCEPT_BACKOFF_NS / 1000000);
    }
    if (!s->accept_paused) {
        loop_unwatch(s->loop, s->listen_fd);
        s->accept_paused = 1;
    }
    if (!s->accept_timer)
        s->accept_timer = loop_timer_add(s->loop, SERVER_ACCEPT_BACKOFF_NS, server_accept_retry, s);
}

static void server_on_accept(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)events;
    server *s = ctx;
    for (;;) {
        int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                server_pause_accept(s, errno);
            } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
                /* the backlog is empty: an episode ends here, not at the
                 * first accept that works (the next may fail again) */
                if (s->accept_trouble_ns)
                    log_info("accepting connections again: the backlog is empty %lld ms after "
                             "descriptors ran out",
                             (long long)((loop_now_ns() - s->accept_trouble_ns) / 1000000));
                s->accept_trouble_ns = 0;
            } else {
                log_error("accept: %s", strerror(errno));
            }
            return;
        }
        int one = 1;
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(cfd);
            continue;
        }
        c->srv = s;
        c->io.fd = cfd;
        c->next = s->conns;
        s->conns = c;
        c->handshake_timer = loop_timer_add(s->loop, SERVER_HANDSHAKE_NS, conn_handshake_expired, c);
        conn_arm_idle(c);
        log_v(4, "connection fd %d accepted", cfd);
        /* Our SETTINGS go out once the first bytes say HTTP/2 (conn_sniff). */
        if (loop_watch(s->loop, cfd, LOOP_READ, conn_on_io, c) == 0)
            c->watching = LOOP_READ;
        else
            conn_close(c);
    }
}

/* ---- listening ------------------------------------------------------------- */

static int listen_on(int family, int port, int *out_port)
{
    int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_storage ss = {0};
    socklen_t len;
    if (family == AF_INET6) {
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        a->sin6_family = AF_INET6;
        a->sin6_addr = in6addr_any;
        a->sin6_port = htons((uint16_t)port);
        len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        a->sin_family = AF_INET;
        a->sin_addr.s_addr = htonl(INADDR_ANY);
        a->sin_port = htons((uint16_t)port);
        len = sizeof *a;
    }
    if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 1024) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        *out_port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int rpc_server_config_fill(rpc_server_config *cfg, buf *why)
{
    if (!cfg->max_pending_conn_bytes)
        cfg->max_pending_conn_bytes = (size_t)cfg->max_message * 4;
    if (!cfg->max_pending_bytes)
        cfg->max_pending_bytes = (size_t)cfg->max_message * 16;
    if (cfg->max_pending_conn_bytes < cfg->max_message ||
        cfg->max_pending_bytes < cfg->max_pending_conn_bytes) {
        buf_printf(why, "the pending-request budgets must hold the largest message: "
                   "--max-request-body-size (%u) <= --max-pending-request-bytes-per-connection "
                   "(%zu) <= --max-pending-request-bytes (%zu)", cfg->max_message,
                   cfg->max_pending_conn_bytes, cfg->max_pending_bytes);
        return -1;
    }
    return 0;
}

server *server_new(loop *l, const rpc_server_config *cfg)
{
    static const char spare_help[] =
        "Buffers kept for the next large call; freed 2 s after the last call.";
    metrics_gauge("krm_spare_memory_bytes", "kind=\"call\"", spare_help, buf_spares_bytes);
    metrics_gauge("krm_spare_memory_bytes", "kind=\"connection\"", spare_help,
                  h2_io_spare_bytes);
    server *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->loop = l;
    s->cfg_copy = *cfg;
    if (s->cfg_copy.send_stall_ns <= 0)
        s->cfg_copy.send_stall_ns = SERVER_SEND_STALL_NS;
    s->cfg = &s->cfg_copy;
    s->listen_fd = -1;
    return s;
}

int server_listen(server *s, buf *err)
{
    int fd = listen_on(AF_INET6, s->cfg->port, &s->port);
    if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL))
        fd = listen_on(AF_INET, s->cfg->port, &s->port);   /* no IPv6 in this kernel */
    if (fd < 0) {
        buf_printf(err, "failed to listen: listen tcp :%d: bind: %s", s->cfg->port,
                   strerror(errno));
        return -1;
    }
    s->listen_fd = fd;
    if (loop_watch(s->loop, fd, LOOP_READ, server_on_accept, s) < 0) {
        buf_printf(err, "cannot watch the listening socket");
        return -1;
    }
    log_info("Listening on :%d", s->port);
    return 0;
}

int server_port(const server *s) { return s->port; }

/* ---- draining ----------------------------------------------------------------- */

static void server_close_listener(server *s)
{
    loop_timer_cancel(s->loop, s->accept_timer);
    s->accept_timer = NULL;
    if (s->listen_fd < 0)
        return;
    loop_unwatch(s->loop, s->listen_fd);
    close(s->listen_fd);
    s->listen_fd = -1;
}

static void server_send_final_goaways(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
    s->goaway_timer = NULL;
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->mode != CONN_HTTP2)
            continue;   /* closed by the drain step once no call is left */
        if (!c->final_goaway) {
            c->final_goaway = 1;
            nghttp2_submit_goaway(c->io.session, NGHTTP2_FLAG_NONE,
                                  nghttp2_session_get_last_proc_stream_id(c->io.session),
                                  NGHTTP2_NO_ERROR, NULL, 0);
        }
        conn_flush(c);
    }
}

/* When no unary call is left, end Watch streams and let connections close.
 * Runs from a timer of its own, never inside another connection's callbacks,
 * so that closing one connection cannot free another under its caller. */
static void server_drain_step(loop *l, void *ctx)
{
    server *s = ctx;
    s->drain_step_timer = NULL;
    if (s->active_calls > 0)
        return;
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->mode != CONN_HTTP2)
            conn_close(c);   /* a probe or scrape, or a peer that said nothing */
    }
    if (s->cfg->on_drain)
        s->cfg->on_drain(RPC_DRAIN_IDLE, s->cfg->app);
    if (!s->conns) {
        loop_stop(s->loop);
        return;
    }
    loop_timer_cancel(s->loop, s->goaway_timer);
    s->goaway_timer = NULL;
    server_send_final_goaways(l, s);
}

static void server_check_drained(server *s)
{
    if (s->draining && !s->drain_step_timer)
        s->drain_step_timer = loop_timer_add(s->loop, 0, server_drain_step, s);
}

static void server_exit_now(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
    s->exit_timer = NULL;
    log_warn("connections still open after the shutdown grace period; exiting");
    loop_stop(s->loop);
}

static void server_grace_expired(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
    s->grace_timer = NULL;
    s->stopping = 1;
    log_warn("shutdown grace period over: cancelling %zu call(s) still running", s->active_calls);
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        /* Hold the connection's flushes while walking its calls: a flush can
         * complete and free calls. One flush afterwards sends everything. */
        c->io.busy = 1;
        for (rpc_call *call = c->calls; call; call = call->next_in_conn) {
            if (call->finished)
                continue;
            call_end_handler(call);
            call_fail_http(call, "200", GRPC_UNAVAILABLE,
                           "the server is shutting down: the call did not finish within the "
                           "shutdown grace period");
        }
        c->io.busy = 0;
        conn_flush(c);
    }
    /* give the statuses a moment to leave, then go regardless */
    s->exit_timer = loop_timer_add(s->loop, SERVER_GOAWAY_WAIT_NS, server_exit_now, s);
    server_check_drained(s);
}

void server_drain(server *s)
{
    if (s->draining) {
        log_warn("second termination signal: exiting now");
        s->stopping = 1;
        loop_stop(s->loop);
        return;
    }
    s->draining = 1;
    log_info("Shutting down server...");
    server_close_listener(s);
    if (s->cfg->on_drain)
        s->cfg->on_drain(RPC_DRAIN_STARTED, s->cfg->app);
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->mode != CONN_HTTP2)
            continue;
        nghttp2_submit_shutdown_notice(c->io.session);
        nghttp2_submit_ping(c->io.session, NGHTTP2_FLAG_NONE, drain_ping);
        conn_flush(c);
    }
    s->goaway_timer = loop_timer_add(s->loop, SERVER_GOAWAY_WAIT_NS, server_send_final_goaways, s);
    s->grace_timer = loop_timer_add(s->loop, s->cfg->shutdown_grace_ns, server_grace_expired, s);
    server_check_drained(s);
}

int64_t server_kill_grace_ns(void) { return SERVER_KILL_GRACE_NS; }

void server_free(server *s)
{
    if (!s)
        return;
    while (s->conns)
        conn_close(s->conns);
    server_close_listener(s);
    loop_timer_cancel(s->loop, s->grace_timer);
    loop_timer_cancel(s->loop, s->goaway_timer);
    loop_timer_cancel(s->loop, s->exit_timer);
    loop_timer_cancel(s->loop, s->drain_step_timer);
    loop_timer_cancel(s->loop, s->spares_timer);
    h2_io_spare_release();
    free(s);
}
