/* http1: just enough HTTP/1.1 to answer probes and scrapes on the gRPC port.
 *
 * Kubernetes httpGet probes and Prometheus speak HTTP/1.1; our port speaks
 * gRPC over cleartext HTTP/2. The server's connections (rpc_conn.c) tell
 * them apart by the first bytes (the HTTP/2 preface) and hand HTTP/1.1
 * connections here: one request (headers only, at most 8 KiB), one
 * response with Content-Length and `Connection: close`, then the connection
 * closes. GET and HEAD only. The caller's handler decides status and body
 * from the path and the query (the text after '?', "" when none). */
#ifndef KRM_HTTP1_H
#define KRM_HTTP1_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define HTTP1_MAX_REQUEST 8192

typedef struct http1_response {
    int status;                 /* 200, 404, 503 ... */
    const char *content_type;   /* default text/plain; charset=utf-8 */
    buf body;
} http1_response;

typedef void http1_handler_fn(void *ctx, const char *path, const char *query, http1_response *resp);

typedef struct http1_conn http1_conn;

/* fd is the connection (non-blocking; not closed here); initial holds bytes
 * already read from it. NULL on ENOMEM. */
http1_conn *http1_new(int fd, const void *initial, size_t len, http1_handler_fn *handler,
                      void *ctx);

/* Drive the exchange on a loop event. Returns the loop events to wait for
 * next (LOOP_READ or LOOP_WRITE), or 0 when the connection should close
 * (response sent, peer gone or I/O error). */
uint32_t http1_on_io(http1_conn *h);

void http1_free(http1_conn *h);

#endif
