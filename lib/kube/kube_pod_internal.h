/* kube_pod_internal: what the pod cache's files share (private to
 * kube_fn_table.c, kube_pod_route.c, kube_pod_life.c, kube_pod_ready.c and
 * kube_pod_reclaim.c; see kube_pod_cache.h for what the cache does).
 *
 * Two levels. The function table: one `fn_entry` per image (its registry facts,
 * shared by its pods) holding its pods. One `pod` per function pod, whose
 * whole life is its `state` (pod_state's table), changed only by pod_set:
 * a pod is in its image's table while it is requested, creating,
 * waiting-ready, serving or failed (its waiters not answered yet), and has
 * left it once draining, deleting or gone. A pod that left is freed once
 * nothing points to it any more (its API calls, its watch).
 *
 * The files call each other, by nature rather than by accident: routing
 * starts pods (fn_start_pod), a start or a pod can fail (pod_fail), and a
 * pod that leaves hands its calls back to routing (route_hand_off). They
 * are one module cut by concern, sharing what is declared here; nothing
 * outside lib/kube includes this header. */
#ifndef KRM_KUBE_POD_INTERNAL_H
#define KRM_KUBE_POD_INTERNAL_H

#include "kube/kube_pod_cache.h"
#include "kube/kube_lease.h"
#include "kube/kube_pod_api.h"
#include "kube/kube_watch.h"
#include "kube/pod_owner.h"
#include "kube/pod_id.h"
#include "kube/pod_status.h"
#include "kube/svc_endpoints.h"

typedef struct fn_entry fn_entry;
typedef struct warm_entry warm_entry;
typedef struct pod pod;

struct pod_waiter {
    pod_cache *pc;
    pod *p;                    /* the pod it waits for, once routed */
    char *image;
    pod_answer_fn *fn;
    void *ctx;
    loop_defer attach;         /* posted: routed from the loop */
    pod_waiter *next;
};

/* What a waiting-ready pod waits for: one explicit step, not a guess from
 * which timer is armed. */
typedef enum ready_step {
    READY_STEP_STATUS,         /* its status (and, --dial=pod, its wrapper's health) */
    READY_STEP_ENDPOINTS,      /* Ready; its Service's endpoints to list it (--dial=service) */
    READY_STEP_LOG,            /* failed fast; its container's last log lines to quote */
} ready_step;

struct pod {
    pod_cache *pc;
    fn_entry *fn;              /* its image while in the table; NULL once it left */
    pod *next;                 /* in fn->pods */
    pod *held_next;            /* in pc->held, once it left the table */
    char *image;               /* its own copy: a pod that left outlives its image's entry */
    unsigned postfix;          /* podId's postfix: 1, 2, ... among the image's pods */
    pod_state state;           /* only through pod_set */
    ready_step step;
    char pod_id[POD_ID_MAX + 1];
    char *name, *uid, *ip, *cluster_ip, *addr, *shown;
    char *node;                /* spec.nodeName, once scheduled */
    char *version;             /* its template version (fn.kpt.dev/template-version), once
                                  created or adopted */
    int awaits_templates;      /* its create waits for the base templates */
    int stale;                 /* made from an older template: takes no new call, and is
                                  deleted once its calls are done (kube_pod_template) */
    pod_event last_event;      /* the last transition (for /debug/pods) */
    int64_t changed_ns;        /* and when */
    int created;               /* this cache created it (else adopted) */
    int ready;                 /* seen Ready (else served on its wrapper's health) */
    int calls;                 /* calls running through it (pod_cache_call_begin) */
    int64_t started_ns, last_used_ns;
    int64_t marked_ns;         /* last_used_ns as last written to the pod (LAST_CALL) */
    int mark_failed;           /* a failed write was logged once */
    pod_waiter *waiters;       /* calls waiting for it to serve */
    pod_waiter *parked;        /* calls it failed, waiting for its check (kube_pod_check) */
    loop_defer check_soon;     /* the check's GET, started from the loop */
    int checking;              /* that GET in flight (beside the state: a serving pod is
                                  checked while it serves the others' calls) */
    int api_calls;             /* its API requests in flight (pod_api_begin/end) */
    kube_watch *watch;
    loop_timer deadline;       /* armed until it serves: --pod-ready-timeout */
    loop_timer poll;           /* the next look at its Service's endpoints */
    loop_defer poll_now;       /* the first one, from the loop */
    loop_defer log_now;        /* its failed container's log fetched, from the loop */
    loop_defer unwatch;        /* its watch stopped, from the loop */
    loop_defer delete_soon;    /* its Delete sent, from the loop */
    int delete_service;        /* its Delete removes the Service too (reclaimed) */
    void *health;              /* the wrapper's Health/Check in flight (hook's op) */
    loop_timer health_next;    /* the next check */
    loop_defer health_now;     /* the first check, from the loop */
    char health_seen[300];     /* its last answer, for the timeout's message */
    char desc[512];            /* its last status line, for logs and the timeout */
    char fail_container[254];
    int fail_previous;
    int said_endpoints_wait;   /* "waiting for the endpoints" logged */
    int relists;               /* its podId's pods listed again (a claim lost, a podId
                                  another live replica uses): bounded */
};

struct fn_entry {
    pod_cache *pc;
    fn_entry *next;
    char *image;
    registry_op *lk;           /* the registry lookup in flight */
    registry_result meta;
    int have_meta;
    pod *pods;                 /* in the table */
    unsigned rr;               /* round-robin turn among equally loaded pods */
};

/* An image's figures for /metrics (kube_pod_metrics). */
#define POD_METRICS_BUCKETS 12     /* histogram bounds, seconds: see kube_pod_metrics.c */
typedef struct histogram {
    uint64_t le[POD_METRICS_BUCKETS];   /* not cumulative: each bucket its own */
    uint64_t count;
    double sum;                /* seconds */
} histogram;
#define POD_METRICS_IMAGES 32      /* images with their own series; the rest: "other" */
#define POD_METRICS_CODES 17       /* gRPC codes 0-16 */
typedef struct image_stats {
    char *image;               /* NULL: the "other" row */
    uint64_t calls[POD_METRICS_CODES];
    const char *code_names[POD_METRICS_CODES];
    uint64_t retries, evictions, created, adopted, reclaimed;
    uint64_t started;          /* pods that served: with start_ns_sum, from requested */
    int64_t start_ns_sum;
    uint64_t severity[POD_SEVERITY_COUNT];
    histogram duration, wait;  /* calls' whole time and their wait for a pod */
} image_stats;

/* Replicas sharing the namespace (kube_pod_owner): this one's Lease, the
 * others' as last listed, and the scan under way. */
#define OWNER_MAX_LEASES 256       /* more: the rest's owners count as live */
typedef struct owner_scan owner_scan;
typedef struct owner_state {
    kube_lease *lease;
    lease_view leases[OWNER_MAX_LEASES];   /* holders: copies */
    int n_leases;
    int leases_known;
    owner_scan *scan;          /* its API calls in flight (cancelled by owner_stop) */
    uint64_t claimed, collected, left_alone;
} owner_state;

/* A scan's view of the namespace's function pods. */
typedef struct owner_listing {
    pod_owner_pod *pods;
    int n;
} owner_listing;

struct pod_cache {
    loop *l;
    const pod_api *api;
    void *api_ctx;
    pod_cache_opts o;
    struct kube_templates *templates;   /* o.templates read from the cluster, or NULL */
    int secret_busy;           /* o.pull_secret being read or written (kube_pull_secret) */
    int secret_again;          /* new bytes came meanwhile: read and written again once done */
    buf secret;                /* the bytes of pod_cache_set_pull_secret (o.pull_secret_data) */
    fn_entry *fns;
    pod_waiter *pending;       /* waiters not routed yet */
    pod *held;                 /* pods that left the table, held by their API calls or watch
                                  (a Delete in flight): pod_cache_free abandons them */
    int api_calls;             /* API requests of all pods, those that left included */
    svc_endpoints_api ep_api;  /* how Services' endpoints are read (asked once) */
    struct {
        pod_drop_fn *fn;
        void *ctx;
    } drop_hooks[POD_DROP_HOOKS];
    loop_timer scan;           /* armed: the next look for idle pods */
    image_stats stats[POD_METRICS_IMAGES];
    int n_stats;
    image_stats other;         /* images beyond POD_METRICS_IMAGES (label cardinality) */
    owner_state own;           /* o.owner set: replicas share the namespace */
    warm_entry *warm;          /* images kept warm (kube_pod_warm) */
    int n_warm;
    loop_timer warm_timer;     /* their next look, */
    loop_defer warm_now;       /* or one from the loop */
};

/* The cache's clock (pod_api's now_ns). */
static inline int64_t pod_now(const pod_cache *pc)
{
    return pc->api->now_ns(pc->api_ctx);
}

/* ---- kube_pod_life.c: one pod's life ---- */
/* The one way a pod's state changes: logged, and a transition the table
 * refuses is a bug (asserted). */
void pod_set(pod *p, pod_event ev);
int pod_in_table(const pod *p);
const char *pod_label(const pod *p);   /* its name, else podId, else image */
pod *pod_new(fn_entry *f, unsigned postfix);
/* An API request for p was sent / has come back. pod_api_end: 1 when p has
 * left meanwhile (the answer is not wanted; p may be freed by it). */
void pod_api_begin(pod *p);
int pod_api_end(pod *p);
void pod_maybe_free(pod *p);
/* p (out of the table) freed now: its API calls cancelled (their callbacks
 * never run), its timers and watch stopped. For pod_cache_free. */
void pod_abandon(pod *p);
void pod_serve(pod *p);
/* p will not serve: message to its waiters (or they go to its image's
 * other pods), then it leaves; delete_pod: delete it too (fail fast). */
void pod_fail(pod *p, const char *message, int delete_pod);
void pod_fail_fmt(pod *p, int delete_pod, const char *fmt, const char *arg);
void pod_fail_fast(pod *p, const pod_status *st);
/* Deletes p (and, reclaimed, its Service) from the loop, then it leaves. */
void pod_delete(pod *p);
void pod_leave(pod *p, const char *why);
void pod_unwatch_later(pod *p);
void pod_health_stop(pod *p);
int pod_set_str(char **dst, const char *s);

/* ---- kube_pod_ready.c: readiness and early dial ---- */
void pod_observe(pod *p, const json *obj);
void pod_watch(pod *p);
void pod_ready_init(pod *p);   /* its timers and deferred calls of this file (pod_new) */

/* ---- kube_fn_table.c: images, lookup, create or adopt ---- */
/* kube_pod_template: the template version pods are made from now; p's Pod
 * or Service body (POD_TEMPLATE_POD or _SERVICE) and its content type; a
 * stale pod deleted once it has no call; the version changed (the
 * templates' listener, ctx the cache). */
const char *template_version(const pod_cache *pc);
int template_render(pod *p, int which, buf *body, const char **content_type, buf *err);
void template_retire_if_done(pod *p);
void template_changed(const char *version, void *ctx);
/* The templates' reading ended (ctx the cache): the pods waiting go on. */
void template_ready(const char *error, void *ctx);
/* kube_pull_secret: o.pull_secret read and written when it differs; then
 * template_ready(NULL) lets the waiting pods go on. */
void pull_secret_start(pod_cache *pc);
/* kube_fn_table: p's Service and Pod created (p has its podId). */
void fn_create(pod *p);

void fn_start_pod(pod *p);
void fn_release(fn_entry *f);  /* f goes once its last pod has left */
pod *fn_pod_named(pod_cache *pc, const char *image, const char *name);
fn_entry *fn_find(pod_cache *pc, const char *image);
fn_entry *fn_new(pod_cache *pc, const char *image);

/* ---- kube_pod_route.c ---- */
/* w to a pod of f (a new one when routing says so); from the loop. */
void route_waiter(fn_entry *f, pod_waiter *w);
/* The waiters of p, which leaves the table: to f's other pods, or answered
 * with why. */
void route_hand_off(pod *p, fn_entry *f, const char *why);
void answer_waiters(pod *p, const char *error);

/* w to a pod of f, avoiding `avoid` (which failed it) while another pod
 * can take it or one can be started. */
void route_waiter_avoiding(fn_entry *f, pod_waiter *w, pod *avoid);
/* w routed again from the loop, as pod_cache_get does (p left). */
void route_later(pod_waiter *w);

/* ---- kube_pod_check.c ---- */
/* w waits for p's check (started unless under way), then is routed. */
void check_park(pod *p, pod_waiter *w, const char *why);
/* p's parked calls go back to routing: after its check, or as it leaves. */
void check_release_parked(pod *p);

/* ---- kube_pod_metrics.c ---- */
image_stats *stats_for(pod_cache *pc, const char *image);
void stats_free(pod_cache *pc);

/* ---- kube_pod_reclaim.c ---- */
void reclaim_scan(loop *l, void *ctx);
/* The table's idle pods reclaimed; ls: the namespace's function pods as
 * listed now (a pod another replica owns meanwhile leaves the table
 * without a delete; its Service is deleted only when no other pod selects
 * it), NULL: no replicas (every reclaimed pod's Service goes). */
void reclaim_idle(pod_cache *pc, const owner_listing *ls);
void reclaim_rearm(pod_cache *pc);
/* image's time to live: its own (FunctionConfig), else the cache's; 0: never. */
int64_t reclaim_ttl(const pod_cache *pc, const char *image);

/* ---- kube_pod_warm.c: warm pods ---- */
int warm_min(const pod_cache *pc, const char *image);   /* 0: none kept */
void warm_init(pod_cache *pc);   /* its timer and deferred call (pod_cache_new) */
void warm_ensure(pod_cache *pc);
/* A pod of image left the table; served: it had served (else its image's
 * next warm pod waits longer). */
void warm_pod_left(pod_cache *pc, const char *image, int served);
void warm_free(pod_cache *pc);

/* ---- kube_pod_owner.c: replicas sharing the namespace ---- */
int owner_start(pod_cache *pc, buf *err);
void owner_stop(pod_cache *pc);
/* A listed pod's verdict, by the Leases last listed. */
pod_owner_verdict owner_judge(pod_cache *pc, const json *obj);
/* Makes obj this replica's (a merge patch conditional on its
 * resourceVersion: of two replicas claiming it, one wins); done gets the
 * patched pod. 0 when sent (p's API call counted). */
int owner_claim(pod *p, const json *obj, kube_result_fn *done);
/* The scan: Leases, then pods, then reclaim_idle with the listing and what
 * is not in the table (claimed or collected); re-arms the scan. */
void owner_scan_start(pod_cache *pc);

#endif
