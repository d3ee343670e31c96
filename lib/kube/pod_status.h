/* pod_status: what a function pod's status says for the caller waiting on
 * it: ready to dial, still coming up, or never going to serve (fail fast).
 *
 * Why: Porch's runner polls for Ready for 60 s and then reports a timeout,
 * so a function whose image does not exist or whose container crashes costs
 * a minute and says nothing useful. The kubelet already knows within
 * seconds and writes its reason into the pod's container statuses; this
 * reads them. Pure (a pod object in, a verdict out), for the pod cache and
 * its tests.
 *
 * Fail fast on, in an init container or a container:
 *   waiting reasons ErrImagePull, ImagePullBackOff, InvalidImageName,
 *     ErrImageNeverPull, CrashLoopBackOff, CreateContainerConfigError,
 *     CreateContainerError, RunContainerError;
 *   an init container terminated with a non-zero exit code;
 *   the function container terminated (whatever the code: the wrapper
 *     server never exits by itself), or restarted (lastState.terminated);
 *   the pod phase Failed or Succeeded.
 * Other waiting reasons (ContainerCreating, PodInitializing) are waits. */
#ifndef KRM_POD_STATUS_H
#define KRM_POD_STATUS_H

#include "core/buf.h"
#include "core/json.h"

typedef enum pod_verdict {
    POD_VERDICT_WAIT,         /* not Ready yet, nothing wrong seen */
    POD_VERDICT_READY,        /* phase Running, Ready=True, podIP set */
    POD_VERDICT_FAIL,         /* will not serve without a change: see container/reason */
    POD_VERDICT_TERMINATING,  /* deletionTimestamp set */
} pod_verdict;

/* Strings borrowed from the pod object. */
typedef struct pod_status {
    pod_verdict verdict;
    const char *name;         /* metadata.name */
    const char *ip;           /* status.podIP */
    const char *container;    /* FAIL (or WAIT with a reason): which container */
    int init;                 /* container is an init container */
    const char *reason;       /* FAIL: the kubelet's reason; WAIT: a waiting reason, or NULL */
    const char *message;      /* the kubelet's message, or NULL */
    long exit_code;           /* last termination's exit code, -1 when none */
    const char *exit_reason;  /* last termination's reason ("Error"), or NULL */
    int previous;             /* the container restarted: its logs are in previous=true */
} pod_status;

/* Reads pod (a Pod object as the API returns it) into *st. */
void pod_status_read(const json *pod, pod_status *st);

/* One line for a person: "container \"function\": CrashLoopBackOff: back-off
 * 10s restarting failed container (last exit code 3, Error)". For WAIT,
 * the phase and reason seen so far ("Pending: ContainerCreating"). */
void pod_status_describe(const json *pod, const pod_status *st, buf *out);

const char *pod_verdict_name(pod_verdict v);

/* A pod that failed a call (UNAVAILABLE, a broken connection), read once,
 * as kptdev/porch reads it since its fix for runners deleting live pods:
 * gone (NotFound), to be evicted and deleted (being deleted, or not in
 * phase Running), or kept (Running; or an API error, which proves nothing). */
typedef enum pod_recheck { POD_RECHECK_KEEP, POD_RECHECK_GONE, POD_RECHECK_EVICT } pod_recheck;

/* pod: the object read, NULL on an API error; not_found: the API said
 * NotFound. *why (EVICT): "being deleted", or the phase ("Pending", "" when
 * none), borrowed from pod. */
pod_recheck pod_status_recheck(const json *pod, int not_found, const char **why);

#endif
