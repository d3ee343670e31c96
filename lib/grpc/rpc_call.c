/* rpc_call: one gRPC call on the server, from its request HEADERS to its
 * status (the server as a whole: rpc_server.c; its connections: rpc_conn.c).
 *
 * rpc_conn.c's nghttp2 callbacks hand each event of a stream to its call;
 * this file decides what the events mean:
 *
 *   request   rpc_call_check_headers checks :method (POST), content-type, the
 *             method (routing), grpc-encoding and grpc-timeout (the
 *             deadline timer); rpc_call_on_data deframes the DATA (grpc_frame.h),
 *             reserving each message's declared size against the
 *             pending-request budgets, and gives the one message (and, for
 *             a large one, its progress) to the method's handler, or, for
 *             a client stream, each message in turn (call_stream_check
 *             bounds how many, and the answers the client leaves unread);
 *             rpc_call_on_request_end checks that one came, or tells a client
 *             stream's handler that the client is done.
 *   response  the handler answers with rpc_reply, rpc_fail, or rpc_send +
 *             rpc_finish (rpc.h): HEADERS, then a body that nghttp2 takes
 *             straight from the handler's segments (one copy, NO_COPY),
 *             then the trailers; an error before any message is one
 *             Trailers-Only HEADERS. A response the client does not read
 *             is reset (--stalled-send-timeout, or the deadline).
 *   end       rpc_call_free runs the method's `end` (exactly once), counts the
 *             call in the metrics and frees it; a connection left without
 *             calls turns idle.
 *
 * Errors the transport finds itself are answered here too (rpc_call_fail_http),
 * for rpc_server.c's grace period as well. */
#include "grpc/rpc.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "core/log.h"
#include "core/state_step.h"
#include "core/utf8.h"
#include "grpc/grpc_frame.h"
#include "grpc/grpc_status.h"
#include "grpc/grpc_timeout.h"
#include "grpc/h2_io.h"
#include "grpc/metrics.h"
#include "grpc/rpc_server_internal.h"

#define SERVER_MAX_MESSAGE_HEADER 6144     /* encoded grpc-message; C-core allows 8 KiB of metadata */

static void call_unreserve(rpc_call *c);
static void call_reset_unsent(rpc_call *c, const char *why);
static size_t call_body_left(const rpc_call *c);
static void call_deadline_passed(loop *l, void *ctx);
static void call_check_stall(loop *l, void *ctx);

/* ---- life of a call ------------------------------------------------------ */

static const char *const phase_names[] = {
    [RPC_CALL_HEADERS] = "HEADERS", [RPC_CALL_READING] = "READING",
    [RPC_CALL_STREAMING] = "STREAMING", [RPC_CALL_FINISHED] = "FINISHED",
    [RPC_CALL_TRAILERS_ONLY] = "TRAILERS_ONLY",
};

/* The phases each phase may go to. */
static const unsigned phase_next[] = {
    [RPC_CALL_HEADERS] = STATE_BIT(RPC_CALL_READING) | STATE_BIT(RPC_CALL_TRAILERS_ONLY),
    [RPC_CALL_READING] = STATE_BIT(RPC_CALL_STREAMING) | STATE_BIT(RPC_CALL_FINISHED) |
                         STATE_BIT(RPC_CALL_TRAILERS_ONLY),
    [RPC_CALL_STREAMING] = STATE_BIT(RPC_CALL_FINISHED),
    [RPC_CALL_FINISHED] = 0,
    [RPC_CALL_TRAILERS_ONLY] = 0,
};

static void call_set_phase(rpc_call *c, rpc_call_phase next)
{
    int legal = state_step(phase_next, phase_names, c->phase, next, "stream %d %s",
                           c->stream_id, c->path ? c->path : "");
    assert(legal);
    (void)legal;   /* NDEBUG */
    c->phase = next;
}

static const char *const handler_names[] = {
    [RPC_HANDLER_IDLE] = "IDLE", [RPC_HANDLER_RUNNING] = "RUNNING", [RPC_HANDLER_ENDED] = "ENDED",
};

/* IDLE -> RUNNING -> ENDED, one step at a time. */
static void call_set_handler(rpc_call *c, rpc_handler_phase next)
{
    int legal = next == c->handler + 1;
    if (!legal)
        log_error("stream %d: handler %s refused after %s", c->stream_id, handler_names[next],
                  handler_names[c->handler]);
    assert(legal);
    log_v(4, "stream %d %s: handler %s -> %s", c->stream_id, c->path ? c->path : "",
          handler_names[c->handler], handler_names[next]);
    c->handler = next;
}

/* The handler is about to be given the call (again, for a stream). */
static void call_handler_runs(rpc_call *c)
{
    if (c->handler == RPC_HANDLER_IDLE)
        call_set_handler(c, RPC_HANDLER_RUNNING);
    assert(c->handler == RPC_HANDLER_RUNNING);
}

int rpc_call_finished(const rpc_call *c)
{
    return c->phase == RPC_CALL_FINISHED || c->phase == RPC_CALL_TRAILERS_ONLY;
}

/* In the server's count of in-flight calls (a Watch is not). */
static int call_counted(const rpc_call *c)
{
    return c->method && !c->method->server_streaming;
}

rpc_call *rpc_call_new(conn *cn, int32_t stream_id)
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
    loop_timer_init(&c->deadline_timer, call_deadline_passed, c);
    loop_timer_init(&c->stall_timer, call_check_stall, c);
    loop_timer_disarm(cn->srv->loop, &cn->idle_timer);
    return c;
}

/* Tell the handler to let go. Safe to call more than once. */
void rpc_call_end_handler(rpc_call *c)
{
    if (c->handler != RPC_HANDLER_RUNNING)
        return;
    call_set_handler(c, RPC_HANDLER_ENDED);
    if (c->method->end)
        c->method->end(c, rpc_call_finished(c));
}

void rpc_call_free(rpc_call *c)
{
    conn *cn = c->conn;
    server *srv = c->srv;
    for (rpc_call **p = &cn->calls; *p; p = &(*p)->next_in_conn)
        if (*p == c) {
            assert(cn->n_calls > 0);
            *p = c->next_in_conn;
            cn->n_calls--;
            break;
        }
    rpc_call_end_handler(c);
    loop_timer_disarm(c->srv->loop, &c->deadline_timer);
    loop_timer_disarm(c->srv->loop, &c->stall_timer);
    if (c->method)
        metrics_call_handled(c->method, rpc_call_finished(c) ? c->status : GRPC_CANCELLED,
                             loop_now_ns() - c->started_ns);
    if (call_counted(c)) {
        assert(c->srv->active_calls > 0);
        c->srv->active_calls--;
    }
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
        rpc_conn_arm_idle(cn);
    }
    if (srv->active_calls == 0)
        rpc_server_spares_idle(srv, parked);
}

/* ---- request checks ------------------------------------------------------ */

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
    if (rpc_call_finished(c)) {
        call_reset_unsent(c, "deadline passed before the client read the response");
        return;
    }
    buf why = {0};
    buf_printf(&why, "deadline exceeded: the call did not finish within grpc-timeout %s",
               c->timeout_text);
    if (c->method && c->method->deadline_note && c->handler != RPC_HANDLER_ENDED)
        c->method->deadline_note(c, &why);
    log_v(2, "stream %d %s: %s; cancelling", c->stream_id, c->path,
          why.data ? why.data : "deadline exceeded");
    rpc_call_end_handler(c);   /* the handler stops its work (kills the function) */
    rpc_call_fail_http(c, "200", GRPC_DEADLINE_EXCEEDED,
                   why.data ? why.data : "deadline exceeded: out of memory for the message");
    buf_free(&why);
}

/* Its metadata is over SERVER_MAX_HEADER_LIST: refused on its own stream,
 * the connection's other calls go on. Logged once at the default
 * verbosity (a client that keeps doing it cannot fill the log), then at 3. */
static void call_refuse_headers(rpc_call *c, buf *why)
{
    static int said;
    buf_printf(why, "request metadata of %zu bytes is over this server's limit of %u bytes "
               "(SETTINGS_MAX_HEADER_LIST_SIZE: each header's name and value, and 32)",
               c->header_bytes, SERVER_MAX_HEADER_LIST);
    if (!said++)
        log_warn("stream %d: %s (more are logged at verbosity 3)", c->stream_id, why->data);
    else
        log_v(3, "stream %d: %s", c->stream_id, why->data);
    metrics_count(METRIC_HEADERS_REFUSED);
    rpc_call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, why->data);
}

/* Headers complete: decide whether the call may go on. */
void rpc_call_check_headers(rpc_call *c)
{
    buf why = {0};
    int64_t timeout_ns = 0;
    const rpc_method *m = NULL;
    if (c->header_bytes > SERVER_MAX_HEADER_LIST) {
        call_refuse_headers(c, &why);
    } else if (c->bad_method) {
        rpc_call_fail_http(c, "405", GRPC_INTERNAL, "the :method of a gRPC request must be POST");
    } else if (!is_grpc_content_type(c->content_type)) {
        buf_printf(&why, "invalid gRPC request content-type \"%s\"",
                   c->content_type ? c->content_type : "");
        free(c->content_type);
        c->content_type = NULL;   /* answer with ours, not theirs */
        rpc_call_fail_http(c, "415", GRPC_INVALID_ARGUMENT, why.data);
    } else if (!(m = find_method(c->srv, c->path ? c->path : "", &why))) {
        rpc_call_fail_http(c, "200", GRPC_UNIMPLEMENTED, why.data);
    } else if (c->encoding && strcmp(c->encoding, "identity") != 0) {
        buf_printf(&why, "grpc: Decompressor is not installed for grpc-encoding \"%s\"",
                   c->encoding);
        rpc_call_fail_http(c, "200", GRPC_UNIMPLEMENTED, why.data);
    } else if (c->timeout_text &&
               grpc_timeout_parse(c->timeout_text, strlen(c->timeout_text), &timeout_ns) < 0) {
        buf_printf(&why, "malformed grpc-timeout: \"%s\"", c->timeout_text);
        rpc_call_fail_http(c, "400", GRPC_INTERNAL, why.data);
    } else if (!(c->reader = calloc(1, sizeof *c->reader))) {
        rpc_call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, "out of memory");
    } else {
        call_set_phase(c, RPC_CALL_READING);
        c->method = m;
        metrics_call_started(m);
        if (call_counted(c)) {   /* busy again: spare memory will be used */
            c->srv->active_calls++;
            loop_timer_disarm(c->srv->loop, &c->srv->spares_timer);
        }
        grpc_reader_init(c->reader, c->srv->cfg->max_message);
        if (c->timeout_text) {
            c->deadline_ns = loop_deadline_ns(timeout_ns);
            loop_timer_arm(c->srv->loop, &c->deadline_timer, timeout_ns);
        }
    }
    buf_free(&why);
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
    assert(c->conn->pending_bytes >= c->reserved && c->srv->pending_bytes >= c->reserved);
    c->conn->pending_bytes -= c->reserved;
    c->srv->pending_bytes -= c->reserved;
    c->reserved = 0;
}

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
    rpc_call_end_handler(c);   /* a method started on it (streaming) stops */
    rpc_call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, msg.data ? msg.data : "over budget");
    buf_free(&msg);
    grpc_reader_free(c->reader);   /* what arrived of it goes now */
}

/* A client stream's next message may go to the handler: at most
 * max_messages of them, and not while the answers the client left unread
 * exceed a message's limit (a stream then holds no more than a unary call
 * could; the stall timer resets one that reads nothing). 0, or -1 after
 * ending the call. */
static int call_stream_check(rpc_call *c)
{
    uint32_t max = c->method->max_messages ? c->method->max_messages : RPC_STREAM_MESSAGES;
    size_t unread = call_body_left(c);
    char msg[200];
    if ((uint32_t)c->messages > max)
        snprintf(msg, sizeof msg, "grpc: more than %u request messages on one stream; "
                 "open another", max);
    else if (unread > c->srv->cfg->max_message)
        snprintf(msg, sizeof msg, "grpc: the client sent requests faster than it read the "
                 "answers (%zu bytes unread, over %u)", unread, c->srv->cfg->max_message);
    else
        return 0;
    rpc_call_end_handler(c);
    rpc_call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, msg);
    return -1;
}

static int call_on_message(void *ctx, uint8_t flag, const uint8_t *msg, size_t len)
{
    rpc_call *c = ctx;
    if (rpc_call_finished(c))
        return 1;   /* answered (and the answer may borrow the handler's state): drop the rest */
    if (c->method->client_streaming) {
        c->messages++;
        if (call_stream_check(c) < 0)
            return 1;
    } else if (++c->messages > 1) {
        rpc_call_end_handler(c);
        rpc_call_fail_http(c, "200", GRPC_UNIMPLEMENTED,
                       "grpc: a unary request carried more than one message");
        return 1;
    }
    if (flag != 0) {
        rpc_call_fail_http(c, "200", GRPC_INTERNAL,
                       "grpc: compressed flag set with identity or empty encoding");
        return 1;
    }
    call_handler_runs(c);
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
    if (!c->method->progress || rpc_call_finished(c) || c->messages || r->state != GRPC_READER_BODY ||
        r->msg.cap < r->msg_len)
        return;
    call_handler_runs(c);
    c->method->progress(c, (const uint8_t *)r->msg.data, r->msg.len, r->msg_len);
}

void rpc_call_on_data(rpc_call *c, const uint8_t *data, size_t len)
{
    if (rpc_call_finished(c) || !c->reader)
        return;   /* answered already: the rest is read and dropped */
    int rv = grpc_reader_feed(c->reader, data, len, call_on_message, c);
    if (rv == -1 && !rpc_call_finished(c)) {
        char msg[160];
        if (c->reader->state == GRPC_READER_TOO_LARGE) {
            snprintf(msg, sizeof msg, "grpc: received message larger than max (%u vs. %u)",
                     c->reader->msg_len, c->reader->max_len);
            rpc_call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, msg);
        } else {
            snprintf(msg, sizeof msg, "grpc: received unexpected payload format %u",
                     c->reader->flag);
            rpc_call_fail_http(c, "200", GRPC_INTERNAL, msg);
        }
    } else if (rv == -2 && !rpc_call_finished(c)) {
        rpc_call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, "out of memory reading the request");
    } else if (rv == 0 && !rpc_call_finished(c) && c->reader->state == GRPC_READER_BODY && !c->reserved &&
               call_reserve(c, c->reader->msg_len) < 0) {
        call_refuse_over_budget(c, c->reader->msg_len);
    } else if (rv == 0) {
        call_report_progress(c);
    }
}

/* The client half-closed: a unary request must have brought one message;
 * a client stream's handler hears that no more will come. */
void rpc_call_on_request_end(rpc_call *c)
{
    if (rpc_call_finished(c) || !c->reader)
        return;
    if (c->method->client_streaming && !grpc_reader_partial(c->reader)) {
        call_handler_runs(c);
        c->method->request_end(c);
        return;
    }
    if (c->messages > 0 && !c->method->client_streaming)
        return;
    if (grpc_reader_partial(c->reader)) {
        char msg[160];
        snprintf(msg, sizeof msg, "grpc: request ended inside a message (%zu of %u bytes)",
                 c->reader->msg.len, c->reader->msg_len);
        rpc_call_end_handler(c);   /* a method started on the message stops now */
        rpc_call_fail_http(c, "200", GRPC_INTERNAL, msg);
    } else {
        rpc_call_fail_http(c, "200", GRPC_UNIMPLEMENTED,
                       "grpc: a unary request must carry one message; got none");
    }
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
void rpc_call_copy_body(void *src, uint8_t *dst, size_t len)
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
 * bytes are copied once, by rpc_call_copy_body, when the frame is queued), and
 * at the end of the body submit the trailers. */
static ssize_t call_read_body(nghttp2_session *session, int32_t stream_id, uint8_t *dst,
                              size_t len, uint32_t *flags, nghttp2_data_source *source,
                              void *user_data)
{
    (void)session, (void)stream_id, (void)dst, (void)user_data;
    rpc_call *c = source->ptr;
    size_t left = call_body_left(c);
    size_t n = left < len ? left : len;
    if (n == left && c->phase == RPC_CALL_FINISHED) {   /* no more after what is queued */
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

static void submit_headers_with_body(rpc_call *c)
{
    nghttp2_nv nva[] = {NV(":status", "200"), NV("content-type", call_content_type(c))};
    nghttp2_data_provider prd = {.source.ptr = c, .read_callback = call_read_body};
    int rv = nghttp2_submit_response(c->conn->io.session, c->stream_id, nva, 2, &prd);
    if (rv)
        log_error("stream %d: cannot submit response: %s", c->stream_id, nghttp2_strerror(rv));
}

/* The status is decided (phase: FINISHED, or TRAILERS_ONLY: then, should
 * the client still be sending, the stream is reset after the status so
 * that it stops, as grpc-go does; on_frame_send). The deadline timer stays:
 * the response may still wait for the client to read it, and the deadline
 * bounds that too. */
static void call_settle(rpc_call *c, rpc_call_phase phase, int code, const char *message)
{
    call_set_phase(c, phase);
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
    rpc_conn_flush(c->conn);
}

/* Every SERVER_SEND_STALL_NS while a response body is queued: reset the
 * stream if not one byte of it went out since the last look. */
static void call_check_stall(loop *l, void *ctx)
{
    rpc_call *c = ctx;
    size_t left = call_body_left(c);
    if (!left)
        return;   /* all handed to the connection; its own write check goes on */
    if (left == c->stall_left) {
        call_reset_unsent(c, "the client took no response byte for --stalled-send-timeout");
        return;
    }
    c->stall_left = left;
    loop_timer_arm(l, &c->stall_timer, c->srv->cfg->send_stall_ns);
}

static void call_watch_stall(rpc_call *c)
{
    if (loop_timer_armed(&c->stall_timer))
        return;
    c->stall_left = call_body_left(c);
    loop_timer_arm(c->srv->loop, &c->stall_timer, c->srv->cfg->send_stall_ns);
}

/* Error status from the transport itself, with a given HTTP status. */
void rpc_call_fail_http(rpc_call *c, const char *http_status, int code, const char *message)
{
    if (rpc_call_finished(c))
        return;
    int streaming = c->phase == RPC_CALL_STREAMING;
    call_settle(c, streaming ? RPC_CALL_FINISHED : RPC_CALL_TRAILERS_ONLY, code, message);
    log_v(3, "stream %d %s: %s %s", c->stream_id, c->path ? c->path : "", grpc_code_name(code),
          message);
    if (streaming)   /* the trailers follow the body */
        nghttp2_session_resume_data(c->conn->io.session, c->stream_id);
    else
        submit_trailers_only(c, http_status);
    rpc_conn_flush(c->conn);
}

int rpc_take_message(rpc_call *c, const uint8_t *msg, size_t len, buf *out)
{
    return grpc_reader_take(c->reader, msg, len, out);
}

void rpc_fail(rpc_call *c, int code, const char *message)
{
    rpc_call_fail_http(c, "200", code, message);
}

void rpc_finish(rpc_call *c, int code, const char *message)
{
    rpc_call_fail_http(c, "200", code, message);
}

void rpc_reply(rpc_call *c, const rpc_segment *segs, int n_segs)
{
    if (rpc_call_finished(c))
        return;
    size_t total = 0;
    for (int i = 0; i < n_segs; i++)
        total += segs[i].len;
    if (total > c->srv->cfg->max_message) {
        char msg[160];
        snprintf(msg, sizeof msg, "grpc: trying to send message larger than max (%zu vs. %u)",
                 total, c->srv->cfg->max_message);
        rpc_call_fail_http(c, "200", GRPC_RESOURCE_EXHAUSTED, msg);
        return;
    }
    call_settle(c, RPC_CALL_FINISHED, GRPC_OK, NULL);
    c->conn->large_call |= total >= SERVER_LARGE_MESSAGE;
    grpc_frame_prefix(c->frame_prefix, (uint32_t)total);
    c->segs[0] = (rpc_segment){c->frame_prefix, GRPC_PREFIX_LEN};
    c->n_segs = 1;
    for (int i = 0; i < n_segs && i < RPC_MAX_SEGMENTS - 1; i++)
        if (segs[i].len)
            c->segs[c->n_segs++] = segs[i];
    submit_headers_with_body(c);
    call_watch_stall(c);
    rpc_conn_flush(c->conn);
}

void rpc_send(rpc_call *c, const void *msg, size_t len)
{
    if (rpc_call_finished(c))
        return;
    uint8_t prefix[GRPC_PREFIX_LEN];
    grpc_frame_prefix(prefix, (uint32_t)len);
    buf_append(&c->stream_out, prefix, sizeof prefix);
    buf_append(&c->stream_out, msg, len);
    if (c->phase == RPC_CALL_READING) {
        call_set_phase(c, RPC_CALL_STREAMING);
        submit_headers_with_body(c);
    } else {
        nghttp2_session_resume_data(c->conn->io.session, c->stream_id);
    }
    call_watch_stall(c);
    rpc_conn_flush(c->conn);
}
