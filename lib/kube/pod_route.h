/* pod_route: which pod of a function a call goes to, or whether the
 * function gets a new pod: Porch's rule (its pod cache manager's
 * findBestPod and scale-up test), pure, so that it is tested on its own.
 *
 * A pod's load is its calls in flight plus the calls queued for it (a pod
 * coming up has only the latter). The best pod is the least loaded one,
 * ties broken round-robin (the turn moves past the pod picked). A new pod
 * is started when the function has none, or when the best pod's load has
 * reached the waitlist length and the function has fewer pods than its
 * cap. So concurrent first calls start one pod (the second finds the first
 * coming up with one call queued, which reaches a waitlist of 1 only; with
 * cap 1 it never scales).
 *
 * Unlike Porch, a pod that failed and is still telling its waiters why
 * (its container's log is being read) takes no new call while another pod
 * can, and still counts toward the cap. */
#ifndef KRM_POD_ROUTE_H
#define KRM_POD_ROUTE_H

typedef struct pod_route_view {
    int load;                  /* calls running on it and queued for it */
    int failed;                /* failed; leaving once its waiters are told */
} pod_route_view;

#define POD_ROUTE_NEW (-1)

/* The index in pods[n] of the pod the call joins, or POD_ROUTE_NEW. cap
 * and waitlist below 1 count as 1. *turn: the round-robin position, kept
 * by the caller per function. */
int pod_route_pick(const pod_route_view *pods, int n, int cap, int waitlist, unsigned *turn);

/* The postfix (1, 2, ...) for a new pod: the smallest one not in used[n]. */
unsigned pod_route_postfix(const unsigned *used, int n);

#endif
