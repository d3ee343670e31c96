/* kube_pod_cache: find or create, watch, dial function pods; see
 * kube_pod_cache.h.
 *
 * An entry goes: registry lookup (on the loop, sharing the API client's curl
 * driver) ->
 * list by podId label -> adopt, or create Service + Pod -> watch the pod by
 * name -> serving (answer the waiters) or failed (fetch the failing
 * container's log, answer the waiters with the error, delete the pod).
 * Every API call made for an entry counts in `inflight`; a dropped entry
 * leaves the map at once and is freed once its calls, its watch and its
 * lookup have all let go of it. */
#include "kube/kube_pod_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "kube/kube_watch.h"
#include "kube/pod_id.h"
#include "kube/pod_status.h"
#include "kube/pod_template.h"
#include "kube/svc_endpoints.h"

#define ENDPOINTS_POLL_NS (200LL * 1000000)   /* Porch polls every 100 ms; one GET each */

typedef struct entry entry;

struct pod_waiter {
    pod_cache *pc;
    entry *e;                  /* once attached */
    char *image;
    pod_answer_fn *fn;
    void *ctx;
    loop_timer *attach;        /* pending: attach from the loop */
    pod_waiter *next;
};

struct entry {
    pod_cache *pc;
    entry *next;
    char *image;
    pod_state state;
    char pod_id[POD_ID_MAX + 1];
    char *pod, *uid, *ip, *cluster_ip, *addr, *name;
    int created;
    int64_t started_ns, last_used_ns;
    pod_waiter *waiters;
    registry_op *lk;           /* the registry lookup in flight */
    kube_watch *watch;
    loop_timer *deadline, *poll, *unwatch;
    int inflight;
    int dead;
    registry_result meta;
    int have_meta;
    char desc[512];            /* the pod's last status line, for logs and the timeout */
    char fail_container[254];
    int fail_previous;
    int said_endpoints_wait;   /* "waiting for the endpoints" logged */
    void *health;              /* the wrapper's Health/Check in flight (hook's op) */
    loop_timer *health_next;   /* the next check */
    char health_seen[300];     /* its last answer, for the timeout's message */
    int ready;                 /* the pod was seen Ready (else served on health) */
    int calls;                 /* running through it (pod_cache_call_begin) */
    int64_t marked_ns;         /* last_used_ns as last written to the pod (LAST_CALL) */
    int mark_failed;           /* a failed write was logged once */
    int delete_service;        /* delete_now removes the Service too (reclaimed) */
};

struct pod_cache {
    loop *l;
    kube_client *c;
    pod_cache_opts o;
    entry *entries;
    pod_waiter *pending;       /* waiters not attached yet */
    int inflight;              /* API calls of all entries, dropped ones included */
    svc_endpoints_api ep_api;  /* how Services' endpoints are read (asked once) */
    struct {
        pod_drop_fn *fn;
        void *ctx;
    } drop_hooks[POD_DROP_HOOKS];
    loop_timer *scan;          /* the next look for idle pods */
};

static void entry_start(entry *e);
static void entry_fail(entry *e, const char *message, int delete_pod);
static void start_watch(entry *e);
static void observe(entry *e, const json *pod);

/* ---- entries ------------------------------------------------------------- */

static entry *find(pod_cache *pc, const char *image)
{
    for (entry *e = pc->entries; e; e = e->next)
        if (!strcmp(e->image, image))
            return e;
    return NULL;
}

static void entry_free(entry *e)
{
    free(e->image);
    free(e->pod);
    free(e->uid);
    free(e->ip);
    free(e->cluster_ip);
    free(e->addr);
    free(e->name);
    if (e->have_meta)
        registry_result_free(&e->meta);
    free(e);
}

static void health_stop(entry *e)
{
    pod_cache *pc = e->pc;
    if (e->health)
        pc->o.health->cancel(e->health);
    e->health = NULL;
    loop_timer_cancel(pc->l, e->health_next);
    e->health_next = NULL;
}

static void maybe_free(entry *e)
{
    if (e->dead && !e->inflight && !e->watch && !e->lk && !e->unwatch)
        entry_free(e);
}

/* One of e's API calls has come back. 1 when e was dropped meanwhile: the
 * answer is not wanted, and e goes once nothing else holds it. */
static int call_back_to_dead(entry *e)
{
    e->inflight--, e->pc->inflight--;
    if (!e->dead)
        return 0;
    maybe_free(e);
    return 1;
}

static void unwatch_now(loop *l, void *ctx)
{
    (void)l;
    entry *e = ctx;
    e->unwatch = NULL;
    kube_watch_stop(e->watch);
    e->watch = NULL;
    maybe_free(e);
}

/* Stops the watch from the loop: kube_watch_stop may not run inside the
 * watch's own callbacks, where most decisions are taken. */
static void unwatch_later(entry *e)
{
    if (e->watch && !e->unwatch && !(e->unwatch = loop_timer_add(e->pc->l, 0, unwatch_now, e)))
        log_warn("pod %s: out of memory stopping its watch", e->pod ? e->pod : e->image);
}

/* Takes e out of the cache; it is freed once nothing refers to it. */
static void entry_drop(entry *e)
{
    pod_cache *pc = e->pc;
    for (entry **p = &pc->entries; *p; p = &(*p)->next)
        if (*p == e) {
            *p = e->next;
            break;
        }
    e->dead = 1;
    health_stop(e);
    for (int i = 0; e->pod && i < POD_DROP_HOOKS; i++)
        if (pc->drop_hooks[i].fn)
            pc->drop_hooks[i].fn(e->image, e->pod, pc->drop_hooks[i].ctx);
    loop_timer_cancel(pc->l, e->deadline);
    loop_timer_cancel(pc->l, e->poll);
    e->deadline = e->poll = NULL;
    if (e->lk) {   /* never set inside the lookup's own done (cleared first) */
        registry_lookup_cancel(e->lk);
        e->lk = NULL;
    }
    unwatch_later(e);
    maybe_free(e);
}

/* Answers every waiter of e (error NULL: with e's address). */
static void answer_all(entry *e, const char *error)
{
    pod_answer a = {.error = error, .image = e->image, .pod = e->pod, .uid = e->uid,
                    .addr = e->addr, .name = e->name, .created = e->created, .ready = e->ready,
                    .waited_ns = loop_now_ns() - e->started_ns};
    pod_waiter *w = e->waiters;
    e->waiters = NULL;
    while (w) {
        pod_waiter *next = w->next;
        w->fn(&a, w->ctx);
        free(w->image);
        free(w);
        w = next;
    }
}

static void apply(entry *e, pod_event ev)
{
    pod_state_apply(e->pod ? e->pod : e->pod_id[0] ? e->pod_id : e->image, &e->state, ev);
}

/* ---- the end of an entry's wait ------------------------------------------ */

static void serve(entry *e)
{
    health_stop(e);
    apply(e, POD_EV_READY);
    loop_timer_cancel(e->pc->l, e->deadline);
    e->deadline = NULL;
    e->last_used_ns = loop_now_ns();
    log_info("pod %s serves %s at %s (%s, %.2f s%s)", e->pod, e->image, e->name,
             e->created ? "created" : "adopted", (double)(loop_now_ns() - e->started_ns) / 1e9,
             e->ready ? "" : "; its wrapper answered SERVING, the pod is not Ready yet");
    answer_all(e, NULL);
    if (!e->pc->o.keep_watching)
        unwatch_later(e);
}

static void on_pod_deleted(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    e->inflight--, e->pc->inflight--;
    if (r->ok || r->not_found)
        log_info("pod %s deleted", kube_path_str(r->obj, "metadata.name") ?
                 kube_path_str(r->obj, "metadata.name") : "?");
    else
        log_warn("deleting a failed function pod: %s", r->error);
    maybe_free(e);
}

static void on_service_deleted(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    e->inflight--, e->pc->inflight--;
    if (!r->ok && !r->not_found)
        log_warn("deleting the Service %s of a reclaimed pod: %s", e->pod_id, r->error);
    maybe_free(e);
}

static void delete_now(loop *l, void *ctx)
{
    (void)l;
    entry *e = ctx;   /* held by inflight */
    buf err = {0};
    kube_ref ref = {"/api/v1", "pods", e->pc->o.namespace, e->pod, "gracePeriodSeconds=0"};
    kube_ref svc = {"/api/v1", "services", e->pc->o.namespace, e->pod_id, NULL};
    if (e->delete_service) {
        e->inflight++, e->pc->inflight++;
        if (kube_delete(e->pc->c, &svc, on_service_deleted, e, &err) < 0) {
            log_warn("deleting Service %s: %s", e->pod_id, err.data ? err.data : "out of memory");
            e->inflight--, e->pc->inflight--;
            buf_reset(&err);
        }
    }
    if (kube_delete(e->pc->c, &ref, on_pod_deleted, e, &err) < 0) {
        log_warn("deleting pod %s: %s", e->pod, err.data ? err.data : "out of memory");
        e->inflight--, e->pc->inflight--;
        maybe_free(e);
    }
    buf_free(&err);
}

/* Answers the waiters with message, drops the entry; delete_pod: the pod
 * will not serve (fail fast), delete it so the next call starts afresh. */
static void entry_fail(entry *e, const char *message, int delete_pod)
{
    if (e->dead)
        return;
    log_error("%s", message);
    if (e->state != POD_FAILED)
        apply(e, POD_EV_FAILED);
    /* Held before the answer (a waiter may stop the loop when answered) and
     * sent from the loop: this may run inside a watch's data callback,
     * where no request can start. */
    if (delete_pod && e->pod) {
        e->inflight++, e->pc->inflight++;
        if (loop_timer_add(e->pc->l, 0, delete_now, e))
            apply(e, POD_EV_DELETE_SENT);
        else
            e->inflight--, e->pc->inflight--;
    }
    answer_all(e, message);
    entry_drop(e);
}

static void fail_fmt(entry *e, int delete_pod, const char *fmt, const char *arg)
{
    buf m = {0};
    buf_printf(&m, fmt, arg);
    entry_fail(e, m.data ? m.data : "out of memory", delete_pod);
    buf_free(&m);
}

static void on_deadline(loop *l, void *ctx)
{
    (void)l;
    entry *e = ctx;
    e->deadline = NULL;
    buf m = {0};
    buf_printf(&m, "function pod %s/%s for %s not ready after %.0f s (last seen: %s%s%s); inspect "
               "the pod and its Service in namespace \"%s\"", e->pc->o.namespace,
               e->pod ? e->pod : e->pod_id, e->image, (double)e->pc->o.ready_timeout_ns / 1e9,
               e->desc[0] ? e->desc : "no status yet", e->health_seen[0] ? "; the wrapper server: " : "",
               e->health_seen, e->pc->o.namespace);
    entry_fail(e, m.data ? m.data : "out of memory", 0);
    buf_free(&m);
}

/* ---- fail fast: the container's last words -------------------------------- */

static void on_log(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    if (call_back_to_dead(e))
        return;
    buf m = {0};
    buf_printf(&m, "function pod %s/%s for %s will not serve: %s", e->pc->o.namespace, e->pod,
               e->image, e->desc);
    if (r->ok && r->text_len) {
        buf_printf(&m, "; last log lines of container \"%s\"%s:\n", e->fail_container,
                   e->fail_previous ? " (previous run)" : "");
        buf_append(&m, r->text, r->text_len);
        while (m.len && m.data[m.len - 1] == '\n')
            m.data[--m.len] = '\0';
    } else if (r->ok) {
        buf_printf(&m, "; container \"%s\" logged nothing", e->fail_container);
    } else {
        buf_printf(&m, "; its log could not be read: %s", r->error);
    }
    entry_fail(e, m.data ? m.data : "out of memory", 1);
    buf_free(&m);
}

static void fetch_log(loop *l, void *ctx)
{
    (void)l;
    entry *e = ctx;
    e->poll = NULL;
    buf q = {0}, err = {0};
    buf_printf(&q, "container=%s&tailLines=%d%s", e->fail_container, POD_LOG_TAIL_LINES,
               e->fail_previous ? "&previous=true" : "");
    char path[300];
    snprintf(path, sizeof path, "%s/log", e->pod);
    kube_ref ref = {"/api/v1", "pods", e->pc->o.namespace, path, q.data};
    e->inflight++, e->pc->inflight++;
    if (!q.data || kube_get_text(e->pc->c, &ref, on_log, e, &err) < 0) {
        kube_result r = {.error = err.data ? err.data : "out of memory"};
        on_log(&r, e);
    }
    buf_free(&q);
    buf_free(&err);
}

static void fail_fast(entry *e, const pod_status *st)
{
    snprintf(e->fail_container, sizeof e->fail_container, "%s",
             st->container ? st->container : "function");
    e->fail_previous = st->previous;
    /* a container that never ran (image pull, configuration) has no log */
    if (st->exit_code < 0 && !st->previous) {
        buf m = {0};
        buf_printf(&m, "function pod %s/%s for %s will not serve: %s", e->pc->o.namespace, e->pod,
                   e->image, e->desc);
        entry_fail(e, m.data ? m.data : "out of memory", 1);
        buf_free(&m);
        return;
    }
    apply(e, POD_EV_FAILED);   /* failed now; the log only adds to the message */
    /* from the loop: this runs inside the watch's data callback */
    if (!(e->poll = loop_timer_add(e->pc->l, 0, fetch_log, e)))
        entry_fail(e, "out of memory fetching the failed container's log", 1);
}

/* ---- readiness ------------------------------------------------------------ */

/* The text of b (freed), or NULL when out of memory. */
static char *take(buf *b)
{
    char *s = b->data ? strdup(b->data) : NULL;
    buf_free(b);
    return s;
}

static int set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? strdup(s) : NULL;
    return !s || *dst ? 0 : -1;
}

static int join_addr(char **dst, const char *host, int v6)
{
    buf b = {0};
    buf_printf(&b, v6 ? "[%s]:%d" : "%s:%d", host, POD_WRAPPER_PORT);
    free(*dst);
    *dst = take(&b);
    return *dst ? 0 : -1;
}

static void poll_endpoints(loop *l, void *ctx);

static void poll_again(entry *e)
{
    if (!(e->poll = loop_timer_add(e->pc->l, ENDPOINTS_POLL_NS, poll_endpoints, e)))
        entry_fail(e, "out of memory waiting for the Service's endpoints", 0);
}

static void on_endpoints(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    e->inflight--, e->pc->inflight--;
    if (e->dead || e->state != POD_WAITING_READY || !e->ip)
        return maybe_free(e);
    if (!r->ok && !r->not_found)
        return entry_fail(e, r->error, 0);
    if (r->ok && svc_endpoints_list_ip(e->pc->ep_api, r->obj, e->ip)) {
        log_info("pod %s: listed by the %s of Service %s", e->pod,
                 svc_endpoints_api_name(e->pc->ep_api), e->pod_id);
        buf n = {0};
        buf_printf(&n, "%s.%s.svc.cluster.local:%d", e->pod_id, e->pc->o.namespace, POD_WRAPPER_PORT);
        free(e->name);
        e->name = take(&n);
        if (!e->name || join_addr(&e->addr, e->cluster_ip, strchr(e->cluster_ip, ':') != NULL) < 0)
            return entry_fail(e, "out of memory", 0);
        return serve(e);
    }
    poll_again(e);
}

static void on_service(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    e->inflight--, e->pc->inflight--;
    if (e->dead || e->state != POD_WAITING_READY)
        return maybe_free(e);
    if (!r->ok)
        return entry_fail(e, r->error, 0);
    const char *ip = kube_path_str(r->obj, "spec.clusterIP");
    if (!ip || !*ip || !strcmp(ip, "None")) {
        fail_fmt(e, 0, "Service %s has no ClusterIP to dial; use --dial=pod", e->pod_id);
        return;
    }
    if (set_str(&e->cluster_ip, ip) < 0)
        return entry_fail(e, "out of memory", 0);
    poll_endpoints(e->pc->l, e);
}

/* The discovery document of discovery.k8s.io: which endpoints to read. */
static void on_discovery(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    e->inflight--, e->pc->inflight--;
    if (e->dead || e->state != POD_WAITING_READY)
        return maybe_free(e);
    if (!r->ok && !r->not_found)
        return entry_fail(e, r->error, 0);
    e->pc->ep_api = svc_endpoints_pick(r->ok ? r->obj : NULL);
    poll_endpoints(e->pc->l, e);
}

/* Service first (its ClusterIP), then (once per cache) which endpoints API
 * the cluster has, then its endpoints until they list the pod. */
static void poll_endpoints(loop *l, void *ctx)
{
    (void)l;
    entry *e = ctx;
    e->poll = NULL;
    buf err = {0}, q = {0};
    kube_ref ref = {"/api/v1", "services", e->pc->o.namespace, e->pod_id, NULL};
    kube_result_fn *fn = on_service;
    int rc = 0;
    if (e->cluster_ip && e->pc->ep_api == SVC_EP_UNKNOWN) {
        ref = svc_endpoints_discovery_ref;
        fn = on_discovery;
    } else if (e->cluster_ip) {
        rc = svc_endpoints_ref(e->pc->ep_api, e->pc->o.namespace, e->pod_id, &ref, &q);
        fn = on_endpoints;
        if (rc == 0 && !e->said_endpoints_wait++)   /* where a cluster that never fills them waits */
            log_info("pod %s: Ready; waiting for the %s of Service %s to list %s", e->pod,
                     svc_endpoints_api_name(e->pc->ep_api), e->pod_id, e->ip);
    }
    if (rc == 0 && (ref.name || fn != on_endpoints ? kube_get : kube_list)(e->pc->c, &ref, fn, e, &err) == 0)
        e->inflight++, e->pc->inflight++;
    else
        entry_fail(e, err.data ? err.data : "out of memory", 0);
    buf_free(&err);
    buf_free(&q);
}

/* ---- early dial: the wrapper's own health ---------------------------------- */

static void health_check(loop *l, void *ctx);

static void on_health(int serving, const char *why, void *ctx)
{
    entry *e = ctx;
    e->health = NULL;
    if (e->dead || e->state != POD_WAITING_READY)
        return;
    if (strcmp(why, e->health_seen)) {
        log_v(serving ? 1 : 2, "pod %s: wrapper server at %s: %s", e->pod, e->addr, why);
        snprintf(e->health_seen, sizeof e->health_seen, "%s", why);
    }
    if (serving) {
        if (set_str(&e->name, e->addr) < 0)
            return entry_fail(e, "out of memory", 0);
        return serve(e);
    }
    if (!(e->health_next = loop_timer_add(e->pc->l, POD_HEALTH_RETRY_NS, health_check, e)))
        log_warn("pod %s: out of memory; waiting for Ready", e->pod);
}

static void health_check(loop *l, void *ctx)
{
    entry *e = ctx;
    e->health_next = NULL;
    if (!(e->health = e->pc->o.health->start(l, e->addr, POD_HEALTH_TIMEOUT_NS, on_health, e)))
        log_warn("pod %s: cannot check its wrapper server at %s; waiting for Ready", e->pod, e->addr);
}

/* The pod has an IP and is not Ready yet: check its wrapper from the loop
 * (this runs inside the watch's callback) unless a check is under way. */
static void health_watch(entry *e, const char *ip)
{
    if (!e->pc->o.health || e->pc->o.dial != POD_DIAL_POD || e->health || e->health_next)
        return;
    if (set_str(&e->ip, ip) < 0 || join_addr(&e->addr, ip, strchr(ip, ':') != NULL) < 0)
        return entry_fail(e, "out of memory", 0);
    if (!(e->health_next = loop_timer_add(e->pc->l, 0, health_check, e)))
        log_warn("pod %s: out of memory; waiting for Ready", e->pod);
}

static void on_ready(entry *e, const char *ip)
{
    health_stop(e);
    e->ready = 1;
    if (set_str(&e->ip, ip) < 0)
        return entry_fail(e, "out of memory", 0);
    if (e->pc->o.dial == POD_DIAL_SERVICE) {
        /* from the loop: this may run inside the watch's data callback */
        if (!(e->poll = loop_timer_add(e->pc->l, 0, poll_endpoints, e)))
            entry_fail(e, "out of memory waiting for the Service's endpoints", 0);
        return;
    }
    if (join_addr(&e->addr, ip, strchr(ip, ':') != NULL) < 0 || set_str(&e->name, e->addr) < 0)
        return entry_fail(e, "out of memory", 0);
    serve(e);
}

/* A new view of the pod (list, watch event, adoption). */
static void observe(entry *e, const json *pod)
{
    pod_status st;
    pod_status_read(pod, &st);
    buf d = {0};
    pod_status_describe(pod, &st, &d);
    if (d.data && strcmp(d.data, e->desc)) {
        log_info("pod %s: %s", e->pod, d.data);
        snprintf(e->desc, sizeof e->desc, "%s", d.data);
    }
    buf_free(&d);
    if (e->dead)
        return;
    int waiting = e->state == POD_WAITING_READY && !e->poll && !e->inflight;
    switch (st.verdict) {
    case POD_VERDICT_READY:
        if (waiting)
            on_ready(e, st.ip);
        else if (e->state == POD_SERVING)
            e->ready = 1;
        break;
    case POD_VERDICT_WAIT:
        /* served on its health before Ready: not Ready *yet* is no news */
        if (e->state == POD_SERVING && e->ready)
            apply(e, POD_EV_NOT_READY);
        else if (waiting && st.ip && *st.ip)
            health_watch(e, st.ip);
        break;
    case POD_VERDICT_FAIL:
        if (e->state == POD_WAITING_READY)
            fail_fast(e, &st);
        else if (e->state == POD_SERVING)
            entry_fail(e, e->desc, 1);
        break;
    case POD_VERDICT_TERMINATING:
        if (e->state == POD_WAITING_READY || e->state == POD_SERVING) {
            apply(e, POD_EV_DELETED_EXTERNALLY);
            fail_fmt(e, 0, "function pod %s is being deleted", e->pod);
        }
        break;
    }
}

/* ---- watch ------------------------------------------------------------------ */

static void gone(entry *e)
{
    if (e->dead)
        return;
    apply(e, POD_EV_DELETED_EXTERNALLY);
    fail_fmt(e, 0, "function pod %s was deleted", e->pod);
}

static void w_list(const json *list, int relisted, void *ctx)
{
    (void)relisted;
    entry *e = ctx;
    const json *items = json_get(list, "items");
    if (items && items->type == JSON_ARRAY && items->len)
        observe(e, items->items[0]);
    else
        gone(e);
}

static void w_event(kube_event_type type, const json *object, void *ctx)
{
    entry *e = ctx;
    if (type == KUBE_DELETED)
        gone(e);
    else
        observe(e, object);
}

static void w_error(const char *message, int fatal, void *ctx)
{
    entry *e = ctx;
    if (fatal)
        entry_fail(e, message, 0);
    else
        log_warn("watching pod %s: %s", e->pod, message);
}

static void start_watch(entry *e)
{
    static const kube_watch_fns fns = {w_list, w_event, w_error};
    buf q = {0}, err = {0};
    buf_printf(&q, "fieldSelector=metadata.name%%3D%s", e->pod);
    kube_ref ref = {"/api/v1", "pods", e->pc->o.namespace, NULL, q.data};
    if (!q.data || !(e->watch = kube_watch_start(e->pc->c, &ref, &fns, e, &err)))
        entry_fail(e, err.data ? err.data : "out of memory", 0);
    buf_free(&q);
    buf_free(&err);
}

/* ---- create or adopt -------------------------------------------------------- */

static void on_pod_created(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    if (call_back_to_dead(e))
        return;
    if (!r->ok)
        return entry_fail(e, r->error, 0);
    if (set_str(&e->pod, kube_path_str(r->obj, "metadata.name")) < 0 || !e->pod ||
        set_str(&e->uid, kube_path_str(r->obj, "metadata.uid")) < 0)
        return entry_fail(e, "the API server's answer to the pod's create has no name", 0);
    e->created = 1;
    log_info("pod %s created for %s (podId %s)", e->pod, e->image, e->pod_id);
    apply(e, POD_EV_CREATED);
    start_watch(e);
}

static void on_service_created(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    if (call_back_to_dead(e))
        return;
    if (!r->ok && !r->already_exists)
        entry_fail(e, r->error, 0);
}

static int create_one(entry *e, int which, const char *resource, kube_result_fn *fn, buf *err)
{
    const pod_cache_opts *o = &e->pc->o;
    pod_template_opts t = {
        .pod_id = e->pod_id, .namespace = o->namespace, .image = e->image,
        .wrapper_image = o->wrapper_image, .entrypoint = (const char *const *)e->meta.entrypoint,
        .n_entrypoint = e->meta.n_entrypoint, .max_request_body_size = o->max_request_body_size,
        .template_version = POD_DEFAULT_TEMPLATE_VERSION, .probe = POD_PROBE_EXEC,
        .escape_dollar = 1,
    };
    buf yaml = {0};
    char why[256];
    if (pod_template_render(&t, which, &yaml, why, sizeof why) < 0) {
        buf_printf(err, "cannot render the function pod for %s: %s", e->image, why);
        return -1;
    }
    kube_ref ref = {"/api/v1", resource, o->namespace, NULL, NULL};
    int rc = kube_create(e->pc->c, &ref, "application/yaml", yaml.data, yaml.len, fn, e, err);
    buf_free(&yaml);
    if (rc == 0)
        e->inflight++, e->pc->inflight++;
    return rc;
}

static void create(entry *e)
{
    buf err = {0};
    apply(e, POD_EV_CREATE_SENT);
    if (create_one(e, POD_TEMPLATE_SERVICE, "services", on_service_created, &err) < 0 ||
        create_one(e, POD_TEMPLATE_POD, "pods", on_pod_created, &err) < 0)
        entry_fail(e, err.data ? err.data : "out of memory", 0);
    buf_free(&err);
}

static void adopt(entry *e, const json *pod)
{
    if (set_str(&e->pod, kube_path_str(pod, "metadata.name")) < 0 ||
        set_str(&e->uid, kube_path_str(pod, "metadata.uid")) < 0)
        return entry_fail(e, "out of memory", 0);
    e->state = POD_WAITING_READY;   /* pod_state: an adopted pod starts here */
    log_info("pod %s: adopted for %s (podId %s)", e->pod, e->image, e->pod_id);
    observe(e, pod);
    if (!e->dead && e->state == POD_WAITING_READY && !e->poll && !e->inflight)
        start_watch(e);
}

/* A pod this cache would have made: Porch's template version, and our
 * wrapper image in its init container. Porch adopts only its template's
 * version and leaves the others alone; so do we, and a runner given a new
 * --wrapper-server-image creates fresh pods instead of calling old ones. */
static int adoptable(const entry *e, const json *pod)
{
    const char *version = json_get_str(json_get(json_get(pod, "metadata"), "annotations"),
                                       "fn.kpt.dev/template-version");
    const json *inits = json_get(json_get(pod, "spec"), "initContainers");
    const char *wrapper = inits && inits->type == JSON_ARRAY && inits->len > 0
                              ? json_get_str(inits->items[0], "image") : NULL;
    int ok = version && !strcmp(version, POD_DEFAULT_TEMPLATE_VERSION) && wrapper &&
             !strcmp(wrapper, e->pc->o.wrapper_image);
    if (!ok)
        log_info("pod %s for %s not adopted: made from another template (version %s, wrapper image "
                 "%s; ours: %s, %s); left alone", kube_path_str(pod, "metadata.name") ?
                 kube_path_str(pod, "metadata.name") : "?", e->image, version ? version : "none",
                 wrapper ? wrapper : "none", POD_DEFAULT_TEMPLATE_VERSION, e->pc->o.wrapper_image);
    return ok;
}

static void on_list(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    if (call_back_to_dead(e))
        return;
    if (!r->ok)
        return entry_fail(e, r->error, 0);
    const json *items = json_get(r->obj, "items"), *pick = NULL;
    for (size_t i = 0; items && items->type == JSON_ARRAY && i < items->len; i++) {
        pod_status st;
        pod_status_read(items->items[i], &st);
        if (st.verdict == POD_VERDICT_TERMINATING || !adoptable(e, items->items[i]))
            continue;
        if (!pick || st.verdict == POD_VERDICT_READY)
            pick = items->items[i];
        if (st.verdict == POD_VERDICT_READY)
            break;
    }
    if (pick)
        adopt(e, pick);
    else
        create(e);
}

static void looked_up(int rc, registry_result *res, const char *error, void *ctx)
{
    entry *e = ctx;
    e->lk = NULL;
    if (rc < 0)
        return fail_fmt(e, 0, "%s", error ? error : "image lookup failed");
    e->meta = *res;   /* now e's */
    e->have_meta = 1;
    char why[256];
    if (pod_id_make(e->image, e->meta.digest, 1, e->pod_id, why, sizeof why) < 0)
        return fail_fmt(e, 0, "%s", why);
    buf q = {0}, err = {0};
    buf_printf(&q, "labelSelector=fn.kpt.dev%%2Fimage%%3D%s", e->pod_id);
    kube_ref ref = {"/api/v1", "pods", e->pc->o.namespace, NULL, q.data};
    if (q.data && kube_list(e->pc->c, &ref, on_list, e, &err) == 0)
        e->inflight++, e->pc->inflight++;
    else
        entry_fail(e, err.data ? err.data : "out of memory", 0);
    buf_free(&q);
    buf_free(&err);
}

/* The registry lookup runs on the loop, on the API client's curl driver. */
static void entry_start(entry *e)
{
    buf err = {0};
    http_multi *m = kube_http_multi(kube_client_http(e->pc->c));
    e->lk = registry_lookup_start(m, e->image, &e->pc->o.registry, looked_up, e, &err);
    if (!e->lk)
        fail_fmt(e, 0, "%s", err.data ? err.data : "out of memory");
    buf_free(&err);
}

/* ---- waiters ------------------------------------------------------------------ */

static void attach(loop *l, void *ctx)
{
    (void)l;
    pod_waiter *w = ctx;
    pod_cache *pc = w->pc;
    w->attach = NULL;
    for (pod_waiter **p = &pc->pending; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            break;
        }
    entry *e = find(pc, w->image);
    if (!e) {
        if (!(e = calloc(1, sizeof *e)) || !(e->image = strdup(w->image))) {
            free(e);
            pod_answer a = {.error = "out of memory", .image = w->image};
            w->fn(&a, w->ctx);
            free(w->image);
            free(w);
            return;
        }
        e->pc = pc;
        e->state = POD_REQUESTED;
        e->started_ns = loop_now_ns();
        e->next = pc->entries;
        pc->entries = e;
        e->deadline = loop_timer_add(pc->l, pc->o.ready_timeout_ns, on_deadline, e);
        w->e = e;
        w->next = NULL;
        e->waiters = w;
        entry_start(e);
        return;
    }
    w->e = e;
    w->next = e->waiters;
    e->waiters = w;
    if (e->state == POD_SERVING) {
        log_v(2, "pod %s: reused for %s", e->pod, e->image);
        answer_all(e, NULL);
    }
}

pod_waiter *pod_cache_get(pod_cache *pc, const char *image, pod_answer_fn *fn, void *ctx)
{
    pod_waiter *w = calloc(1, sizeof *w);
    if (!w || !(w->image = strdup(image))) {
        free(w);
        return NULL;
    }
    w->pc = pc;
    w->fn = fn;
    w->ctx = ctx;
    if (!(w->attach = loop_timer_add(pc->l, 0, attach, w))) {
        free(w->image);
        free(w);
        return NULL;
    }
    w->next = pc->pending;
    pc->pending = w;
    return w;
}

void pod_cache_cancel(pod_cache *pc, pod_waiter *w)
{
    if (!w)
        return;
    pod_waiter **list = w->attach ? &pc->pending : w->e ? &w->e->waiters : NULL;
    for (; list && *list; list = &(*list)->next)
        if (*list == w) {
            *list = w->next;
            break;
        }
    loop_timer_cancel(pc->l, w->attach);
    free(w->image);
    free(w);
}

void pod_cache_forget(pod_cache *pc, const char *image, const char *pod, const char *why)
{
    entry *e = find(pc, image);
    if (!e || (pod && e->pod && strcmp(pod, e->pod)))
        return;
    log_warn("pod %s for %s dropped from the cache: %s", e->pod ? e->pod : "?", image, why);
    apply(e, POD_EV_FAILED);
    answer_all(e, why);
    entry_drop(e);
}

/* image's entry when it still holds pod. */
static entry *holding(pod_cache *pc, const char *image, const char *pod)
{
    entry *e = find(pc, image);
    return e && e->pod && pod && !strcmp(e->pod, pod) ? e : NULL;
}

void pod_cache_call_begin(pod_cache *pc, const char *image, const char *pod)
{
    entry *e = holding(pc, image, pod);
    if (e) {
        e->calls++;
        e->last_used_ns = loop_now_ns();
    }
}

void pod_cache_call_end(pod_cache *pc, const char *image, const char *pod)
{
    entry *e = holding(pc, image, pod);
    if (e) {
        e->calls -= e->calls > 0;
        e->last_used_ns = loop_now_ns();
    }
}

/* ---- reclaiming idle pods ------------------------------------------------- */

static int64_t ttl_of(const pod_cache *pc, const entry *e)
{
    int64_t own = pc->o.ttl_for ? pc->o.ttl_for(e->image, pc->o.ttl_ctx) : 0;
    return own > 0 ? own : pc->o.ttl_ns;
}

/* Deletes an idle serving pod and its Service, as Porch's runner does when
 * a pod outlives its time to live; the next call creates a new one. */
static void reclaim(entry *e, int64_t ttl)
{
    log_info("pod %s for %s: no call for %.0f s (time to live %.0f s): deleting it and its Service",
             e->pod, e->image, (double)(loop_now_ns() - e->last_used_ns) / 1e9, (double)ttl / 1e9);
    apply(e, POD_EV_TTL_EXPIRED);
    e->delete_service = 1;
    e->inflight++, e->pc->inflight++;
    if (loop_timer_add(e->pc->l, 0, delete_now, e))
        apply(e, POD_EV_DELETE_SENT);
    else
        e->inflight--, e->pc->inflight--;
    entry_drop(e);
}

static void on_marked(const kube_result *r, void *ctx)
{
    entry *e = ctx;
    e->inflight--, e->pc->inflight--;
    if (!r->ok && !r->not_found && !e->mark_failed) {
        e->mark_failed = 1;
        log_warn("pod %s: cannot write its last call's time (" POD_LAST_CALL_ANNOTATION
                 "; `pod list` shows its idle time from it): %s", e->pod ? e->pod : "?", r->error);
    }
    maybe_free(e);
}

/* The last call's time on the pod (once a scan, only when it moved), so
 * that `runner-client pod list` can show how long a pod has been idle. */
static void mark_last_call(entry *e, int64_t now)
{
    char when[32], patch[128];
    time_t t = time(NULL) - (time_t)((now - e->last_used_ns) / 1000000000);
    struct tm tm;
    if (!gmtime_r(&t, &tm) || !strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm))
        return;
    snprintf(patch, sizeof patch, "{\"metadata\":{\"annotations\":{\"" POD_LAST_CALL_ANNOTATION
             "\":\"%s\"}}}", when);
    kube_ref ref = {"/api/v1", "pods", e->pc->o.namespace, e->pod, NULL};
    buf err = {0};
    if (kube_patch(e->pc->c, &ref, patch, strlen(patch), on_marked, e, &err) == 0) {
        e->inflight++, e->pc->inflight++;
        e->marked_ns = e->last_used_ns;
    }
    buf_free(&err);
}

static void scan(loop *l, void *ctx)
{
    pod_cache *pc = ctx;
    int64_t now = loop_now_ns();
    for (entry *e = pc->entries, *next; e; e = next) {
        next = e->next;
        int64_t ttl = ttl_of(pc, e);
        if (e->state != POD_SERVING || !e->pod)
            continue;
        if (!e->calls && ttl > 0 && now - e->last_used_ns >= ttl)
            reclaim(e, ttl);
        else if (e->last_used_ns != e->marked_ns)
            mark_last_call(e, now);
    }
    if (!(pc->scan = loop_timer_add(l, pc->o.scan_ns, scan, pc)))
        log_warn("out of memory: idle function pods are no longer reclaimed");
}

int pod_cache_on_drop(pod_cache *pc, pod_drop_fn *fn, void *ctx)
{
    for (int i = 0; i < POD_DROP_HOOKS; i++)
        if (!pc->drop_hooks[i].fn) {
            pc->drop_hooks[i].fn = fn;
            pc->drop_hooks[i].ctx = ctx;
            return 0;
        }
    return -1;
}

void pod_cache_off_drop(pod_cache *pc, pod_drop_fn *fn, void *ctx)
{
    for (int i = 0; i < POD_DROP_HOOKS; i++)
        if (pc->drop_hooks[i].fn == fn && pc->drop_hooks[i].ctx == ctx)
            pc->drop_hooks[i].fn = NULL;
}

int pod_cache_busy(const pod_cache *pc)
{
    return pc->inflight;
}

int pod_cache_state(pod_cache *pc, const char *image, pod_state *state)
{
    entry *e = find(pc, image);
    if (!e)
        return -1;
    *state = e->state;
    return 0;
}

#define SETTLE_TICK_NS (20LL * 1000000)

typedef struct settling {
    pod_cache *pc;
    int64_t until;
} settling;

static void settle_tick(loop *l, void *ctx)
{
    settling *s = ctx;
    if (!pod_cache_busy(s->pc) || loop_now_ns() >= s->until || !loop_timer_add(l, SETTLE_TICK_NS, settle_tick, s))
        loop_stop(l);
}

void pod_cache_settle(pod_cache *pc, int64_t max_ns)
{
    settling s = {pc, loop_deadline_ns(max_ns)};
    if (pod_cache_busy(pc) && loop_timer_add(pc->l, SETTLE_TICK_NS, settle_tick, &s))
        loop_run(pc->l);
}

pod_cache *pod_cache_new(loop *l, kube_client *c, const pod_cache_opts *o, buf *err)
{
    if (!o->wrapper_image || !*o->wrapper_image)
        return buf_printf(err, "the wrapper server image is required (--wrapper-server-image or "
                          "WRAPPER_SERVER_IMAGE)"), NULL;
    pod_cache *pc = calloc(1, sizeof *pc);
    if (!pc)
        return buf_printf(err, "out of memory"), NULL;
    pc->l = l;
    pc->c = c;
    pc->o = *o;
    if (!pc->o.namespace)
        pc->o.namespace = POD_DEFAULT_NAMESPACE;
    if (!pc->o.max_request_body_size)
        pc->o.max_request_body_size = POD_DEFAULT_MAX_REQUEST_BODY;
    if (pc->o.ready_timeout_ns <= 0)
        pc->o.ready_timeout_ns = POD_READY_TIMEOUT_NS;
    if (pc->o.scan_ns <= 0)
        pc->o.scan_ns = POD_SCAN_NS;
    if ((pc->o.ttl_ns > 0 || pc->o.ttl_for) && !(pc->scan = loop_timer_add(l, pc->o.scan_ns, scan, pc))) {
        free(pc);
        return buf_printf(err, "out of memory"), NULL;
    }
    return pc;
}

void pod_cache_free(pod_cache *pc)
{
    if (!pc)
        return;
    loop_timer_cancel(pc->l, pc->scan);
    while (pc->pending) {
        pod_waiter *w = pc->pending;
        pc->pending = w->next;
        loop_timer_cancel(pc->l, w->attach);
        free(w->image);
        free(w);
    }
    while (pc->entries) {
        entry *e = pc->entries;
        pod_waiter *w = e->waiters;
        e->waiters = NULL;
        for (pod_waiter *next; w; w = next) {
            next = w->next;
            free(w->image);
            free(w);
        }
        /* the loop stops with the cache: stop the watch now, not from a timer */
        loop_timer_cancel(pc->l, e->unwatch);
        e->unwatch = NULL;
        kube_watch_stop(e->watch);
        e->watch = NULL;
        entry_drop(e);   /* frees e unless API calls are in flight (the client's free ends them) */
    }
    free(pc);
}
