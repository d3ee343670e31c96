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

static int64_t ttl_of(const pod_cache *pc, const pod *p)
{
    int64_t own = pc->o.ttl_for ? pc->o.ttl_for(p->image, pc->o.config_ctx) : 0;
    return own > 0 ? own : pc->o.ttl_ns;
}

static void reclaim(pod *p, int64_t ttl)
{
    log_info("pod %s for %s: no call for %.0f s (time to live %.0f s): deleting it and its Service",
             p->name, p->image, (double)(loop_now_ns() - p->last_used_ns) / 1e9, (double)ttl / 1e9);
    pod_set(p, POD_EV_TTL_EXPIRED);
    stats_for(p->pc, p->image)->reclaimed++;
    p->delete_service = 1;
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
    if (kube_patch(p->pc->c, &ref, patch, strlen(patch), on_marked, p, &err) == 0) {
        pod_api_begin(p);
        p->marked_ns = p->last_used_ns;
    }
    buf_free(&err);
}

void reclaim_scan(loop *l, void *ctx)
{
    pod_cache *pc = ctx;
    int64_t now = loop_now_ns();
    for (fn_entry *f = pc->fns, *next_fn; f; f = next_fn) {
        next_fn = f->next;   /* f goes with its last pod */
        for (pod *p = f->pods, *next; p; p = next) {
            next = p->next;
            int64_t ttl = ttl_of(pc, p);
            if (p->state != POD_SERVING || !p->name)
                continue;
            if (!p->calls && ttl > 0 && now - p->last_used_ns >= ttl)
                reclaim(p, ttl);
            else if (p->last_used_ns != p->marked_ns)
                mark_last_call(p, now);
        }
    }
    if (!(pc->scan = loop_timer_add(l, pc->o.scan_ns, reclaim_scan, pc)))
        log_warn("out of memory: idle function pods are no longer reclaimed");
}
