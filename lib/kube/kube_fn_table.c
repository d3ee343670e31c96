/* kube_fn_table: the function table, its images and how each pod is found
 * or made; see kube_pod_cache.h.
 *
 * An image's entry (fn) lives while it has pods. Its registry facts
 * (digest, entrypoint) are looked up once, on the loop, for the pods it
 * starts meanwhile and after. A pod then lists the pods labelled with its
 * podId (postfix: its number among the image's pods): one not being
 * deleted, made from our template and wrapper image, and not held already
 * is adopted (a Ready one first), else its Service and Pod are created. */
#include "kube/kube_pod_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kube/kube_templates.h"
#include "kube/pod_template.h"

/* ---- images ------------------------------------------------------------------ */

fn_entry *fn_find(pod_cache *pc, const char *image)
{
    for (fn_entry *f = pc->fns; f; f = f->next)
        if (!strcmp(f->image, image))
            return f;
    return NULL;
}

fn_entry *fn_new(pod_cache *pc, const char *image)
{
    fn_entry *f = calloc(1, sizeof *f);
    if (!f || !(f->image = strdup(image))) {
        free(f);
        return NULL;
    }
    f->pc = pc;
    f->next = pc->fns;
    pc->fns = f;
    stats_for(pc, image);   /* its row in /metrics, in the order images come */
    return f;
}

void fn_release(fn_entry *f)
{
    if (f->pods)
        return;
    for (fn_entry **q = &f->pc->fns; *q; q = &(*q)->next)
        if (*q == f) {
            *q = f->next;
            break;
        }
    if (f->lk)   /* never inside the lookup's own done (cleared first) */
        f->pc->api->lookup_cancel(f->pc->api_ctx, f->lk);
    if (f->have_meta)
        registry_result_free(&f->meta);
    free(f->image);
    free(f);
}

pod *fn_pod_named(pod_cache *pc, const char *image, const char *name)
{
    fn_entry *f = fn_find(pc, image);
    for (pod *p = f ? f->pods : NULL; p && name; p = p->next)
        if (p->name && !strcmp(p->name, name))
            return p;
    return NULL;
}

/* ---- create or adopt -------------------------------------------------------- */

static void on_pod_created(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (pod_api_end(p) || p->state != POD_CREATING)
        return;
    if (!r->ok) {
        pod_fail(p, r->error, 0);
        return;
    }
    if (pod_set_str(&p->name, kube_path_str(r->obj, "metadata.name")) < 0 || !p->name ||
        pod_set_str(&p->uid, kube_path_str(r->obj, "metadata.uid")) < 0) {
        pod_fail(p, "the API server's answer to the pod's create has no name", 0);
        return;
    }
    p->created = 1;
    stats_for(p->pc, p->image)->created++;
    log_info("pod %s created for %s (podId %s)", p->name, p->image, p->pod_id);
    pod_set(p, POD_EV_CREATED);
    pod_watch(p);
}

static void on_service_created(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (pod_api_end(p))
        return;
    if (!r->ok && !r->already_exists)
        pod_fail(p, r->error, 0);
}

static int create_one(pod *p, int which, const char *resource, kube_result_fn *done, buf *err)
{
    buf body = {0};
    const char *type;
    if (template_render(p, which, &body, &type, err) < 0) {
        buf_free(&body);
        return -1;
    }
    kube_ref ref = {"/api/v1", resource, p->pc->o.namespace, NULL, NULL};
    int rc = p->pc->api->create(p->pc->api_ctx, &ref, type, body.data, body.len, done, p, err);
    buf_free(&body);
    if (rc == 0)
        pod_api_begin(p);
    return rc;
}

void fn_create(pod *p)
{
    kube_templates *kt = p->pc->templates;
    if ((kt && kube_templates_state(kt) != 1) || p->pc->secret_busy) {
        p->awaits_templates = 1;   /* template_ready takes it on */
        if (kt)
            kube_templates_retry(kt);  /* after a failure: read again */
        return;
    }
    buf err = {0};
    pod_set(p, POD_EV_CREATE_SENT);
    if (pod_set_str(&p->version, template_version(p->pc)) < 0) {
        pod_fail(p, "out of memory", 0);
        return;
    }
    if (create_one(p, POD_TEMPLATE_SERVICE, "services", on_service_created, &err) < 0 ||
        create_one(p, POD_TEMPLATE_POD, "pods", on_pod_created, &err) < 0)
        pod_fail(p, err.data ? err.data : "out of memory", 0);
    buf_free(&err);
}

static void adopt(pod *p, const json *obj)
{
    if (pod_set_str(&p->name, kube_path_str(obj, "metadata.name")) < 0 ||
        pod_set_str(&p->uid, kube_path_str(obj, "metadata.uid")) < 0 ||
        pod_set_str(&p->version, template_version(p->pc)) < 0) {   /* adoptable: the same */
        pod_fail(p, "out of memory", 0);
        return;
    }
    pod_set(p, POD_EV_ADOPTED);
    stats_for(p->pc, p->image)->adopted++;
    log_info("pod %s: adopted for %s (podId %s)", p->name, p->image, p->pod_id);
    pod_observe(p, obj);
    /* still waiting for its status (not served, failed, or waiting for
     * its endpoints): watch it */
    if (p->state == POD_WAITING_READY && p->step == READY_STEP_STATUS)
        pod_watch(p);
}

/* A pod this cache would have made: Porch's template version, and our
 * wrapper image in its init container. Porch adopts only its template's
 * version and leaves the others alone; so do we, and a runner given a new
 * --wrapper-server-image creates fresh pods instead of calling old ones. */
static int adoptable(const pod *p, const json *obj)
{
    const char *version = json_get_str(json_get(json_get(obj, "metadata"), "annotations"),
                                       "fn.kpt.dev/template-version");
    const json *inits = json_get(json_get(obj, "spec"), "initContainers");
    const char *wrapper = inits && inits->type == JSON_ARRAY && inits->len > 0
                              ? json_get_str(inits->items[0], "image") : NULL;
    const char *ours = template_version(p->pc);
    int ok = version && !strcmp(version, ours) && wrapper &&
             !strcmp(wrapper, p->pc->o.wrapper_image);
    if (!ok)
        log_info("pod %s for %s not adopted: made from another template (version %s, wrapper image "
                 "%s; ours: %s, %s); left alone", kube_path_str(obj, "metadata.name") ?
                 kube_path_str(obj, "metadata.name") : "?", p->image, version ? version : "none",
                 wrapper ? wrapper : "none", ours, p->pc->o.wrapper_image);
    return ok;
}

static void list_pods(pod *p);

/* At most this many listings of one pod's podId (a lost claim, a podId
 * another live replica uses): then it is created under the last one. */
#define POD_MAX_RELISTS 8

/* Another live replica has pods under p's podId: p takes the next postfix
 * its image's pods do not use, so that no two replicas share a Service
 * (one deleting it would cut the other's calls off). */
static int next_postfix(pod *p)
{
    if (p->relists >= POD_MAX_RELISTS)
        return 0;
    unsigned next = p->postfix + 1;
    for (int taken = 1; taken; ) {   /* until no other pod of the image has it */
        taken = 0;
        for (pod *q = p->fn->pods; q && !taken; q = q->next)
            taken = q != p && q->postfix == next;
        next += taken;
    }
    log_info("%s: podId %s is another live replica's; taking postfix %u", p->image, p->pod_id, next);
    p->postfix = next;
    p->relists++;
    return 1;
}

static void on_claimed(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (pod_api_end(p) || p->state != POD_REQUESTED)
        return;
    if (r->ok) {
        adopt(p, r->obj);
        return;
    }
    log_info("pod for %s (podId %s): its claim was refused (another replica was first, or it "
             "changed): %s; listing again", p->image, p->pod_id, r->error);
    if (p->relists++ < POD_MAX_RELISTS)
        list_pods(p);
    else
        fn_create(p);
}

static void on_list(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (pod_api_end(p) || p->state != POD_REQUESTED)
        return;
    if (!r->ok) {
        pod_fail(p, r->error, 0);
        return;
    }
    const json *items = json_get(r->obj, "items"), *pick = NULL;
    int pick_mine = 0, others_live = 0;
    for (size_t i = 0; items && items->type == JSON_ARRAY && i < items->len; i++) {
        pod_status st;
        pod_status_read(items->items[i], &st);
        if (st.verdict == POD_VERDICT_TERMINATING ||
            fn_pod_named(p->pc, p->image, kube_path_str(items->items[i], "metadata.name")))
            continue;
        pod_owner_verdict v = p->pc->o.owner ? owner_judge(p->pc, items->items[i]) : POD_OWNER_MINE;
        if (v == POD_OWNER_LIVE) {   /* another replica's: never ours to call or delete */
            others_live = 1;
            continue;
        }
        if (!adoptable(p, items->items[i]))
            continue;
        if (!pick || st.verdict == POD_VERDICT_READY) {
            pick = items->items[i];
            pick_mine = v == POD_OWNER_MINE;
        }
        if (st.verdict == POD_VERDICT_READY)
            break;
    }
    if (pick && pick_mine)
        adopt(p, pick);
    else if (pick && owner_claim(p, pick, on_claimed) == 0)
        return;   /* on_claimed adopts it */
    else if (others_live && next_postfix(p))
        list_pods(p);
    else
        fn_create(p);
}

/* The image's facts are known: p's podId, then its pods by that label. */
static void list_pods(pod *p)
{
    buf q = {0}, err = {0};
    if (pod_id_make(p->image, p->fn->meta.digest, p->postfix, p->pod_id, &err) < 0) {
        pod_fail(p, err.data ? err.data : "out of memory", 0);
        buf_free(&err);
        return;
    }
    buf_printf(&q, "labelSelector=fn.kpt.dev%%2Fimage%%3D%s", p->pod_id);
    kube_ref ref = {"/api/v1", "pods", p->pc->o.namespace, NULL, q.data};
    if (q.data && p->pc->api->list(p->pc->api_ctx, &ref, on_list, p, &err) == 0)
        pod_api_begin(p);
    else
        pod_fail(p, err.data ? err.data : "out of memory", 0);
    buf_free(&q);
    buf_free(&err);
}

/* Every requested pod of f waits for the lookup: each goes on, or fails
 * with its error. f goes with its last pod. */
static void looked_up(int rc, registry_result *res, const char *error, void *ctx)
{
    fn_entry *f = ctx;
    f->lk = NULL;
    if (rc == 0) {
        f->meta = *res;   /* now f's */
        f->have_meta = 1;
    }
    for (pod *p = f->pods, *next; p; p = next) {
        next = p->next;   /* p may leave (and f go with it, when p was its last) */
        if (p->state != POD_REQUESTED)
            continue;
        if (rc < 0)
            pod_fail_fmt(p, 0, "%s", error ? error : "image lookup failed");
        else
            list_pods(p);
    }
}

/* The registry lookup runs on the loop, on the API client's curl driver. */
void fn_start_pod(pod *p)
{
    fn_entry *f = p->fn;
    if (f->have_meta) {
        list_pods(p);
        return;
    }
    if (f->lk)
        return;   /* looked_up takes p on */
    buf err = {0};
    f->lk = p->pc->api->lookup_start(p->pc->api_ctx, f->image, &p->pc->o.registry, looked_up, f,
                                     &err);
    if (!f->lk)
        pod_fail_fmt(p, 0, "%s", err.data ? err.data : "out of memory");
    buf_free(&err);
}

/* ---- the cache ---------------------------------------------------------------- */

void pod_cache_forget(pod_cache *pc, const char *image, const char *name, const char *why)
{
    fn_entry *f = fn_find(pc, image);
    pod *p = name ? fn_pod_named(pc, image, name) : f ? f->pods : NULL;
    if (!p)
        return;
    log_warn("pod %s for %s dropped from the cache: %s", p->name ? p->name : "?", image, why);
    if (p->state != POD_FAILED)
        pod_set(p, POD_EV_FAILED);
    pod_set(p, POD_EV_RELEASED);
    pod_leave(p, why);
}

void pod_cache_call_begin(pod_cache *pc, const char *image, const char *name)
{
    pod *p = fn_pod_named(pc, image, name);
    if (p) {
        p->calls++;
        p->last_used_ns = pod_now(pc);
    }
}

void pod_cache_call_end(pod_cache *pc, const char *image, const char *name)
{
    pod *p = fn_pod_named(pc, image, name);
    if (p) {
        p->calls -= p->calls > 0;
        p->last_used_ns = pod_now(pc);
        template_retire_if_done(p);
    }
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
    return pc->api_calls + (pc->templates ? kube_templates_busy(pc->templates) : 0);
}

int pod_cache_state(pod_cache *pc, const char *image, pod_state *state)
{
    fn_entry *f = fn_find(pc, image);
    if (!f || !f->pods)
        return -1;
    *state = f->pods->state;
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
    if (!o->wrapper_image || !*o->wrapper_image) {
        buf_printf(err, "the wrapper server image is required (--wrapper-server-image or "
                   "WRAPPER_SERVER_IMAGE)");
        return NULL;
    }
    pod_cache *pc = calloc(1, sizeof *pc);
    if (!pc) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    pc->l = l;
    pc->api = o->api ? o->api : &pod_api_kube;
    pc->api_ctx = o->api ? o->api_ctx : c;
    pc->o = *o;
    if (!pc->o.namespace)
        pc->o.namespace = POD_DEFAULT_NAMESPACE;
    if (!pc->o.max_request_body_size)
        pc->o.max_request_body_size = POD_DEFAULT_MAX_REQUEST_BODY;
    if (pc->o.ready_timeout_ns <= 0)
        pc->o.ready_timeout_ns = POD_READY_TIMEOUT_NS;
    if (pc->o.scan_ns <= 0)
        pc->o.scan_ns = POD_SCAN_NS;
    if (pc->o.max_pods <= 0)
        pc->o.max_pods = POD_DEFAULT_MAX_PODS;
    if (pc->o.max_pods > POD_MAX_PER_FUNCTION)
        pc->o.max_pods = POD_MAX_PER_FUNCTION;
    if (pc->o.waitlist <= 0)
        pc->o.waitlist = POD_DEFAULT_WAITLIST;
    loop_timer_init(&pc->scan, reclaim_scan, pc);
    warm_init(pc);
    if (pc->o.templates) {
        if (!(pc->templates = kube_templates_start(c, pc->o.templates, template_ready, pc, err))) {
            free(pc);
            return NULL;
        }
        kube_templates_on_change(pc->templates, template_changed, pc);
    }
    if (pc->o.pull_secret)
        pull_secret_start(pc);
    if (pc->o.owner && owner_start(pc, err) < 0) {
        free(pc);
        return NULL;
    }
    if (pc->o.ttl_ns > 0 || pc->o.ttl_for || pc->o.owner)
        loop_timer_arm(l, &pc->scan, pc->o.scan_ns);
    return pc;
}

/* Callers still waiting are not answered: the server that asked is going.
 * API calls still in flight are cancelled (pod_cache_settle lets them end
 * first). */
void pod_cache_free(pod_cache *pc)
{
    if (!pc)
        return;
    loop_timer_disarm(pc->l, &pc->scan);
    kube_templates_free(pc->templates);
    owner_stop(pc);
    warm_free(pc);   /* before the pods leave: none is started again */
    while (pc->pending) {
        pod_waiter *w = pc->pending;
        pc->pending = w->next;
        loop_defer_cancel(&w->attach);
        free(w->image);
        free(w);
    }
    while (pc->fns) {
        pod *p = pc->fns->pods;   /* the image goes with its last pod */
        if (!p) {
            fn_release(pc->fns);
            continue;
        }
        pod_waiter *lists[] = {p->waiters, p->parked};
        for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
            for (pod_waiter *w = lists[i], *next; w; w = next) {
                next = w->next;
                free(w->image);
                free(w);
            }
        p->waiters = p->parked = NULL;
        loop_defer_cancel(&p->check_soon);
        /* the loop stops with the cache: stop the watch now, not from the loop */
        loop_defer_cancel(&p->unwatch);
        pc->api->watch_stop(pc->api_ctx, p->watch);
        p->watch = NULL;
        if (p->state != POD_FAILED)
            pod_set(p, POD_EV_DRAIN);
        if (p->state != POD_GONE)
            pod_set(p, POD_EV_RELEASED);
        pod_leave(p, "the pod cache is shutting down");   /* held by its API calls */
    }
    /* no answer may reach a pod once the cache is gone: the calls of the
     * pods still held (their Deletes, a check, a log) are cancelled */
    while (pc->held)
        pod_abandon(pc->held);
    pc->api->cancel(pc->api_ctx, pc);   /* the pull Secret's read or write */
    buf_free(&pc->secret);
    stats_free(pc);
    free(pc);
}
