/* cli: parsing of the wrapper server's flags; see cli.h. */
#include "cli.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/numparse.h"
#include "runtime/fn_prespawn.h"
#include "runtime/fn_server.h"

static const char usage[] =
    "Usage: wrapper-server [flags] -- ENTRYPOINT [ARGS...]\n"
    "\n"
    "Serves evaluator.FunctionEvaluator/EvaluateFunction and grpc.health.v1.Health\n"
    "over gRPC (cleartext HTTP/2). Each call runs ENTRYPOINT with the request's\n"
    "ResourceList on stdin and answers with its stdout and stderr.\n"
    "\n"
    "Flags:\n"
    "  --port N                     TCP port to listen on (default 9446)\n"
    "  --address IP                 the address to listen on, e.g. 127.0.0.1 or ::1\n"
    "                               (default: all addresses)\n"
    "  --max-request-body-size N    largest gRPC message accepted or sent, in bytes\n"
    "                               (default 6291456)\n"
    "  --verbosity N, --log-level N log level: 2 normal, 3 details, 4 debugging (default 2)\n"
    "  --shutdown-grace DUR         on SIGTERM, how long in-flight calls may run before\n"
    "                               their functions are killed (default 10s)\n"
    "  --max-concurrent-streams N   concurrent calls per connection (default 1000)\n"
    "  --idle-timeout DUR           close connections that had no call for this long;\n"
    "                               0 never (default 5m)\n"
    FN_SERVER_LIMIT_FLAGS_HELP
    "  --prespawn N                 function processes kept started and waiting for a\n"
    "                               call, 0-64; 0 starts each on its call (default 1)\n"
    "  -h, --help                   show this help\n"
    "      --version                show the version\n";

static int bad_value(buf *text, const char *flag, const char *value, const char *want)
{
    buf_printf(text, "wrapper-server: invalid value \"%s\" for %s: want %s", value, flag, want);
    return -1;
}

/* Applies one flag. Returns 0, or -1 with the reason in text. */
static int apply_flag(ws_config *cfg, const char *name, const char *value, buf *text)
{
    unsigned long long v;
    if (!strcmp(name, "--port")) {
        if (parse_uint(value, 65535, &v) < 0)
            return bad_value(text, name, value, "a port number 0-65535");
        cfg->port = (int)v;
    } else if (!strcmp(name, "--max-request-body-size")) {
        if (parse_uint(value, 2147483647ULL, &v) < 0 || v == 0)
            return bad_value(text, name, value, "a size in bytes, 1-2147483647");
        cfg->max_message = (uint32_t)v;
    } else if (!strcmp(name, "--address")) {
        buf why = {0};
        int bad = rpc_server_address_check(value, &why) < 0;
        if (bad)
            buf_printf(text, "wrapper-server: %s", why.data ? why.data : "out of memory");
        buf_free(&why);
        if (bad)
            return -1;
        cfg->address = value;
    } else if (!strcmp(name, "--verbosity") || !strcmp(name, "--log-level")) {
        if (parse_uint(value, 10, &v) < 0)
            return bad_value(text, name, value, "a level 0-10");
        cfg->verbosity = (int)v;
    } else if (!strcmp(name, "--shutdown-grace")) {
        int64_t ns;
        if (duration_parse(value, &ns) < 0)
            return bad_value(text, name, value, "a duration such as 10s or 500ms");
        cfg->shutdown_grace_ns = ns;
    } else if (!strcmp(name, "--stalled-send-timeout")) {
        int64_t ns;
        if (duration_parse(value, &ns) < 0 || ns <= 0)
            return bad_value(text, name, value, "a duration such as 30s");
        cfg->send_stall_ns = ns;
    } else if (!strcmp(name, "--idle-timeout")) {
        int64_t ns;
        if (duration_parse(value, &ns) < 0)
            return bad_value(text, name, value, "a duration such as 5m, or 0 for never");
        cfg->idle_timeout_ns = ns;
    } else if (!strcmp(name, "--max-concurrent-streams")) {
        if (parse_uint(value, 100000, &v) < 0 || v == 0)
            return bad_value(text, name, value, "a count 1-100000");
        cfg->max_streams = (uint32_t)v;
    } else if (!strcmp(name, "--max-concurrent-functions")) {
        if (parse_uint(value, 100000, &v) < 0 || v == 0)
            return bad_value(text, name, value, "a count 1-100000");
        cfg->max_functions = (size_t)v;
    } else if (!strcmp(name, "--prespawn")) {
        if (parse_uint(value, FN_PRESPAWN_MAX, &v) < 0)
            return bad_value(text, name, value, "a count 0-64");
        cfg->prespawn = (size_t)v;
    } else if (!strcmp(name, "--max-waiting-calls")) {
        if (parse_uint(value, 1000000, &v) < 0)
            return bad_value(text, name, value, "a count 0-1000000");
        cfg->max_waiting = (size_t)v;
    } else if (!strcmp(name, "--max-pending-request-bytes")) {
        if (parse_uint(value, SIZE_MAX, &v) < 0 || v == 0)
            return bad_value(text, name, value, "a size in bytes, at least 1");
        cfg->max_pending_bytes = (size_t)v;
    } else if (!strcmp(name, "--max-pending-request-bytes-per-connection")) {
        if (parse_uint(value, SIZE_MAX, &v) < 0 || v == 0)
            return bad_value(text, name, value, "a size in bytes, at least 1");
        cfg->max_pending_conn_bytes = (size_t)v;
    } else {
        buf_printf(text, "wrapper-server: unknown flag %s (see --help)", name);
        return -1;
    }
    return 0;
}

static int is_known_flag(const char *name)
{
    static const char *const known[] = {
        "--port", "--address", "--max-request-body-size", "--verbosity", "--log-level",
        "--shutdown-grace",
        "--max-concurrent-streams", "--idle-timeout", "--stalled-send-timeout",
        "--max-concurrent-functions", "--prespawn",
        "--max-waiting-calls", "--max-pending-request-bytes",
        "--max-pending-request-bytes-per-connection"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(name, known[i]))
            return 1;
    return 0;
}

/* "-port" (one dash) is named with the flag it looks like. */
static enum ws_cli_result unknown_flag(const char *arg, buf *text)
{
    const char *eq = strchr(arg, '=');
    int len = eq ? (int)(eq - arg) : (int)strlen(arg);
    char twin[64];
    snprintf(twin, sizeof twin, "-%.*s", len, arg);
    if (arg[1] != '-' && is_known_flag(twin))
        buf_printf(text, "wrapper-server: unknown flag %.*s: flags take two dashes (%s)", len, arg,
                   twin);
    else
        buf_printf(text, "wrapper-server: unknown flag %.*s (see --help)", len, arg);
    return WS_CLI_ERROR;
}

enum ws_cli_result ws_cli_parse(int argc, char **argv, ws_config *cfg, buf *text)
{
    *cfg = (ws_config){
        .port = 9446,
        .max_message = 6291456,
        .verbosity = 2,
        .shutdown_grace_ns = 10LL * 1000000000,
        .max_streams = 1000,
        .idle_timeout_ns = 5LL * 60 * 1000000000,
        .max_waiting = RPC_LIMIT_DEFAULT,
        .prespawn = 1,
    };
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            cfg->entrypoint = &argv[i + 1];
            return WS_CLI_RUN;
        }
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            buf_append_str(text, usage);
            return WS_CLI_EXIT;
        }
        if (!strcmp(arg, "--version")) {
            buf_append_str(text, "wrapper-server " WS_VERSION "\n");
            return WS_CLI_EXIT;
        }
        if (arg[0] == '-' && arg[1] != '-') {
            /* -port 9446: a flag with one dash (Go's flag package takes them;
             * Porch's cobra does not) */
            return unknown_flag(arg, text);
        }
        if (strncmp(arg, "--", 2) != 0) {
            buf_printf(text, "wrapper-server: unexpected argument \"%s\": the function's "
                       "command goes after \"--\"", arg);
            return WS_CLI_ERROR;
        }
        const char *eq = strchr(arg, '=');
        char name[64];
        const char *value;
        if (eq) {
            size_t n = (size_t)(eq - arg);
            if (n >= sizeof name)
                n = sizeof name - 1;
            memcpy(name, arg, n);
            name[n] = '\0';
            value = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", arg);
            if (!is_known_flag(name))
                return unknown_flag(name, text);
            if (i + 1 >= argc || !strcmp(argv[i + 1], "--")) {
                buf_printf(text, "wrapper-server: flag %s needs a value", name);
                return WS_CLI_ERROR;
            }
            value = argv[++i];
        }
        if (apply_flag(cfg, name, value, text) < 0)
            return WS_CLI_ERROR;
    }
    buf_append_str(text, "wrapper-server: missing \"--\" followed by the function's "
                         "entrypoint, e.g. wrapper-server --port 9446 -- /fn");
    return WS_CLI_ERROR;
}
