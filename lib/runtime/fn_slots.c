/* fn_slots: the process-wide bound on running functions; see fn_slots.h. */
#include "runtime/fn_slots.h"

#include <sched.h>

#include "core/log.h"
#include "grpc/metrics.h"

static struct {
    loop *loop;
    size_t max_running;        /* 0: unlimited */
    size_t max_waiting;
    size_t max_waiting_bytes;
    size_t running;
    size_t waiting;
    size_t waiting_bytes;
    fn_slot_wait *head, *tail; /* first come, first served */
    loop_defer grant;          /* hands freed slots to waiters */
} slots;

static void fn_slots_grant(loop *l, void *ctx);

void fn_slots_configure(loop *l, size_t max_running, size_t max_waiting,
                        size_t max_waiting_bytes)
{
    loop_defer_cancel(&slots.grant);   /* a grant posted on an earlier loop */
    loop_defer_init(&slots.grant, fn_slots_grant, NULL);
    slots.loop = l;
    slots.max_running = max_running;
    slots.max_waiting = max_waiting;
    slots.max_waiting_bytes = max_waiting_bytes;
}

size_t fn_slots_default_running(void)
{
    cpu_set_t set;
    size_t cpus = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        cpus = (size_t)CPU_COUNT(&set);
    return cpus * 2 < 4 ? 4 : cpus * 2;
}

size_t fn_slots_default_waiting(size_t max_running)
{
    return max_running * 64 > 1024 ? max_running * 64 : 1024;
}

static int slot_free(void)
{
    return !slots.max_running || slots.running < slots.max_running;
}

int fn_slots_try_take(void)
{
    if (!slot_free() || slots.waiting)   /* no overtaking the queue */
        return 0;
    slots.running++;
    return 1;
}

int fn_slots_take(fn_slot_wait *w)
{
    if (fn_slots_try_take())
        return 1;
    if (slots.waiting >= slots.max_waiting ||
        w->bytes > slots.max_waiting_bytes - slots.waiting_bytes) {
        metrics_count(METRIC_CALLS_REFUSED_BUSY);
        return -1;
    }
    w->next = NULL;
    w->queued = 1;
    w->queued_ns = loop_now_ns();
    if (slots.tail)
        slots.tail->next = w;
    else
        slots.head = w;
    slots.tail = w;
    slots.waiting++;
    slots.waiting_bytes += w->bytes;
    metrics_count(METRIC_CALLS_QUEUED);
    return 0;
}

void fn_slots_leave(fn_slot_wait *w)
{
    if (!w->queued)
        return;
    fn_slot_wait *prev = NULL;
    for (fn_slot_wait *p = slots.head; p; prev = p, p = p->next) {
        if (p != w)
            continue;
        if (prev)
            prev->next = w->next;
        else
            slots.head = w->next;
        if (slots.tail == w)
            slots.tail = prev;
        break;
    }
    w->queued = 0;
    slots.waiting--;
    slots.waiting_bytes -= w->bytes;
}

/* Waiters are started from a deferred call of their own, never inside
 * fn_slots_give_back: that runs while the reaper walks the job table, and a
 * grant spawns a job. */
static void fn_slots_grant(loop *l, void *ctx)
{
    (void)l, (void)ctx;
    while (slots.head && slot_free()) {
        fn_slot_wait *w = slots.head;
        slots.head = w->next;
        if (!slots.head)
            slots.tail = NULL;
        w->queued = 0;
        slots.waiting--;
        slots.waiting_bytes -= w->bytes;
        slots.running++;
        w->granted(w);
    }
}

void fn_slots_give_back(void)
{
    if (slots.running == 0) {
        log_error("fn_slots: a slot was given back that was not taken");
        return;
    }
    slots.running--;
    if (slots.head && slots.loop)
        loop_defer_post(slots.loop, &slots.grant);
}

void fn_slots_deadline_note(const fn_slot_wait *w, buf *why)
{
    if (!w->queued)
        return;
    metrics_count(METRIC_QUEUE_DEADLINES);
    buf_printf(why, "; it waited %.1f s in the queue for a function slot and never started: all "
               "%zu slots were taken (--max-concurrent-functions %zu bounds the functions "
               "running at once; %zu calls wait)", (double)(loop_now_ns() - w->queued_ns) / 1e9,
               slots.running, slots.max_running, slots.waiting);
}

size_t fn_slots_running(void) { return slots.running; }
size_t fn_slots_waiting(void) { return slots.waiting; }
size_t fn_slots_waiting_bytes(void) { return slots.waiting_bytes; }
size_t fn_slots_max_running(void) { return slots.max_running; }
size_t fn_slots_max_waiting(void) { return slots.max_waiting; }
size_t fn_slots_max_waiting_bytes(void) { return slots.max_waiting_bytes; }
