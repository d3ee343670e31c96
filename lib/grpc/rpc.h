/* rpc: the contract between the HTTP/2 transport (rpc_server.c; a call's
 * side is rpc_call.c) and the method handlers (svc_evaluate.c,
 * svc_health.c).
 *
 * The transport turns a request stream into an rpc_call, checks headers,
 * deframes the request message and calls the method's handler with it. The
 * handler answers later, from any loop callback, with rpc_reply (one message
 * and OK), rpc_fail (a status), or rpc_send + rpc_finish for a server
 * stream. A client-streaming method (bidirectional, as reflection) gets
 * each request message in turn, every one bounded by max_message, at most
 * max_messages of them, and request_end when the client half-closes; it
 * answers each with rpc_send. The transport owns the call; it calls the
 * method's `end` hook exactly once when the handler must let go: after the
 * stream closed, or early when the deadline passed or the client
 * cancelled. */
#ifndef KRM_RPC_H
#define KRM_RPC_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"

typedef struct rpc_call rpc_call;
typedef struct server server;

typedef struct rpc_method {
    const char *service;   /* "evaluator.FunctionEvaluator" */
    const char *name;      /* "EvaluateFunction" */
    /* Watch: not counted as in-flight work when draining. Once no unary call
     * is left, the transport ends every open server stream UNAVAILABLE ("the
     * server is shutting down") so connections can close. */
    int server_streaming;
    /* Client streaming: handle is called for each request message; set with
     * server_streaming for a bidirectional method. */
    int client_streaming;
    /* Client streaming: request messages one stream may carry (0:
     * RPC_STREAM_MESSAGES); the next one ends it with RESOURCE_EXHAUSTED. */
    uint32_t max_messages;
    /* The request message (valid only during the call). */
    void (*handle)(rpc_call *c, const uint8_t *msg, size_t len);
    /* Client streaming (required there): the client half-closed, after zero
     * or more messages; the handler ends the call (rpc_finish). */
    void (*request_end)(rpc_call *c);
    /* Optional: a large request message is arriving. `have` of its `total`
     * bytes are at msg, which stays put while the rest comes in: handle
     * gets the same pointer when it is complete (and rpc_take_message keeps
     * it there). Called after each piece; it may set c->state, and `end`
     * runs even if handle never does (client reset, deadline, cut-off
     * request). It must not answer the call. */
    void (*progress)(rpc_call *c, const uint8_t *msg, size_t have, size_t total);
    /* Optional, server streaming: the server began draining (SIGTERM) while
     * the handler holds this stream; it may tell its client (health's Watch
     * sends NOT_SERVING). */
    void (*drain)(rpc_call *c);
    /* Let go of handler state; `finished` is 0 when the work must be cancelled. */
    void (*end)(rpc_call *c, int finished);
    /* Optional: the deadline passed (end follows). Append to why, the
     * status message, what the call was still waiting for, if anything:
     * "deadline exceeded" alone does not say the work never started. */
    void (*deadline_note)(rpc_call *c, buf *why);
} rpc_method;

/* A piece of the response body, borrowed from handler state that lives
 * until `end` is called. */
typedef struct rpc_segment {
    const void *data;
    size_t len;
} rpc_segment;

#define RPC_STREAM_MESSAGES 1000   /* default max_messages of a client stream */

#define RPC_MAX_SEGMENTS 8   /* the transport's prefix + up to 7 of the handler's */

/* A call's life on its stream; it changes in call_set_phase only
 * (rpc_call.c), whose table holds the legal steps:
 * HEADERS -> READING -> [STREAMING ->] FINISHED, or to TRAILERS_ONLY from
 * HEADERS or READING. */
typedef enum rpc_call_phase {
    RPC_CALL_HEADERS,        /* its request header block is arriving */
    RPC_CALL_READING,        /* accepted: its request is read and handed to the handler */
    RPC_CALL_STREAMING,      /* response HEADERS and messages sent; no status yet */
    RPC_CALL_FINISHED,       /* status decided, after a body (or with its one message) */
    RPC_CALL_TRAILERS_ONLY,  /* status decided before any response: one Trailers-Only
                                HEADERS, then RST_STREAM(NO_ERROR) if the client still sends */
} rpc_call_phase;

/* The method handler's hold on the call, beside the phase (a call ends
 * finished or not whether or not its handler ran): IDLE -> RUNNING -> ENDED,
 * in call_set_handler only. */
typedef enum rpc_handler_phase {
    RPC_HANDLER_IDLE,        /* not given the call (yet, or ever) */
    RPC_HANDLER_RUNNING,     /* handle, progress or request_end was called */
    RPC_HANDLER_ENDED,       /* its `end` has run: it holds nothing of the call */
} rpc_handler_phase;

struct rpc_call {
    server *srv;
    struct conn *conn;
    int32_t stream_id;
    const rpc_method *method;
    void *state;                  /* the handler's */
    int64_t deadline_ns;          /* 0: none */
    rpc_call *next_in_conn;

    /* transport private */
    char *content_type;           /* echoed in the response */
    char *path;
    char *timeout_text;
    char *encoding;
    size_t header_bytes;          /* the request's header list size (RFC 9113 §6.5.2) */
    /* :method was not POST: what the header block said, judged when it
     * ends (rpc_call_check_headers), as its size is; not a phase */
    int bad_method;
    rpc_call_phase phase;
    rpc_handler_phase handler;
    int messages;                 /* request messages seen */
    size_t reserved;              /* of the pending-request budgets: the message's size */
    loop_timer deadline_timer;    /* armed while a grpc-timeout runs */
    loop_timer stall_timer;       /* armed while the response body waits on the client's window */
    size_t stall_left;            /* body bytes not yet sent at the last stall check */
    struct grpc_reader *reader;
    rpc_segment segs[RPC_MAX_SEGMENTS];
    int n_segs, seg_index;
    size_t seg_off;
    buf stream_out;               /* framed messages queued by rpc_send */
    size_t stream_off;
    int status;
    buf status_message;
    int64_t started_ns;           /* for the latency histogram */
    uint8_t frame_prefix[16];     /* for the handler's segment headers */
};

/* From inside handle(): keep the request message (which is otherwise only
 * valid during the call) in *out, without copying a large one. 0 or -1. */
int rpc_take_message(rpc_call *c, const uint8_t *msg, size_t len, buf *out);

/* Answer a unary call: one message made of segs (already protobuf-encoded,
 * without the gRPC prefix; the transport adds it), then status OK. */
void rpc_reply(rpc_call *c, const rpc_segment *segs, int n_segs);
/* Answer with an error status (or end a server stream with it). */
void rpc_fail(rpc_call *c, int code, const char *message);
/* Server streaming: queue one message; rpc_finish ends the stream. */
void rpc_send(rpc_call *c, const void *msg, size_t len);
void rpc_finish(rpc_call *c, int code, const char *message);

/* Work can outlive its stream: a cancelled function takes up to its kill
 * grace to die. Holding the stream's slot until then keeps the connection's
 * count of calls (SETTINGS_MAX_CONCURRENT_STREAMS) honest, so a client that
 * sends calls and resets them at once cannot start work faster than the
 * old work stops (the "rapid reset" pattern, CVE-2023-44487). Take the hold
 * in `end`; release it when the work has stopped. NULL when out of memory
 * (nothing is held then); the hold outlives the connection harmlessly. */
typedef struct rpc_slot_hold rpc_slot_hold;
rpc_slot_hold *rpc_hold_slot(rpc_call *c);
void rpc_release_slot(rpc_slot_hold *h);

/* Server-wide facts handlers need. */
int rpc_server_is_draining(const server *s);
uint32_t rpc_server_max_message(const server *s);
loop *rpc_server_loop(const server *s);
/* The methods served (rpc_server_config's NULL-terminated table). */
const rpc_method *const *rpc_server_methods(const server *s);
/* The app pointer of rpc_server_config. */
void *rpc_server_app(const server *s);

#endif
