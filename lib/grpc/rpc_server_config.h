/* rpc_server_config: what a gRPC server is configured with (rpc_server.h
 * makes one of it). Apart from rpc_server.h so that the transport's own
 * files (rpc_server_internal.h) see the configuration without the
 * programs' interface, which the transport implements. */
#ifndef KRM_RPC_SERVER_CONFIG_H
#define KRM_RPC_SERVER_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "grpc/http1.h"
#include "grpc/rpc.h"

#define RPC_LIMIT_DEFAULT SIZE_MAX   /* a count left to its default, where 0 is a value */

/* SIGTERM's drain began: the application stops work no call will take.
 * (Streams are the transport's: see rpc_method.drain and server_streaming.) */
typedef void rpc_drain_fn(void *ctx);

typedef struct rpc_server_config {
    int port;                    /* 0: any free port */
    /* A second port serving the same methods under the same limits (0:
     * none): porch-server's pod-evaluator port beside the function
     * runner's, for callers of either Porch layout. */
    int also_port;
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
    void *app;                   /* the handlers' shared state (rpc_server_app) */
} rpc_server_config;

#endif
