/* kube_pod_life: one function pod's life, from requested to gone; see
 * kube_pod_internal.h.
 *
 * Its state changes in pod_set only, on pod_state's table. The ends of a
 * life are here: serving (its waiters answered), failing (its waiters
 * handed to the image's other pods or told why; fail fast quotes the
 * container's last log lines and deletes the pod), deleting, and leaving
 * the table. A pod that left is freed once its API requests and its watch
 * have let go of it. */
#include "kube/kube_pod_internal.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kube/pod_status.h"

void pod_set(pod *p, pod_event ev)
{
    pod_state next;
    int legal = pod_state_next(p->state, ev, &next) == 0;
    if (!legal)
        log_error("pod %s: event %s refused in state %s", pod_label(p), pod_event_name(ev),
                  pod_state_name(p->state));
    assert(legal);
    if (!legal)
        return;
    log_v(next == p->state ? 4 : 3, "pod %s: %s --%s--> %s", pod_label(p), pod_state_name(p->state),
          pod_event_name(ev), pod_state_name(next));
    if (next != p->state) {
        p->last_event = ev;
        p->changed_ns = pod_now(p->pc);
    }
    p->state = next;
}

int pod_in_table(const pod *p)
{
    switch (p->state) {
    case POD_REQUESTED: case POD_CREATING: case POD_WAITING_READY: case POD_SERVING: case POD_FAILED:
        return 1;
    default:
        return 0;
    }
}

const char *pod_label(const pod *p)
{
    return p->name ? p->name : p->pod_id[0] ? p->pod_id : p->image;
}

int pod_set_str(char **dst, const char *s)
{
    free(*dst);
    *dst = s ? strdup(s) : NULL;
    return !s || *dst ? 0 : -1;
}

static void on_deadline(loop *l, void *ctx);
static void unwatch_now(loop *l, void *ctx);
static void delete_now(loop *l, void *ctx);
static void fetch_log(loop *l, void *ctx);

pod *pod_new(fn_entry *f, unsigned postfix)
{
    pod *p = calloc(1, sizeof *p);
    if (!p || !(p->image = strdup(f->image))) {
        free(p);
        return NULL;
    }
    p->pc = f->pc;
    p->fn = f;
    p->postfix = postfix;
    p->state = POD_REQUESTED;
    p->started_ns = p->changed_ns = pod_now(p->pc);
    p->last_event = POD_EVENT_COUNT;   /* none yet: "?" */
    loop_timer_init(&p->deadline, on_deadline, p);
    loop_defer_init(&p->log_now, fetch_log, p);
    loop_defer_init(&p->unwatch, unwatch_now, p);
    loop_defer_init(&p->delete_soon, delete_now, p);
    pod_ready_init(p);
    loop_timer_arm(p->pc->l, &p->deadline, p->pc->o.ready_timeout_ns);
    p->next = f->pods;
    f->pods = p;
    return p;
}

static void pod_free(pod *p)
{
    for (pod **q = &p->pc->held; *q; q = &(*q)->held_next)
        if (*q == p) {
            *q = p->held_next;
            break;
        }
    assert(!loop_defer_posted(&p->unwatch) && !loop_defer_posted(&p->delete_soon));
    loop_timer_disarm(p->pc->l, &p->deadline);
    loop_timer_disarm(p->pc->l, &p->poll);
    loop_defer_cancel(&p->poll_now);
    loop_defer_cancel(&p->log_now);
    loop_defer_cancel(&p->check_soon);
    pod_health_stop(p);
    free(p->image);
    free(p->name);
    free(p->uid);
    free(p->ip);
    free(p->cluster_ip);
    free(p->addr);
    free(p->shown);
    free(p->node);
    free(p->version);
    free(p);
}

void pod_maybe_free(pod *p)
{
    if (!pod_in_table(p) && !p->api_calls && !p->watch && !loop_defer_posted(&p->unwatch))
        pod_free(p);
}

void pod_api_begin(pod *p)
{
    p->api_calls++;
    p->pc->api_calls++;
}

int pod_api_end(pod *p)
{
    assert(p->api_calls > 0);
    p->api_calls--;
    p->pc->api_calls--;
    if (pod_in_table(p))
        return 0;
    pod_maybe_free(p);
    return 1;
}

void pod_health_stop(pod *p)
{
    if (p->health)
        p->pc->o.health->cancel(p->health);
    p->health = NULL;
    loop_timer_disarm(p->pc->l, &p->health_next);
    loop_defer_cancel(&p->health_now);
}

static void unwatch_now(loop *l, void *ctx)
{
    (void)l;
    pod *p = ctx;
    p->pc->api->watch_stop(p->pc->api_ctx, p->watch);
    p->watch = NULL;
    pod_maybe_free(p);
}

/* Stops the watch from the loop: kube_watch_stop may not run inside the
 * watch's own callbacks, where most decisions are taken. */
void pod_unwatch_later(pod *p)
{
    if (p->watch)
        loop_defer_post(p->pc->l, &p->unwatch);
}

/* p has left the table (deleting or gone): its waiters go to its image's
 * other pods or are told why, whoever keeps something per pod is told, and
 * p is freed once nothing refers to it. */
void pod_leave(pod *p, const char *why)
{
    assert(!pod_in_table(p) && p->fn);
    pod_cache *pc = p->pc;
    fn_entry *f = p->fn;
    for (pod **q = &f->pods; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    p->fn = NULL;
    route_hand_off(p, f, why);
    fn_release(f);
    warm_pod_left(pc, p->image, p->last_used_ns != 0);
    pod_health_stop(p);
    for (int i = 0; p->name && i < POD_DROP_HOOKS; i++)
        if (pc->drop_hooks[i].fn)
            pc->drop_hooks[i].fn(p->image, p->name, pc->drop_hooks[i].ctx);
    loop_timer_disarm(pc->l, &p->deadline);
    loop_timer_disarm(pc->l, &p->poll);
    loop_defer_cancel(&p->poll_now);
    loop_defer_cancel(&p->log_now);
    loop_defer_cancel(&p->check_soon);
    check_release_parked(p);   /* routed afresh: p is no longer a choice */
    pod_unwatch_later(p);
    p->held_next = pc->held;
    pc->held = p;
    pod_maybe_free(p);
}

void pod_abandon(pod *p)
{
    pod_cache *pc = p->pc;
    assert(!pod_in_table(p));
    pc->api->cancel(pc->api_ctx, p);
    pc->api_calls -= p->api_calls;
    p->api_calls = 0;
    pod_health_stop(p);
    loop_defer_cancel(&p->delete_soon);   /* pod_free disarms the rest */
    loop_defer_cancel(&p->unwatch);
    if (p->watch)
        pc->api->watch_stop(pc->api_ctx, p->watch);
    pod_free(p);
}

void pod_serve(pod *p)
{
    pod_health_stop(p);
    pod_set(p, POD_EV_READY);
    p->step = READY_STEP_STATUS;
    loop_timer_disarm(p->pc->l, &p->deadline);
    if (!p->last_used_ns) {   /* its first serving (again after a lost readiness: not counted) */
        image_stats *s = stats_for(p->pc, p->image);
        s->started++;
        s->start_ns_sum += pod_now(p->pc) - p->started_ns;
    }
    p->last_used_ns = pod_now(p->pc);
    log_info("pod %s serves %s at %s (%s, %.2f s%s)", p->name, p->image, p->shown,
             p->created ? "created" : "adopted", (double)(pod_now(p->pc) - p->started_ns) / 1e9,
             p->ready ? "" : "; its wrapper answered SERVING, the pod is not Ready yet");
    answer_waiters(p, NULL);
    if (!p->pc->o.keep_watching)
        pod_unwatch_later(p);
}

/* ---- deleting ------------------------------------------------------------- */

static void on_pod_deleted(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (r->ok || r->not_found) {
        const char *name = kube_path_str(r->obj, "metadata.name");
        log_info("pod %s deleted", name ? name : "?");
        if (p->state == POD_DELETING)
            pod_set(p, POD_EV_DELETED);
    } else {
        log_warn("deleting a failed function pod: %s", r->error);
    }
    pod_api_end(p);
}

static void on_service_deleted(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (!r->ok && !r->not_found)
        log_warn("deleting the Service %s of a reclaimed pod: %s", p->pod_id, r->error);
    pod_api_end(p);
}

static void delete_now(loop *l, void *ctx)
{
    (void)l;
    pod *p = ctx;   /* held by the api call counted in pod_delete */
    buf err = {0};
    kube_ref ref = {"/api/v1", "pods", p->pc->o.namespace, p->name, "gracePeriodSeconds=0"};
    kube_ref svc = {"/api/v1", "services", p->pc->o.namespace, p->pod_id, NULL};
    if (p->delete_service) {
        pod_api_begin(p);
        if (p->pc->api->del(p->pc->api_ctx, &svc, on_service_deleted, p, &err) < 0) {
            log_warn("deleting Service %s: %s", p->pod_id, err.data ? err.data : "out of memory");
            pod_api_end(p);   /* p is still held: not freed here */
            buf_reset(&err);
        }
    }
    pod_api_begin(p);
    if (p->pc->api->del(p->pc->api_ctx, &ref, on_pod_deleted, p, &err) < 0) {
        log_warn("deleting pod %s: %s", p->name, err.data ? err.data : "out of memory");
        pod_api_end(p);
    }
    buf_free(&err);
    pod_api_end(p);   /* the hold of pod_delete */
}

/* The Delete is sent from the loop: this may run inside a watch's data
 * callback, where no request can start. Held from now (a waiter answered
 * next may stop the loop, and pod_cache_settle waits for it). */
void pod_delete(pod *p)
{
    loop_defer_post(p->pc->l, &p->delete_soon);
    pod_api_begin(p);
    pod_set(p, POD_EV_DELETE_SENT);
}

/* ---- failing ----------------------------------------------------------------- */

void pod_fail(pod *p, const char *message, int delete_pod)
{
    if (!pod_in_table(p))
        return;
    log_error("%s", message);
    if (p->state != POD_FAILED)
        pod_set(p, POD_EV_FAILED);
    if (delete_pod && p->name)
        pod_delete(p);
    else
        pod_set(p, POD_EV_RELEASED);
    pod_leave(p, message);
}

void pod_fail_fmt(pod *p, int delete_pod, const char *fmt, const char *arg)
{
    buf m = {0};
    buf_printf(&m, fmt, arg);
    pod_fail(p, m.data ? m.data : "out of memory", delete_pod);
    buf_free(&m);
}

static void on_deadline(loop *l, void *ctx)
{
    (void)l;
    pod *p = ctx;
    buf m = {0};
    buf_printf(&m, "function pod %s/%s for %s not ready after %.0f s (last seen: %s%s%s); inspect "
               "the pod and its Service in namespace \"%s\"", p->pc->o.namespace,
               p->name ? p->name : p->pod_id, p->image, (double)p->pc->o.ready_timeout_ns / 1e9,
               p->desc[0] ? p->desc : "no status yet", p->health_seen[0] ? "; the wrapper server: " : "",
               p->health_seen, p->pc->o.namespace);
    pod_fail(p, m.data ? m.data : "out of memory", 0);
    buf_free(&m);
}

/* ---- fail fast: the container's last words -------------------------------- */

static void on_log(const kube_result *r, void *ctx)
{
    pod *p = ctx;
    if (pod_api_end(p))
        return;
    buf m = {0};
    buf_printf(&m, "function pod %s/%s for %s will not serve: %s", p->pc->o.namespace, p->name,
               p->image, p->desc);
    if (r->ok && r->text_len) {
        buf_printf(&m, "; last log lines of container \"%s\"%s:\n", p->fail_container,
                   p->fail_previous ? " (previous run)" : "");
        buf_append(&m, r->text, r->text_len);
        while (m.len && m.data[m.len - 1] == '\n')
            m.data[--m.len] = '\0';
    } else if (r->ok) {
        buf_printf(&m, "; container \"%s\" logged nothing", p->fail_container);
    } else {
        buf_printf(&m, "; its log could not be read: %s", r->error);
    }
    pod_fail(p, m.data ? m.data : "out of memory", 1);
    buf_free(&m);
}

static void fetch_log(loop *l, void *ctx)
{
    (void)l;
    pod *p = ctx;
    buf q = {0}, err = {0};
    buf_printf(&q, "container=%s&tailLines=%d%s", p->fail_container, POD_LOG_TAIL_LINES,
               p->fail_previous ? "&previous=true" : "");
    char path[300];
    snprintf(path, sizeof path, "%s/log", p->name);
    kube_ref ref = {"/api/v1", "pods", p->pc->o.namespace, path, q.data};
    pod_api_begin(p);
    if (!q.data || p->pc->api->get_text(p->pc->api_ctx, &ref, on_log, p, &err) < 0) {
        kube_result r = {.error = err.data ? err.data : "out of memory"};
        on_log(&r, p);
    }
    buf_free(&q);
    buf_free(&err);
}

void pod_fail_fast(pod *p, const pod_status *st)
{
    snprintf(p->fail_container, sizeof p->fail_container, "%s",
             st->container ? st->container : "function");
    p->fail_previous = st->previous;
    /* a container that never ran (image pull, configuration) has no log */
    if (st->exit_code < 0 && !st->previous) {
        buf m = {0};
        buf_printf(&m, "function pod %s/%s for %s will not serve: %s", p->pc->o.namespace, p->name,
                   p->image, p->desc);
        pod_fail(p, m.data ? m.data : "out of memory", 1);
        buf_free(&m);
        return;
    }
    pod_set(p, POD_EV_FAILED);   /* failed now; the log only adds to the message */
    p->step = READY_STEP_LOG;
    /* from the loop: this runs inside the watch's data callback */
    loop_defer_post(p->pc->l, &p->log_now);
}
