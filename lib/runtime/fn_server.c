/* fn_server: set-up, loop and teardown of a function server; see fn_server.h. */
#include "runtime/fn_server.h"

#include <stdio.h>

#include "core/log.h"
#include "grpc/metrics.h"
#include "runtime/fn_job.h"
#include "runtime/fn_prespawn.h"
#include "runtime/fn_slots.h"
#include "runtime/orphans.h"
#include "runtime/services.h"

/* The function limits left to their defaults (from the CPUs); the
 * transport's own (rpc_server_config_fill) are checked by the caller. */
static void fn_server_limits(rpc_server_config *cfg)
{
    if (!cfg->max_functions)
        cfg->max_functions = fn_slots_default_running();
    if (cfg->max_waiting == RPC_LIMIT_DEFAULT)
        cfg->max_waiting = fn_slots_default_waiting(cfg->max_functions);
}

/* SIGTERM's drain began: pre-started functions no call will take go first.
 * (The transport tells health's Watch streams and ends them, and
 * reflection's, once no call is left.) */
static void fn_server_drain(void *ctx)
{
    (void)ctx;
    fn_prespawn_stop();
}

/* Descriptors may be back (the listener resumed after EMFILE): a pool of
 * pre-started functions left short by the same shortage refills now,
 * not at the next call, which would pay a full spawn. */
static void fn_server_accept_resumed(void *app)
{
    (void)app;
    fn_prespawn_retry();
}

static const char *fn_server_not_ready(void *app)
{
    (void)app;
    return health_not_serving_reason();
}

int fn_server_run(loop *l, evaluator *ev, rpc_server_config cfg, proc_hup_fn *on_hup,
                  void *hup_ctx, const char *who)
{
    static const rpc_method *const methods[] = {
        &evaluate_method,          &health_check_method,       &health_list_method,
        &health_watch_method,      &reflection_v1_method,      &reflection_v1alpha_method,
        NULL,
    };
    cfg.methods = methods;
    cfg.app = ev;
    cfg.on_drain = fn_server_drain;
    cfg.not_ready = fn_server_not_ready;
    cfg.on_accept_resumed = fn_server_accept_resumed;
    metrics_gauge("krm_function_processes", "", "Function processes not yet reaped (pre-started ones waiting included).",
                  fn_job_live_count);
    metrics_gauge("krm_function_calls_waiting", "",
                  "Calls waiting for a function slot (--max-concurrent-functions).",
                  fn_slots_waiting);
    metrics_gauge("krm_prespawn_waiting", "",
                  "Function processes started ahead, waiting for a call (--prespawn).",
                  fn_prespawn_waiting);
    metrics_gauge("krm_prespawn_disabled", "",
                  "1 once pre-started functions kept exiting before their call and "
                  "prespawning turned itself off.", fn_prespawn_disabled);
    buf err = {0};
    if (rpc_server_config_fill(&cfg, &err) < 0) {   /* the CLIs checked already */
        fprintf(stderr, "%s: %s\n", who, err.data);
        buf_free(&err);
        ev_destroy(ev);
        return 2;
    }
    fn_server_limits(&cfg);
    log_v(3, "limits: %zu functions at once, %zu calls waiting; %zu bytes of unfinished requests "
          "per connection, %zu in all", cfg.max_functions, cfg.max_waiting,
          cfg.max_pending_conn_bytes, cfg.max_pending_bytes);
    buf_spares_enable(2);   /* a big call's request and output buffers */
    /* requests waiting for a function are bounded like those still arriving */
    fn_slots_configure(l, cfg.max_functions, cfg.max_waiting, cfg.max_pending_bytes);
    /* Orphans of functions become our children (reaped, and killed when no
     * call can own them) even when we are not PID 1. */
    orphans_adopt();
    server *srv = rpc_server_new(l, &cfg);
    proc_signals *sig = srv ? proc_signals_open(l, srv, on_hup, hup_ctx) : NULL;
    int rc = 1;
    if (!sig)
        goto out;
    if (rpc_server_listen(srv, &err) < 0) {
        fprintf(stderr, "%s: %s\n", who, err.data);
        goto out;
    }
    rc = loop_run(l) < 0 ? 1 : 0;
out:
    rpc_server_free(srv);
    ev_destroy(ev);
    fn_prespawn_stop();   /* its table points at jobs fn_job_shutdown frees */
    fn_job_shutdown();
    proc_signals_close(sig);
    buf_free(&err);
    buf_spares_release();
    return rc;
}
