/* kube_pod_api: the pod cache's real API calls; see kube_pod_api.h. */
#include "kube/kube_pod_api.h"

static int get(void *c, const kube_ref *ref, kube_result_fn *fn, void *fn_ctx, buf *err)
{
    return kube_get(c, ref, fn, fn_ctx, err);
}

static int get_text(void *c, const kube_ref *ref, kube_result_fn *fn, void *fn_ctx, buf *err)
{
    return kube_get_text(c, ref, fn, fn_ctx, err);
}

static int list(void *c, const kube_ref *ref, kube_result_fn *fn, void *fn_ctx, buf *err)
{
    return kube_list(c, ref, fn, fn_ctx, err);
}

static int create(void *c, const kube_ref *ref, const char *content_type, const char *body,
                  size_t len, kube_result_fn *fn, void *fn_ctx, buf *err)
{
    return kube_create(c, ref, content_type, body, len, fn, fn_ctx, err);
}

static int patch(void *c, const kube_ref *ref, const char *body, size_t len, kube_result_fn *fn,
                 void *fn_ctx, buf *err)
{
    return kube_patch(c, ref, body, len, fn, fn_ctx, err);
}

static int del(void *c, const kube_ref *ref, kube_result_fn *fn, void *fn_ctx, buf *err)
{
    return kube_delete(c, ref, fn, fn_ctx, err);
}

static kube_watch *watch_start(void *c, const kube_ref *ref, const kube_watch_fns *fns,
                               void *fn_ctx, buf *err)
{
    return kube_watch_start(c, ref, fns, fn_ctx, err);
}

static void watch_stop(void *c, kube_watch *w)
{
    (void)c;
    kube_watch_stop(w);
}

/* On the API client's curl driver: no thread. */
static registry_op *lookup_start(void *c, const char *image, const registry_opts *opts,
                                 registry_done_fn *done, void *fn_ctx, buf *err)
{
    return registry_lookup_start(kube_http_multi(kube_client_http(c)), image, opts, done, fn_ctx,
                                 err);
}

static void lookup_cancel(void *c, registry_op *op)
{
    (void)c;
    registry_lookup_cancel(op);
}

static void cancel(void *c, void *fn_ctx)
{
    kube_cancel(c, fn_ctx);
}

static int64_t now_ns(void *c)
{
    (void)c;
    return loop_now_ns();
}

static int64_t wall_us(void *c)
{
    (void)c;
    return wall_clock_us();
}

const pod_api pod_api_kube = {get, get_text, list, create, patch, del, watch_start, watch_stop,
                              lookup_start, lookup_cancel, cancel, now_ns, wall_us};
