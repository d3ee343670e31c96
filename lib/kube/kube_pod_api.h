/* kube_pod_api: every Kubernetes API call, registry lookup and clock
 * reading the pod cache and its Lease (kube_lease) make, as one table of
 * functions: the real ones (kube_client, registry_lookup_start,
 * loop_now_ns, wall_clock_us) unless a caller gives its own (the unit tests' scripted API, which answers each request when
 * the test says and moves time by hand).
 *
 * ctx: the kube_client for the real table, the caller's for its own. Each
 * function keeps the contract of the one it stands for (kube_client.h,
 * kube_watch.h, oci/registry.h): fn runs once, from the loop, unless the
 * call returned -1 / NULL or was stopped / cancelled. */
#ifndef KRM_KUBE_POD_API_H
#define KRM_KUBE_POD_API_H

#include <stdint.h>

#include "kube/kube_client.h"
#include "kube/kube_watch.h"
#include "kube/pod_owner.h"
#include "oci/registry.h"

typedef struct pod_api {
    int (*get)(void *ctx, const kube_ref *ref, kube_result_fn *fn, void *fn_ctx, buf *err);
    int (*get_text)(void *ctx, const kube_ref *ref, kube_result_fn *fn, void *fn_ctx, buf *err);
    int (*list)(void *ctx, const kube_ref *ref, kube_result_fn *fn, void *fn_ctx, buf *err);
    int (*create)(void *ctx, const kube_ref *ref, const char *content_type, const char *body,
                  size_t len, kube_result_fn *fn, void *fn_ctx, buf *err);
    int (*patch)(void *ctx, const kube_ref *ref, const char *patch, size_t len, kube_result_fn *fn,
                 void *fn_ctx, buf *err);
    int (*del)(void *ctx, const kube_ref *ref, kube_result_fn *fn, void *fn_ctx, buf *err);
    kube_watch *(*watch_start)(void *ctx, const kube_ref *ref, const kube_watch_fns *fns,
                               void *fn_ctx, buf *err);
    void (*watch_stop)(void *ctx, kube_watch *w);
    registry_op *(*lookup_start)(void *ctx, const char *image, const registry_opts *opts,
                                 registry_done_fn *done, void *fn_ctx, buf *err);
    void (*lookup_cancel)(void *ctx, registry_op *op);
    /* Every request in flight made with fn_ctx abandoned: its fn is not
     * called (kube_cancel). */
    void (*cancel)(void *ctx, void *fn_ctx);
    /* The time idle times, waits and start times are measured in (the
     * cache's timers still run on the loop's own clock). */
    int64_t (*now_ns)(void *ctx);
    /* The wall clock, µs since the epoch (wall_clock_us): what Leases'
     * renewTime and pods' timestamps are compared with. */
    int64_t (*wall_us)(void *ctx);
} pod_api;

/* The real calls; ctx: the kube_client. */
extern const pod_api pod_api_kube;

#endif
