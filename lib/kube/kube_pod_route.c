/* kube_pod_route: calls to the pods of their image; see kube_pod_cache.h.
 *
 * A call (pod_cache_get) is routed from the loop: pod_route picks the pod
 * of its image it joins, or says a new one is to be started. A serving pod
 * answers at once; one coming up keeps it among its waiters until it
 * serves or fails. A pod that fails hands its waiters to the image's other
 * pods (never starting one for them), or tells them why. */
#include "kube/kube_pod_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kube/pod_route.h"

static void answer(pod *p, pod_waiter *w, const char *error)
{
    pod_answer a = {.error = error, .image = p->image, .pod = p->name, .uid = p->uid,
                    .addr = p->addr, .name = p->shown, .created = p->created, .ready = p->ready,
                    .waited_ns = pod_now(p->pc) - p->started_ns};
    w->fn(&a, w->ctx);
    free(w->image);
    free(w);
}

void answer_waiters(pod *p, const char *error)
{
    pod_waiter *w = p->waiters;
    p->waiters = NULL;
    while (w) {
        pod_waiter *next = w->next;
        answer(p, w, error);
        w = next;
    }
}

static void answer_oom(pod_waiter *w)
{
    pod_answer a = {.error = "out of memory", .image = w->image};
    w->fn(&a, w->ctx);
    free(w->image);
    free(w);
}

static int count_waiters(const pod *p)
{
    int n = 0;
    for (const pod_waiter *w = p->waiters; w; w = w->next)
        n++;
    return n;
}

/* f's pods as pod_route sees them (at most POD_MAX_PER_FUNCTION); avoid
 * counts as failing: it takes a call only when no other pod can. A stale
 * pod (an older template) is no choice, but its postfix stays taken
 * (*n_postfixes of them). */
static int views(fn_entry *f, pod *avoid, pod_route_view *v, pod **by, unsigned *postfixes,
                 int *n_postfixes)
{
    int n = 0, np = 0;
    for (pod *p = f->pods; p && np < POD_MAX_PER_FUNCTION; p = p->next) {
        postfixes[np++] = p->postfix;
        if (p->stale)
            continue;
        v[n] = (pod_route_view){.load = p->calls + count_waiters(p),
                                .failed = p->state == POD_FAILED || p == avoid};
        by[n++] = p;
    }
    *n_postfixes = np;
    return n;
}

static void join(pod *p, pod_waiter *w)
{
    w->p = p;
    w->next = p->waiters;
    p->waiters = w;
    if (p->state == POD_SERVING) {
        /* every call to a warm pod: a detail (verbosity 3) */
        log_v(3, "pod %s: reused for %s", p->name, p->image);
        answer_waiters(p, NULL);
    }
}

static void limits(const pod_cache *pc, const char *image, int *cap, int *waitlist)
{
    *cap = pc->o.max_pods;
    *waitlist = pc->o.waitlist;
    if (pc->o.limits_for)
        pc->o.limits_for(image, pc->o.config_ctx, cap, waitlist);
}

void route_waiter_avoiding(fn_entry *f, pod_waiter *w, pod *avoid)
{
    pod_route_view v[POD_MAX_PER_FUNCTION];
    pod *by[POD_MAX_PER_FUNCTION];
    unsigned postfixes[POD_MAX_PER_FUNCTION];
    int np, n = views(f, avoid, v, by, postfixes, &np), cap, waitlist;
    limits(f->pc, f->image, &cap, &waitlist);
    if (cap > POD_MAX_PER_FUNCTION)
        cap = POD_MAX_PER_FUNCTION;
    int i = pod_route_pick(v, n, cap, waitlist, &f->rr);
    if (i != POD_ROUTE_NEW) {
        join(by[i], w);
        return;
    }
    pod *p = pod_new(f, pod_route_postfix(postfixes, np));
    if (!p) {
        answer_oom(w);
        fn_release(f);
        return;
    }
    if (n)   /* scaling up (Porch logs it too) */
        log_info("%s: starting pod #%u beside its %d (cap %d, waitlist %d)", f->image, p->postfix, n,
                 cap, waitlist);
    join(p, w);
    fn_start_pod(p);   /* may fail p at once, and f with it */
}

void route_waiter(fn_entry *f, pod_waiter *w)
{
    route_waiter_avoiding(f, w, NULL);
}

void route_hand_off(pod *p, fn_entry *f, const char *why)
{
    pod_waiter *w = p->waiters;
    p->waiters = NULL;
    while (w) {
        pod_waiter *next = w->next;
        pod_route_view v[POD_MAX_PER_FUNCTION];
        pod *by[POD_MAX_PER_FUNCTION];
        unsigned postfixes[POD_MAX_PER_FUNCTION];
        int np, n = views(f, NULL, v, by, postfixes, &np);
        int i = n ? pod_route_pick(v, n, n, 1, &f->rr) : POD_ROUTE_NEW;
        if (i == POD_ROUTE_NEW) {
            answer(p, w, why);
        } else {
            log_v(1, "pod %s failed; a call waiting for it goes to pod %s", pod_label(p),
                  pod_label(by[i]));
            join(by[i], w);
        }
        w = next;
    }
}

/* ---- callers ------------------------------------------------------------------ */

static void attach(loop *l, void *ctx)
{
    (void)l;
    pod_waiter *w = ctx;
    pod_cache *pc = w->pc;
    for (pod_waiter **q = &pc->pending; *q; q = &(*q)->next)
        if (*q == w) {
            *q = w->next;
            break;
        }
    fn_entry *f = fn_find(pc, w->image);
    if (!f && !(f = fn_new(pc, w->image))) {
        answer_oom(w);
        return;
    }
    route_waiter(f, w);
}

void route_later(pod_waiter *w)
{
    w->p = NULL;
    loop_defer_post(w->pc->l, &w->attach);
    w->next = w->pc->pending;
    w->pc->pending = w;
}

static pod_waiter *waiter_new(pod_cache *pc, const char *image, pod_answer_fn *fn, void *ctx)
{
    pod_waiter *w = calloc(1, sizeof *w);
    if (!w || !(w->image = strdup(image))) {
        free(w);
        return NULL;
    }
    w->pc = pc;
    w->fn = fn;
    w->ctx = ctx;
    loop_defer_init(&w->attach, attach, w);
    return w;
}

pod_waiter *pod_cache_get(pod_cache *pc, const char *image, pod_answer_fn *fn, void *ctx)
{
    pod_waiter *w = waiter_new(pc, image, fn, ctx);
    if (!w)
        return NULL;
    loop_defer_post(pc->l, &w->attach);
    w->next = pc->pending;
    pc->pending = w;
    return w;
}

pod_waiter *pod_cache_retry(pod_cache *pc, const char *image, const char *name, const char *why,
                            pod_answer_fn *fn, void *ctx)
{
    stats_for(pc, image)->retries++;
    pod *p = fn_pod_named(pc, image, name);
    if (!p)
        return pod_cache_get(pc, image, fn, ctx);
    pod_waiter *w = waiter_new(pc, image, fn, ctx);
    if (!w)
        return NULL;
    check_park(p, w, why);
    return w;
}

void pod_cache_cancel(pod_cache *pc, pod_waiter *w)
{
    if (!w)
        return;
    pod_waiter **lists[] = {loop_defer_posted(&w->attach) ? &pc->pending : NULL, w->p ? &w->p->waiters : NULL,
                            w->p ? &w->p->parked : NULL};
    for (size_t i = 0; i < sizeof lists / sizeof *lists; i++)
        for (pod_waiter **q = lists[i]; q && *q; q = &(*q)->next)
            if (*q == w) {
                *q = w->next;
                break;
            }
    loop_defer_cancel(&w->attach);
    free(w->image);
    free(w);
}
