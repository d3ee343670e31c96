/* loop: a small single-threaded event loop on epoll and one timerfd.
 *
 * Everything the server does (accepting, HTTP/2 I/O, function pipes,
 * signals) is a callback run from here, so nothing may block. File
 * descriptors are indexed by number, as in redis' ae.c: an event for a
 * descriptor that was unwatched earlier in the same round is dropped rather
 * than handed to freed state, and so is one for a descriptor closed and
 * reused by a new owner in the same round (each watch carries a generation). Timers are kept in a list sorted by due time;
 * the timerfd is armed no later than the earliest one (a cancelled timer
 * may leave it armed early: the loop then finds nothing due and re-arms).
 *
 * "Run this after the current callback" is a deferred call (loop_defer), not
 * a timer of no delay: posted calls run once the current batch of events
 * has been handled, before the loop waits again (nginx's posted events,
 * libuv's idle handles). Both deferred calls and timers an object always
 * has are embedded in the object: posting, arming and cancelling allocate
 * nothing and cannot fail. */
#ifndef KRM_LOOP_H
#define KRM_LOOP_H

#include <stdint.h>

typedef struct loop loop;
typedef struct loop_timer loop_timer;
typedef struct loop_defer loop_defer;

#define LOOP_READ  0x1u
#define LOOP_WRITE 0x4u   /* values of EPOLLIN and EPOLLOUT */

/* events: LOOP_READ/LOOP_WRITE, plus hang-up and error bits passed through. */
typedef void loop_fd_fn(loop *l, int fd, uint32_t events, void *ctx);
/* A timer or deferred call runs this. It is no longer armed or posted when
 * called, and may be armed or posted again from here. A timer from
 * loop_timer_add is freed by the loop after this returns; do not cancel it. */
typedef void loop_timer_fn(loop *l, void *ctx);
typedef loop_timer_fn loop_defer_fn;

/* Fields are the loop's; they are here so that objects can embed them. */
struct loop_timer {
    int64_t due_ns;
    loop_timer_fn *fn;
    void *ctx;
    loop_timer *next;
    loop_timer **pprev;   /* NULL: not armed */
    int owned;            /* from loop_timer_add: freed when it fires or is cancelled */
};

struct loop_defer {
    loop_defer *next, *prev;   /* NULL: not posted */
    loop_defer_fn *fn;
    void *ctx;
};

loop *loop_new(void);
void loop_free(loop *l);

/* Watch fd for `events` (level-triggered), or change what is watched. */
int loop_watch(loop *l, int fd, uint32_t events, loop_fd_fn *fn, void *ctx);
void loop_unwatch(loop *l, int fd);

/* Run fn once, delay_ns from now (a delay past the end of the clock means
 * never in practice: the due time saturates). Returns NULL on ENOMEM. */
loop_timer *loop_timer_add(loop *l, int64_t delay_ns, loop_timer_fn *fn, void *ctx);
/* Cancel a pending timer (NULL is fine). */
void loop_timer_cancel(loop *l, loop_timer *t);

/* An embedded timer: set up once with what it runs, then armed (again: its
 * due time moves) and disarmed as often as needed. Disarming one that is
 * not armed is fine. */
void loop_timer_init(loop_timer *t, loop_timer_fn *fn, void *ctx);
void loop_timer_arm(loop *l, loop_timer *t, int64_t delay_ns);
void loop_timer_disarm(loop *l, loop_timer *t);
int loop_timer_armed(const loop_timer *t);

/* A deferred call, embedded: loop_defer_post queues it (once: posting a
 * posted call changes nothing) to run after the current batch of events,
 * before the loop waits again; a call posted by a deferred call runs in the
 * next round, after events that are ready then, so one cannot starve I/O.
 * Cancelling one that is not posted is fine; an object that embeds one
 * cancels it before it is freed. */
void loop_defer_init(loop_defer *d, loop_defer_fn *fn, void *ctx);
void loop_defer_post(loop *l, loop_defer *d);
/* The same, except that a call posted by a deferred call joins the running
 * batch, at its end, instead of waiting for the next round: for a call
 * that completes what the batch did (a connection's write of the requests
 * the batch's calls submitted) and never posts itself again. Each round
 * through the loop is a system call (epoll_wait) on the path of whatever
 * the call sends. */
void loop_defer_post_in_batch(loop *l, loop_defer *d);
void loop_defer_cancel(loop_defer *d);
int loop_defer_posted(const loop_defer *d);

/* Dispatch events until loop_stop. Returns 0, or -1 if epoll fails. */
int loop_run(loop *l);
void loop_stop(loop *l);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t loop_now_ns(void);
/* loop_now_ns() + delay_ns, saturated at INT64_MAX; a negative delay is 0. */
int64_t loop_deadline_ns(int64_t delay_ns);

#endif
