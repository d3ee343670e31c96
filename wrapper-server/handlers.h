/* handlers: the methods the wrapper server serves (evaluate.c, health.c). */
#ifndef KRM_WS_HANDLERS_H
#define KRM_WS_HANDLERS_H

#include "evaluator.h"
#include "rpc.h"

extern const rpc_method evaluate_method;        /* evaluator.FunctionEvaluator/EvaluateFunction */
extern const rpc_method health_check_method;    /* grpc.health.v1.Health/Check */
extern const rpc_method health_list_method;     /* grpc.health.v1.Health/List */
extern const rpc_method health_watch_method;    /* grpc.health.v1.Health/Watch */

/* The evaluator EvaluateFunction calls use (set before serving). */
void evaluate_set_backend(evaluator *ev);

/* Draining began: Watch streams are told NOT_SERVING. */
void health_drain_started(void);
/* All work is done: end every Watch stream so connections can close. */
void health_end_watches(void);

#endif
