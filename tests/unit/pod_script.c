/* pod_script: the scripted API; see pod_script.h. */
#include "pod_script.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_lease.h"
#include "kube/pod_id.h"
#include "kube/pod_template.h"
#include "log_capture.h"
#include "scoped_buf.h"

static pod_script *of(void *ctx)
{
    return ctx;
}

static script_req *record(pod_script *s, const char *verb, const kube_ref *ref, kube_result_fn *fn,
                          void *ctx)
{
    cr_assert_lt(s->n_reqs, SCRIPT_MAX_REQS, "too many API requests");
    script_req *r = &s->reqs[s->n_reqs++];
    *r = (script_req){.verb = verb, .fn = fn, .ctx = ctx};
    snprintf(r->resource, sizeof r->resource, "%s", ref->resource);
    snprintf(r->name, sizeof r->name, "%s", ref->name ? ref->name : "");
    snprintf(r->query, sizeof r->query, "%s", ref->query ? ref->query : "");
    return r;
}

static int get(void *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err)
{
    (void)err;
    record(of(c), "get", ref, fn, ctx);
    return 0;
}

static int get_text(void *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err)
{
    (void)err;
    record(of(c), "text", ref, fn, ctx);
    return 0;
}

static int list(void *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err)
{
    (void)err;
    record(of(c), "list", ref, fn, ctx);
    return 0;
}

static int create(void *c, const kube_ref *ref, const char *content_type, const char *body,
                  size_t len, kube_result_fn *fn, void *ctx, buf *err)
{
    (void)content_type, (void)err;
    record(of(c), "create", ref, fn, ctx)->body = strndup(body, len);
    return 0;
}

static int patch(void *c, const kube_ref *ref, const char *body, size_t len, kube_result_fn *fn,
                 void *ctx, buf *err)
{
    (void)err;
    record(of(c), "patch", ref, fn, ctx)->body = strndup(body, len);
    return 0;
}

static int del(void *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err)
{
    (void)err;
    record(of(c), "delete", ref, fn, ctx);
    return 0;
}

static kube_watch *watch_start(void *c, const kube_ref *ref, const kube_watch_fns *fns, void *ctx,
                               buf *err)
{
    (void)err;
    pod_script *s = of(c);
    cr_assert_lt(s->n_watches, SCRIPT_MAX_WATCHES, "too many watches");
    script_watch *w = &s->watches[s->n_watches++];
    *w = (script_watch){.fns = fns, .ctx = ctx};
    const char *name = ref->query ? strstr(ref->query, "metadata.name%3D") : NULL;
    cr_assert(name, "a pod's watch names it: %s", ref->query ? ref->query : "(no query)");
    snprintf(w->pod, sizeof w->pod, "%s", name + strlen("metadata.name%3D"));
    return (kube_watch *)w;
}

static void watch_stop(void *c, kube_watch *w)
{
    (void)c;
    if (w)
        ((script_watch *)w)->stopped = 1;
}

static registry_op *lookup_start(void *c, const char *image, const registry_opts *opts,
                                 registry_done_fn *done, void *ctx, buf *err)
{
    (void)image, (void)opts, (void)err;
    pod_script *s = of(c);
    cr_assert_lt(s->n_lookups, SCRIPT_MAX_LOOKUPS, "too many lookups");
    script_lookup *lk = &s->lookups[s->n_lookups++];
    *lk = (script_lookup){.done = done, .ctx = ctx};
    return (registry_op *)lk;
}

static void lookup_cancel(void *c, registry_op *op)
{
    (void)c;
    ((script_lookup *)op)->cancelled = 1;
}

static void cancel(void *c, void *ctx)
{
    pod_script *s = of(c);
    for (int i = 0; i < s->n_reqs; i++)
        if (s->reqs[i].ctx == ctx && !s->reqs[i].answered)
            s->reqs[i].cancelled = 1;
}

static int64_t now_ns(void *c)
{
    return of(c)->now;
}

#define SCRIPT_WRAPPER_IMAGE "wrapper:1"   /* pod_script_init's wrapper_image */
/* A Ready pod's status at an IP */
#define READY_STATUS_FMT "{\"phase\":\"Running\",\"podIP\":\"%s\",\"conditions\":" \
                         "[{\"type\":\"Ready\",\"status\":\"True\"}]}"

/* Every image's digest, as the script's registry answers. */
#define SCRIPT_DIGEST "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

void pod_script_pod_id(const char *image, char out[64])
{
    SCOPED_BUF why = {0};
    cr_assert_eq(pod_id_make(image, SCRIPT_DIGEST, 1, out, &why), 0, "%s", why.data);
}

#define SCRIPT_START_NS 1000000000000LL   /* any start: only differences count */

int64_t pod_script_wall(const pod_script *s)
{
    return s->wall0_us + (s->now - SCRIPT_START_NS) / 1000;
}

static int64_t wall_us(void *c)
{
    return pod_script_wall(of(c));
}

static const pod_api script_api = {get, get_text, list, create, patch, del, watch_start,
                                   watch_stop, lookup_start, lookup_cancel, cancel, now_ns,
                                   wall_us};

void pod_script_init(pod_script *s, pod_cache_opts *o)
{
    memset(s, 0, sizeof *s);
    log_capture_start();   /* the cache's log lines: shown only if the test fails */
    s->l = loop_new();
    cr_assert(s->l);
    s->now = SCRIPT_START_NS;
    s->wall0_us = 1767225600LL * 1000000;   /* 2026-01-01T00:00:00Z */
    *o = (pod_cache_opts){.namespace = "fns", .wrapper_image = SCRIPT_WRAPPER_IMAGE,
                          .dial = POD_DIAL_POD, .api = &script_api, .api_ctx = s};
}

void pod_script_fini(pod_script *s)
{
    log_capture_end();
    for (int i = 0; i < s->n_reqs; i++)
        free(s->reqs[i].body);
    loop_free(s->l);
}

void pod_script_answer(pod_script *s, int i, long status, const char *body)
{
    script_req *r = &s->reqs[i];
    cr_assert(!r->answered, "request %d (%s %s) answered twice", i, r->verb, r->resource);
    cr_assert(!r->cancelled, "request %d (%s %s) was cancelled", i, r->verb, r->resource);
    r->answered = 1;
    r->status = status;
    int text = !strcmp(r->verb, "text") && status / 100 == 2;   /* a log: not JSON */
    buf err = {0};
    json *obj = body && !text ? json_parse(body, strlen(body), &err) : NULL;
    cr_assert(!body || text || obj, "%s", err.data);
    char why[128];
    snprintf(why, sizeof why, "the API server said %ld", status);
    kube_result res = {.ok = status / 100 == 2, .status = status, .obj = obj,
                       .error = status / 100 == 2 ? NULL : why, .not_found = status == 404,
                       .already_exists = status == 409};
    if (text) {
        res.text = body ? body : "";
        res.text_len = strlen(res.text);
    }
    r->fn(&res, r->ctx);
    json_free(obj);
    buf_free(&err);
}

static void stop(loop *l, void *ctx)
{
    (void)ctx;
    loop_stop(l);
}

static void run_a_little(pod_script *s)
{
    cr_assert(loop_timer_add(s->l, 2000000, stop, NULL));
    loop_run(s->l);
}

static const char pending_pod[] = "{\"metadata\":{\"name\":\"%s\",\"uid\":\"u-%s\"},"
                                  "\"status\":{\"phase\":\"Pending\"}}";

/* ---- the namespace's Leases and the test's pods ------------------------------- */

static void copy(char *out, size_t cap, const char *in)
{
    cr_assert(in && strlen(in) < cap, "too long for the script: %s", in ? in : "(null)");
    memcpy(out, in, strlen(in) + 1);
}

script_lease *pod_script_find_lease(pod_script *s, const char *holder)
{
    for (int i = 0; i < s->n_leases; i++)
        if (!strcmp(s->leases[i].holder, holder))
            return &s->leases[i];
    return NULL;
}

static script_lease *lease_named(pod_script *s, const char *name)
{
    for (int i = 0; i < s->n_leases; i++)
        if (!strcmp(s->leases[i].name, name))
            return &s->leases[i];
    return NULL;
}

void pod_script_lease(pod_script *s, const char *holder, int64_t renew_us, long duration_s)
{
    script_lease *l = pod_script_find_lease(s, holder);
    if (!l) {
        cr_assert_lt(s->n_leases, SCRIPT_MAX_LEASES, "too many Leases");
        l = &s->leases[s->n_leases++];
    }
    snprintf(l->name, sizeof l->name, KUBE_LEASE_PREFIX "%s", holder);
    copy(l->holder, sizeof l->holder, holder);
    l->renew_us = renew_us;
    l->duration_s = duration_s;
}

script_pod *pod_script_find_pod(pod_script *s, const char *name)
{
    for (int i = 0; i < s->n_pods; i++)
        if (!strcmp(s->pods[i].name, name))
            return &s->pods[i];
    return NULL;
}

script_pod *pod_script_add_pod(pod_script *s, const char *name, const char *owner,
                               const char *image, int64_t created_us)
{
    cr_assert_lt(s->n_pods, SCRIPT_MAX_PODS, "too many pods");
    script_pod *p = &s->pods[s->n_pods++];
    *p = (script_pod){.created_us = created_us, .version = 7};
    copy(p->name, sizeof p->name, name);
    copy(p->owner, sizeof p->owner, owner ? owner : "");
    copy(p->image, sizeof p->image, image);
    snprintf(p->pod_id, sizeof p->pod_id, "id-%s", name);
    rfc3339_micro(created_us, p->last_call);
    return p;
}

/* A request on a pod the test put in the namespace, or a listing of them. */
static int owned_pod(pod_script *s, const script_req *r)
{
    if (strcmp(r->resource, "pods"))
        return 0;
    if (!strcmp(r->verb, "list"))
        return !strncmp(r->query, "labelSelector=fn.kpt.dev%2Fimage", 32) && s->n_pods > 0;
    return (!strcmp(r->verb, "patch") || !strcmp(r->verb, "delete")) &&
           pod_script_find_pod(s, r->name);
}

static void write_lease(buf *out, const script_lease *l)
{
    char renew[RFC3339_MICRO_MAX];
    rfc3339_micro(l->renew_us, renew);
    buf_printf(out, "{\"metadata\":{\"name\":\"%s\",\"labels\":{\"" POD_LEASE_LABEL
               "\":\"true\"}},\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":%ld,"
               "\"renewTime\":\"%s\"}}", l->name, l->holder, l->duration_s, renew);
}

static void write_pod(buf *out, const script_pod *p)
{
    char created[RFC3339_MICRO_MAX];
    rfc3339_micro(p->created_us, created);
    buf_printf(out, "{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"%ld\","
               "\"creationTimestamp\":\"%s\",\"labels\":{\"fn.kpt.dev/image\":\"%s\"},"
               "\"annotations\":{", p->name, p->version, created, p->pod_id);
    if (*p->owner)
        buf_printf(out, "\"" POD_OWNER_ANNOTATION "\":\"%s\",", p->owner);
    if (p->ready)
        buf_printf(out, "\"fn.kpt.dev/template-version\":\"" POD_DEFAULT_TEMPLATE_VERSION "\",");
    buf_printf(out, "\"" POD_LAST_CALL_ANNOTATION "\":\"%s\"}},\"spec\":{", p->last_call);
    if (p->ready)
        buf_printf(out, "\"initContainers\":[{\"name\":\"copy\",\"image\":\"%s\"}],",
                   SCRIPT_WRAPPER_IMAGE);
    buf_printf(out, "\"containers\":[{\"name\":\"function\",\"image\":\"%s\"}]},"
               "\"status\":", p->image);
    if (p->ready)
        buf_printf(out, READY_STATUS_FMT "}", "127.0.0.1");
    else
        buf_append_str(out, "{\"phase\":\"Running\"}}");
}

static void answer_buf(pod_script *s, int i, long status, buf *body)
{
    cr_assert(body->data, "out of memory");
    pod_script_answer(s, i, status, body->data);
    buf_free(body);
}

/* A Lease written from a create's or patch's body (its spec). */
static long write_lease_request(pod_script *s, const script_req *r)
{
    if (s->lease_status)
        return s->lease_status;
    buf err = {0};
    json *obj = json_parse(r->body, strlen(r->body), &err);
    cr_assert(obj, "the Lease's body: %s", err.data);
    int create = !strcmp(r->verb, "create");
    script_lease *l = lease_named(s, create ? kube_path_str(obj, "metadata.name") : r->name);
    long status = create ? (l ? 409 : 201) : (l ? 200 : 404);
    if (status / 100 == 2) {
        const json *d = kube_path(obj, "spec.leaseDurationSeconds");
        cr_assert(d && d->type == JSON_NUMBER, "a Lease is written with its duration");
        pod_script_lease(s, kube_path_str(obj, "spec.holderIdentity"),
                         rfc3339_us(kube_path_str(obj, "spec.renewTime")), (long)d->number);
    }
    json_free(obj);
    return status;
}

/* A PATCH of a pod: refused (409) when it names another resourceVersion. */
static long patch_pod(script_pod *p, const char *body)
{
    buf err = {0};
    json *obj = json_parse(body, strlen(body), &err);
    cr_assert(obj, "the pod's patch: %s", err.data);
    const char *rv = kube_path_str(obj, "metadata.resourceVersion");
    char mine[24];
    snprintf(mine, sizeof mine, "%ld", p->version);
    long status = rv && strcmp(rv, mine) ? 409 : 200;
    const json *notes = kube_path(obj, "metadata.annotations");
    const char *owner = json_get_str(notes, POD_OWNER_ANNOTATION),
               *last = json_get_str(notes, POD_LAST_CALL_ANNOTATION);
    if (status == 200) {
        if (owner)
            copy(p->owner, sizeof p->owner, owner);
        if (last)
            copy(p->last_call, sizeof p->last_call, last);
        p->version++;
    }
    json_free(obj);
    return status;
}

static void answer_namespace(pod_script *s, int i)
{
    script_req *r = &s->reqs[i];
    buf out = {0};
    int leases = !strcmp(r->resource, "leases");
    if (!strcmp(r->verb, "list")) {
        buf_append_str(&out, "{\"items\":[");
        const char *id = leases ? NULL : strstr(r->query, "%3D");   /* one podId's */
        for (int k = 0, n = 0; k < (leases ? s->n_leases : s->n_pods); k++) {
            if (id && strcmp(s->pods[k].pod_id, id + 3))
                continue;
            if (n++)
                buf_append_str(&out, ",");
            if (leases)
                write_lease(&out, &s->leases[k]);
            else
                write_pod(&out, &s->pods[k]);
        }
        buf_append_str(&out, "]}");
        answer_buf(s, i, 200, &out);
    } else if (!strcmp(r->verb, "delete")) {
        int found = 0;
        if (leases) {
            script_lease *l = lease_named(s, r->name);
            if ((found = l != NULL))
                *l = s->leases[--s->n_leases];
        } else {
            script_pod *p = pod_script_find_pod(s, r->name);
            if ((found = p != NULL))
                *p = s->pods[--s->n_pods];
        }
        pod_script_answer(s, i, found ? 200 : 404, NULL);
    } else if (leases) {   /* a create or patch */
        long status = write_lease_request(s, r);
        pod_script_answer(s, i, status, status / 100 == 2 ? r->body : NULL);
    } else {   /* a patch of a pod of the test's */
        script_pod *p = pod_script_find_pod(s, r->name);
        long status = patch_pod(p, r->body);
        if (status == 200)
            write_pod(&out, p);
        else
            buf_append_str(&out, "{}");
        answer_buf(s, i, status, &out);
    }
}

/* What a quiet cluster answers at once; 1 when it answered something. */
static int answer_one(pod_script *s, int i)
{
    script_req *r = &s->reqs[i];
    char body[512];
    if (r->answered || r->cancelled || !strcmp(r->verb, "get") || !strcmp(r->verb, "text") ||
        (s->hold_deletes && !strcmp(r->verb, "delete")))
        return 0;
    if (!strcmp(r->resource, "leases") || owned_pod(s, r)) {
        if ((s->hold_claims && !strcmp(r->verb, "patch") && !strcmp(r->resource, "pods")) ||
            (s->hold_leases && !strcmp(r->resource, "leases")))
            return 0;
        answer_namespace(s, i);
    }
    else if (!strcmp(r->verb, "list")) {
        pod_script_answer(s, i, 200, "{\"items\":[]}");
    } else if (!strcmp(r->verb, "create") && !strcmp(r->resource, "pods")) {
        if (s->create_error) {
            r->answered = 1;
            kube_result res = {.status = 403, .error = s->create_error};
            r->fn(&res, r->ctx);
            return 1;
        }
        char name[32];
        snprintf(name, sizeof name, "fn-%d", ++s->pods_made);
        snprintf(body, sizeof body, pending_pod, name, name);
        pod_script_answer(s, i, 201, body);
    } else {
        pod_script_answer(s, i, 200, "{}");
    }
    return 1;
}

/* The loop run a little, then what a quiet cluster answers at once; 1
 * when something was answered. */
static int one_round(pod_script *s)
{
    run_a_little(s);
    int busy = 0;
    for (int i = 0; i < s->n_lookups; i++) {
        script_lookup *lk = &s->lookups[i];
        if (lk->answered || lk->cancelled)
            continue;
        lk->answered = busy = 1;
        registry_result res = {.digest = strdup(SCRIPT_DIGEST),
                               .entrypoint = calloc(2, sizeof(char *)), .n_entrypoint = 1};
        cr_assert(res.digest && res.entrypoint && (res.entrypoint[0] = strdup("/fn")));
        lk->done(0, &res, NULL, lk->ctx);
    }
    for (int i = 0; i < s->n_reqs; i++)
        busy |= answer_one(s, i);
    for (int i = 0; i < s->n_watches; i++) {
        script_watch *w = &s->watches[i];
        if (w->listed || w->stopped)
            continue;
        w->listed = busy = 1;
        char body[600];
        snprintf(body, sizeof body, "{\"items\":[{\"metadata\":{\"name\":\"%s\"},"
                 "\"status\":{\"phase\":\"Pending\"}}]}", w->pod);
        buf err = {0};
        json *list = json_parse(body, strlen(body), &err);
        cr_assert(list, "%s", err.data);
        w->fns->on_list(list, 0, w->ctx);
        json_free(list);
    }
    return busy;
}

void pod_script_pump(pod_script *s)
{
    /* quiet three rounds running: a timer due with the round's end (a
     * scan's Delete, sent from the loop) runs in the next one */
    for (int round = 0, quiet = 0; quiet < 3 && round < 100; round++)
        quiet = one_round(s) ? 0 : quiet + 1;
}

void pod_script_wait(pod_script *s, int64_t real_ns)
{
    for (int64_t until = loop_now_ns() + real_ns; loop_now_ns() < until;)
        one_round(s);
    pod_script_pump(s);
}

void pod_script_status(pod_script *s, const char *pod, const char *status)
{
    for (int i = 0; i < s->n_watches; i++) {
        script_watch *w = &s->watches[i];
        if (w->stopped || strcmp(w->pod, pod))
            continue;
        char body[1024];
        snprintf(body, sizeof body, "{\"metadata\":{\"name\":\"%s\"},\"status\":%s}", pod, status);
        buf err = {0};
        json *obj = json_parse(body, strlen(body), &err);
        cr_assert(obj, "%s", err.data);
        w->fns->on_event(KUBE_MODIFIED, obj, w->ctx);
        json_free(obj);
        return;
    }
    cr_assert_fail("no watch on pod %s", pod);
}

void pod_script_ready(pod_script *s, const char *pod, const char *ip)
{
    char status[256];
    snprintf(status, sizeof status, READY_STATUS_FMT, ip);
    pod_script_status(s, pod, status);
}

int pod_script_count(const pod_script *s, const char *verb, const char *resource, const char *name,
                     int *last)
{
    int n = 0;
    for (int i = 0; i < s->n_reqs; i++) {
        const script_req *r = &s->reqs[i];
        if (!strcmp(r->verb, verb) && !strcmp(r->resource, resource) &&
            (!name || !strcmp(r->name, name))) {
            n++;
            if (last)
                *last = i;
        }
    }
    return n;
}

void pod_script_answered(const pod_answer *a, void *ctx)
{
    script_answers *got = ctx;
    cr_assert_lt(got->n, SCRIPT_MAX_ANSWERS);
    snprintf(got->pod[got->n], sizeof got->pod[0], "%s", a->error ? "" : a->pod);
    snprintf(got->error[got->n], sizeof got->error[0], "%s", a->error ? a->error : "");
    got->n++;
}

pod_cache *pod_script_cache(pod_script *s, const pod_cache_opts *o)
{
    buf err = {0};
    pod_cache *pc = pod_cache_new(s->l, NULL, o, &err);
    cr_assert(pc, "%s", err.data);
    return pc;
}

void pod_script_end(pod_script *s, pod_cache *pc)
{
    pod_cache_free(pc);
    pod_script_fini(s);
}

void pod_script_start_pod(pod_script *s, pod_cache *pc, const char *image, script_answers *got,
                          const char *name)
{
    int before = got->n;
    cr_assert(pod_cache_get(pc, image, pod_script_answered, got));
    pod_script_pump(s);
    cr_assert_eq(got->n, before, "answered before its pod was Ready");
    pod_script_ready(s, name, "127.0.0.1");
    pod_script_pump(s);
    pod_script_expect(got, before, 1, name);
}

void pod_script_expect(const script_answers *got, int from, int n, const char *name)
{
    cr_assert_eq(got->n, from + n, "%d answers, not %d", got->n - from, n);
    for (int i = from; i < got->n; i++)
        cr_assert_str_eq(got->pod[i], name, "answer %d: %s", i, got->error[i]);
}

int pod_script_unanswered(const pod_script *s)
{
    int n = 0;
    for (int i = 0; i < s->n_reqs; i++)
        n += !s->reqs[i].answered && !s->reqs[i].cancelled;
    return n;
}
