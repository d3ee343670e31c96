/* rpc_server: the gRPC transport shared by wrapper-server and
 * `runner-client serve` (listener, HTTP/2 connections, routing to the
 * methods given, draining). See rpc_server.c (rpc_conn.c, rpc_call.c). */
#ifndef KRM_RPC_SERVER_H
#define KRM_RPC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"
#include "grpc/http1.h"
#include "grpc/rpc.h"

#define RPC_LIMIT_DEFAULT SIZE_MAX   /* a count left to its default, where 0 is a value */

/* Draining's steps, for services with streams that outlive calls (health
 * Watch): STARTED when SIGTERM's drain begins, IDLE when no unary call is
 * left and long-lived streams should end so connections can close. */
typedef enum rpc_drain_phase { RPC_DRAIN_STARTED, RPC_DRAIN_IDLE } rpc_drain_phase;
typedef void rpc_drain_fn(rpc_drain_phase phase, void *ctx);

typedef struct rpc_server_config {
    int port;                    /* 0: any free port */
    const char *address;         /* an IP address to bind; NULL or "": all of them */
    uint32_t max_message;        /* largest request and response message */
    uint32_t max_streams;        /* concurrent calls per connection */
    int64_t idle_timeout_ns;     /* close connections without calls; 0: never */
    int64_t shutdown_grace_ns;   /* in-flight calls get this long after SIGTERM */
    int64_t send_stall_ns;       /* a response no byte of which moves this long is reset,
                                    a connection that reads nothing this long closed; 0: 30 s */
    /* Bytes of request messages still arriving (each message's declared
     * size, reserved when its prefix arrives, released once it is whole):
     * per connection and in all. 0: no limit. */
    size_t max_pending_conn_bytes;
    size_t max_pending_bytes;
    /* Function processes at once, and calls that may wait for one (for
     * fn_server, which configures fn_slots; the transport ignores them).
     * fn_server_run fills in 0 (max_waiting: RPC_LIMIT_DEFAULT) and 0
     * pending-byte budgets with their defaults. */
    size_t max_functions;
    size_t max_waiting;
    const rpc_method *const *methods;   /* NULL-terminated */
    rpc_drain_fn *on_drain;      /* may be NULL; gets `app` as its ctx */
    /* Why the server is not ready (GET /readyz answers 503 with it), or
     * NULL when it is; may be NULL. Gets `app`. */
    const char *(*not_ready)(void *app);
    /* Accepting paused for want of descriptors (or memory) and is tried
     * again: a connection closed, or the retry timer fired. Whoever else
     * came short of descriptors may try again too. May be NULL; gets `app`. */
    void (*on_accept_resumed)(void *app);
    /* Other GET paths over HTTP/1.1 (say /debug/pods): 1 when it answered
     * into r, 0 for a 404. May be NULL. Gets http_ctx. */
    int (*http_get)(void *http_ctx, const char *path, const char *query, http1_response *r);
    void *http_ctx;
    void *app;                   /* the handlers' shared state (server_app) */
} rpc_server_config;

/* Fills the pending-request budgets left at 0 with their defaults (4 and 16
 * times max_message) and checks that the limits fit together (each budget
 * holds one message, the total holds a connection's). 0, or -1 with why,
 * naming the flags. */
int rpc_server_config_fill(rpc_server_config *cfg, buf *why);

/* Copies cfg (the methods array must outlive the server). */
server *server_new(loop *l, const rpc_server_config *cfg);
/* Bind address:port (all addresses: [::], or 0.0.0.0 without IPv6) and
 * start accepting. On failure err says "cannot listen on ADDRESS:PORT: why". */
int server_listen(server *s, buf *err);
int server_port(const server *s);
/* Checks an --address value: an IPv4 or IPv6 address ("" is all of them).
 * 0, or -1 with why in err. */
int server_address_check(const char *address, buf *err);
/* First call: graceful drain; second call: stop at once. The loop stops
 * when the drain completes. */
void server_drain(server *s);
/* How long cancelled functions get between SIGTERM and SIGKILL. */
int64_t server_kill_grace_ns(void);
void server_free(server *s);

#endif
