/* loop: epoll + timerfd event loop; see loop.h. */
#include "core/loop.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

typedef struct loop_slot {
    loop_fd_fn *fn;
    void *ctx;
    uint32_t events;   /* 0: not watched */
    uint32_t gen;      /* bumped each time a new owner starts watching this fd */
} loop_slot;

struct loop {
    int epfd;
    int timerfd;
    loop_slot *slots;    /* indexed by fd */
    int n_slots;
    loop_timer *timers;  /* sorted by due_ns, earliest first */
    int64_t armed_ns;    /* when the timerfd fires; 0: disarmed */
    loop_defer posted;   /* the deferred calls' ring, in posting order; itself no call */
    loop_defer *batch;   /* the ring of the calls being run (loop_run_deferred), else NULL */
    int stop;
};

int64_t loop_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t loop_deadline_ns(int64_t delay_ns)
{
    int64_t now = loop_now_ns();
    if (delay_ns <= 0)
        return now;
    return delay_ns > INT64_MAX - now ? INT64_MAX : now + delay_ns;
}

/* Programs the timerfd for the earliest timer, unless it already fires no
 * later than that. Cancelling a timer leaves the timerfd as it is: most
 * timers (a call's deadline, a connection's idle timeout) are cancelled long
 * before they are due, and reprogramming on every add and cancel cost four
 * syscalls per call. An early firing finds nothing due and re-arms. */
static void loop_arm_timerfd(loop *l)
{
    int64_t due = l->timers ? l->timers->due_ns : 0;
    if (due <= 0 && l->timers)
        due = 1;   /* zero would disarm */
    if (l->armed_ns ? due && l->armed_ns <= due : !due)
        return;   /* fires in time already, or nothing to fire for */
    struct itimerspec its = {0};
    its.it_value.tv_sec = due / 1000000000;
    its.it_value.tv_nsec = due % 1000000000;
    if (timerfd_settime(l->timerfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) {
        log_error("timerfd_settime: %s", strerror(errno));
        return;
    }
    l->armed_ns = due;
}

static void loop_timer_unlink(loop_timer *t)
{
    *t->pprev = t->next;
    if (t->next)
        t->next->pprev = t->pprev;
    t->next = NULL;
    t->pprev = NULL;
}

static void loop_timer_link(loop *l, loop_timer *t)
{
    loop_timer **p = &l->timers;
    while (*p && (*p)->due_ns <= t->due_ns)
        p = &(*p)->next;
    t->next = *p;
    t->pprev = p;
    if (*p)
        (*p)->pprev = &t->next;
    *p = t;
    if (l->timers == t)
        loop_arm_timerfd(l);
}

static void loop_fire_timers(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)fd, (void)events, (void)ctx;
    uint64_t expirations;
    if (read(l->timerfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN)
        log_error("read timerfd: %s", strerror(errno));
    l->armed_ns = 0;   /* fired: nothing is programmed now */
    int64_t now = loop_now_ns();
    /* Unlink each due timer before calling it: the callback may add or
     * cancel other timers. */
    while (l->timers && l->timers->due_ns <= now) {
        loop_timer *t = l->timers;
        int owned = t->owned;
        loop_timer_unlink(t);
        t->fn(l, t->ctx);   /* may free an embedded t with its object */
        if (owned)
            free(t);
    }
    loop_arm_timerfd(l);
}

loop *loop_new(void)
{
    loop *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->posted.next = l->posted.prev = &l->posted;
    l->epfd = epoll_create1(EPOLL_CLOEXEC);
    l->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (l->epfd < 0 || l->timerfd < 0 ||
        loop_watch(l, l->timerfd, LOOP_READ, loop_fire_timers, NULL) < 0) {
        log_error("cannot create the event loop: %s", strerror(errno));
        loop_free(l);
        return NULL;
    }
    return l;
}

void loop_free(loop *l)
{
    if (!l)
        return;
    /* Embedded timers and deferred calls belong to objects that may be
     * gone by now: they are only let go of. */
    while (l->timers) {
        loop_timer *t = l->timers;
        loop_timer_unlink(t);
        if (t->owned)
            free(t);
    }
    while (l->posted.next != &l->posted)
        loop_defer_cancel(l->posted.next);
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->timerfd >= 0)
        close(l->timerfd);
    free(l->slots);
    free(l);
}

static int loop_grow(loop *l, int fd)
{
    if (fd < l->n_slots)
        return 0;
    int n = l->n_slots ? l->n_slots : 64;
    while (n <= fd)
        n *= 2;
    loop_slot *s = realloc(l->slots, (size_t)n * sizeof *s);
    if (!s)
        return -1;
    memset(s + l->n_slots, 0, (size_t)(n - l->n_slots) * sizeof *s);
    l->slots = s;
    l->n_slots = n;
    return 0;
}

/* An event carries the fd and the generation of its watcher. A handler may
 * close a descriptor and a later handler of the same epoll_wait batch may
 * get its number again (a spawn's pipe, an accept): the old descriptor's
 * pending event then names the new owner's fd, but not its generation, and
 * is dropped instead of handing a stale EPOLLHUP or EPOLLIN to the new
 * owner (nginx's instance bit, widened to 32 bits). */
static uint64_t loop_event_tag(int fd, uint32_t gen)
{
    return (uint64_t)gen << 32 | (uint32_t)fd;
}

int loop_watch(loop *l, int fd, uint32_t events, loop_fd_fn *fn, void *ctx)
{
    if (fd < 0 || loop_grow(l, fd) < 0)
        return -1;
    loop_slot *s = &l->slots[fd];
    int op = s->events ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    uint32_t gen = op == EPOLL_CTL_ADD ? s->gen + 1 : s->gen;
    struct epoll_event ev = {.events = events, .data.u64 = loop_event_tag(fd, gen)};
    int rv = epoll_ctl(l->epfd, op, fd, &ev);
    if (rv < 0 && op == EPOLL_CTL_MOD && errno == ENOENT) {
        /* closed without loop_unwatch (which left epoll with the close) and
         * reused: a new owner */
        gen = s->gen + 1;
        ev.data.u64 = loop_event_tag(fd, gen);
        rv = epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev);
    }
    if (rv < 0) {
        log_error("epoll_ctl(fd %d): %s", fd, strerror(errno));
        return -1;
    }
    s->gen = gen;
    /* a watched fd must never have events == 0: EPOLLERR keeps it marked */
    s->events = events | EPOLLERR;
    s->fn = fn;
    s->ctx = ctx;
    return 0;
}

void loop_unwatch(loop *l, int fd)
{
    if (fd < 0 || fd >= l->n_slots || !l->slots[fd].events)
        return;
    if (epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL) < 0)
        log_error("epoll_ctl(DEL fd %d): %s", fd, strerror(errno));
    l->slots[fd] = (loop_slot){.gen = l->slots[fd].gen};
}

loop_timer *loop_timer_add(loop *l, int64_t delay_ns, loop_timer_fn *fn, void *ctx)
{
    loop_timer *t = malloc(sizeof *t);
    if (!t)
        return NULL;
    loop_timer_init(t, fn, ctx);
    t->owned = 1;
    t->due_ns = loop_deadline_ns(delay_ns);
    loop_timer_link(l, t);
    return t;
}

/* Looked for rather than unlinked through t: a caller may hold a timer that
 * has fired and been freed (compared, never read). */
void loop_timer_cancel(loop *l, loop_timer *t)
{
    if (!t)
        return;
    for (loop_timer *p = l->timers; p; p = p->next) {
        if (p == t) {
            assert(t->owned);   /* an embedded timer is disarmed, not cancelled */
            loop_timer_unlink(t);
            free(t);
            return;   /* the timerfd may fire early: see loop_arm_timerfd */
        }
    }
}

void loop_timer_init(loop_timer *t, loop_timer_fn *fn, void *ctx)
{
    *t = (loop_timer){.fn = fn, .ctx = ctx};
}

void loop_timer_arm(loop *l, loop_timer *t, int64_t delay_ns)
{
    assert(t->fn && !t->owned);
    if (t->pprev)
        loop_timer_unlink(t);
    t->due_ns = loop_deadline_ns(delay_ns);
    loop_timer_link(l, t);
}

void loop_timer_disarm(loop *l, loop_timer *t)
{
    (void)l;   /* the timerfd may fire early: see loop_arm_timerfd */
    assert(!t->owned);
    if (t->pprev)
        loop_timer_unlink(t);
}

int loop_timer_armed(const loop_timer *t)
{
    return t->pprev != NULL;
}

void loop_defer_init(loop_defer *d, loop_defer_fn *fn, void *ctx)
{
    *d = (loop_defer){.fn = fn, .ctx = ctx};
}

/* d at the end of ring `ring` (a sentinel), unless posted already. */
static void loop_defer_append(loop_defer *ring, loop_defer *d)
{
    assert(d->fn);
    if (d->next)
        return;   /* posted already: it runs once */
    d->prev = ring->prev;
    d->next = ring;
    ring->prev->next = d;
    ring->prev = d;
}

void loop_defer_post(loop *l, loop_defer *d)
{
    loop_defer_append(&l->posted, d);
}

void loop_defer_post_in_batch(loop *l, loop_defer *d)
{
    loop_defer_append(l->batch ? l->batch : &l->posted, d);
}

/* Unlinks d from whichever ring holds it: the loop's, or the batch being
 * run (loop_run_deferred). */
void loop_defer_cancel(loop_defer *d)
{
    if (!d->next)
        return;
    d->prev->next = d->next;
    d->next->prev = d->prev;
    d->next = d->prev = NULL;
}

int loop_defer_posted(const loop_defer *d)
{
    return d->next != NULL;
}

/* Moves every call of ring `from` (a sentinel) to the front of ring `to`. */
static void loop_defer_splice(loop_defer *from, loop_defer *to)
{
    if (from->next == from)
        return;
    from->prev->next = to->next;
    to->next->prev = from->prev;
    to->next = from->next;
    from->next->prev = to;
    from->next = from->prev = from;
}

/* Runs the calls posted so far; those they post wait for the next round
 * (but loop_defer_post_in_batch: the end of this one). */
static void loop_run_deferred(loop *l)
{
    loop_defer batch = {.next = &batch, .prev = &batch};
    loop_defer_splice(&l->posted, &batch);
    l->batch = &batch;
    while (batch.next != &batch && !l->stop) {
        loop_defer *d = batch.next;
        loop_defer_cancel(d);
        d->fn(l, d->ctx);   /* may cancel others of the batch, or free d */
    }
    l->batch = NULL;
    loop_defer_splice(&batch, &l->posted);   /* stopped: kept for the next run */
}

int loop_run(loop *l)
{
    struct epoll_event evs[128];
    l->stop = 0;
    while (!l->stop) {
        loop_run_deferred(l);
        if (l->stop)
            break;
        /* a call posted by a deferred call: only look for ready events */
        int wait_ms = l->posted.next != &l->posted ? 0 : -1;
        int n = epoll_wait(l->epfd, evs, 128, wait_ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            log_error("epoll_wait: %s", strerror(errno));
            return -1;
        }
        for (int i = 0; i < n && !l->stop; i++) {
            int fd = (int)(uint32_t)evs[i].data.u64;
            uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
            if (fd >= l->n_slots || !l->slots[fd].events || l->slots[fd].gen != gen)
                continue;   /* unwatched, or closed and reused, earlier in this round */
            loop_slot s = l->slots[fd];
            s.fn(l, fd, evs[i].events, s.ctx);
        }
    }
    return 0;
}

void loop_stop(loop *l)
{
    l->stop = 1;
}
