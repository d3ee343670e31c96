/* grpc_client: unary gRPC calls over one cleartext HTTP/2 connection, on the
 * event loop.
 *
 * Used by runner-client (eval, health) and by the benchmarks' load
 * generator: many calls may be in flight on one connection at once. Each
 * call ends exactly once in its done callback with a gRPC status; transport
 * failures are mapped to statuses the way gRPC clients do (connection lost:
 * UNAVAILABLE, local deadline: DEADLINE_EXCEEDED). */
#ifndef KRM_GRPC_CLIENT_H
#define KRM_GRPC_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"

typedef struct gc_conn gc_conn;

typedef struct gc_result {
    int status;        /* gRPC status code */
    const char *message;   /* decoded grpc-message ("" when none) */
    const uint8_t *response;   /* the response message (status OK) */
    size_t response_len;
    buf *response_buf;         /* holds it: the callback may move it out to keep
                                  the message without a copy (status OK) */
    int transport;             /* 1: ended by the connection (lost, closed by the
                                  server, stream refused), not by an answer: a
                                  caller may retry an idempotent call elsewhere */
} gc_result;

typedef void gc_done_fn(const gc_result *r, void *ctx);

/* Checks an address as gc_connect takes it: HOST:PORT ("[v6addr]:port"
 * too) with a port number 1-65535, so a CLI can refuse `--addr 9446` as a
 * usage error before anything is dialed. 0, or -1 with why in err. */
int gc_addr_check(const char *addr, buf *err);

/* Connects to "host:port" ("[v6addr]:port" too), waiting at most
 * connect_timeout_ns; the HTTP/2 session starts at once. Returns NULL with
 * the reason in err. max_message bounds the responses accepted. */
gc_conn *gc_connect(loop *l, const char *addr, int64_t connect_timeout_ns, uint32_t max_message,
                    buf *err);

/* Connecting without blocking the loop: addr must be a numeric "IP:port"
 * ("[v6]:port"), since resolving a name would block. fn runs once from the
 * loop, never inside this call, with the connection or why it failed (the
 * connection is then the callee's). NULL with why in err when the
 * connect could not start (fn is then not called). */
typedef struct gc_dialing gc_dialing;
typedef void gc_connected_fn(gc_conn *conn, const char *error, void *ctx);
gc_dialing *gc_connect_start(loop *l, const char *addr, int64_t timeout_ns, uint32_t max_message,
                             gc_connected_fn *fn, void *ctx, buf *err);
/* Abandons a connect whose fn has not run (fn is not called). */
void gc_connect_cancel(gc_dialing *d);

/* Starts a unary call. The request bytes are borrowed, not copied (they
 * may be megabytes): they must stay valid until done is called. timeout_ns
 * <= 0: no deadline. Returns 0, or -1 when the call could not be started (done is
 * then not called). The request is written at once, so done may run before
 * gc_call returns 0: when that write finds the connection reset, the call
 * ends UNAVAILABLE there; a caller about to run the loop for its calls must
 * check whether they already ended. */
int gc_call(gc_conn *c, const char *path, const void *request, size_t len, int64_t timeout_ns,
            gc_done_fn *done, void *ctx);

/* A call on a connection shared by many callers: as gc_call, but the
 * request is written from the loop (calls started in one turn share a
 * write), so done never runs inside this call, and the handle stays valid
 * until done runs or gc_call_cancel. NULL when the call could not be
 * started (the connection is broken or going away, out of memory): done is
 * then not called. */
typedef struct gc_call_state gc_stream;
gc_stream *gc_call_start(gc_conn *c, const char *path, const void *request, size_t len,
                         int64_t timeout_ns, gc_done_fn *done, void *ctx);
/* Ends a call whose done has not run: the stream is reset, done will not
 * run, the request bytes are no longer read. The connection stays. */
void gc_call_cancel(gc_stream *s);

/* 0 once the connection is lost, closed by the server or told to go away
 * (GOAWAY): new calls would fail; a caller keeping it opens another. */
int gc_usable(const gc_conn *c);

/* Request metadata for later calls: the user-agent (NULL: the default) and
 * extra headers as name/value pairs (names lowercase). The strings must stay
 * valid while calls are made. */
void gc_set_metadata(gc_conn *c, const char *user_agent, const char *const *pairs, size_t n_pairs);

/* Calls still running. */
size_t gc_pending(const gc_conn *c);

/* Closes the connection; calls still running end with CANCELLED. */
void gc_close(gc_conn *c);

#endif
