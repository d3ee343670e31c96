/* cli: the wrapper server's command line, compatible with Porch's:
 *
 *   wrapper-server [--port 9446] [--address IP] [--max-request-body-size 6291456]
 *                  [--verbosity 2 | --log-level 2] [--shutdown-grace 10s]
 *                  [--max-concurrent-streams 1000] [--idle-timeout 5m]
 *                  -- ENTRYPOINT [ARGS...]
 *
 * Flags take "--flag value" or "--flag=value". Everything after "--" is the
 * function to run; "--" with nothing after it is allowed (an image with
 * neither Entrypoint nor Cmd) and makes every call fail clearly. */
#ifndef KRM_WS_CLI_H
#define KRM_WS_CLI_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "grpc/rpc_server.h"

#define WS_VERSION "0.1.0"

typedef struct ws_config {
    int port;
    const char *address;         /* --address; NULL: all addresses */
    uint32_t max_message;        /* --max-request-body-size: both directions */
    int verbosity;
    int64_t shutdown_grace_ns;
    uint32_t max_streams;        /* per connection */
    int64_t idle_timeout_ns;     /* close connections without calls; 0: never */
    int64_t send_stall_ns;       /* 0: the server's default */
    /* Load limits; 0 (max_waiting: RPC_LIMIT_DEFAULT) until fn_server_run
     * fills in the defaults. */
    size_t max_functions;        /* function processes at once */
    size_t prespawn;             /* function processes started ahead (fn_prespawn.h) */
    size_t max_waiting;          /* calls waiting for one */
    size_t max_pending_bytes;    /* unfinished requests' bytes, all connections */
    size_t max_pending_conn_bytes; /* ... one connection */
    char **entrypoint;           /* NULL-terminated; entrypoint[0] NULL when empty */
} ws_config;

enum ws_cli_result {
    WS_CLI_RUN,     /* start the server */
    WS_CLI_EXIT,    /* --help or --version: print `text` to stdout, exit 0 */
    WS_CLI_ERROR,   /* print `text` (one line) to stderr, exit 2 */
};

/* Parses argv; cfg->entrypoint points into argv. */
enum ws_cli_result ws_cli_parse(int argc, char **argv, ws_config *cfg, buf *text);

#endif
