/* fn_server: the life of a server process that evaluates functions:
 * wrapper-server and `runner-client serve` differ only in the evaluator
 * behind EvaluateFunction and in what SIGHUP does.
 *
 * It becomes its functions' subreaper (orphans), listens, routes signals
 * (proc_signals), runs the loop until SIGTERM's drain completes, then
 * tears down in the order that matters: connections
 * and calls first (cancelling functions), then the evaluator, then whatever
 * function processes remain (killed and reaped). */
#ifndef KRM_FN_SERVER_H
#define KRM_FN_SERVER_H

#include "core/loop.h"
#include "grpc/rpc_server.h"
#include "runtime/evaluator.h"
#include "runtime/proc_signals.h"

/* --help lines of the load-limit flags both servers take (rpc_server_config's
 * max_* fields and send_stall_ns), so the two CLIs say the same. */
#define FN_SERVER_LIMIT_FLAGS_HELP \
    "  --stalled-send-timeout DUR   reset a response the client takes no byte of for\n" \
    "                               this long, close a connection that reads nothing\n" \
    "                               for this long (default 30s)\n" \
    "  --max-concurrent-functions N function processes running at once (default: twice\n" \
    "                               the CPUs, at least 4); further calls wait\n" \
    "  --max-waiting-calls N        calls that may wait for a function; more are refused\n" \
    "                               with RESOURCE_EXHAUSTED (default: 64 x the above,\n" \
    "                               at least 1024)\n" \
    "  --max-pending-request-bytes N\n" \
    "                               bytes of requests still arriving, all connections,\n" \
    "                               and (separately) of requests waiting for a function\n" \
    "                               (default: 16 x --max-request-body-size)\n" \
    "  --max-pending-request-bytes-per-connection N\n" \
    "                               the same for one connection (default: 4 x\n" \
    "                               --max-request-body-size); a request past either is\n" \
    "                               refused with RESOURCE_EXHAUSTED\n"

/* Serves EvaluateFunction (with ev, which it destroys) and grpc.health.v1
 * on cfg's port; cfg's methods and app are filled in here. on_hup may be
 * NULL. Errors before serving are printed to stderr after `who: `.
 * Returns the process exit code: 0 after a clean drain. */
int fn_server_run(loop *l, evaluator *ev, rpc_server_config cfg, proc_hup_fn *on_hup,
                  void *hup_ctx, const char *who);

#endif
