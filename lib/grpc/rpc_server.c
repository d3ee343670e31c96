/* rpc_server: the gRPC transport of wrapper-server and runner-client serve.
 *
 * Listens on [::]:PORT (dual stack), runs one nghttp2 server session per
 * connection, and turns each request stream into an rpc_call handed to a
 * method handler (see rpc.h). Everything happens on the event loop; no call
 * blocks. Three files, one for each thing that lives and dies
 * (rpc_server_internal.h has what they share):
 *
 *   rpc_server.c  the server: config, listening, accepting (paused while out
 *                 of descriptors), draining, the spare-memory timer
 *   rpc_conn.c    a connection: protocol sniffing, HTTP/1.1 probes, the
 *                 HTTP/2 session and its callbacks, writing, timers, closing
 *   rpc_call.c    a call: request checks and deframing, the response
 *
 * The path of a request:
 *
 *   server_on_accept -> rpc_conn_new                                 (this file)
 *   conn_on_io -> conn_sniff (HTTP/2 preface?) -> h2_io_read
 *     -> nghttp2 callbacks (rpc_conn.c), each calling into rpc_call.c:
 *     on_begin_headers  rpc_call_new: allocate the call (or refuse the stream)
 *     on_header         collect :method, :path, content-type, grpc-timeout
 *     on_frame_recv     headers complete: rpc_call_check_headers routes and
 *                       checks; END_STREAM: rpc_call_on_request_end checks that
 *                       exactly one message came
 *     on_data_chunk     rpc_call_on_data deframes; the first complete message
 *                       goes to the handler
 *     on_stream_close   rpc_call_free: tell the handler to let go, free the call
 *   handler answers -> rpc_reply/rpc_fail (rpc_call.c) -> nghttp2 submit
 *     -> rpc_conn_flush (rpc_conn.c)
 *
 * Draining (SIGTERM): stop accepting, GOAWAY with a shutdown notice and a
 * PING, then the final GOAWAY once the PING is acknowledged (rpc_conn.c's
 * on_frame_recv); in-flight calls run to completion within the grace
 * period, then are cancelled. */
#include "grpc/rpc_server.h"

#include <arpa/inet.h>
#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>

#include "core/log.h"
#include "grpc/grpc_status.h"
#include "grpc/h2_io.h"
#include "grpc/metrics.h"
#include "grpc/rpc_server_internal.h"

#define SERVER_GOAWAY_WAIT_NS 1000000000LL /* final GOAWAY if the PING is not acked */
#define SERVER_KILL_GRACE_NS 1000000000LL  /* SIGTERM -> SIGKILL for cancelled functions */
#define SERVER_SPARES_IDLE_NS (2 * 1000000000LL)  /* spare memory is kept this long after the last call */
#define SERVER_ACCEPT_BACKOFF_NS (100 * 1000000LL) /* out of descriptors: next accept try */
#define SERVER_SEND_STALL_NS (30 * 1000000000LL)    /* default of rpc_server_config.send_stall_ns */

const uint8_t rpc_server_drain_ping[8] = {0x01, 0x06, 0x01, 0x08, 0x00, 0x03, 0x03, 0x09};

static void server_on_accept(loop *l, int fd, uint32_t events, void *ctx);
static void server_accept_retry(loop *l, void *ctx);
static void server_release_spares(loop *l, void *ctx);
static void server_send_final_goaways(loop *l, void *ctx);
static void server_drain_step(loop *l, void *ctx);
static void server_exit_now(loop *l, void *ctx);
static void server_grace_expired(loop *l, void *ctx);

/* ---- helpers for handlers ------------------------------------------------ */

int rpc_server_is_draining(const server *s) { return s->draining; }
uint32_t rpc_server_max_message(const server *s) { return s->cfg->max_message; }
loop *rpc_server_loop(const server *s) { return s->loop; }
void *rpc_server_app(const server *s) { return s->cfg->app; }
const rpc_method *const *rpc_server_methods(const server *s) { return s->cfg->methods; }

/* ---- the server's life --------------------------------------------------- */

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

server *rpc_server_new(loop *l, const rpc_server_config *cfg)
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
    for (int i = 0; i < RPC_MAX_LISTENERS; i++)
        s->listen_fds[i] = -1;
    loop_timer_init(&s->accept_timer, server_accept_retry, s);
    loop_timer_init(&s->spares_timer, server_release_spares, s);
    loop_timer_init(&s->goaway_timer, server_send_final_goaways, s);
    loop_timer_init(&s->grace_timer, server_grace_expired, s);
    loop_timer_init(&s->exit_timer, server_exit_now, s);
    loop_defer_init(&s->drain_step, server_drain_step, s);
    return s;
}

/* ---- listening ----------------------------------------------------------- */

/* An --address (NULL or "": all) as a socket address for port. */
static int address_parse(const char *address, int port, struct sockaddr_storage *ss,
                         socklen_t *len)
{
    struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
    struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
    *ss = (struct sockaddr_storage){0};
    if (!address || !*address) {
        a6->sin6_family = AF_INET6;
        a6->sin6_addr = in6addr_any;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
    } else if (inet_pton(AF_INET, address, &a4->sin_addr) == 1) {
        a4->sin_family = AF_INET;
        a4->sin_port = htons((uint16_t)port);
        *len = sizeof *a4;
    } else if (inet_pton(AF_INET6, address, &a6->sin6_addr) == 1) {
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *len = sizeof *a6;
    } else {
        return -1;
    }
    return 0;
}

int rpc_server_address_check(const char *address, buf *err)
{
    struct sockaddr_storage ss;
    socklen_t len;
    if (address_parse(address, 0, &ss, &len) < 0) {
        buf_printf(err, "invalid --address \"%s\": want an IP address such as 127.0.0.1 or ::1 "
                   "(default: all addresses)", address);
        return -1;
    }
    return 0;
}

static int listen_on(struct sockaddr_storage *ss, socklen_t len, int *out_port)
{
    int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (ss->ss_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    if (bind(fd, (struct sockaddr *)ss, len) < 0 || listen(fd, 1024) < 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    len = sizeof *ss;
    if (getsockname(fd, (struct sockaddr *)ss, &len) == 0)
        *out_port = ntohs(ss->ss_family == AF_INET6 ? ((struct sockaddr_in6 *)ss)->sin6_port
                                                    : ((struct sockaddr_in *)ss)->sin_port);
    return fd;
}

/* One listener, the i-th, on port (0: any free one; *bound: the port). */
static int listen_one(server *s, int i, int port, int *bound, buf *err)
{
    const char *address = s->cfg->address && *s->cfg->address ? s->cfg->address : NULL;
    struct sockaddr_storage ss;
    socklen_t len;
    int fd = -1;
    if (address_parse(address, port, &ss, &len) < 0) {
        errno = EINVAL;
    } else {
        fd = listen_on(&ss, len, bound);
        if (fd < 0 && !address && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
            /* no IPv6 in this kernel: all IPv4 addresses */
            struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
            *a4 = (struct sockaddr_in){.sin_family = AF_INET,
                                       .sin_addr.s_addr = htonl(INADDR_ANY),
                                       .sin_port = htons((uint16_t)port)};
            fd = listen_on(&ss, sizeof *a4, bound);
        }
    }
    int v6 = address && strchr(address, ':');
    if (fd < 0) {
        buf_printf(err, "cannot listen on %s%s%s:%d: %s", v6 ? "[" : "", address ? address : "",
                   v6 ? "]" : "", port, strerror(errno));
        return -1;
    }
    s->listen_fds[i] = fd;
    if (loop_watch(s->loop, fd, LOOP_READ, server_on_accept, s) < 0) {
        buf_printf(err, "cannot watch the listening socket");
        return -1;
    }
    log_info("Listening on %s%s%s:%d", v6 ? "[" : "", address ? address : "", v6 ? "]" : "",
             *bound);
    return 0;
}

int rpc_server_listen(server *s, buf *err)
{
    int also;
    if (listen_one(s, 0, s->cfg->port, &s->port, err) < 0)
        return -1;
    return s->cfg->also_port > 0 ? listen_one(s, 1, s->cfg->also_port, &also, err) : 0;
}

int rpc_server_port(const server *s) { return s->port; }

/* ---- accepting ----------------------------------------------------------- */

void rpc_server_resume_accept(server *s)
{
    loop_timer_disarm(s->loop, &s->accept_timer);
    if (!s->accept_paused || s->listen_fds[0] < 0)
        return;
    int watched = 0;
    for (int i = 0; i < RPC_MAX_LISTENERS; i++)
        watched += s->listen_fds[i] >= 0 &&
                   loop_watch(s->loop, s->listen_fds[i], LOOP_READ, server_on_accept, s) == 0;
    if (watched)
        s->accept_paused = 0;
    if (s->cfg->on_accept_resumed)
        s->cfg->on_accept_resumed(s->cfg->app);
}

static void server_accept_retry(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
    rpc_server_resume_accept(s);
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
        for (int i = 0; i < RPC_MAX_LISTENERS; i++)
            if (s->listen_fds[i] >= 0)
                loop_unwatch(s->loop, s->listen_fds[i]);
        s->accept_paused = 1;
    }
    if (!loop_timer_armed(&s->accept_timer))
        loop_timer_arm(s->loop, &s->accept_timer, SERVER_ACCEPT_BACKOFF_NS);
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
        metrics_count(METRIC_CONNECTIONS_ACCEPTED);
        rpc_conn_new(s, cfd);
    }
}

/* ---- spare memory -------------------------------------------------------- */

/* Spare memory: a large call's request and output buffers (buf spares) and
 * an idle connection's grown read and write buffers (h2_io) are kept for
 * the next large call while calls keep coming, and given back once the
 * server has had no unary call for SERVER_SPARES_IDLE_NS, so an idle
 * server holds no megabytes. */
static void server_release_spares(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
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
void rpc_server_spares_idle(server *s, int parked)
{
    if (loop_timer_armed(&s->spares_timer) ||
        !(parked || s->conns_freed || h2_io_spare_bytes() || buf_spares_bytes()))
        return;
    loop_timer_arm(s->loop, &s->spares_timer, SERVER_SPARES_IDLE_NS);
}

/* ---- draining ------------------------------------------------------------ */

static void server_close_listener(server *s)
{
    loop_timer_disarm(s->loop, &s->accept_timer);
    for (int i = 0; i < RPC_MAX_LISTENERS; i++) {
        if (s->listen_fds[i] < 0)
            continue;
        loop_unwatch(s->loop, s->listen_fds[i]);
        close(s->listen_fds[i]);
        s->listen_fds[i] = -1;
    }
}

static void server_send_final_goaways(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
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
        rpc_conn_flush(c);
    }
}

/* Each open call of every connection to `each`, with the connection's
 * flushes held while walking its calls (a flush can complete and free
 * calls); one flush afterwards sends everything. */
static void server_each_open_call(server *s, void (*each)(rpc_call *call))
{
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        c->io.busy = 1;
        for (rpc_call *call = c->calls; call; call = call->next_in_conn)
            if (!rpc_call_finished(call))
                each(call);
        c->io.busy = 0;
        rpc_conn_flush(c);
    }
}

static int is_server_stream(const rpc_call *call)
{
    return call->method && call->method->server_streaming;
}

/* Draining began: a stream's handler may tell its client. */
static void stream_tell_draining(rpc_call *call)
{
    if (is_server_stream(call) && call->handler == RPC_HANDLER_RUNNING && call->method->drain)
        call->method->drain(call);
}

/* No unary call is left: a stream (health's Watch, reflection) would hold
 * its connection open to the end of the grace period. */
static void stream_end(rpc_call *call)
{
    if (is_server_stream(call))
        rpc_finish(call, GRPC_UNAVAILABLE, "the server is shutting down");
}

/* When no unary call is left, end long-lived streams and let connections close.
 * Runs as a deferred call of its own, never inside another connection's callbacks,
 * so that closing one connection cannot free another under its caller. */
static void server_drain_step(loop *l, void *ctx)
{
    server *s = ctx;
    if (s->active_calls > 0)
        return;
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->mode != CONN_HTTP2)
            rpc_conn_close(c);   /* a probe or scrape, or a peer that said nothing */
    }
    server_each_open_call(s, stream_end);
    if (!s->conns) {
        loop_stop(s->loop);
        return;
    }
    loop_timer_disarm(s->loop, &s->goaway_timer);
    server_send_final_goaways(l, s);
}

void rpc_server_check_drained(server *s)
{
    if (s->draining)
        loop_defer_post(s->loop, &s->drain_step);
}

static void server_exit_now(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
    log_warn("connections still open after the shutdown grace period; exiting");
    loop_stop(s->loop);
}

static void call_cancel_at_grace(rpc_call *call)
{
    rpc_call_end_handler(call);
    rpc_call_fail_http(call, "200", GRPC_UNAVAILABLE, "the server is shutting down: the call did "
                       "not finish within the shutdown grace period");
}

static void server_grace_expired(loop *l, void *ctx)
{
    (void)l;
    server *s = ctx;
    s->stopping = 1;
    log_warn("shutdown grace period over: cancelling %zu call(s) still running", s->active_calls);
    server_each_open_call(s, call_cancel_at_grace);
    /* give the statuses a moment to leave, then go regardless */
    loop_timer_arm(s->loop, &s->exit_timer, SERVER_GOAWAY_WAIT_NS);
    rpc_server_check_drained(s);
}

void rpc_server_drain(server *s)
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
        s->cfg->on_drain(s->cfg->app);
    server_each_open_call(s, stream_tell_draining);
    for (conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        if (c->mode != CONN_HTTP2)
            continue;
        nghttp2_submit_shutdown_notice(c->io.session);
        nghttp2_submit_ping(c->io.session, NGHTTP2_FLAG_NONE, rpc_server_drain_ping);
        rpc_conn_flush(c);
    }
    loop_timer_arm(s->loop, &s->goaway_timer, SERVER_GOAWAY_WAIT_NS);
    loop_timer_arm(s->loop, &s->grace_timer, s->cfg->shutdown_grace_ns);
    rpc_server_check_drained(s);
}

int64_t rpc_server_kill_grace_ns(void) { return SERVER_KILL_GRACE_NS; }

void rpc_server_free(server *s)
{
    if (!s)
        return;
    while (s->conns)
        rpc_conn_close(s->conns);
    server_close_listener(s);
    loop_timer_disarm(s->loop, &s->grace_timer);
    loop_timer_disarm(s->loop, &s->goaway_timer);
    loop_timer_disarm(s->loop, &s->exit_timer);
    loop_defer_cancel(&s->drain_step);
    loop_timer_disarm(s->loop, &s->spares_timer);
    loop_timer_disarm(s->loop, &s->accept_timer);
    h2_io_spare_release();
    free(s);
}
