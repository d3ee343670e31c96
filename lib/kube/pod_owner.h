/* pod_owner: which function pods a runner replica may touch, when several
 * replicas share one namespace (nephio#1069). Pure: given the replicas'
 * Leases, the pods and the time, a verdict per pod, so that the rule is
 * tested on its own (the pod cache's scan applies it).
 *
 * Each replica holds a coordination.k8s.io/v1 Lease (holderIdentity: its
 * name) that it renews, and names itself on every pod and Service it makes
 * (annotation fn.kpt.dev/owner). A pod is
 *   MINE     owned by this replica: it may route to it, reclaim and delete it;
 *   LIVE     owned by another replica whose Lease is current: never touched;
 *   EXPIRED  owned by a replica whose Lease expired (renewTime +
 *            leaseDurationSeconds + a margin for clock skew is past), or
 *            that has no Lease and the pod is older than the grace (a
 *            replica creates its Lease as it starts, so a young pod's owner
 *            may not have one yet): this replica may claim it;
 *   NONE     without an owner (Porch's runner, or ours before 0.x): adopted
 *            on a call as before, never collected by a scan.
 * Before the Leases were ever listed every other owner counts as LIVE. */
#ifndef KRM_POD_OWNER_H
#define KRM_POD_OWNER_H

#include <stdint.h>

#define POD_OWNER_ANNOTATION "fn.kpt.dev/owner"
#define POD_LEASE_LABEL "fn.kpt.dev/runner-lease"   /* on our Leases (=true), to list them */
#define POD_LEASE_LABEL_QUERY "fn.kpt.dev%2Frunner-lease%3Dtrue"

typedef enum pod_owner_verdict {
    POD_OWNER_MINE,
    POD_OWNER_LIVE,
    POD_OWNER_EXPIRED,
    POD_OWNER_NONE,
} pod_owner_verdict;

typedef struct lease_view {
    const char *holder;        /* spec.holderIdentity */
    int64_t renew_us;          /* spec.renewTime, µs since the epoch (-1: none) */
    int64_t duration_s;        /* spec.leaseDurationSeconds */
} lease_view;

typedef struct pod_owner_facts {
    const char *me;            /* this replica's name */
    const lease_view *leases;
    int n_leases;
    int leases_known;          /* the Leases were listed at least once */
    int64_t now_us;            /* wall clock, µs since the epoch */
    int64_t margin_us;         /* past a Lease's expiry before its pods are claimed */
    int64_t grace_us;          /* a pod whose owner has no Lease: claimed once this old */
} pod_owner_facts;

/* owner: the pod's annotation (NULL or "": none); created_us: its
 * creationTimestamp (-1: unknown, counts as young). */
pod_owner_verdict pod_owner_judge(const pod_owner_facts *f, const char *owner, int64_t created_us);
const char *pod_owner_verdict_name(pod_owner_verdict v);

/* A function pod as the scan sees it (strings borrowed from the listing). */
typedef struct pod_owner_pod {
    const char *name;
    const char *pod_id;        /* label fn.kpt.dev/image: its Service's name */
    const char *owner;
    int terminating;           /* metadata.deletionTimestamp set */
} pod_owner_pod;

/* Whether the Service pod_id still selects a pod that is not being deleted
 * other than `except` (a pod name, or NULL): then deleting `except` must
 * leave the Service. */
int pod_owner_service_in_use(const pod_owner_pod *pods, int n, const char *pod_id,
                             const char *except);

/* An RFC 3339 UTC time as Kubernetes writes it ("2026-01-02T03:04:05Z",
 * "...05.123456Z"): µs since the epoch, or -1. */
int64_t rfc3339_us(const char *s);
/* The wall clock, µs since the epoch (what Leases and pods are stamped with). */
int64_t wall_clock_us(void);
/* The time as a Lease's MicroTime ("2026-01-02T03:04:05.123456Z"). */
#define RFC3339_MICRO_MAX 48
void rfc3339_micro(int64_t us, char out[RFC3339_MICRO_MAX]);

#endif
