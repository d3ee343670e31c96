/* pod_script: a scripted Kubernetes API for the pod cache's unit tests
 * (kube_pod_api.h): every request is recorded; creates, lists, patches,
 * deletes, registry lookups and each watch's first list are answered by
 * pod_script_pump as a quiet cluster would, GETs (a pod's check, its log)
 * only when the test answers them. Pods become Ready, fail or vanish when
 * the test says, and time moves only by hand (pod_script.now; the wall
 * clock moves with it).
 *
 * Replicas (pod_cache_opts.owner): the script keeps the namespace's
 * Leases (created, renewed by PATCH, listed, deleted as an API server
 * would: a create of one that exists is a 409, a PATCH of one that does
 * not a 404) and the pods the test puts in it (pod_script_add_pod), which
 * the scan's listing shows; a PATCH of one of them that names a
 * resourceVersion other than its own is a 409, as the API server's
 * optimistic concurrency answers the slower of two replicas. */
#ifndef POD_SCRIPT_H
#define POD_SCRIPT_H

#include "kube/kube_pod_api.h"
#include "kube/kube_pod_cache.h"

#define SCRIPT_MAX_REQS 512
#define SCRIPT_MAX_WATCHES 64
#define SCRIPT_MAX_LOOKUPS 16

typedef struct script_req {
    const char *verb;          /* "get", "text", "list", "create", "patch", "delete" */
    char resource[32];
    char name[160];
    char query[300];
    kube_result_fn *fn;
    void *ctx;
    char *body;                /* a create's or patch's (a copy), else NULL */
    int answered;
    long status;               /* what it was answered */
    int cancelled;             /* by its caller (pod_api's cancel): never answered */
} script_req;

typedef struct script_watch {
    char pod[160];             /* the pod watched (its fieldSelector) */
    const kube_watch_fns *fns;
    void *ctx;
    int listed, stopped;
} script_watch;

typedef struct script_lookup {
    registry_done_fn *done;
    void *ctx;
    int answered, cancelled;
} script_lookup;

#define SCRIPT_MAX_LEASES 8
typedef struct script_lease {
    char name[200], holder[160];
    int64_t renew_us;          /* spec.renewTime, µs since the epoch */
    long duration_s;           /* spec.leaseDurationSeconds */
} script_lease;

#define SCRIPT_MAX_PODS 16
typedef struct script_pod {
    char name[64], owner[64];  /* owner: the fn.kpt.dev/owner annotation ("": none) */
    char pod_id[64];           /* label fn.kpt.dev/image */
    char image[128];           /* its function container's */
    char last_call[48];        /* annotation fn.kpt.dev/last-call ("": none) */
    int64_t created_us;
    long version;              /* metadata.resourceVersion */
    int ready;                 /* set: Ready at 127.0.0.1, made as the cache makes pods (its
                                * template version and wrapper image): a call may adopt it */
} script_pod;

typedef struct pod_script {
    loop *l;
    int64_t now;
    int64_t wall0_us;          /* the wall clock when now was its start */
    script_req reqs[SCRIPT_MAX_REQS];
    int n_reqs;
    script_watch watches[SCRIPT_MAX_WATCHES];
    int n_watches;
    script_lookup lookups[SCRIPT_MAX_LOOKUPS];
    int n_lookups;
    int pods_made;             /* names: fn-1, fn-2, ... */
    const char *create_error;  /* set: pod creates are refused (403) with it */
    int hold_deletes;          /* set: deletes wait for the test's answer */
    script_lease leases[SCRIPT_MAX_LEASES];
    int n_leases;
    script_pod pods[SCRIPT_MAX_PODS];
    int n_pods;
    long lease_status;         /* set: Lease creates and patches are answered with it */
    int hold_claims;           /* set: patches of the test's pods wait (two claims meet) */
    int hold_leases;           /* set: requests on Leases wait (a stop with one in flight) */
} pod_script;

/* A loop and the script; the options a test starts from (dial=pod, its
 * API this script). */
void pod_script_init(pod_script *s, pod_cache_opts *o);
void pod_script_fini(pod_script *s);
/* The cache over this script, with o (pod_script_init's, changed as the
 * test needs); pod_script_end frees it, then the loop. */
pod_cache *pod_script_cache(pod_script *s, const pod_cache_opts *o);
void pod_script_end(pod_script *s, pod_cache *pc);
/* Runs the loop (a few ms) and answers what a quiet cluster answers at
 * once, until nothing more happens. */
void pod_script_pump(pod_script *s);
/* The pod named pod gets status (JSON text; its watch's MODIFIED event). */
void pod_script_status(pod_script *s, const char *pod, const char *status);
/* The pod named pod turns Ready at ip. */
void pod_script_ready(pod_script *s, const char *pod, const char *ip);
/* The request number i answered: status (200, 404, 500...) and body (JSON
 * text, or NULL). */
void pod_script_answer(pod_script *s, int i, long status, const char *body);
/* Requests neither answered nor cancelled: the cache still waits for them. */
int pod_script_unanswered(const pod_script *s);
/* Requests of verb on resource (name NULL: any), answered or not; the last one's index in *last. */
int pod_script_count(const pod_script *s, const char *verb, const char *resource, const char *name,
                     int *last);

/* Runs the loop for real_ns of the loop's own (real) time, answering as
 * pod_script_pump does: for what the loop's timers do (a Lease's renewal). */
void pod_script_wait(pod_script *s, int64_t real_ns);
/* The script's wall clock (pod_api's wall_us): µs since the epoch. */
int64_t pod_script_wall(const pod_script *s);
/* The Lease of replica holder (fn-runner-<holder>), written at renew_us
 * for duration_s; replaced when it is there. */
void pod_script_lease(pod_script *s, const char *holder, int64_t renew_us, long duration_s);
script_lease *pod_script_find_lease(pod_script *s, const char *holder);
/* A pod in the namespace: owner (NULL: none), created and last called at
 * created_us, resourceVersion 7, function image image, podId "id-<name>"
 * (set pod_id to the image's, pod_script_pod_id, for a call to find it). */
script_pod *pod_script_add_pod(pod_script *s, const char *name, const char *owner,
                               const char *image, int64_t created_us);
script_pod *pod_script_find_pod(pod_script *s, const char *name);
/* The podId the cache gives image's first pod (the script's registry
 * digest, postfix 1). */
void pod_script_pod_id(const char *image, char out[64]);

/* What callers of pod_cache_get / pod_cache_retry got. */
#define SCRIPT_MAX_ANSWERS 64
typedef struct script_answers {
    int n;
    char pod[SCRIPT_MAX_ANSWERS][64];      /* "" when an error */
    char error[SCRIPT_MAX_ANSWERS][512];
} script_answers;
void pod_script_answered(const pod_answer *a, void *ctx);   /* ctx: script_answers */
/* A call for image that starts a pod, which turns Ready as `name`: the call
 * is answered with it then, not before. */
void pod_script_start_pod(pod_script *s, pod_cache *pc, const char *image, script_answers *got,
                          const char *name);
/* The answers from `from` on: n of them, each with the pod `name`. */
void pod_script_expect(const script_answers *got, int from, int n, const char *name);

#endif
