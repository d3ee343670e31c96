/* health_check: asks a server's grpc.health.v1 Health/Check (service "")
 * on the event loop: connect to a numeric address, one call, close.
 *
 * Why: the pod cache may dial a function pod as soon as its wrapper server
 * answers SERVING, before the kubelet's exec readiness probe (every 10 s in
 * Porch's template) turns the pod Ready; lib/kube speaks no gRPC, so it
 * takes this as a hook (pod_cache_opts.health, health_check_hook). */
#ifndef KRM_HEALTH_CHECK_H
#define KRM_HEALTH_CHECK_H

#include <stdint.h>

#include "core/loop.h"
#include "kube/kube_pod_cache.h"

typedef struct health_check health_check;

/* serving: 1 for SERVING; else 0 and why says what was heard ("NOT_SERVING",
 * "failed to connect to ...", a gRPC status). Runs once, from the loop. */
typedef void health_done_fn(int serving, const char *why, void *ctx);

/* addr: numeric "IP:port" or "[v6]:port"; timeout_ns bounds the connect and
 * the call each. NULL when it could not start (bad address, out of memory):
 * done is then not called. */
health_check *health_check_start(loop *l, const char *addr, int64_t timeout_ns,
                                 health_done_fn *done, void *ctx);
/* Before done ran: done will not run. NULL is ignored. */
void health_check_cancel(health_check *h);

/* The two above as the pod cache's hook. */
extern const pod_health_hook health_check_hook;

#endif
