/* kube_pod_ready: a pod watched to serving; see kube_pod_cache.h.
 *
 * Each view of the pod (the list that found it, a watch event) is read by
 * pod_status into ready, wait or fail. Ready: --dial=pod serves at its IP;
 * --dial=service first waits (READY_STEP_ENDPOINTS) until the Service's
 * endpoints list the pod. Not Ready yet but with an IP (--dial=pod, with a
 * health hook): the wrapper's own Health/Check, every POD_HEALTH_RETRY_NS,
 * serves it on the first SERVING. */
#include "kube/kube_pod_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kube/pod_template.h"

#define ENDPOINTS_POLL_NS (200LL * 1000000)   /* Porch polls every 100 ms; one GET each */

/* The text of b (freed), or NULL when out of memory. */
static char *take(buf *b)
{
    char *s = b->data ? strdup(b->data) : NULL;
    buf_free(b);
    return s;
}

static int join_addr(char **dst, const char *host)
{
    buf b = {0};
    buf_printf(&b, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, POD_WRAPPER_PORT);
    free(*dst);
    *dst = take(&b);
    return *dst ? 0 : -1;
}

/* Still waiting for its endpoints: it may have failed or left meanwhile. */
static int waits_for_endpoints(const pod *p)
{
    return p->state == POD_WAITING_READY && p->step == READY_STEP_ENDPOINTS && p->ip;
}

/* ---- the Service's endpoints (--dial=service) ------------------------------ */

static void poll_endpoints(loop *l, void *ctx);

static void poll_again(pod *p)
{
    loop_timer_arm(p->pc->l, &p->poll, ENDPOINTS_POLL_NS);
}

static void on_endpoints(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (pod_api_end(p) || !waits_for_endpoints(p))
        return;
    if (!r->ok && !r->not_found) {
        pod_fail(p, r->error, 0);
        return;
    }
    if (r->ok && svc_endpoints_list_ip(p->pc->ep_api, r->obj, p->ip)) {
        log_info("pod %s: listed by the %s of Service %s", p->name,
                 svc_endpoints_api_name(p->pc->ep_api), p->pod_id);
        buf n = {0};
        buf_printf(&n, "%s.%s.svc.cluster.local:%d", p->pod_id, p->pc->o.namespace, POD_WRAPPER_PORT);
        free(p->shown);
        p->shown = take(&n);
        if (!p->shown || join_addr(&p->addr, p->cluster_ip) < 0) {
            pod_fail(p, "out of memory", 0);
            return;
        }
        pod_serve(p);
        return;
    }
    poll_again(p);
}

static void on_service(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (pod_api_end(p) || !waits_for_endpoints(p))
        return;
    if (!r->ok) {
        pod_fail(p, r->error, 0);
        return;
    }
    const char *ip = kube_path_str(r->obj, "spec.clusterIP");
    if (!ip || !*ip || !strcmp(ip, "None")) {
        pod_fail_fmt(p, 0, "Service %s has no ClusterIP to dial; use --dial=pod", p->pod_id);
        return;
    }
    if (pod_set_str(&p->cluster_ip, ip) < 0) {
        pod_fail(p, "out of memory", 0);
        return;
    }
    poll_endpoints(p->pc->l, p);
}

/* The discovery document of discovery.k8s.io: which endpoints to read. */
static void on_discovery(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (pod_api_end(p) || !waits_for_endpoints(p))
        return;
    if (!r->ok && !r->not_found) {
        pod_fail(p, r->error, 0);
        return;
    }
    p->pc->ep_api = svc_endpoints_pick(r->ok ? r->obj : NULL);
    poll_endpoints(p->pc->l, p);
}

/* Service first (its ClusterIP), then (once per cache) which endpoints API
 * the cluster has, then its endpoints until they list the pod. */
static void poll_endpoints(loop *l, void *ctx)
{
    (void)l;
    pod *p = ctx;
    buf err = {0}, q = {0};
    kube_ref ref = {"/api/v1", "services", p->pc->o.namespace, p->pod_id, NULL};
    kube_result_fn *fn = on_service;
    int rc = 0;
    if (p->cluster_ip && p->pc->ep_api == SVC_EP_UNKNOWN) {
        ref = svc_endpoints_discovery_ref;
        fn = on_discovery;
    } else if (p->cluster_ip) {
        rc = svc_endpoints_ref(p->pc->ep_api, p->pc->o.namespace, p->pod_id, &ref, &q);
        fn = on_endpoints;
        if (rc == 0 && !p->said_endpoints_wait++)   /* where a cluster that never fills them waits */
            log_info("pod %s: Ready; waiting for the %s of Service %s to list %s", p->name,
                     svc_endpoints_api_name(p->pc->ep_api), p->pod_id, p->ip);
    }
    const pod_api *api = p->pc->api;
    if (rc == 0 && (ref.name || fn != on_endpoints ? api->get : api->list)(p->pc->api_ctx, &ref, fn,
                                                                           p, &err) == 0)
        pod_api_begin(p);
    else
        pod_fail(p, err.data ? err.data : "out of memory", 0);
    buf_free(&err);
    buf_free(&q);
}

/* ---- early dial: the wrapper's own health ---------------------------------- */

static void health_check(loop *l, void *ctx);

static void on_health(int serving, const char *why, void *ctx)
{
    pod *p = ctx;
    p->health = NULL;
    if (p->state != POD_WAITING_READY)
        return;
    if (strcmp(why, p->health_seen)) {
        log_v(serving ? 1 : 2, "pod %s: wrapper server at %s: %s", p->name, p->addr, why);
        snprintf(p->health_seen, sizeof p->health_seen, "%s", why);
    }
    if (serving) {
        if (pod_set_str(&p->shown, p->addr) < 0) {
            pod_fail(p, "out of memory", 0);
            return;
        }
        pod_serve(p);
        return;
    }
    loop_timer_arm(p->pc->l, &p->health_next, POD_HEALTH_RETRY_NS);
}

static void health_check(loop *l, void *ctx)
{
    pod *p = ctx;
    if (!(p->health = p->pc->o.health->start(l, p->addr, POD_HEALTH_TIMEOUT_NS, on_health, p)))
        log_warn("pod %s: cannot check its wrapper server at %s; waiting for Ready", p->name, p->addr);
}

/* The pod has an IP and is not Ready yet: check its wrapper from the loop
 * (this runs inside the watch's callback) unless a check is under way. */
static void health_watch(pod *p, const char *ip)
{
    if (!p->pc->o.health || p->pc->o.dial != POD_DIAL_POD || p->health ||
        loop_timer_armed(&p->health_next) || loop_defer_posted(&p->health_now))
        return;
    if (pod_set_str(&p->ip, ip) < 0 || join_addr(&p->addr, ip) < 0) {
        pod_fail(p, "out of memory", 0);
        return;
    }
    loop_defer_post(p->pc->l, &p->health_now);
}

static void on_ready(pod *p, const char *ip)
{
    pod_health_stop(p);
    p->ready = 1;
    if (pod_set_str(&p->ip, ip) < 0) {
        pod_fail(p, "out of memory", 0);
        return;
    }
    if (p->pc->o.dial == POD_DIAL_SERVICE) {
        p->step = READY_STEP_ENDPOINTS;
        /* from the loop: this may run inside the watch's data callback */
        loop_defer_post(p->pc->l, &p->poll_now);
        return;
    }
    if (join_addr(&p->addr, ip) < 0 || pod_set_str(&p->shown, p->addr) < 0) {
        pod_fail(p, "out of memory", 0);
        return;
    }
    pod_serve(p);
}

/* ---- what the pod is now ---------------------------------------------------- */

/* A new view of the pod (list, watch event, adoption). */
void pod_observe(pod *p, const json *obj)
{
    pod_status st;
    pod_status_read(obj, &st);
    buf d = {0};
    pod_status_describe(obj, &st, &d);
    if (d.data && strcmp(d.data, p->desc)) {
        log_info("pod %s: %s", p->name, d.data);
        snprintf(p->desc, sizeof p->desc, "%s", d.data);
    }
    buf_free(&d);
    if (!pod_in_table(p))
        return;
    const char *node = kube_path_str(obj, "spec.nodeName");
    if (node && (!p->node || strcmp(node, p->node)) && pod_set_str(&p->node, node) < 0) {
        pod_fail(p, "out of memory", 0);
        return;
    }
    int waiting = p->state == POD_WAITING_READY && p->step == READY_STEP_STATUS;
    switch (st.verdict) {
    case POD_VERDICT_READY:
        if (waiting)
            on_ready(p, st.ip);
        else if (p->state == POD_SERVING)
            p->ready = 1;
        break;
    case POD_VERDICT_WAIT:
        /* served on its health before Ready: not Ready *yet* is no news */
        if (p->state == POD_SERVING && p->ready)
            pod_set(p, POD_EV_NOT_READY);
        else if (waiting && st.ip && *st.ip)
            health_watch(p, st.ip);
        break;
    case POD_VERDICT_FAIL:
        if (p->state == POD_WAITING_READY)
            pod_fail_fast(p, &st);
        else if (p->state == POD_SERVING)
            pod_fail(p, p->desc, 1);
        break;
    case POD_VERDICT_TERMINATING:
        if (p->state == POD_WAITING_READY || p->state == POD_SERVING) {
            pod_set(p, POD_EV_DELETED_EXTERNALLY);
            pod_fail_fmt(p, 0, "function pod %s is being deleted", p->name);
        }
        break;
    }
}

/* ---- watch ------------------------------------------------------------------ */

static void gone(pod *p)
{
    if (!pod_in_table(p))
        return;
    pod_set(p, POD_EV_DELETED_EXTERNALLY);
    pod_fail_fmt(p, 0, "function pod %s was deleted", p->name);
}

static void w_list(const json *list, int relisted, void *ctx)
{
    (void)relisted;
    pod *p = ctx;
    const json *items = json_get(list, "items");
    if (items && items->type == JSON_ARRAY && items->len)
        pod_observe(p, items->items[0]);
    else
        gone(p);
}

static void w_event(kube_event_type type, const json *object, void *ctx)
{
    pod *p = ctx;
    if (type == KUBE_DELETED)
        gone(p);
    else
        pod_observe(p, object);
}

static void w_error(const char *message, int fatal, void *ctx)
{
    pod *p = ctx;
    if (fatal)
        pod_fail(p, message, 0);
    else
        log_warn("watching pod %s: %s", p->name, message);
}

void pod_watch(pod *p)
{
    static const kube_watch_fns fns = {w_list, w_event, w_error};
    buf q = {0}, err = {0};
    buf_printf(&q, "fieldSelector=metadata.name%%3D%s", p->name);
    kube_ref ref = {"/api/v1", "pods", p->pc->o.namespace, NULL, q.data};
    if (!q.data || !(p->watch = p->pc->api->watch_start(p->pc->api_ctx, &ref, &fns, p, &err)))
        pod_fail(p, err.data ? err.data : "out of memory", 0);
    buf_free(&q);
    buf_free(&err);
}

void pod_ready_init(pod *p)
{
    loop_timer_init(&p->poll, poll_endpoints, p);
    loop_defer_init(&p->poll_now, poll_endpoints, p);
    loop_timer_init(&p->health_next, health_check, p);
    loop_defer_init(&p->health_now, health_check, p);
}
