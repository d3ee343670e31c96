/* kube_lease: this runner replica's coordination.k8s.io/v1 Lease in the
 * pod namespace, which tells the other replicas it is alive (pod_owner).
 *
 * Named fn-runner-<holder>, labelled fn.kpt.dev/runner-lease=true (the
 * scan lists them), holderIdentity <holder>. Created at start (one that
 * exists, left by an earlier process of the same name, is taken over),
 * then its renewTime written every third of its duration by a merge patch,
 * from the loop timer: never a blocking call. A Lease deleted meanwhile is
 * created again. RBAC: leases create, patch and list. */
#ifndef KRM_KUBE_LEASE_H
#define KRM_KUBE_LEASE_H

#include <stdint.h>

#include "core/loop.h"
#include "kube/kube_pod_api.h"

#define KUBE_LEASE_PREFIX "fn-runner-"
#define KUBE_LEASE_DURATION_NS (15LL * 1000000000)   /* as leader election's default */

typedef struct kube_lease kube_lease;

/* Starts at once (from the loop l): its writes go through api (the
 * pod cache's table, kube_pod_api.h), its times by api's clocks; its
 * timers run on l. api, api_ctx, ns and holder outlive it. NULL: out of
 * memory. */
kube_lease *kube_lease_start(loop *l, const pod_api *api, void *api_ctx, const char *ns,
                             const char *holder, int64_t duration_ns);
/* Stops renewing and frees it; a write in flight is cancelled. The Lease
 * is left to expire: a process started again under the same name takes
 * it, and its pods, over. */
void kube_lease_stop(kube_lease *l);
/* Written within its duration (by api's now_ns): this replica's own
 * pods are still its own to delete. */
int kube_lease_held(const kube_lease *l);
int64_t kube_lease_duration_ns(const kube_lease *l);
/* Counters for /metrics: renewals written and refused. */
void kube_lease_counts(const kube_lease *l, uint64_t *renewed, uint64_t *failed);

#endif
