/* kube_pod_reclaim: idle pods deleted, as Porch's runner reclaims them;
 * see kube_pod_cache.h.
 *
 * Every scan_ns: a serving pod with no call running and none for its time
 * to live (its image's own, else the cache's) is deleted with its Service;
 * each pod counts its own idle time. The others get their last call's time
 * written on them (fn.kpt.dev/last-call) when it moved, for `pod list`. */
#include "kube/kube_pod_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "kube/pod_template.h"

int64_t reclaim_ttl(const pod_cache *pc, const char *image)
{
    int64_t own = pc->o.ttl_for ? pc->o.ttl_for(image, pc->o.config_ctx) : 0;
    return own > 0 ? own : pc->o.ttl_ns;
}

static void reclaim(pod *p, int64_t ttl, int delete_service)
{
    log_info("pod %s for %s: no call for %.0f s (time to live %.0f s): deleting it and its Service",
             p->name, p->image, (double)(pod_now(p->pc) - p->last_used_ns) / 1e9,
             (double)ttl / 1e9);
    pod_set(p, POD_EV_TTL_EXPIRED);
    stats_for(p->pc, p->image)->reclaimed++;
    p->delete_service = delete_service;
    if (!delete_service)
        log_info("pod %s: its Service %s stays: another pod selects it", p->name, p->pod_id);
    pod_delete(p);
    pod_leave(p, "its pod was reclaimed");
}

static void on_marked(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (!r->ok && !r->not_found && !p->mark_failed) {
        p->mark_failed = 1;
        log_warn("pod %s: cannot write its last call's time (" POD_LAST_CALL_ANNOTATION
                 "; `pod list` shows its idle time from it): %s", p->name ? p->name : "?", r->error);
    }
    pod_api_end(p);
}

static void mark_last_call(pod *p, int64_t now)
{
    char when[32], patch[128];
    time_t t = time(NULL) - (time_t)((now - p->last_used_ns) / 1000000000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return;
    snprintf(patch, sizeof patch, "{\"metadata\":{\"annotations\":{\"" POD_LAST_CALL_ANNOTATION
             "\":\"%s\"}}}", when);
    kube_ref ref = {"/api/v1", "pods", p->pc->o.namespace, p->name, NULL};
    buf err = {0};
    if (p->pc->api->patch(p->pc->api_ctx, &ref, patch, strlen(patch), on_marked, p, &err) == 0) {
        pod_api_begin(p);
        p->marked_ns = p->last_used_ns;
    }
    buf_free(&err);
}

static const pod_owner_pod *listed(const owner_listing *ls, const char *name)
{
    for (int i = 0; i < ls->n; i++)
        if (ls->pods[i].name && !strcmp(ls->pods[i].name, name))
            return &ls->pods[i];
    return NULL;
}

/* A pod the listing shows another replica owns now (this one's Lease
 * lapsed and it was claimed): no longer this replica's to call or delete. */
static int taken_over(pod *p, const owner_listing *ls)
{
    const pod_owner_pod *seen = listed(ls, p->name);
    if (!seen || !seen->owner || !strcmp(seen->owner, p->pc->o.owner))
        return 0;
    log_warn("pod %s for %s: now owned by %s (this replica's Lease had lapsed): dropped from the "
             "cache, not deleted", p->name, p->image, seen->owner);
    pod_set(p, POD_EV_FAILED);
    pod_set(p, POD_EV_RELEASED);
    pod_leave(p, "another replica took it over");
    return 1;
}

void reclaim_idle(pod_cache *pc, const owner_listing *ls)
{
    int64_t now = pod_now(pc);
    for (fn_entry *f = pc->fns, *next_fn; f; f = next_fn) {
        next_fn = f->next;   /* f goes with its last pod */
        int serving = 0, keep = warm_min(pc, f->image);   /* warm pods: exempt */
        for (pod *p = f->pods; p; p = p->next)
            serving += p->state == POD_SERVING;
        for (pod *p = f->pods, *next; p; p = next) {
            next = p->next;
            int64_t ttl = reclaim_ttl(pc, p->image);
            if (p->state != POD_SERVING || !p->name || (ls && taken_over(p, ls)))
                continue;
            if (p->stale) {   /* normally gone at its last call's end already */
                template_retire_if_done(p);
                continue;
            }
            if (!p->calls && ttl > 0 && now - p->last_used_ns >= ttl && serving > keep) {
                serving--;
                reclaim(p, ttl, !ls || !pod_owner_service_in_use(ls->pods, ls->n, p->pod_id, p->name));
            } else if (p->last_used_ns != p->marked_ns)
                mark_last_call(p, now);
        }
    }
}

void reclaim_rearm(pod_cache *pc)
{
    loop_timer_arm(pc->l, &pc->scan, pc->o.scan_ns);
}

/* With replicas, the scan lists the namespace first (kube_pod_owner). */
void reclaim_scan(loop *l, void *ctx)
{
    (void)l;
    pod_cache *pc = ctx;
    warm_ensure(pc);
    if (pc->o.owner) {
        owner_scan_start(pc);
        return;
    }
    reclaim_idle(pc, NULL);
    reclaim_rearm(pc);
}
