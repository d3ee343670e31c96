/* Unit tests for pod_state: the whole transition table, cell by cell,
 * against an independent copy written as a list of the valid rows (every
 * other state x event pair must be refused), plus names and the logging
 * apply function. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>

#include "core/log.h"
#include "kube/pod_state.h"

typedef struct row {
    pod_state from;
    pod_event event;
    pod_state to;
} row;

/* The documented life cycle; anything not listed is invalid. */
static const row valid[] = {
    {POD_REQUESTED, POD_EV_CREATE_SENT, POD_CREATING},
    {POD_REQUESTED, POD_EV_FAILED, POD_FAILED},
    {POD_REQUESTED, POD_EV_DRAIN, POD_GONE},
    {POD_REQUESTED, POD_EV_ADOPTED, POD_WAITING_READY},

    {POD_CREATING, POD_EV_CREATED, POD_WAITING_READY},
    {POD_CREATING, POD_EV_FAILED, POD_FAILED},
    {POD_CREATING, POD_EV_DRAIN, POD_DRAINING},
    {POD_CREATING, POD_EV_DELETED_EXTERNALLY, POD_FAILED},

    {POD_WAITING_READY, POD_EV_READY, POD_SERVING},
    {POD_WAITING_READY, POD_EV_NOT_READY, POD_WAITING_READY},
    {POD_WAITING_READY, POD_EV_CALL_FINISHED, POD_WAITING_READY},
    {POD_WAITING_READY, POD_EV_DRAIN, POD_DRAINING},
    {POD_WAITING_READY, POD_EV_FAILED, POD_FAILED},
    {POD_WAITING_READY, POD_EV_DELETED_EXTERNALLY, POD_FAILED},

    {POD_SERVING, POD_EV_READY, POD_SERVING},
    {POD_SERVING, POD_EV_NOT_READY, POD_WAITING_READY},
    {POD_SERVING, POD_EV_CALL_STARTED, POD_SERVING},
    {POD_SERVING, POD_EV_CALL_FINISHED, POD_SERVING},
    {POD_SERVING, POD_EV_TTL_EXPIRED, POD_DRAINING},
    {POD_SERVING, POD_EV_DRAIN, POD_DRAINING},
    {POD_SERVING, POD_EV_FAILED, POD_FAILED},
    {POD_SERVING, POD_EV_DELETED_EXTERNALLY, POD_FAILED},

    {POD_DRAINING, POD_EV_CREATED, POD_DRAINING},
    {POD_DRAINING, POD_EV_READY, POD_DRAINING},
    {POD_DRAINING, POD_EV_NOT_READY, POD_DRAINING},
    {POD_DRAINING, POD_EV_CALL_FINISHED, POD_DRAINING},
    {POD_DRAINING, POD_EV_DRAIN, POD_DRAINING},
    {POD_DRAINING, POD_EV_FAILED, POD_FAILED},
    {POD_DRAINING, POD_EV_DELETED_EXTERNALLY, POD_FAILED},
    {POD_DRAINING, POD_EV_DELETE_SENT, POD_DELETING},
    {POD_DRAINING, POD_EV_RELEASED, POD_GONE},

    {POD_DELETING, POD_EV_NOT_READY, POD_DELETING},
    {POD_DELETING, POD_EV_CALL_FINISHED, POD_DELETING},
    {POD_DELETING, POD_EV_DRAIN, POD_DELETING},
    {POD_DELETING, POD_EV_FAILED, POD_FAILED},
    {POD_DELETING, POD_EV_DELETED_EXTERNALLY, POD_GONE},
    {POD_DELETING, POD_EV_DELETED, POD_GONE},

    {POD_FAILED, POD_EV_NOT_READY, POD_FAILED},
    {POD_FAILED, POD_EV_CALL_FINISHED, POD_FAILED},
    {POD_FAILED, POD_EV_DRAIN, POD_FAILED},
    {POD_FAILED, POD_EV_FAILED, POD_FAILED},
    {POD_FAILED, POD_EV_DELETED_EXTERNALLY, POD_FAILED},
    {POD_FAILED, POD_EV_DELETE_SENT, POD_DELETING},
    {POD_FAILED, POD_EV_RELEASED, POD_GONE},
};

static const row *find_row(pod_state s, pod_event e)
{
    for (size_t i = 0; i < sizeof valid / sizeof *valid; i++)
        if (valid[i].from == s && valid[i].event == e)
            return &valid[i];
    return NULL;
}

Test(pod_state, whole_table)
{
    int n_valid = 0;
    for (int s = 0; s < POD_STATE_COUNT; s++)
        for (int e = 0; e < POD_EVENT_COUNT; e++) {
            const row *r = find_row(s, e);
            pod_state next = (pod_state)99;
            int rc = pod_state_next(s, e, &next);
            if (r) {
                n_valid++;
                cr_assert_eq(rc, 0, "%s --%s--> refused", pod_state_name(s), pod_event_name(e));
                cr_assert_eq(next, r->to, "%s --%s--> %s, want %s", pod_state_name(s),
                             pod_event_name(e), pod_state_name(next), pod_state_name(r->to));
            } else {
                cr_assert_eq(rc, -1, "%s --%s--> %s accepted", pod_state_name(s), pod_event_name(e),
                             pod_state_name(next));
                cr_assert_eq(next, (pod_state)99, "refusal changed *next");
            }
        }
    cr_assert_eq(n_valid, (int)(sizeof valid / sizeof *valid));
}

Test(pod_state, gone_is_terminal_and_every_state_can_end)
{
    pod_state next;
    for (int e = 0; e < POD_EVENT_COUNT; e++)
        cr_assert_eq(pod_state_next(POD_GONE, e, &next), -1);
    /* from every non-terminal state some path reaches gone */
    for (int s = 0; s < POD_GONE; s++) {
        int reach[POD_STATE_COUNT] = {0};
        reach[s] = 1;
        for (int round = 0; round < POD_STATE_COUNT; round++)
            for (int a = 0; a < POD_STATE_COUNT; a++)
                for (int e = 0; reach[a] && e < POD_EVENT_COUNT; e++)
                    if (pod_state_next(a, e, &next) == 0)
                        reach[next] = 1;
        cr_assert(reach[POD_GONE], "%s never reaches gone", pod_state_name(s));
    }
}

Test(pod_state, happy_path)
{
    static const pod_event events[] = {
        POD_EV_CREATE_SENT, POD_EV_CREATED, POD_EV_READY, POD_EV_CALL_STARTED, POD_EV_CALL_FINISHED,
        POD_EV_TTL_EXPIRED, POD_EV_DELETE_SENT, POD_EV_DELETED,
    };
    static const pod_state want[] = {
        POD_CREATING, POD_WAITING_READY, POD_SERVING, POD_SERVING, POD_SERVING,
        POD_DRAINING, POD_DELETING, POD_GONE,
    };
    pod_state s = POD_REQUESTED;
    for (size_t i = 0; i < sizeof events / sizeof *events; i++) {
        cr_assert_eq(pod_state_next(s, events[i], &s), 0);
        cr_assert_eq(s, want[i], "step %zu: %s", i, pod_state_name(s));
    }
}

Test(pod_state, names)
{
    static const char *const states[] = {"requested", "creating", "waiting-ready", "serving",
                                         "draining", "deleting", "failed", "gone"};
    static const char *const events[] = {"create-sent", "created", "ready", "not-ready",
                                         "call-started", "call-finished", "ttl-expired", "drain",
                                         "failed", "deleted-externally", "delete-sent", "deleted",
                                         "adopted", "released"};
    cr_assert_eq(sizeof states / sizeof *states, POD_STATE_COUNT);
    cr_assert_eq(sizeof events / sizeof *events, POD_EVENT_COUNT);
    for (int s = 0; s < POD_STATE_COUNT; s++)
        cr_assert_str_eq(pod_state_name(s), states[s]);
    for (int e = 0; e < POD_EVENT_COUNT; e++)
        cr_assert_str_eq(pod_event_name(e), events[e]);
    cr_assert_str_eq(pod_state_name(POD_STATE_COUNT), "?");
    cr_assert_str_eq(pod_event_name((pod_event)-1), "?");
    pod_state next;
    cr_assert_eq(pod_state_next(POD_STATE_COUNT, POD_EV_READY, &next), -1);
    cr_assert_eq(pod_state_next(POD_SERVING, POD_EVENT_COUNT, &next), -1);
}

static char *read_all(FILE *f)
{
    static char text[4096];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    return text;
}

Test(pod_state, apply_logs_transitions, .init = cr_redirect_stderr)
{
    log_verbosity = 2;
    pod_state s = POD_WAITING_READY;
    cr_assert_eq(pod_state_apply("fn-v1-1-0123abcd-x7k2p", &s, POD_EV_READY), 0);
    cr_assert_eq(s, POD_SERVING);
    cr_assert_eq(pod_state_apply("fn-v1-1-0123abcd-x7k2p", &s, POD_EV_CALL_STARTED), 0); /* v3: silent */
    cr_assert_eq(s, POD_SERVING);
    cr_assert_eq(pod_state_apply("fn-v1-1-0123abcd-x7k2p", &s, POD_EV_DELETED), -1);
    cr_assert_eq(s, POD_SERVING, "a refused event changed the state");
    log_verbosity = 3;
    cr_assert_eq(pod_state_apply("fn-v1-1-0123abcd-x7k2p", &s, POD_EV_CALL_FINISHED), 0);
    log_verbosity = 2;
    fflush(stderr);
    const char *text = read_all(cr_get_redirected_stderr());
    cr_assert(strstr(text, "] pod fn-v1-1-0123abcd-x7k2p: waiting-ready --ready--> serving\n"), "%s", text);
    cr_assert_null(strstr(text, "--call-started-->"), "%s", text);
    cr_assert(strstr(text, "\nW"), "refusal not a warning: %s", text);
    cr_assert(strstr(text, "pod fn-v1-1-0123abcd-x7k2p: event deleted refused in state serving"), "%s", text);
    cr_assert(strstr(text, "serving --call-finished--> serving"), "%s", text);
}
