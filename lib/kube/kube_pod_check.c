/* kube_pod_check: a pod that failed a call, checked before the call goes
 * on; see pod_cache_retry in kube_pod_cache.h.
 *
 * As kptdev/porch does since its fix for runners deleting live pods (read
 * the pod, never guess): one GET of the pod. Not found: it left (someone
 * deleted it). Being deleted, or not Running: it will not serve again; it
 * leaves the table and is deleted. An API error proves nothing: kept. The
 * calls parked on it meanwhile are routed after the verdict (avoiding it
 * when kept); when it leaves, they are routed afresh. */
#include "kube/kube_pod_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"

void check_release_parked(pod *p)
{
    pod_waiter *w = p->parked;
    p->parked = NULL;
    while (w) {
        pod_waiter *next = w->next;
        if (p->fn)
            route_waiter_avoiding(p->fn, w, p);
        else
            route_later(w);
        w = next;
    }
}

static void on_checked(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    p->checking = 0;
    if (pod_api_end(p))
        return;   /* it left meanwhile: its parked calls were routed then */
    const char *why;
    switch (pod_status_recheck(r->ok ? r->obj : NULL, r->not_found, &why)) {
    case POD_RECHECK_GONE:
        stats_for(p->pc, p->image)->evictions++;
        pod_set(p, POD_EV_DELETED_EXTERNALLY);
        pod_fail_fmt(p, 0, "function pod %s was deleted", p->name);
        return;
    case POD_RECHECK_EVICT: {
        stats_for(p->pc, p->image)->evictions++;
        buf m = {0};
        buf_printf(&m, "function pod %s/%s for %s failed a call and is %s%s: evicted",
                   p->pc->o.namespace, p->name, p->image, strcmp(why, "being deleted") ? "in phase " : "",
                   *why ? why : "(none)");
        pod_fail(p, m.data ? m.data : "out of memory", 1);
        buf_free(&m);
        return;
    }
    case POD_RECHECK_KEEP:
        break;
    }
    if (!r->ok && !r->not_found)
        log_warn("pod %s: cannot check it after a failed call (kept): %s", p->name, r->error);
    else
        log_v(1, "pod %s: Running after a failed call; kept", p->name);
    check_release_parked(p);
}

static void check_now(loop *l, void *ctx)
{
    (void)l;
    pod *p = ctx;
    buf err = {0};
    kube_ref ref = {"/api/v1", "pods", p->pc->o.namespace, p->name, NULL};
    if (p->pc->api->get(p->pc->api_ctx, &ref, on_checked, p, &err) == 0) {
        p->checking = 1;
        pod_api_begin(p);
    } else {
        log_warn("pod %s: cannot check it after a failed call (kept): %s", p->name,
                 err.data ? err.data : "out of memory");
        check_release_parked(p);
    }
    buf_free(&err);
}

void check_park(pod *p, pod_waiter *w, const char *why)
{
    w->p = p;
    w->next = p->parked;
    p->parked = w;
    if (p->checking || loop_defer_posted(&p->check_soon))
        return;
    log_info("pod %s for %s failed a call (%s); checking it", p->name, p->image, why);
    /* from the loop: a caller may be inside one of the cache's callbacks */
    loop_defer_init(&p->check_soon, check_now, p);
    loop_defer_post(p->pc->l, &p->check_soon);
}
