/* kube_pod_warm: warm pods (porch#956), a minimum of started pods per
 * image, kept before any call asks and through the idle TTL; see
 * kube_pod_cache.h (pod_cache_set_warm).
 *
 * An image kept warm gets pods (without waiters: routing then finds them
 * serving) until it holds its minimum, at once, at every scan, and a second
 * after one of its pods left the table (deleted, failed, taken over). A pod
 * that left without ever serving (its image missing, a pull error) makes
 * the next try wait longer, 1 s doubling up to a minute, so that a broken
 * image costs one pod attempt a minute, not a loop. kube_pod_reclaim keeps
 * the image's minimum of serving pods past their time to live. */
#include "kube/kube_pod_internal.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kube/pod_route.h"

#define WARM_RETRY_NS (1000LL * 1000000)
#define WARM_RETRY_MAX_NS (60LL * 1000000000)

struct warm_entry {
    char *image;
    int min;
    int fails;                 /* pods in a row that left without serving */
    int64_t next_try_ns;
};

static warm_entry *warm_find(const pod_cache *pc, const char *image)
{
    for (int i = 0; i < pc->n_warm; i++)
        if (!strcmp(pc->warm[i].image, image))
            return &pc->warm[i];
    return NULL;
}

int warm_min(const pod_cache *pc, const char *image)
{
    const warm_entry *w = warm_find(pc, image);
    return w ? w->min : 0;
}

static int held(const fn_entry *f, unsigned *postfixes)
{
    int n = 0;
    for (const pod *p = f ? f->pods : NULL; p && n < POD_MAX_PER_FUNCTION; p = p->next)
        if (p->state != POD_FAILED)
            postfixes[n++] = p->postfix;
    return n;
}

static void ensure_one(pod_cache *pc, warm_entry *w)
{
    if (loop_now_ns() < w->next_try_ns)
        return;
    fn_entry *f = fn_find(pc, w->image);
    unsigned postfixes[POD_MAX_PER_FUNCTION];
    int n = held(f, postfixes);
    if (n >= w->min)
        return;
    if (!f && !(f = fn_new(pc, w->image))) {
        log_warn("warm pods of %s: out of memory", w->image);
        return;
    }
    log_info("warm pods: %s holds %d of its %d; starting %d", w->image, n, w->min, w->min - n);
    for (; n < w->min; n++) {
        pod *p = pod_new(f, pod_route_postfix(postfixes, n));
        if (!p) {
            log_warn("warm pods of %s: out of memory", w->image);
            break;
        }
        postfixes[n] = p->postfix;
        fn_start_pod(p);   /* may fail p at once: warm_pod_left counts it */
        if (!(f = fn_find(pc, w->image)))   /* f went with its last pod */
            break;
    }
    if (f && !f->pods)
        fn_release(f);
}

void warm_ensure(pod_cache *pc)
{
    for (int i = 0; i < pc->n_warm; i++)
        ensure_one(pc, &pc->warm[i]);
}

static void on_warm_timer(loop *l, void *ctx)
{
    (void)l;
    warm_ensure(ctx);
}

void warm_init(pod_cache *pc)
{
    loop_timer_init(&pc->warm_timer, on_warm_timer, pc);
    loop_defer_init(&pc->warm_now, on_warm_timer, pc);
}

void warm_pod_left(pod_cache *pc, const char *image, int served)
{
    warm_entry *w = warm_find(pc, image);
    if (!w)
        return;
    int64_t wait = WARM_RETRY_NS;
    if (served) {
        w->fails = 0;
    } else {
        for (int i = 0; i < w->fails && wait < WARM_RETRY_MAX_NS; i++)
            wait *= 2;
        if (wait > WARM_RETRY_MAX_NS)
            wait = WARM_RETRY_MAX_NS;
        w->fails += w->fails < 30;
        w->next_try_ns = loop_deadline_ns(wait);
    }
    if (!loop_timer_armed(&pc->warm_timer))
        loop_timer_arm(pc->l, &pc->warm_timer, wait);
}

void warm_free(pod_cache *pc)
{
    loop_timer_disarm(pc->l, &pc->warm_timer);
    loop_defer_cancel(&pc->warm_now);
    for (int i = 0; i < pc->n_warm; i++)
        free(pc->warm[i].image);
    free(pc->warm);
    pc->warm = NULL;
    pc->n_warm = 0;
}

int pod_cache_set_warm(pod_cache *pc, const pod_warm *want, int n)
{
    warm_entry *next = n > 0 ? calloc((size_t)n, sizeof *next) : NULL;
    if (n > 0 && !next)
        return -1;
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (want[i].min <= 0)
            continue;
        const warm_entry *was = warm_find(pc, want[i].image);
        next[k] = was ? *was : (warm_entry){0};
        next[k].min = want[i].min > POD_MAX_PER_FUNCTION ? POD_MAX_PER_FUNCTION : want[i].min;
        if (!(next[k].image = strdup(want[i].image))) {
            for (int j = 0; j < k; j++)
                free(next[j].image);
            free(next);
            return -1;
        }
        k++;
    }
    for (int i = 0; i < pc->n_warm; i++)
        free(pc->warm[i].image);
    free(pc->warm);
    pc->warm = next;
    pc->n_warm = k;
    if (k && !loop_timer_armed(&pc->warm_timer))   /* from the loop, as calls are routed */
        loop_defer_post(pc->l, &pc->warm_now);
    return 0;
}
