/* kube_pod_owner: runner replicas sharing the pod namespace (nephio#1069);
 * see pod_owner.h for the rule and kube_lease.h for the Lease.
 *
 * Each scan lists the Leases, then the namespace's function pods, and
 * judges each pod with pod_owner: the table's own idle pods are reclaimed
 * (kube_pod_reclaim, with the listing: a Service another pod still selects
 * stays); this replica's pods it does not hold (an earlier process of the
 * same name's, or claimed) are deleted once idle for their time to live,
 * unless a call adopts them first; pods of a replica whose Lease expired
 * are claimed (their owner annotation rewritten, conditional on their
 * resourceVersion, so that of two live replicas one wins) and from then on
 * are this replica's. Pods of live replicas and unowned pods are never
 * touched by a scan. A replica whose Lease expired and that owns no pod
 * any more has its Lease deleted. While this replica's own Lease is not current (the
 * API server unreachable), it deletes nothing: the others may be taking
 * its pods over. */
#include "kube/kube_pod_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_write.h"
#include "core/log.h"
#include "kube/pod_id.h"
#include "kube/pod_template.h"

#define OWNER_MARGIN_US (5LL * 1000000)   /* clocks of replicas and API server differ */
#define OWNER_MAX_PODS 4096               /* a listing's pods judged at most per scan */

struct owner_scan {
    pod_cache *pc;
    int calls;                 /* its API requests in flight (cancelled when the cache goes) */
    int running;               /* a scan under way */
};

static const char *annotation(const json *obj, const char *key)
{
    return json_get_str(json_get(json_get(obj, "metadata"), "annotations"), key);
}

static const char *function_image(const json *obj)
{
    const json *cs = kube_path(obj, "spec.containers");
    for (size_t i = 0; cs && cs->type == JSON_ARRAY && i < cs->len; i++) {
        const char *name = json_get_str(cs->items[i], "name");
        if (name && !strcmp(name, "function"))
            return json_get_str(cs->items[i], "image");
    }
    return NULL;
}

static pod_owner_facts facts(pod_cache *pc)
{
    int64_t lease_us = kube_lease_duration_ns(pc->own.lease) / 1000;
    return (pod_owner_facts){.me = pc->o.owner, .leases = pc->own.leases,
                             .n_leases = pc->own.n_leases, .leases_known = pc->own.leases_known,
                             .now_us = pc->api->wall_us(pc->api_ctx),
                             .margin_us = OWNER_MARGIN_US,
                             .grace_us = 2 * lease_us + OWNER_MARGIN_US};
}

/* When an owner last wrote the pod: created it, claimed it or marked a
 * call (each claim writes the last-call annotation too). The age
 * pod_owner_judge gives an owner without a Lease its grace from: a
 * replica that started since the Leases were last listed, and claimed an
 * old pod, is not known yet, but the pod it claimed is young again. */
static int64_t owner_wrote_us(const json *obj)
{
    int64_t created = rfc3339_us(kube_path_str(obj, "metadata.creationTimestamp")),
            called = rfc3339_us(annotation(obj, POD_LAST_CALL_ANNOTATION));
    return called > created ? called : created;
}

pod_owner_verdict owner_judge(pod_cache *pc, const json *obj)
{
    pod_owner_facts f = facts(pc);
    return pod_owner_judge(&f, annotation(obj, POD_OWNER_ANNOTATION), owner_wrote_us(obj));
}

/* The claim: owner and last call (its idle time starts again: it was not
 * this replica's to reclaim before), if nobody changed the pod since it
 * was listed. */
static int claim_patch(pod_cache *pc, const json *obj, buf *patch)
{
    const char *rv = kube_path_str(obj, "metadata.resourceVersion");
    char now[RFC3339_MICRO_MAX];
    rfc3339_micro(pc->api->wall_us(pc->api_ctx), now);
    now[19] = 'Z';   /* the last-call annotation has whole seconds */
    now[20] = 0;
    if (!rv)
        return -1;
    /* the owner is a DNS name (pod_cache_new checks it); the version is the API server's */
    buf_append_str(patch, "{\"metadata\":{\"resourceVersion\":");
    json_write_string(patch, rv, strlen(rv));
    buf_printf(patch, ",\"annotations\":{\"" POD_OWNER_ANNOTATION "\":\"%s\",\""
               POD_LAST_CALL_ANNOTATION "\":\"%s\"}}}", pc->o.owner, now);
    return patch->data ? 0 : -1;
}

int owner_claim(pod *p, const json *obj, kube_result_fn *done)
{
    buf patch = {0}, err = {0};
    kube_ref ref = {"/api/v1", "pods", p->pc->o.namespace, kube_path_str(obj, "metadata.name"),
                    NULL};
    int rc = ref.name && claim_patch(p->pc, obj, &patch) == 0 &&
             p->pc->api->patch(p->pc->api_ctx, &ref, patch.data, patch.len, done, p, &err) == 0
                 ? 0 : -1;
    if (rc == 0)
        pod_api_begin(p);
    else
        log_warn("pod %s: cannot claim it: %s", ref.name ? ref.name : "?",
                 err.data ? err.data : "its listing has no name or resourceVersion");
    buf_free(&patch);
    buf_free(&err);
    return rc;
}

/* ---- the scan ------------------------------------------------------------------ */

static void scan_begin(owner_scan *s)
{
    s->calls++;
    s->pc->api_calls++;
}

static void scan_end(owner_scan *s)
{
    s->calls--;
    s->pc->api_calls--;
}

static void on_claimed(const kube_result *r, void *ctx)
{
    owner_scan *s = ctx;
    const char *name = r->ok ? kube_path_str(r->obj, "metadata.name") : NULL;
    scan_end(s);
    if (r->ok) {
        s->pc->own.claimed++;
        log_info("pod %s: claimed from a replica whose Lease expired; now %s's (a call adopts it, "
                 "else it is deleted when idle for its time to live)", name ? name : "?",
                 s->pc->o.owner);
    } else {
        log_info("a pod of a replica whose Lease expired was not claimed (another replica was "
                 "first, or it changed): %s", r->error);
    }
}

static void on_collected(const kube_result *r, void *ctx)
{
    owner_scan *s = ctx;
    scan_end(s);
    if (!r->ok && !r->not_found)
        log_warn("deleting an idle function pod, its Service, or an expired replica's Lease: %s", r->error);
}

static void send(owner_scan *s, const char *verb, const kube_ref *ref, const char *patch,
                 kube_result_fn *done)
{
    buf err = {0};
    int rc = patch ? s->pc->api->patch(s->pc->api_ctx, ref, patch, strlen(patch), done, s, &err)
                   : s->pc->api->del(s->pc->api_ctx, ref, done, s, &err);
    if (rc == 0)
        scan_begin(s);
    else
        log_warn("%s %s: %s", verb, ref->name, err.data ? err.data : "out of memory");
    buf_free(&err);
}

/* This replica's pod that the table does not hold, idle for its time to
 * live: deleted, with its Service unless another pod selects it. */
static void collect_if_idle(owner_scan *s, const json *obj, const owner_listing *ls,
                            const pod_owner_pod *me, int64_t now_us)
{
    pod_cache *pc = s->pc;
    const char *image = function_image(obj);
    if (!image || fn_pod_named(pc, image, me->name))
        return;
    int64_t ttl_us = reclaim_ttl(pc, image) / 1000;
    int64_t since = owner_wrote_us(obj);
    if (ttl_us <= 0 || since < 0 || now_us - since < ttl_us)
        return;
    log_info("pod %s for %s: this replica's, not in use, no call for %.0f s (time to live %.0f s): "
             "deleting it%s", me->name, image, (double)(now_us - since) / 1e6, (double)ttl_us / 1e6,
             pod_owner_service_in_use(ls->pods, ls->n, me->pod_id, me->name) ? ""
                                                                               : " and its Service");
    pc->own.collected++;
    kube_ref ref = {"/api/v1", "pods", pc->o.namespace, me->name, "gracePeriodSeconds=0"};
    send(s, "deleting pod", &ref, NULL, on_collected);
    if (!pod_owner_service_in_use(ls->pods, ls->n, me->pod_id, me->name)) {
        kube_ref svc = {"/api/v1", "services", pc->o.namespace, me->pod_id, NULL};
        send(s, "deleting Service", &svc, NULL, on_collected);
    }
}

static void judge_untabled(owner_scan *s, const json *items, const owner_listing *ls)
{
    pod_cache *pc = s->pc;
    pod_owner_facts f = facts(pc);
    for (int i = 0; i < ls->n; i++) {
        const pod_owner_pod *pp = &ls->pods[i];
        const json *obj = items->items[i];
        if (pp->terminating || !pp->name || !pp->pod_id)
            continue;
        switch (pod_owner_judge(&f, pp->owner, owner_wrote_us(obj))) {
        case POD_OWNER_MINE:
            collect_if_idle(s, obj, ls, pp, f.now_us);
            break;
        case POD_OWNER_EXPIRED: {
            buf patch = {0};
            log_info("pod %s: its owner %s's Lease expired; claiming it", pp->name, pp->owner);
            kube_ref ref = {"/api/v1", "pods", pc->o.namespace, pp->name, NULL};
            if (claim_patch(pc, obj, &patch) == 0)
                send(s, "claiming pod", &ref, patch.data, on_claimed);
            buf_free(&patch);
            break;
        }
        case POD_OWNER_LIVE:
        case POD_OWNER_NONE:
            pc->own.left_alone++;
            break;
        }
    }
}

/* A replica whose Lease expired and that owns no pod any more (its pods
 * claimed or gone) is over: its Lease is deleted, so that replicas named
 * after their pods (a Deployment's) leave no Lease per restart behind. */
static void collect_leases(owner_scan *s, const owner_listing *ls)
{
    pod_cache *pc = s->pc;
    pod_owner_facts f = facts(pc);
    for (int i = 0; i < pc->own.n_leases; i++) {
        const char *holder = pc->own.leases[i].holder;
        if (!strcmp(holder, pc->o.owner) || pod_owner_judge(&f, holder, -1) != POD_OWNER_EXPIRED)
            continue;
        int owns = 0;
        for (int k = 0; k < ls->n && !owns; k++)
            owns = ls->pods[k].owner && !strcmp(ls->pods[k].owner, holder);
        char name[300];
        if (owns || (size_t)snprintf(name, sizeof name, KUBE_LEASE_PREFIX "%s", holder) >= sizeof name)
            continue;
        log_info("replica %s: its Lease expired and it owns no pod: deleting Lease %s", holder, name);
        kube_ref ref = {"/apis/coordination.k8s.io/v1", "leases", pc->o.namespace, name, NULL};
        send(s, "deleting Lease", &ref, NULL, on_collected);
    }
}

static void on_pods(const kube_result *r, void *ctx)
{
    owner_scan *s = ctx;
    scan_end(s);
    pod_cache *pc = s->pc;
    s->running = 0;
    const json *items = r->ok ? json_get(r->obj, "items") : NULL;
    if (!items || items->type != JSON_ARRAY) {
        log_warn("listing the function pods for the idle scan: %s; nothing reclaimed this time",
                 r->ok ? "the answer has no items" : r->error);
        reclaim_rearm(pc);
        return;
    }
    owner_listing ls = {calloc(items->len ? items->len : 1, sizeof *ls.pods), 0};
    if (!ls.pods) {
        log_warn("out of memory: nothing reclaimed this time");
        reclaim_rearm(pc);
        return;
    }
    for (size_t i = 0; i < items->len && i < OWNER_MAX_PODS; i++, ls.n++) {
        const json *obj = items->items[i];
        ls.pods[i] = (pod_owner_pod){
            .name = kube_path_str(obj, "metadata.name"),
            .pod_id = json_get_str(json_get(json_get(obj, "metadata"), "labels"), "fn.kpt.dev/image"),
            .owner = annotation(obj, POD_OWNER_ANNOTATION),
            .terminating = kube_path(obj, "metadata.deletionTimestamp") != NULL,
        };
    }
    if (!kube_lease_held(pc->own.lease)) {
        log_warn("this replica's Lease (%s) is not current: nothing reclaimed or claimed until it is "
                 "renewed (other replicas may be taking this one's pods over)", pc->o.owner);
    } else {
        reclaim_idle(pc, &ls);
        judge_untabled(s, items, &ls);
        if (ls.n == (int)items->len)   /* every pod seen: none of an owner's missed */
            collect_leases(s, &ls);
    }
    free(ls.pods);
    reclaim_rearm(pc);
}

static void list_pods_for_scan(owner_scan *s)
{
    buf err = {0};
    kube_ref ref = {"/api/v1", "pods", s->pc->o.namespace, NULL, "labelSelector=fn.kpt.dev%2Fimage"};
    if (s->pc->api->list(s->pc->api_ctx, &ref, on_pods, s, &err) == 0) {
        scan_begin(s);
    } else {
        log_warn("listing the function pods for the idle scan: %s", err.data ? err.data : "out of memory");
        s->running = 0;
        reclaim_rearm(s->pc);
    }
    buf_free(&err);
}

static void forget_leases(owner_state *o)
{
    for (int i = 0; i < o->n_leases; i++)
        free((char *)o->leases[i].holder);
    o->n_leases = 0;
}

static void on_leases(const kube_result *r, void *ctx)
{
    owner_scan *s = ctx;
    scan_end(s);
    owner_state *o = &s->pc->own;
    const json *items = r->ok ? json_get(r->obj, "items") : NULL;
    if (items && items->type == JSON_ARRAY) {
        forget_leases(o);
        for (size_t i = 0; i < items->len && o->n_leases < OWNER_MAX_LEASES; i++) {
            const json *l = items->items[i];
            const char *holder = kube_path_str(l, "spec.holderIdentity");
            const json *d = kube_path(l, "spec.leaseDurationSeconds");
            char *copy = holder ? strdup(holder) : NULL;
            if (!copy)
                continue;
            o->leases[o->n_leases++] = (lease_view){
                copy, rfc3339_us(kube_path_str(l, "spec.renewTime")),
                d && d->type == JSON_NUMBER && d->number >= 0 && d->number < 1e9 ? (int64_t)d->number : -1};
        }
        o->leases_known = 1;
    } else {
        /* the Leases last listed stay (or none: others count as live) */
        log_warn("listing the runner replicas' Leases: %s",
                 r->ok ? "the answer has no items" : r->error);
    }
    list_pods_for_scan(s);
}

void owner_scan_start(pod_cache *pc)
{
    owner_scan *s = pc->own.scan;
    buf err = {0};
    kube_ref ref = {"/apis/coordination.k8s.io/v1", "leases", pc->o.namespace, NULL,
                    "labelSelector=" POD_LEASE_LABEL_QUERY};
    s->running = 1;
    if (pc->api->list(pc->api_ctx, &ref, on_leases, s, &err) == 0) {
        scan_begin(s);
    } else {
        log_warn("listing the runner replicas' Leases: %s", err.data ? err.data : "out of memory");
        list_pods_for_scan(s);
    }
    buf_free(&err);
}

int pod_owner_name_check(const char *owner, buf *err)
{
    if (!dns1123_subdomain_valid(owner) || strlen(owner) + strlen(KUBE_LEASE_PREFIX) > 253)
        return buf_fail(err, "invalid replica name \"%s\": want a DNS-1123 subdomain of at most %zu "
                        "characters (lowercase letters, digits, '-' and '.'), as a pod name is",
                        owner, 253 - strlen(KUBE_LEASE_PREFIX));
    return 0;
}

int owner_start(pod_cache *pc, buf *err)
{
    if (pod_owner_name_check(pc->o.owner, err) < 0)
        return -1;
    if (!(pc->own.scan = calloc(1, sizeof *pc->own.scan)) ||
        !(pc->own.lease = kube_lease_start(pc->l, pc->api, pc->api_ctx, pc->o.namespace,
                                           pc->o.owner, pc->o.lease_ns))) {
        free(pc->own.scan);
        return buf_fail(err, "out of memory");
    }
    pc->own.scan->pc = pc;
    log_info("pod runtime: replica %s, Lease " KUBE_LEASE_PREFIX "%s in %s (%.0f s): this replica "
             "touches only its own pods and those of replicas whose Lease expired", pc->o.owner,
             pc->o.owner, pc->o.namespace, (double)kube_lease_duration_ns(pc->own.lease) / 1e9);
    return 0;
}

void owner_stop(pod_cache *pc)
{
    kube_lease_stop(pc->own.lease);
    pc->own.lease = NULL;
    forget_leases(&pc->own);
    owner_scan *s = pc->own.scan;
    pc->own.scan = NULL;
    if (!s)
        return;
    /* its requests in flight are abandoned: their answers may never come
     * (the client freed next drops its requests unanswered) */
    pc->api->cancel(pc->api_ctx, s);
    pc->api_calls -= s->calls;
    free(s);
}
