/* services: the gRPC methods our servers offer, for rpc_server_config's
 * method table. wrapper-server and `runner-client serve` both serve
 * EvaluateFunction (svc_evaluate.c), the health service (svc_health.c) and
 * server reflection, v1 and v1alpha (svc_reflection.c);
 * what differs is the evaluator behind EvaluateFunction, passed as the
 * server's app pointer. */
#ifndef KRM_SERVICES_H
#define KRM_SERVICES_H

#include "grpc/rpc.h"
#include "runtime/evaluator.h"

/* evaluator.FunctionEvaluator/EvaluateFunction; rpc_server_app() must be the
 * evaluator* that runs the functions. */
extern const rpc_method evaluate_method;
extern const rpc_method health_check_method;    /* grpc.health.v1.Health/Check */
extern const rpc_method health_list_method;     /* grpc.health.v1.Health/List */
extern const rpc_method health_watch_method;    /* grpc.health.v1.Health/Watch */

/* grpc.reflection.v1(alpha).ServerReflection/ServerReflectionInfo. */
extern const rpc_method reflection_v1_method;
extern const rpc_method reflection_v1alpha_method;

/* One reflection request message (msg, len) answered for a server routing
 * methods: GRPC_OK with the encoded ServerReflectionResponse appended to
 * out, or the status code that ends the stream with why (a request that is
 * not protobuf, or sets no request). For the stream handler, tests and
 * tests/fuzz. */
int reflection_answer(const rpc_method *const *methods, const uint8_t *msg, size_t len, buf *out,
                      buf *why);

/* The server cannot do its work (wrapper-server: its function cannot be
 * run): Check and Watch answer NOT_SERVING and /readyz 503 with the reason,
 * so the pod never turns Ready. NULL: serving. The text is copied. */
void health_set_not_serving(const char *reason);
/* The reason given, or NULL while serving (draining aside). */
const char *health_not_serving_reason(void);

#endif
