/* rpc_server_internal: what the three files of the gRPC server share. Not
 * for use outside lib/grpc: services use rpc.h, programs rpc_server.h.
 *
 * Who owns what (rpc_server.c's header comment follows a request through
 * all three):
 *   struct server  rpc_server.c: the copied config, the listener and its
 *                  accept pause, the list of connections, the count and
 *                  pending bytes of all calls, drain state, spare memory.
 *   struct conn    rpc_conn.c: one socket, its protocol, HTTP/2 session,
 *                  timers and slot holds. rpc_call.c links calls into it
 *                  and counts their pending bytes and size there.
 *   rpc_call       rpc_call.c (the struct is in rpc.h for the handlers).
 * The functions below are the only calls from one file into another. */
#ifndef KRM_RPC_SERVER_INTERNAL_H
#define KRM_RPC_SERVER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "core/loop.h"
#include "grpc/h2_io.h"
#include "grpc/http1.h"
#include "grpc/rpc.h"
#include "grpc/rpc_server_config.h"

#define SERVER_LARGE_MESSAGE (1024 * 1024)  /* a call this big: its connection's buffers become spares */
#define H2_PREFACE_LEN 24                   /* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" */

/* A request's metadata: its header list (RFC 9113 §6.5.2: each field's
 * name, value and 32 bytes) is at most this. gRPC metadata is a few KiB
 * (grpc-go accepts 16 MiB by default, C core 8 KiB), so 1 MiB takes what
 * clients mean to send and bounds what a peer makes us decode. Advertised
 * as SETTINGS_MAX_HEADER_LIST_SIZE, so grpc-go and C core refuse a bigger
 * request before sending it, naming the size; one that comes anyway is
 * answered RESOURCE_EXHAUSTED on its own stream (rpc_call_check_headers). */
#define SERVER_MAX_HEADER_LIST (1u << 20)
/* A block over that budget is still read to its end, so that only its own
 * stream is refused: nghttp2 cannot skip a header block, it ends the
 * connection past its limit of CONTINUATION frames (8 by default since
 * CVE-2024-28182: 130-150 KB of metadata took down every call on the
 * connection). So the limit is in frames of at most 16 KiB (our
 * SETTINGS_MAX_FRAME_SIZE) for 16 MiB, the header list grpc-go accepts by
 * default: reading a block costs what its bytes do, nghttp2 keeps at most
 * one header field of it (64 KiB). A longer one ends the connection with a
 * GOAWAY naming the limit (h2_io). */
#define SERVER_MAX_FRAME 16384
#define SERVER_MAX_HEADER_BLOCK (16u << 20)
#define SERVER_MAX_CONTINUATIONS (SERVER_MAX_HEADER_BLOCK / SERVER_MAX_FRAME)

/* What the first bytes said. */
enum conn_mode { CONN_SNIFFING, CONN_HTTP2, CONN_HTTP1 };

#define RPC_MAX_LISTENERS 2   /* --port and one more (rpc_server_config.also_port) */

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
    loop_timer handshake_timer;  /* armed until the client's SETTINGS */
    loop_timer idle_timer;    /* armed while the connection has no calls */
    loop_timer write_timer;   /* armed while the socket does not take our bytes */
    loop_timer linger_timer;  /* armed while lingering */
    uint64_t written_at_check;
    int large_call;           /* a message of SERVER_LARGE_MESSAGE or more since idle */
    int lingering;            /* GOAWAY sent, our side shut: reading the client's rest */
    struct conn *next;
} conn;

struct server {
    loop *loop;
    rpc_server_config cfg_copy;
    const rpc_server_config *cfg;
    int listen_fds[RPC_MAX_LISTENERS];   /* cfg->port's, then cfg->also_port's; -1: none */
    int port;                  /* the first listener's (cfg->port, or the one picked for 0) */
    conn *conns;
    size_t active_calls;   /* unary calls not yet freed (Watch excluded) */
    size_t pending_bytes;  /* reserved by all unfinished requests */
    int draining;
    int stopping;          /* grace expired: calls are being cancelled */
    loop_timer grace_timer;     /* the timers of a drain */
    loop_timer goaway_timer;
    loop_timer exit_timer;
    loop_defer drain_step;      /* posted while draining when a call or connection ends */
    loop_timer spares_timer;    /* armed while idle with spare memory held */
    int conns_freed;            /* connections closed since the last release */
    int accept_paused;          /* the listener is not watched: out of descriptors */
    int64_t accept_trouble_ns;  /* when accepting last started failing; 0: it works */
    loop_timer accept_timer;    /* retries accepting while paused */
};

/* ---- rpc_server.c: the server ------------------------------------------- */

/* The opaque data of the drain PING; its ACK triggers the final GOAWAY. */
extern const uint8_t rpc_server_drain_ping[8];
/* No unary call is running; parked: a connection just gave its buffers to
 * the spares. Arms the timer that releases spare memory. */
void rpc_server_spares_idle(server *s, int parked);
/* While draining: a call or connection ended, take the next drain step. */
void rpc_server_check_drained(server *s);
/* A descriptor was freed: accept again if accepting was paused. */
void rpc_server_resume_accept(server *s);

/* ---- rpc_conn.c: one connection ----------------------------------------- */

/* A connection just accepted: wait for its first bytes (closes fd on ENOMEM). */
void rpc_conn_new(server *s, int fd);
/* Write what the session has queued; close the connection when it is done. */
void rpc_conn_flush(conn *c);
/* Cancel its calls, drop its slot holds, free it. */
void rpc_conn_close(conn *c);
/* The connection has no calls: start its --idle-timeout. */
void rpc_conn_arm_idle(conn *c);

/* ---- rpc_call.c: one call (from rpc_conn.c's nghttp2 callbacks) ---------- */

rpc_call *rpc_call_new(conn *cn, int32_t stream_id);
/* The request's headers are complete: route and check them. */
void rpc_call_check_headers(rpc_call *c);
/* DATA of the request: deframe, reserve its size, hand the message over. */
void rpc_call_on_data(rpc_call *c, const uint8_t *data, size_t len);
/* The client half-closed the stream. */
void rpc_call_on_request_end(rpc_call *c);
/* The response body for h2_io_queue_data (h2_io_copy_fn). */
void rpc_call_copy_body(void *src, uint8_t *dst, size_t len);
/* The stream closed: end the handler, count the call, free it. */
void rpc_call_free(rpc_call *c);
/* Tell the handler to let go (method->end); safe to call more than once. */
void rpc_call_end_handler(rpc_call *c);
/* Its status is decided (phase FINISHED or TRAILERS_ONLY). */
int rpc_call_finished(const rpc_call *c);
/* Answer with an error status of the transport's, with a given HTTP status. */
void rpc_call_fail_http(rpc_call *c, const char *http_status, int code, const char *message);

#endif
