/* svc_health: grpc.health.v1.Health (Check, List, Watch).
 *
 * Follows the health checking spec rather than Porch's shortcut: the whole
 * server ("") and each service served are known names; other names are
 * NOT_FOUND for Check and SERVICE_UNKNOWN for Watch. Everything is SERVING
 * until the server starts draining, then NOT_SERVING, so readiness drops at
 * once; a server that cannot do its work at all (a function that cannot be
 * run) is NOT_SERVING from the start (health_set_not_serving). Watch
 * streams stay open and hear about the drain (the transport's drain hook);
 * the transport ends them (UNAVAILABLE) when the last in-flight call is
 * done. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_status.h"
#include "grpc/rpc_server.h"
#include "runtime/services.h"
#include "health.pb-c.h"

static const char *const known_services[] = {
    "",
    "evaluator.FunctionEvaluator",
    "grpc.health.v1.Health",
};
#define N_SERVICES (sizeof known_services / sizeof known_services[0])

typedef Grpc__Health__V1__HealthCheckResponse__ServingStatus serving_status;

typedef struct health_state {
    buf reply;              /* encoded response, borrowed by the transport */
    int known;              /* Watch: the service name is known */
} health_state;

static char not_serving[512];   /* why the server cannot serve; "": it can */

static int is_known(const char *name)
{
    for (size_t i = 0; i < N_SERVICES; i++)
        if (!strcmp(name, known_services[i]))
            return 1;
    return 0;
}

static serving_status current_status(const rpc_call *c)
{
    return rpc_server_is_draining(c->srv) || not_serving[0]
                    ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING
                    : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING;
}

static int encode_status(serving_status status, buf *out)
{
    Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    resp.status = status;
    size_t n = grpc__health__v1__health_check_response__get_packed_size(&resp);
    if (buf_reserve(out, n) < 0)
        return -1;
    out->len = grpc__health__v1__health_check_response__pack(&resp, (uint8_t *)out->data);
    return 0;
}

static health_state *state_for(rpc_call *c)
{
    health_state *st = calloc(1, sizeof *st);
    if (!st) {
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return NULL;
    }
    c->state = st;
    return st;
}

static Grpc__Health__V1__HealthCheckRequest *decode_request(rpc_call *c, const uint8_t *msg,
                                                            size_t len)
{
    Grpc__Health__V1__HealthCheckRequest *req =
        grpc__health__v1__health_check_request__unpack(NULL, len, msg);
    if (!req)
        rpc_fail(c, GRPC_INTERNAL,
                 "grpc: error unmarshalling request: the HealthCheckRequest is not valid protobuf");
    return req;
}

static void check_handle(rpc_call *c, const uint8_t *msg, size_t len)
{
    Grpc__Health__V1__HealthCheckRequest *req = decode_request(c, msg, len);
    if (!req)
        return;
    health_state *st = is_known(req->service) ? state_for(c) : NULL;
    if (!is_known(req->service))
        rpc_fail(c, GRPC_NOT_FOUND, "unknown service");
    grpc__health__v1__health_check_request__free_unpacked(req, NULL);
    if (!st)
        return;
    if (encode_status(current_status(c), &st->reply) < 0) {
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    rpc_segment seg = {st->reply.data, st->reply.len};
    rpc_reply(c, &seg, 1);
}

static void list_handle(rpc_call *c, const uint8_t *msg, size_t len)
{
    Grpc__Health__V1__HealthListRequest *req =
        grpc__health__v1__health_list_request__unpack(NULL, len, msg);
    if (!req) {
        rpc_fail(c, GRPC_INTERNAL,
                 "grpc: error unmarshalling request: the HealthListRequest is not valid protobuf");
        return;
    }
    grpc__health__v1__health_list_request__free_unpacked(req, NULL);
    health_state *st = state_for(c);
    if (!st)
        return;
    Grpc__Health__V1__HealthCheckResponse values[N_SERVICES];
    Grpc__Health__V1__HealthListResponse__StatusesEntry entries[N_SERVICES];
    Grpc__Health__V1__HealthListResponse__StatusesEntry *entry_ptrs[N_SERVICES];
    for (size_t i = 0; i < N_SERVICES; i++) {
        grpc__health__v1__health_check_response__init(&values[i]);
        values[i].status = current_status(c);
        grpc__health__v1__health_list_response__statuses_entry__init(&entries[i]);
        entries[i].key = (char *)known_services[i];
        entries[i].value = &values[i];
        entry_ptrs[i] = &entries[i];
    }
    Grpc__Health__V1__HealthListResponse resp = GRPC__HEALTH__V1__HEALTH_LIST_RESPONSE__INIT;
    resp.n_statuses = N_SERVICES;
    resp.statuses = entry_ptrs;
    size_t n = grpc__health__v1__health_list_response__get_packed_size(&resp);
    if (buf_reserve(&st->reply, n) < 0) {
        rpc_fail(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    st->reply.len = grpc__health__v1__health_list_response__pack(&resp, (uint8_t *)st->reply.data);
    rpc_segment seg = {st->reply.data, st->reply.len};
    rpc_reply(c, &seg, 1);
}

static void watch_send(rpc_call *c)
{
    health_state *st = c->state;
    serving_status status =
        st->known ? current_status(c)
                  : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
    buf_reset(&st->reply);
    if (encode_status(status, &st->reply) == 0)
        rpc_send(c, st->reply.data, st->reply.len);   /* copied by the transport */
}

/* The server began draining: a Watch of a known name hears NOT_SERVING. */
static void watch_drain(rpc_call *c)
{
    health_state *st = c->state;
    if (st && st->known)
        watch_send(c);
}

static void watch_handle(rpc_call *c, const uint8_t *msg, size_t len)
{
    Grpc__Health__V1__HealthCheckRequest *req = decode_request(c, msg, len);
    if (!req)
        return;
    health_state *st = state_for(c);
    if (st)
        st->known = is_known(req->service);
    grpc__health__v1__health_check_request__free_unpacked(req, NULL);
    if (st)
        watch_send(c);
}

static void health_end(rpc_call *c, int finished)
{
    (void)finished;
    health_state *st = c->state;
    if (!st)
        return;
    buf_free(&st->reply);
    free(st);
    c->state = NULL;
}

void health_set_not_serving(const char *reason)
{
    snprintf(not_serving, sizeof not_serving, "%s", reason ? reason : "");
}

const char *health_not_serving_reason(void)
{
    return not_serving[0] ? not_serving : NULL;
}

const rpc_method health_check_method = {
    .service = "grpc.health.v1.Health", .name = "Check",
    .handle = check_handle, .end = health_end,
};
const rpc_method health_list_method = {
    .service = "grpc.health.v1.Health", .name = "List",
    .handle = list_handle, .end = health_end,
};
const rpc_method health_watch_method = {
    .service = "grpc.health.v1.Health", .name = "Watch", .server_streaming = 1,
    .handle = watch_handle, .drain = watch_drain, .end = health_end,
};
