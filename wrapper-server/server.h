/* server: the wrapper server's gRPC transport (listener, HTTP/2
 * connections, routing to handlers, draining). See server.c. */
#ifndef KRM_WS_SERVER_H
#define KRM_WS_SERVER_H

#include <stdint.h>

#include "buf.h"
#include "cli.h"
#include "loop.h"
#include "rpc.h"

server *server_new(loop *l, const ws_config *cfg);
/* Bind [::]:port (or 0.0.0.0 without IPv6) and start accepting. */
int server_listen(server *s, buf *err);
int server_port(const server *s);
/* First call: graceful drain; second call: stop at once. The loop stops
 * when the drain completes. */
void server_drain(server *s);
/* How long cancelled functions get between SIGTERM and SIGKILL. */
int64_t server_kill_grace_ns(void);
void server_free(server *s);

#endif
