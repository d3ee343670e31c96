/* fn_server: set-up, loop and teardown of a function server; see fn_server.h. */
#include "fn_server.h"

#include <stdio.h>

#include "fn_job.h"
#include "orphans.h"
#include "services.h"

int fn_server_run(loop *l, evaluator *ev, rpc_server_config cfg, proc_hup_fn *on_hup,
                  void *hup_ctx, const char *who)
{
    static const rpc_method *const methods[] = {
        &evaluate_method, &health_check_method, &health_list_method, &health_watch_method, NULL,
    };
    cfg.methods = methods;
    cfg.app = ev;
    buf_spares_enable(2);   /* a big call's request and output buffers */
    /* Orphans of functions become our children (reaped, and killed when no
     * call can own them) even when we are not PID 1. */
    orphans_adopt();
    server *srv = server_new(l, &cfg);
    proc_signals *sig = srv ? proc_signals_open(l, srv, on_hup, hup_ctx) : NULL;
    buf err = {0};
    int rc = 1;
    if (!sig)
        goto out;
    if (server_listen(srv, &err) < 0) {
        fprintf(stderr, "%s: %s\n", who, err.data);
        goto out;
    }
    rc = loop_run(l) < 0 ? 1 : 0;
out:
    server_free(srv);
    ev_destroy(ev);
    fn_job_shutdown();
    proc_signals_close(sig);
    buf_free(&err);
    buf_spares_release();
    return rc;
}
