/* wrapper-server: runs a KRM function per gRPC call; the entrypoint of a
 * function container (see README.md).
 *
 * This file does the process-level work, as tini does for a container's
 * PID 1: parse the command line, route signals through a signalfd into the
 * event loop, reap every child (orphans included), and on SIGTERM/SIGINT
 * drain the server before exiting 0. */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/loop.h"
#include "grpc/health_probe.h"
#include "runtime/ev_exec.h"
#include "runtime/fn_job.h"
#include "runtime/fn_prespawn.h"
#include "runtime/fn_server.h"
#include "runtime/services.h"
#include "cli.h"

static int run(const ws_config *cfg)
{
    rpc_server_config scfg = {
        .port = cfg->port,
        .address = cfg->address,
        .max_message = cfg->max_message,
        .max_streams = cfg->max_streams,
        .idle_timeout_ns = cfg->idle_timeout_ns,
        .shutdown_grace_ns = cfg->shutdown_grace_ns,
        .send_stall_ns = cfg->send_stall_ns,
        .max_pending_bytes = cfg->max_pending_bytes,
        .max_pending_conn_bytes = cfg->max_pending_conn_bytes,
        .max_functions = cfg->max_functions,
        .max_waiting = cfg->max_waiting,
    };
    buf why = {0};
    if (rpc_server_config_fill(&scfg, &why) < 0) {   /* a usage error: before anything starts */
        fprintf(stderr, "wrapper-server: %s\n", why.data);
        buf_free(&why);
        return 2;
    }
    loop *l = loop_new();
    ev_exec_config exec = {
        .loop = l,
        .max_stdout = cfg->max_message,
        .max_stderr = EV_EXEC_MAX_STDERR,
        .kill_grace_ns = rpc_server_kill_grace_ns(),
        .argv = cfg->entrypoint,
    };
    evaluator *ev = l ? ev_exec_new(&exec) : NULL;
    if (!ev) {
        fprintf(stderr, "wrapper-server: out of memory\n");
        loop_free(l);
        return 1;
    }
    /* A function that cannot run makes a server that cannot serve: say so
     * at start and in health (NOT_SERVING, /readyz 503), so its pod never
     * turns Ready and whoever waits for it sees why, instead of SERVING and
     * failing every call (Porch's server; calls still fail as there). */
    buf cannot = {0};
    if (!cfg->entrypoint[0])
        buf_append_str(&cannot, "no function entrypoint after \"--\" (the image has neither "
                                "Entrypoint nor Cmd)");
    else
        fn_job_can_run(cfg->entrypoint[0], &cannot);
    if (cannot.len) {
        log_error("the function cannot be run: %s; every EvaluateFunction call will fail, and "
                  "health is NOT_SERVING", cannot.data);
        health_set_not_serving(cannot.data);
    } else {
        /* started from the loop once it runs (none if it cannot run) */
        fn_prespawn_configure(l, cfg->entrypoint, cfg->prespawn);
    }
    buf_free(&cannot);
    int rc = fn_server_run(l, ev, scfg, NULL, NULL, "wrapper-server");
    loop_free(l);
    if (rc == 0)
        log_info("Server stopped");
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 0 && probe_invoked_as(argv[0]))
        return probe_main("wrapper-server", argc, argv);
    if (argc > 1 && !strcmp(argv[1], "probe"))
        return probe_main("wrapper-server", argc - 1, argv + 1);
    ws_config cfg;
    buf text = {0};
    enum ws_cli_result r = ws_cli_parse(argc, argv, &cfg, &text);
    if (r != WS_CLI_RUN) {
        fprintf(r == WS_CLI_EXIT ? stdout : stderr, "%s%s", text.data,
                r == WS_CLI_EXIT ? "" : "\n");
        buf_free(&text);
        return r == WS_CLI_EXIT ? 0 : 2;
    }
    buf_free(&text);
    log_verbosity = cfg.verbosity;
    return run(&cfg);
}
