/* ev_pod: the pod evaluator. Runs an image in its function pod on a
 * cluster (kube/kube_pod_cache finds or creates it) and calls the pod's
 * wrapper server's EvaluateFunction with the image and the ResourceList,
 * on the loop: the pod wait, the connect and the call never block it.
 *
 * One HTTP/2 connection per pod, shared by every call to it (streams),
 * kept while the pod stays in the cache; see ev_pod.c for its life.
 *
 * Errors: a pod that cannot be had (API errors, the kubelet's reason)
 * answers UNAVAILABLE with the cache's message. A call that a pod ends
 * without the function's answer (UNAVAILABLE, a connection that broke or
 * could not be made) is sent again, up to max_retries, to the pod the
 * cache gives after checking the failing one (pod_cache_retry: another pod
 * of the image where there is or may be one); after the last, the pod is
 * dropped from the cache and the call answers UNAVAILABLE. The wrapper
 * server's own status otherwise passes through, and an answered call is
 * never sent again.
 * Needs libcurl through lib/kube: runner-client only, never in the static
 * wrapper server (the Makefile filters it). */
#ifndef KRM_EV_POD_H
#define KRM_EV_POD_H

#include <stdint.h>

#include "kube/kube_pod_cache.h"
#include "oci/registry.h"
#include "runtime/evaluator.h"

typedef struct ev_pod_opts {
    int64_t connect_timeout_ns;   /* <= 0: 10 s */
    int64_t call_timeout_ns;      /* <= 0: none */
    uint32_t max_message;         /* largest answer accepted; 0: 6 MiB */
    int max_retries;              /* a call sent again after UNAVAILABLE or a broken
                                     connection, at most this often (serve's
                                     --max-grpc-retries); each waits for the cache's
                                     check of the pod that failed it */
    /* A request's Tag that is a semver constraint is resolved against the
     * repository's tags, listed with these (kpt's rule: the highest match);
     * NULL: such a Tag is refused UNIMPLEMENTED. Both must outlive the
     * evaluator. */
    http_multi *tags_multi;
    const registry_opts *tags_registry;
} ev_pod_opts;

#define EV_POD_DEFAULT_RETRIES 2   /* Porch's --max-grpc-retries */

/* The cache must outlive the evaluator. NULL when out of memory (or the
 * cache has POD_DROP_HOOKS evaluators already). */
evaluator *ev_pod_new(loop *l, pod_cache *pc, const ev_pod_opts *o);

/* The pod the last finished call of this evaluator went to (for the CLI's
 * report), or NULL: name, UID, address. */
typedef struct ev_pod_last {
    char pod[254];
    char uid[64];
    char addr[300];
    int created;
    int ready;                    /* Ready; 0: dialed on its wrapper's health before */
    int64_t pod_wait_ns;          /* the cache's wait for the pod */
} ev_pod_last;
const ev_pod_last *ev_pod_last_call(evaluator *e);

#endif
