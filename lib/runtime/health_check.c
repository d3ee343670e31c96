/* health_check: one Health/Check on the loop; see health_check.h.
 *
 * connect (gc_connect_start) -> Check on the new connection -> the answer
 * is kept and delivered from a zero timer, where the connection can be
 * closed (not inside the client's own callback). */
#include "runtime/health_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"
#include "health.pb-c.h"

#define CHECK_PATH "/grpc.health.v1.Health/Check"
#define CHECK_MAX_MESSAGE 4096

struct health_check {
    loop *l;
    int64_t timeout_ns;
    gc_dialing *dialing;
    gc_conn *conn;
    gc_stream *call;
    loop_defer report;         /* the answer, from the loop */
    health_done_fn *done;
    void *ctx;
    int serving;
    char why[300];
};

static void check_free(health_check *h)
{
    gc_connect_cancel(h->dialing);
    gc_call_cancel(h->call);
    gc_close(h->conn);
    loop_defer_cancel(&h->report);
    free(h);
}

static void report_now(loop *l, void *ctx)
{
    (void)l;
    health_check *h = ctx;
    health_done_fn *done = h->done;
    void *dctx = h->ctx;
    int serving = h->serving;
    char why[sizeof h->why];
    memcpy(why, h->why, sizeof why);
    check_free(h);
    done(serving, why, dctx);
}

static void report(health_check *h)
{
    /* not now: this may run inside the client's callback, where h and its
     * connection cannot go */
    loop_defer_post(h->l, &h->report);
}

static void on_check(const gc_result *r, void *ctx)
{
    health_check *h = ctx;
    h->call = NULL;
    if (r->status != GRPC_OK) {
        snprintf(h->why, sizeof h->why, "health check: %s: %s", grpc_code_name(r->status), r->message);
    } else {
        Grpc__Health__V1__HealthCheckResponse *resp =
            grpc__health__v1__health_check_response__unpack(NULL, r->response_len, r->response);
        if (!resp) {
            snprintf(h->why, sizeof h->why, "health check: the answer is not a HealthCheckResponse");
        } else {
            h->serving = resp->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
            const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
                &grpc__health__v1__health_check_response__serving_status__descriptor, resp->status);
            snprintf(h->why, sizeof h->why, "health %s", v ? v->name : "unknown status");
            grpc__health__v1__health_check_response__free_unpacked(resp, NULL);
        }
    }
    report(h);
}

static void on_connected(gc_conn *conn, const char *error, void *ctx)
{
    health_check *h = ctx;
    h->dialing = NULL;
    h->conn = conn;
    if (!conn) {
        snprintf(h->why, sizeof h->why, "%s", error);
        report(h);
        return;
    }
    /* an empty HealthCheckRequest: the whole server */
    if (!(h->call = gc_call_start(conn, CHECK_PATH, "", 0, h->timeout_ns, on_check, h))) {
        snprintf(h->why, sizeof h->why, "health check: cannot start the call");
        report(h);
    }
}

health_check *health_check_start(loop *l, const char *addr, int64_t timeout_ns,
                                 health_done_fn *done, void *ctx)
{
    health_check *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    *h = (health_check){.l = l, .timeout_ns = timeout_ns, .done = done, .ctx = ctx};
    loop_defer_init(&h->report, report_now, h);
    buf err = {0};
    h->dialing = gc_connect_start(l, addr, timeout_ns, CHECK_MAX_MESSAGE, on_connected, h, &err);
    buf_free(&err);
    if (!h->dialing) {
        free(h);
        return NULL;
    }
    return h;
}

void health_check_cancel(health_check *h)
{
    if (h)
        check_free(h);
}

static void *hook_start(loop *l, const char *addr, int64_t timeout_ns, pod_health_done_fn *done,
                        void *ctx)
{
    return health_check_start(l, addr, timeout_ns, done, ctx);
}

static void hook_cancel(void *op)
{
    health_check_cancel(op);
}

const pod_health_hook health_check_hook = {hook_start, hook_cancel};
