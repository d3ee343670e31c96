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

/* Serves EvaluateFunction (with ev, which it destroys) and grpc.health.v1
 * on cfg's port; cfg's methods and app are filled in here. on_hup may be
 * NULL. Errors before serving are printed to stderr after `who: `.
 * Returns the process exit code: 0 after a clean drain. */
int fn_server_run(loop *l, evaluator *ev, rpc_server_config cfg, proc_hup_fn *on_hup,
                  void *hup_ctx, const char *who);

#endif
