/* kube_templates: the base templates from the cluster; see kube_templates.h.
 * Each template is one `tmpl`: found (GET), waited for, created, then
 * watched. Both go through the same steps; only the PodTemplate's version
 * matters to the pods. */
#include "kube/kube_templates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_edit.h"
#include "core/log.h"
#include "kube/kube_watch.h"
#include "kube/pod_from_template.h"

typedef struct tmpl {
    kube_templates *t;
    const char *api, *resource, *kind, *name;
    json *obj;                 /* the object as last read (a copy) */
    char *version;             /* its resourceVersion */
    int64_t deadline;          /* the wait for it to appear ends */
    int said_waiting;
    loop_timer retry;    /* the next look while --template-wait-timeout lasts */
    kube_watch *watch;
    int calls;                 /* API calls in flight */
    int held;                  /* obj is current (or, no_crd, the built-in one is used) */
    int no_crd;                /* ServiceTemplate: the cluster does not serve the kind */
} tmpl;

struct kube_templates {
    kube_client *c;
    kube_templates_opts o;
    tmpl pod, svc;
    kube_templates_ready_fn *ready;
    void *ready_ctx;
    int state;                 /* kube_templates_state */
    int watching;
    kube_templates_change_fn *change;
    void *change_ctx;
    int freed;                 /* freed with calls in flight: the last one frees it */
};

static void find(tmpl *m);
static void watch(tmpl *m);

static int busy(const kube_templates *t)
{
    return t->pod.calls + t->svc.calls;
}

static void maybe_free(kube_templates *t)
{
    if (!t->freed || busy(t))
        return;
    for (tmpl *m = &t->pod; m <= &t->svc; m++) {
        json_free(m->obj);
        free(m->version);
    }
    free(t);
}

/* An API answer came for m: 1 when t is gone (freed meanwhile). */
static int call_end(tmpl *m)
{
    kube_templates *t = m->t;
    m->calls--;
    if (!t->freed)
        return 0;
    maybe_free(t);
    return 1;
}

static void answer(kube_templates *t, const char *error)
{
    if (t->state)
        return;
    t->state = error ? -1 : 1;
    if (!error && !t->o.if_present && !t->watching++) {
        watch(&t->pod);
        if (!t->svc.no_crd)
            watch(&t->svc);
    }
    t->ready(error, t->ready_ctx);
}

/* obj is m's object now; the PodTemplate's new version is told. */
static void keep(tmpl *m, const json *obj)
{
    const char *rv = kube_path_str(obj, "metadata.resourceVersion");
    json *copy = json_copy(obj);
    char *version = strdup(rv ? rv : "");
    if (!copy || !version) {
        json_free(copy);
        free(version);
        log_warn("%s %s/%s: out of memory; the last one seen is kept", m->kind, m->t->o.namespace,
                 m->name);
        return;
    }
    int changed = m->version && strcmp(m->version, version);
    json_free(m->obj);
    free(m->version);
    m->obj = copy;
    m->version = version;
    kube_templates *t = m->t;
    m->held = 1;
    if (!changed) {
        if (t->pod.held && t->svc.held)
            answer(t, NULL);
        return;
    }
    log_info("%s %s/%s changed (resourceVersion %s): new pods are made from it", m->kind,
             t->o.namespace, m->name, version);
    if (m == &t->pod && t->change)
        t->change(version, t->change_ctx);
}

static void fail(tmpl *m, const char *why)
{
    kube_templates *t = m->t;
    buf msg = {0};
    buf_printf(&msg, "base %s %s/%s: %s", m->kind, t->o.namespace, m->name, why);
    if (t->state)
        log_warn("%s", msg.data ? msg.data : why);
    answer(t, msg.data ? msg.data : why);
    buf_free(&msg);
}

/* A 404 for the kind itself (its CRD is not installed) names no object;
 * one for a missing object of a served kind has details.name. */
static int kind_missing(const kube_result *r)
{
    return r->not_found && !kube_path_str(r->obj, "details.name");
}

static void no_crd(tmpl *m)
{
    kube_templates *t = m->t;
    log_warn("the cluster has no ServiceTemplate kind (config.porch.kpt.dev/v1alpha1; install its "
             "CRD from deploy/): function Services are made from the built-in template");
    m->no_crd = m->held = 1;
    if (t->pod.held)
        answer(t, NULL);
}

static void on_created(const kube_result *r, void *ctx)
{
    tmpl *m = ctx;
    if (call_end(m))
        return;
    if (r->ok) {
        log_info("%s %s/%s not found: created from the built-in one", m->kind, m->t->o.namespace,
                 m->name);
        keep(m, r->obj);
        return;
    }
    if (r->already_exists) {   /* someone else was first: read theirs */
        find(m);
        return;
    }
    if (r->not_found && m == &m->t->svc) {
        no_crd(m);
        return;
    }
    fail(m, r->error);
}

static void create(tmpl *m)
{
    kube_templates *t = m->t;
    buf body = {0}, err = {0};
    int rc = m == &t->pod ? pod_base_template_json(m->name, t->o.namespace, t->o.wrapper_image, &body)
                          : service_base_template_json(m->name, t->o.namespace, &body);
    kube_ref ref = {m->api, m->resource, t->o.namespace, NULL, NULL};
    if (rc == 0 && kube_create(t->c, &ref, "application/json", body.data, body.len, on_created, m,
                               &err) == 0)
        m->calls++;
    else
        fail(m, err.data ? err.data : "out of memory");
    buf_free(&body);
    buf_free(&err);
}

static void on_retry(loop *l, void *ctx)
{
    (void)l;
    tmpl *m = ctx;
    find(m);
}

static void missing(tmpl *m)
{
    kube_templates *t = m->t;
    if (loop_now_ns() < m->deadline) {
        if (!m->said_waiting++)
            log_info("%s %s/%s not found: waiting up to %.0f s for it to appear "
                     "(--template-wait-timeout)", m->kind, t->o.namespace, m->name,
                     (double)t->o.wait_ns / 1e9);
        loop_timer_arm(kube_client_loop(t->c), &m->retry, KUBE_TEMPLATES_POLL_NS);
        return;
    }
    if (!t->o.skip_creation) {
        create(m);
        return;
    }
    buf why = {0}, waited = {0};
    if (t->o.wait_ns > 0)
        buf_printf(&waited, " (waited %.0f s for it, --template-wait-timeout)", (double)t->o.wait_ns / 1e9);
    buf_printf(&why, "not found, and --skip-template-creation is set%s: create it in the namespace "
               "(it is managed outside the runner), or run without --skip-template-creation to have "
               "the built-in one created", waited.data ? waited.data : "");
    buf_free(&waited);
    fail(m, why.data ? why.data : "not found");
    buf_free(&why);
}

/* if_present: m could not be read; its pods or Services are made from
 * the built-in template (kube_templates_pod / _service answer NULL). */
static void use_builtin(tmpl *m, const char *why)
{
    kube_templates *t = m->t;
    log_v(3, "base %s %s/%s not read (%s): the built-in one is used", m->kind, t->o.namespace,
          m->name, why ? why : "?");
    m->held = 1;
    if (m == &t->svc)
        m->no_crd = 1;   /* as without the kind: the built-in Service */
    if (t->pod.held && t->svc.held)
        answer(t, NULL);
}

static void on_get(const kube_result *r, void *ctx)
{
    tmpl *m = ctx;
    if (call_end(m))
        return;
    if (r->ok) {
        keep(m, r->obj);
        return;
    }
    if (m->t->o.if_present) {
        use_builtin(m, r->not_found ? "not found" : r->error);
        return;
    }
    if (m == &m->t->svc && kind_missing(r)) {
        no_crd(m);
        return;
    }
    if (r->not_found) {
        missing(m);
        return;
    }
    fail(m, r->error);
}

static void find(tmpl *m)
{
    kube_templates *t = m->t;
    buf err = {0};
    kube_ref ref = {m->api, m->resource, t->o.namespace, m->name, NULL};
    if (kube_get(t->c, &ref, on_get, m, &err) == 0)
        m->calls++;
    else
        fail(m, err.data ? err.data : "out of memory");
    buf_free(&err);
}

/* ---- watching ---- */

static void on_list(const json *list, int relisted, void *ctx)
{
    (void)relisted;
    tmpl *m = ctx;
    const json *items = json_get(list, "items");
    if (items && items->type == JSON_ARRAY && items->len == 1)
        keep(m, items->items[0]);
}

static void on_event(kube_event_type type, const json *object, void *ctx)
{
    tmpl *m = ctx;
    kube_templates *t = m->t;
    if (type != KUBE_DELETED) {
        keep(m, object);
        return;
    }
    log_warn("%s %s/%s was deleted: new pods are made from the last one seen until it is back%s",
             m->kind, t->o.namespace, m->name, t->o.skip_creation ? "" : " (created again now)");
    if (!t->o.skip_creation) {
        m->deadline = 0;
        find(m);
    }
}

static void on_watch_error(const char *message, int fatal, void *ctx)
{
    tmpl *m = ctx;
    log_warn("watch of %s %s/%s: %s%s", m->kind, m->t->o.namespace, m->name, message,
             fatal ? " (its changes are no longer seen)" : "");
}

static void watch(tmpl *m)
{
    static const kube_watch_fns fns = {on_list, on_event, on_watch_error};
    kube_templates *t = m->t;
    buf q = {0}, err = {0};
    buf_printf(&q, "fieldSelector=metadata.name%%3D%s", m->name);
    kube_ref ref = {m->api, m->resource, t->o.namespace, NULL, q.data};
    if (!q.data || !(m->watch = kube_watch_start(t->c, &ref, &fns, m, &err)))
        log_warn("cannot watch %s %s/%s (its changes are not seen): %s", m->kind, t->o.namespace,
                 m->name, err.data ? err.data : "out of memory");
    buf_free(&q);
    buf_free(&err);
}

/* ---- the module ---- */

kube_templates *kube_templates_start(kube_client *c, const kube_templates_opts *o,
                                     kube_templates_ready_fn *ready, void *ctx, buf *err)
{
    kube_templates *t = calloc(1, sizeof *t);
    if (!t) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    t->c = c;
    t->o = *o;
    t->ready = ready;
    t->ready_ctx = ctx;
    int64_t deadline = o->wait_ns > 0 ? loop_deadline_ns(o->wait_ns) : 0;
    t->pod = (tmpl){t, "/api/v1", "podtemplates", "PodTemplate",
                    o->pod_name && *o->pod_name ? o->pod_name : POD_BASE_TEMPLATE_NAME};
    t->svc = (tmpl){t, "/apis/config.porch.kpt.dev/v1alpha1", "servicetemplates", "ServiceTemplate",
                    o->service_name && *o->service_name ? o->service_name : SERVICE_BASE_TEMPLATE_NAME};
    t->pod.deadline = t->svc.deadline = deadline;
    loop_timer_init(&t->pod.retry, on_retry, &t->pod);
    loop_timer_init(&t->svc.retry, on_retry, &t->svc);
    find(&t->pod);
    find(&t->svc);
    return t;
}

void kube_templates_free(kube_templates *t)
{
    if (!t)
        return;
    loop *l = kube_client_loop(t->c);
    for (tmpl *m = &t->pod; m <= &t->svc; m++) {
        loop_timer_disarm(l, &m->retry);
        kube_watch_stop(m->watch);
    }
    t->freed = 1;
    maybe_free(t);
}

int kube_templates_busy(const kube_templates *t)
{
    return busy(t);
}

int kube_templates_state(const kube_templates *t)
{
    return t->state;
}

void kube_templates_retry(kube_templates *t)
{
    if (t->state >= 0)
        return;
    t->state = 0;
    for (tmpl *m = &t->pod; m <= &t->svc; m++)
        if (!m->held && !m->calls && !loop_timer_armed(&m->retry)) {
            m->deadline = 0;
            find(m);
        }
    if (t->pod.held && t->svc.held)
        answer(t, NULL);
}

const json *kube_templates_pod(const kube_templates *t)
{
    return t->state == 1 ? t->pod.obj : NULL;
}

const json *kube_templates_service(const kube_templates *t)
{
    return t->state == 1 && !t->svc.no_crd ? t->svc.obj : NULL;
}

const char *kube_templates_version(const kube_templates *t)
{
    return t->state == 1 ? t->pod.version : NULL;
}

void kube_templates_on_change(kube_templates *t, kube_templates_change_fn *fn, void *ctx)
{
    t->change = fn;
    t->change_ctx = ctx;
}
