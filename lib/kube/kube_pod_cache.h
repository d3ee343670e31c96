/* kube_pod_cache: each function image's pod on a cluster, found or created,
 * watched to Ready, and the address to dial it; kept for the next call.
 *
 * For an image: its digest and entrypoint from the registry (lib/oci, on
 * the loop through the API client's curl driver: no thread); podId from them (pod_id, postfix 1); the
 * function pods labelled fn.kpt.dev/image=<podId> listed: a pod that is
 * not being deleted is adopted, else the Service and the Pod are created
 * from pod_template (AlreadyExists is success). The pod is then watched
 * (kube_watch, by name) to Ready through pod_state, each transition logged,
 * and read with pod_status: a kubelet reason that means the pod will never
 * serve ends the wait at once with the pod, the container, the reason, the
 * kubelet's message and the container's last 20 log lines, and the failed
 * pod is deleted so that the next call starts afresh.
 *
 * The address: POD_DIAL_POD, the pod IP and port 9446 (clusters without
 * kube-proxy or cluster DNS, like the lab); POD_DIAL_SERVICE (default, as
 * Porch) waits, as Porch does, until the Service's endpoints list the pod's
 * IP (its EndpointSlices, v1 or v1beta1, where the cluster has them, else
 * Endpoints: svc_endpoints), then names <podId>.<ns>.svc.cluster.local:9446 and dials the
 * Service's ClusterIP, which that name resolves to: resolving the name on
 * the loop would block it.
 *
 * Early dial (POD_DIAL_POD with a health hook): the Ready condition comes
 * from the exec readiness probe, which Porch's template runs every 10 s, so
 * a pod turns Ready 1-10 s after its wrapper server already answers. Once
 * the pod has an IP, the cache asks the wrapper's Health/Check itself
 * (every POD_HEALTH_RETRY_NS, on the loop) and serves the entry on the
 * first SERVING, Ready or not; NOT_SERVING or no answer keeps it waiting
 * (for Ready, or the next check), and the last answer is named if the wait
 * times out. The pod's readiness stays what the cluster sees (the Service's
 * endpoints, POD_DIAL_SERVICE, still wait for Ready).
 *
 * The cache is a function table: per image, its pods (at most the image's
 * cap, --max-parallel-pods-per-function), each with its calls in flight.
 * A call goes to the least-loaded pod, ties round-robin; a new pod is
 * started when the image has none, or when the best one's load has reached
 * the waitlist length and the image is below its cap (pod_route, Porch's
 * rule): with the defaults (cap 1), one pod per image, concurrent first
 * calls waiting for it together. A serving pod answers at once (from the
 * loop). A pod leaves the table when it fails, is deleted (a watch event,
 * when the cache keeps watching serving pods), is reclaimed idle or a
 * caller reports it cannot dial it (pod_cache_forget); the calls waiting
 * for it go to the image's other pods, or are told why. The files:
 * kube_fn_table (images, lookup, create or adopt), kube_pod_route (calls to
 * pods), kube_pod_life (one pod's state, serving, failing, deleting),
 * kube_pod_ready (readiness, endpoints, early dial), kube_pod_reclaim (idle
 * pods); kube_pod_api is every API call and clock reading they make (the
 * unit tests give a scripted one). */
#ifndef KRM_KUBE_POD_CACHE_H
#define KRM_KUBE_POD_CACHE_H

#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"
#include "kube/kube_client.h"
#include "kube/pod_state.h"
#include "oci/registry.h"

typedef enum pod_dial { POD_DIAL_SERVICE, POD_DIAL_POD } pod_dial;

#define POD_READY_TIMEOUT_NS (60LL * 1000000000)   /* Porch's podReadyTimeout */
#define POD_LOG_TAIL_LINES 20
#define POD_TTL_NS (30LL * 60 * 1000000000)   /* Porch's --pod-ttl */
#define POD_SCAN_NS (60LL * 1000000000)       /* Porch's --scan-interval */
#define POD_MAX_PER_FUNCTION 64               /* the highest cap accepted */
#define POD_DEFAULT_MAX_PODS 1                /* Porch's --max-parallel-pods-per-function */
#define POD_DEFAULT_WAITLIST 2                /* Porch's --max-waitlist-length */

/* The wrapper server's health asked on the loop: a hook, as lib/kube
 * speaks no gRPC (runtime/health_check gives one). start returns the
 * operation for cancel, or NULL when it could not start; done runs once,
 * from the loop, unless cancelled. */
typedef void pod_health_done_fn(int serving, const char *why, void *ctx);
typedef struct pod_health_hook {
    void *(*start)(loop *l, const char *addr, int64_t timeout_ns, pod_health_done_fn *done,
                   void *ctx);
    void (*cancel)(void *op);
} pod_health_hook;

#define POD_HEALTH_RETRY_NS (100LL * 1000000)     /* between two checks of a pod */
#define POD_HEALTH_TIMEOUT_NS (1000LL * 1000000)  /* connect and call, each */

typedef struct pod_cache_opts {
    const char *namespace;         /* NULL: porch-fn-system */
    const char *wrapper_image;     /* the init container's image (required) */
    pod_dial dial;
    unsigned long long max_request_body_size;   /* 0: 6 MiB */
    int64_t ready_timeout_ns;      /* 0: POD_READY_TIMEOUT_NS */
    int keep_watching;             /* watch serving pods (a long-lived runner), drop on delete */
    /* Idle pods, as Porch's runner reclaims them: a serving pod with no call
     * for its time to live is deleted with its Service. ttl_ns 0: never
     * (a one-shot CLI leaves its pod for the next one). ttl_for, when set,
     * gives an image's own (a FunctionConfig's podExecutor.timeToLive; 0:
     * ttl_ns). Looked for every scan_ns (0: POD_SCAN_NS). */
    int64_t ttl_ns;
    int64_t (*ttl_for)(const char *image, void *ctx);
    int64_t scan_ns;
    /* Pods per image (0: POD_DEFAULT_MAX_PODS; at most
     * POD_MAX_PER_FUNCTION) and the load at which another is started (0:
     * POD_DEFAULT_WAITLIST). limits_for, when set, may change both for an
     * image (a FunctionConfig's podExecutor); it leaves what it has not. */
    int max_pods;
    int waitlist;
    void (*limits_for)(const char *image, void *ctx, int *max_pods, int *waitlist);
    void *config_ctx;              /* ttl_for's and limits_for's */
    const pod_health_hook *health; /* POD_DIAL_POD: serve once the wrapper answers SERVING,
                                      before Ready; NULL: wait for Ready, as Porch */
    registry_opts registry;        /* strings must outlive the cache */
    /* Replicas sharing the namespace (pod_owner): this one's name (a DNS
     * subdomain), annotated on what it creates and held in its Lease,
     * renewed every third of lease_ns (0: KUBE_LEASE_DURATION_NS). It
     * adopts, reclaims and deletes only its own pods and those of replicas
     * whose Lease expired. NULL: no Lease, every pod adopted (one-shot
     * commands). */
    const char *owner;
    int64_t lease_ns;
    /* The API calls, registry lookups and clock (kube_pod_api.h); NULL:
     * the real ones, on the client given to pod_cache_new. */
    const struct pod_api *api;
    void *api_ctx;
    /* The base templates, read from the cluster by the cache from its start
     * (kube_templates; a pod to create meanwhile waits for them, and fails
     * with their error, which the next one retries): pods and Services
     * are made from them, stamped with the PodTemplate's version, and a pod
     * of another version is neither adopted nor, once the version changes,
     * given new calls: it is deleted when its calls are done, as Porch
     * replaces it. NULL: the built-in template (pod_template), version
     * inline-v1 (one-shot commands). */
    const struct kube_templates_opts *templates;
    /* Private registries (Porch's --enable-private-registries): the
     * dockerconfigjson pull_secret_data becomes Secret pull_secret (type
     * kubernetes.io/dockerconfigjson) in the namespace at the cache's start,
     * created, or patched when its bytes differ (pods wait for it), and
     * every pod made from the templates names it in imagePullSecrets.
     * NULL: none. The bytes must outlive the cache (or until
     * pod_cache_set_pull_secret gives others). */
    const char *pull_secret;
    const char *pull_secret_data;
    size_t pull_secret_len;
    /* An image's podExecutor.templateOverrides as JSON (its FunctionConfig;
     * NULL: none), merged into the pods made from the templates as Porch
     * merges them. ctx: config_ctx. */
    const char *(*overrides_for)(const char *image, void *ctx);
} pod_cache_opts;

/* A replica name pod_cache_opts.owner can be (its Lease is named after
 * it): 0, or -1 with why in err. pod_cache_new checks it too; a command
 * taking it as a flag checks it first. */
int pod_owner_name_check(const char *owner, buf *err);

/* What a caller gets; strings live until the callback returns. */
typedef struct pod_answer {
    const char *error;         /* NULL on success: then the rest is set */
    const char *image;
    const char *pod;           /* pod name */
    const char *uid;
    const char *addr;          /* numeric IP:port to dial */
    const char *name;          /* what to show: addr, or the Service's DNS name:port */
    int created;               /* this cache created the pod (else adopted) */
    int ready;                 /* it was Ready; 0: its wrapper answered SERVING before */
    int64_t waited_ns;         /* from the first call for the entry to this answer */
} pod_answer;

typedef void pod_answer_fn(const pod_answer *a, void *ctx);

typedef struct pod_cache pod_cache;
typedef struct pod_waiter pod_waiter;

/* c and the strings in o must outlive the cache. NULL with why in err. */
pod_cache *pod_cache_new(loop *l, kube_client *c, const pod_cache_opts *o, buf *err);
/* Stops watches and timers and cancels the API calls in flight (their
 * answers never reach it: pod_cache_settle first lets them end); callers
 * still waiting are not answered. */
void pod_cache_free(pod_cache *pc);

/* The pod for image: fn runs once, from the loop (never inside this call).
 * Returns a handle for pod_cache_cancel, or NULL when out of memory. */
pod_waiter *pod_cache_get(pod_cache *pc, const char *image, pod_answer_fn *fn, void *ctx);
/* Before fn ran: fn will not run. */
void pod_cache_cancel(pod_cache *pc, pod_waiter *w);
/* A call through pod (image's) ended without the function's answer in a
 * way another pod may not (UNAVAILABLE, its connection broke or could not
 * be made): the pod is checked with one GET (one at a time per pod, shared
 * by the calls it failed meanwhile): gone, not Running, or being deleted,
 * it leaves the cache (and is deleted unless gone); an API error keeps it.
 * Then fn gets a pod for the call as pod_cache_get gives one, but another
 * than this one while the image has one that can take it or may start one.
 * A pod the cache no longer holds: as pod_cache_get. NULL: out of memory. */
pod_waiter *pod_cache_retry(pod_cache *pc, const char *image, const char *pod, const char *why,
                            pod_answer_fn *fn, void *ctx);
/* The pod named pod (of image) cannot be dialed: drop the entry. */
void pod_cache_forget(pod_cache *pc, const char *image, const char *pod, const char *why);
/* Told when an entry leaves the cache (its pod failed, was deleted, could
 * not be dialed): who keeps something per pod (a connection) lets it go.
 * fn may run inside any of the cache's callbacks, a caller's too. At most
 * POD_DROP_HOOKS; -1 when full. */
#define POD_DROP_HOOKS 4
typedef void pod_drop_fn(const char *image, const char *pod, void *ctx);
int pod_cache_on_drop(pod_cache *pc, pod_drop_fn *fn, void *ctx);
void pod_cache_off_drop(pod_cache *pc, pod_drop_fn *fn, void *ctx);

/* A call through pod (image's) starts or ends: a pod with calls is never
 * reclaimed, and its idle time counts from the last call's end. Calls for a
 * pod the cache no longer holds are ignored. */
void pod_cache_call_begin(pod_cache *pc, const char *image, const char *pod);
void pod_cache_call_end(pod_cache *pc, const char *image, const char *pod);

/* API calls still in flight (a Delete of a failed pod...): a command that
 * exits after its answer runs the loop until this is 0, for a while. */
int pod_cache_busy(const pod_cache *pc);
/* Runs the loop until pod_cache_busy is 0 or max_ns passed (the Delete of
 * a failed pod finishes instead of being abandoned, and nothing is left
 * allocated): for a command or a server that is about to exit, after its
 * own work on the loop is done. */
void pod_cache_settle(pod_cache *pc, int64_t max_ns);

/* Every pod the cache holds (image, pod, podId, node, state, calls running,
 * calls waiting, idle time, last transition and how long ago, created or
 * adopted), appended to out as JSON ({"pods":[...]}) or, text, as an
 * aligned table with a header line (cells escaped as log lines are).
 * 0, or -1 when out of memory. */
int pod_cache_view(pod_cache *pc, int text, buf *out);

/* A call's figures for /metrics. */
typedef enum pod_severity {
    POD_SEVERITY_NONE,         /* no result */
    POD_SEVERITY_INFO,
    POD_SEVERITY_WARNING,
    POD_SEVERITY_ERROR,
    POD_SEVERITY_UNKNOWN,      /* not an OK call, or its ResourceList was not read */
    POD_SEVERITY_COUNT,
} pod_severity;
typedef struct pod_call_figures {
    int code;                  /* its gRPC status (0-16) */
    const char *code_name;     /* its name, a string that outlives the cache */
    int64_t duration_ns;       /* from its arrival to its end */
    int64_t wait_ns;           /* of which it waited for a pod to take it (<0: not measured) */
    pod_severity severity;     /* the worst of its results */
} pod_call_figures;
/* A call for image ended: counted for /metrics. */
void pod_cache_count_call(pod_cache *pc, const char *image, const pod_call_figures *f);
/* The per-image series (krm_pod_runtime_*) in Prometheus' text format: pods
 * by state, calls by code, pods created, adopted and reclaimed, pod start
 * time, retries, evictions, call duration and queue wait (histograms),
 * calls by their results' worst severity. At most POD_METRICS_IMAGES images by name (the
 * first seen; operators configure them), the rest under image="other". */
void pod_cache_metrics(pod_cache *pc, buf *out);

/* Warm pods (porch#956): each image given is kept at least `min` pods
 * (at most POD_MAX_PER_FUNCTION), started before any call asks, re-started
 * when one leaves (a second later; one that never served backs off to a
 * minute), and that many serving pods are exempt from the idle time to
 * live. Replaces the images kept before (an image left out is reclaimed as
 * any other); the strings are copied. 0, or -1 when out of memory (the
 * previous set kept). */
typedef struct pod_warm {
    const char *image;
    int min;
} pod_warm;
int pod_cache_set_warm(pod_cache *pc, const pod_warm *images, int n);
/* New bytes for the pull Secret (its mounted file changed): copied, then
 * the Secret read and patched when they differ, as at start (after the
 * round under way, if one is). -1: the cache has no pull Secret, or out of
 * memory. */
int pod_cache_set_pull_secret(pod_cache *pc, const char *data, size_t len);

/* For tests and `pod list`-like views: the entry of image, or -1. */
int pod_cache_state(pod_cache *pc, const char *image, pod_state *state);

#endif
