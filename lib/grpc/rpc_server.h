/* rpc_server: the gRPC transport shared by wrapper-server and
 * `runner-client serve` (listener, HTTP/2 connections, routing to the
 * methods given, draining). See rpc_server.c (rpc_conn.c, rpc_call.c). */
#ifndef KRM_RPC_SERVER_H
#define KRM_RPC_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"
#include "grpc/rpc.h"
#include "grpc/rpc_server_config.h"

/* Fills the pending-request budgets left at 0 with their defaults (4 and 16
 * times max_message) and checks that the limits fit together (each budget
 * holds one message, the total holds a connection's). 0, or -1 with why,
 * naming the flags. */
int rpc_server_config_fill(rpc_server_config *cfg, buf *why);

/* Copies cfg (the methods array must outlive the server). */
server *rpc_server_new(loop *l, const rpc_server_config *cfg);
/* Bind address:port (all addresses: [::], or 0.0.0.0 without IPv6) and
 * start accepting. On failure err says "cannot listen on ADDRESS:PORT: why". */
int rpc_server_listen(server *s, buf *err);
int rpc_server_port(const server *s);
/* Checks an --address value: an IPv4 or IPv6 address ("" is all of them).
 * 0, or -1 with why in err. */
int rpc_server_address_check(const char *address, buf *err);
/* First call: graceful drain; second call: stop at once. The loop stops
 * when the drain completes. */
void rpc_server_drain(server *s);
/* How long cancelled functions get between SIGTERM and SIGKILL. */
int64_t rpc_server_kill_grace_ns(void);
void rpc_server_free(server *s);

#endif
