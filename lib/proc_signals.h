/* proc_signals: a server process's signals, routed through a signalfd into
 * the event loop, as tini does for a container's PID 1.
 *
 *   SIGCHLD          reap every exited child (fn_job_reap), orphans included
 *   SIGTERM, SIGINT  drain the server (a second one stops it at once)
 *   SIGHUP           the on_hup callback, when one is given (config reload);
 *                    otherwise left alone
 * SIGPIPE is ignored: a client or a function closing its end is an ordinary
 * event, seen as EPIPE. The handled signals are blocked so they queue on the
 * signalfd; fn_job gives children a clean mask back. */
#ifndef KRM_PROC_SIGNALS_H
#define KRM_PROC_SIGNALS_H

#include "loop.h"
#include "rpc_server.h"

typedef struct proc_signals proc_signals;
typedef void proc_hup_fn(void *ctx);

/* Returns NULL after logging why (errno in the message). */
proc_signals *proc_signals_open(loop *l, server *srv, proc_hup_fn *on_hup, void *ctx);
void proc_signals_close(proc_signals *ps);

#endif
