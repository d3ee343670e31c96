/* Unit tests for lib/loop's timers: every timer fires once, in due order,
 * never early, and cancelled ones never, whatever the timerfd was left
 * armed for (cancelling does not reprogram it). */
#include <criterion/criterion.h>

#include "loop.h"

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
