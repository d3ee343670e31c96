/* loop: a small single-threaded event loop on epoll and one timerfd.
 *
 * Everything the server does (accepting, HTTP/2 I/O, function pipes,
 * signals) is a callback run from here, so nothing may block. File
 * descriptors are indexed by number, as in redis' ae.c: an event for a
 * descriptor that was unwatched earlier in the same round is dropped rather
 * than handed to freed state, and so is one for a descriptor closed and
 * reused by a new owner in the same round (each watch carries a generation). Timers are kept in a list sorted by due time;
 * the timerfd is armed no later than the earliest one (a cancelled timer
 * may leave it armed early: the loop then finds nothing due and re-arms). */
#ifndef KRM_LOOP_H
#define KRM_LOOP_H

#include <stdint.h>

typedef struct loop loop;
typedef struct loop_timer loop_timer;

#define LOOP_READ  0x1u
#define LOOP_WRITE 0x4u   /* values of EPOLLIN and EPOLLOUT */

/* events: LOOP_READ/LOOP_WRITE, plus hang-up and error bits passed through. */
typedef void loop_fd_fn(loop *l, int fd, uint32_t events, void *ctx);
/* The timer is freed by the loop after this returns; do not cancel it. */
typedef void loop_timer_fn(loop *l, void *ctx);

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

/* Dispatch events until loop_stop. Returns 0, or -1 if epoll fails. */
int loop_run(loop *l);
void loop_stop(loop *l);

/* CLOCK_MONOTONIC in nanoseconds. */
int64_t loop_now_ns(void);
/* loop_now_ns() + delay_ns, saturated at INT64_MAX; a negative delay is 0. */
int64_t loop_deadline_ns(int64_t delay_ns);

#endif
