/* Unit tests for lib/core/loop's timers: every timer fires once, in due order,
 * never early, and cancelled ones never, whatever the timerfd was left
 * armed for (cancelling does not reprogram it). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <unistd.h>

#include "core/loop.h"

#define MS 1000000LL

typedef struct fired {
    loop *l;
    int64_t start_ns;
    int order[8];
    int64_t at_ms[8];
    int n;
    int stop_after;
} fired;

typedef struct tag {
    fired *f;
    int id;
} tag;

static void on_timer(loop *l, void *ctx)
{
    tag *t = ctx;
    fired *f = t->f;
    cr_assert_lt(f->n, 8);
    f->order[f->n] = t->id;
    f->at_ms[f->n] = (loop_now_ns() - f->start_ns) / MS;
    if (++f->n == f->stop_after)
        loop_stop(l);
}

static void never(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    cr_assert_fail("a cancelled timer fired");
}

static void give_up(loop *l, void *ctx)
{
    (void)ctx;
    loop_stop(l);
}

Test(loop, a_cancelled_first_timer_leaves_the_later_ones_on_time, .timeout = 10)
{
    loop *l = loop_new();
    fired f = {.l = l, .start_ns = loop_now_ns(), .stop_after = 2};
    tag b = {&f, 2}, c = {&f, 3};
    loop_timer *a = loop_timer_add(l, 30 * MS, never, NULL);   /* the timerfd is armed for it */
    loop_timer_cancel(l, a);                                    /* ... and stays so */
    loop_timer_add(l, 80 * MS, on_timer, &c);
    loop_timer_add(l, 60 * MS, on_timer, &b);
    loop_timer_add(l, 2000 * MS, give_up, NULL);
    cr_assert_eq(loop_run(l), 0);
    cr_assert_eq(f.n, 2, "fired %d of 2 (the stale arming must re-arm)", f.n);
    cr_assert_eq(f.order[0], 2);
    cr_assert_eq(f.order[1], 3);
    cr_assert_geq(f.at_ms[0], 60, "fired early: %lld ms", (long long)f.at_ms[0]);
    cr_assert_geq(f.at_ms[1], 80, "fired early: %lld ms", (long long)f.at_ms[1]);
    loop_free(l);
}

Test(loop, an_earlier_timer_rearms_a_later_arming, .timeout = 10)
{
    loop *l = loop_new();
    fired f = {.l = l, .start_ns = loop_now_ns(), .stop_after = 2};
    tag a = {&f, 1}, b = {&f, 2};
    loop_timer_add(l, 500 * MS, on_timer, &a);   /* armed for 500 ms */
    loop_timer_add(l, 20 * MS, on_timer, &b);    /* must fire at 20, not 500 */
    loop_timer_add(l, 5000 * MS, give_up, NULL);
    cr_assert_eq(loop_run(l), 0);
    cr_assert_eq(f.n, 2);
    cr_assert_eq(f.order[0], 2);
    cr_assert(f.at_ms[0] >= 20 && f.at_ms[0] < 400, "first timer at %lld ms", (long long)f.at_ms[0]);
    cr_assert_eq(f.order[1], 1);
    cr_assert_geq(f.at_ms[1], 500);
    loop_free(l);
}

static void add_from_callback(loop *l, void *ctx)
{
    tag *t = ctx;
    on_timer(l, ctx);
    static tag next;
    next = (tag){t->f, t->id + 1};
    loop_timer_add(l, 10 * MS, on_timer, &next);
}

Test(loop, a_timer_added_by_a_timer_fires_after_everything_was_cancelled, .timeout = 10)
{
    loop *l = loop_new();
    fired f = {.l = l, .start_ns = loop_now_ns(), .stop_after = 2};
    tag a = {&f, 1};
    loop_timer *gone[3];
    for (int i = 0; i < 3; i++)
        gone[i] = loop_timer_add(l, (5 + i) * MS, never, NULL);
    for (int i = 0; i < 3; i++)
        loop_timer_cancel(l, gone[i]);
    loop_timer_add(l, 40 * MS, add_from_callback, &a);
    loop_timer_add(l, 2000 * MS, give_up, NULL);
    cr_assert_eq(loop_run(l), 0);
    cr_assert_eq(f.n, 2);
    cr_assert_eq(f.order[0], 1);
    cr_assert_eq(f.order[1], 2);
    cr_assert_geq(f.at_ms[1], 50);
    loop_free(l);
}

/* ---- stale events after a descriptor is closed and its number reused ---- */

typedef struct reuse {
    int fds[2];        /* read ends of two pipes, both readable */
    int closed;        /* the one the first handler closed */
    int reused[2];     /* the new pipe that took its number */
    int first_calls;
    int stale_calls;
} reuse;

static void stale(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)fd, (void)events;
    reuse *r = ctx;
    r->stale_calls++;   /* the new pipe is empty: any event is the old fd's */
}

static void first_ready(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    reuse *r = ctx;
    if (r->first_calls++)
        return;
    loop_unwatch(l, fd);   /* level-triggered: its unread byte would call again */
    r->closed = fd == r->fds[0] ? r->fds[1] : r->fds[0];
    loop_unwatch(l, r->closed);
    close(r->closed);
    cr_assert_eq(pipe(r->reused), 0);
    cr_assert_eq(r->reused[0], r->closed, "the new pipe should reuse fd %d", r->closed);
    cr_assert_eq(loop_watch(l, r->reused[0], LOOP_READ, stale, r), 0);
    loop_timer_add(l, 0, give_up, NULL);   /* a later round: the batch runs to its end */
}

Test(loop, a_closed_and_reused_fd_never_gets_the_old_fds_event, .timeout = 10)
{
    loop *l = loop_new();
    reuse r = {0};
    int a[2], b[2];
    cr_assert_eq(pipe(a), 0);
    cr_assert_eq(pipe(b), 0);
    r.fds[0] = a[0], r.fds[1] = b[0];
    cr_assert_eq(write(a[1], "x", 1), 1);
    cr_assert_eq(write(b[1], "x", 1), 1);   /* both ready in the same epoll_wait batch */
    cr_assert_eq(loop_watch(l, a[0], LOOP_READ, first_ready, &r), 0);
    cr_assert_eq(loop_watch(l, b[0], LOOP_READ, first_ready, &r), 0);
    cr_assert_eq(loop_run(l), 0);
    cr_assert_eq(r.first_calls, 1, "the closed pipe's handler ran");
    cr_assert_eq(r.stale_calls, 0, "the old descriptor's event reached the new owner");
    int kept = r.closed == a[0] ? b[0] : a[0];
    close(kept), close(a[1]), close(b[1]);
    close(r.reused[0]), close(r.reused[1]);
    loop_free(l);
}

Test(loop, a_delay_past_the_end_of_the_clock_never_fires, .timeout = 10)
{
    loop *l = loop_new();
    loop_timer_add(l, INT64_MAX, never, NULL);            /* would wrap to the past */
    loop_timer_add(l, INT64_MAX - 1000, never, NULL);
    cr_assert_eq(loop_deadline_ns(INT64_MAX), INT64_MAX);
    int64_t before = loop_now_ns(), negative = loop_deadline_ns(-5);
    cr_assert(negative >= before && negative <= loop_now_ns(), "a negative delay is now");
    loop_timer_add(l, 50 * MS, give_up, NULL);
    cr_assert_eq(loop_run(l), 0);
    loop_free(l);
}

/* ---- deferred calls and embedded timers ---- */

typedef struct batch {
    int fds[2];           /* read ends of two pipes, both readable */
    int handled;          /* events handled so far */
    int handled_at_call;  /* ... when the deferred call ran */
    int calls;
    loop_defer call, again, cancelled;
    int again_left;       /* times `again` posts itself once more */
    int events_between;   /* events handled while `again` was re-posted */
} batch;

static void batch_event(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    batch *b = ctx;
    loop_unwatch(l, fd);
    b->handled++;
    loop_defer_post(l, &b->call);
    loop_defer_post(l, &b->call);      /* twice: still one call */
    loop_defer_post(l, &b->cancelled);
    loop_defer_cancel(&b->cancelled);
}

static void batch_deferred(loop *l, void *ctx)
{
    batch *b = ctx;
    b->calls++;
    b->handled_at_call = b->handled;
    cr_assert(!loop_defer_posted(&b->call), "a running call is no longer posted");
    loop_stop(l);
}

static void batch_never(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    cr_assert_fail("a cancelled deferred call ran");
}

Test(loop, a_deferred_call_runs_once_after_the_whole_batch_before_the_next_wait, .timeout = 10)
{
    loop *l = loop_new();
    batch b = {0};
    int a[2], c[2];
    cr_assert_eq(pipe(a), 0);
    cr_assert_eq(pipe(c), 0);
    cr_assert_eq(write(a[1], "x", 1), 1);
    cr_assert_eq(write(c[1], "x", 1), 1);   /* both ready in the same epoll_wait batch */
    loop_defer_init(&b.call, batch_deferred, &b);
    loop_defer_init(&b.cancelled, batch_never, &b);
    cr_assert_eq(loop_watch(l, a[0], LOOP_READ, batch_event, &b), 0);
    cr_assert_eq(loop_watch(l, c[0], LOOP_READ, batch_event, &b), 0);
    loop_timer_add(l, 5000 * MS, give_up, NULL);   /* a wait would hang until this */
    int64_t start = loop_now_ns();
    cr_assert_eq(loop_run(l), 0);
    cr_assert_eq(b.calls, 1, "ran %d times", b.calls);
    cr_assert_eq(b.handled_at_call, 2, "ran after %d of the batch's 2 events", b.handled_at_call);
    cr_assert_lt(loop_now_ns() - start, 1000 * MS, "the loop waited before the call");
    close(a[0]), close(a[1]), close(c[0]), close(c[1]);
    loop_free(l);
}

static void counting_event(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l, (void)fd, (void)events;
    batch *b = ctx;
    b->handled++;   /* level-triggered: every round while the byte is unread */
}

static void posts_itself(loop *l, void *ctx)
{
    batch *b = ctx;
    if (b->again_left-- > 0) {
        loop_defer_post(l, &b->again);   /* the next round: after ready events */
        return;
    }
    b->events_between = b->handled;
    loop_stop(l);
}

Test(loop, a_deferred_call_that_posts_itself_does_not_starve_ready_events, .timeout = 10)
{
    loop *l = loop_new();
    batch b = {.again_left = 5};
    int a[2];
    cr_assert_eq(pipe(a), 0);
    cr_assert_eq(write(a[1], "x", 1), 1);
    loop_defer_init(&b.again, posts_itself, &b);
    loop_defer_post(l, &b.again);
    cr_assert_eq(loop_watch(l, a[0], LOOP_READ, counting_event, &b), 0);
    loop_timer_add(l, 5000 * MS, give_up, NULL);
    cr_assert_eq(loop_run(l), 0);
    cr_assert_eq(b.events_between, 5, "the ready pipe was handled %d times in 5 rounds",
                 b.events_between);
    close(a[0]), close(a[1]);
    loop_free(l);
}

static void joins_the_batch(loop *l, void *ctx)
{
    batch *b = ctx;
    b->calls++;
    loop_defer_post_in_batch(l, &b->again);   /* the end of this batch, before the wait */
}

static void after_it(loop *l, void *ctx)
{
    batch *b = ctx;
    b->handled_at_call = b->handled;
    loop_stop(l);
}

/* A write posted by a deferred call (a connection's flush after the calls a
 * batch routed) runs before the loop looks at the ready pipe: no round of
 * epoll_wait between the call and its write. */
Test(loop, a_call_posted_in_batch_runs_before_the_next_wait, .timeout = 10)
{
    loop *l = loop_new();
    batch b = {0};
    int a[2];
    cr_assert_eq(pipe(a), 0);
    cr_assert_eq(write(a[1], "x", 1), 1);
    loop_defer_init(&b.call, joins_the_batch, &b);
    loop_defer_init(&b.again, after_it, &b);
    loop_defer_post(l, &b.call);
    cr_assert_eq(loop_watch(l, a[0], LOOP_READ, counting_event, &b), 0);
    loop_timer_add(l, 5000 * MS, give_up, NULL);
    cr_assert_eq(loop_run(l), 0);
    cr_assert_eq(b.calls, 1);
    cr_assert_eq(b.handled_at_call, 0, "the ready pipe was handled %d times first",
                 b.handled_at_call);
    close(a[0]), close(a[1]);
    loop_free(l);
}

typedef struct owner {
    loop_timer timer;
    int fired;
    int64_t at_ms;
    int64_t start_ns;
} owner;

static void owner_fired(loop *l, void *ctx)
{
    owner *o = ctx;
    cr_assert(!loop_timer_armed(&o->timer), "a firing timer is no longer armed");
    o->at_ms = (loop_now_ns() - o->start_ns) / MS;
    if (++o->fired == 1) {
        loop_timer_arm(l, &o->timer, 20 * MS);   /* from its own callback */
        return;
    }
    loop_stop(l);
}

Test(loop, an_embedded_timer_is_rearmed_moved_and_disarmed, .timeout = 10)
{
    loop *l = loop_new();
    owner o = {.start_ns = loop_now_ns()}, off = {0};
    loop_timer_init(&o.timer, owner_fired, &o);
    loop_timer_init(&off.timer, never, NULL);
    loop_timer_disarm(l, &off.timer);            /* never armed: fine */
    loop_timer_arm(l, &off.timer, 10 * MS);
    loop_timer_disarm(l, &off.timer);
    cr_assert(!loop_timer_armed(&off.timer));
    loop_timer_arm(l, &o.timer, 1000 * MS);
    loop_timer_arm(l, &o.timer, 30 * MS);        /* moved earlier: fires once, at 30 */
    cr_assert(loop_timer_armed(&o.timer));
    loop_timer_add(l, 5000 * MS, give_up, NULL);
    cr_assert_eq(loop_run(l), 0);
    cr_assert_eq(o.fired, 2);
    cr_assert(o.at_ms >= 50 && o.at_ms < 900, "the re-armed timer fired at %lld ms",
              (long long)o.at_ms);
    loop_free(l);
}
