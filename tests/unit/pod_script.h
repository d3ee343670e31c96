/* pod_script: a scripted Kubernetes API for the pod cache's unit tests
 * (kube_pod_api.h): every request is recorded; creates, lists, patches,
 * deletes, registry lookups and each watch's first list are answered by
 * pod_script_pump as a quiet cluster would, GETs (a pod's check, its log)
 * only when the test answers them. Pods become Ready, fail or vanish when
 * the test says, and time moves only by hand (pod_script.now). */
#ifndef POD_SCRIPT_H
#define POD_SCRIPT_H

#include "kube/kube_pod_api.h"
#include "kube/kube_pod_cache.h"

#define SCRIPT_MAX_REQS 2048
#define SCRIPT_MAX_WATCHES 64
#define SCRIPT_MAX_LOOKUPS 16

typedef struct script_req {
    const char *verb;          /* "get", "text", "list", "create", "patch", "delete" */
    char resource[32];
    char name[160];
    char query[300];
    char body[1024];           /* a create's or patch's, cut to fit */
    kube_result_fn *fn;
    void *ctx;
    int answered;
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

typedef struct pod_script {
    loop *l;
    int64_t now;
    script_req *reqs;          /* SCRIPT_MAX_REQS of them (on the heap: tests keep the script on the stack) */
    int n_reqs;
    script_watch watches[SCRIPT_MAX_WATCHES];
    int n_watches;
    script_lookup lookups[SCRIPT_MAX_LOOKUPS];
    int n_lookups;
    int pods_made;             /* names: fn-1, fn-2, ... */
    const char *create_error;  /* set: pod creates are refused (403) with it */
    int hold_deletes;          /* set: deletes wait for the test's answer */
    int hold_lease_writes;     /* set: Lease creates and patches wait for the test's answer */
    const char *leases;        /* set: a Lease list's items (JSON array text), else none */
    const char *pods;          /* set: a pod list's items (JSON array text), else none */
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

/* Leases and pods for s->leases / s->pods (the wall clock, as the
 * replicas' Leases are judged by it): renewed `ago_s` seconds ago. */
void pod_script_rfc3339(char out[40], long ago_s);

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
