/* fn_slots: how many function processes this server runs at once
 * (--max-concurrent-functions), and the bounded queue of calls that wait
 * for one.
 *
 * Each process costs a CPU's worth of work and its memory, whoever asked
 * for it: without a bound, a client that sends calls and resets them (or
 * many clients at once) makes the server fork without limit. A slot is
 * taken before a function is spawned and given back when its process has
 * been reaped, not when its call ends: a cancelled function keeps using
 * the machine until it is dead. Calls that find every slot taken wait in
 * order of arrival, up to a fixed number; beyond that they are refused
 * (the caller answers RESOURCE_EXHAUSTED), so waiting is bounded too.
 *
 * One table per process (processes are a process-wide resource, like
 * fn_job's table of live jobs). Unconfigured, slots are unlimited. */
#ifndef KRM_FN_SLOTS_H
#define KRM_FN_SLOTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"

typedef struct fn_slot_wait fn_slot_wait;
/* The wait is over: the slot is the waiter's now. Runs from the loop. */
typedef void fn_slot_granted_fn(fn_slot_wait *w);

struct fn_slot_wait {
    fn_slot_granted_fn *granted;
    void *ctx;                  /* the waiter's */
    size_t bytes;               /* the request it holds while it waits */
    /* private */
    fn_slot_wait *next;
    int queued;
    int64_t queued_ns;          /* when it joined the queue (loop_now_ns) */
};

/* max_running 0: no limit (and no queue). */
void fn_slots_configure(loop *l, size_t max_running, size_t max_waiting,
                        size_t max_waiting_bytes);

/* Defaults for the flags: twice the CPUs this process may run on (at least
 * 4), and a queue of 1024 calls or 64 per slot, whichever is more. */
size_t fn_slots_default_running(void);
size_t fn_slots_default_waiting(size_t max_running);

/* Take a slot now (1); or queue w (0: w->granted runs later, from the
 * loop, with the slot taken); or -1: every slot is taken and the queue has
 * no room for w (its calls or its w->bytes). */
int fn_slots_take(fn_slot_wait *w);
/* Take a slot only if one is free now: 1 or 0. */
int fn_slots_try_take(void);
/* Leave the queue (a queued call that was cancelled). Fine if not queued. */
void fn_slots_leave(fn_slot_wait *w);
/* A process holding a slot was reaped (or never started). */
void fn_slots_give_back(void);
/* The caller's deadline passed: when w is still queued, appends to why how
 * long it waited, that its function never started and which flag bounds
 * the functions running, and counts it (krm_function_queue_deadlines_total). */
void fn_slots_deadline_note(const fn_slot_wait *w, buf *why);

size_t fn_slots_running(void);
size_t fn_slots_waiting(void);
size_t fn_slots_waiting_bytes(void);
size_t fn_slots_max_running(void);
size_t fn_slots_max_waiting(void);
size_t fn_slots_max_waiting_bytes(void);

#endif
