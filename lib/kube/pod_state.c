/* pod_state: the pod life-cycle transition table; see pod_state.h. */
#include "kube/pod_state.h"

#include "core/log.h"

/* The one table. A 0 entry means "refused": stored states are shifted by
 * one (S(x) = x + 1) so that the zero-initialised rest of each row reads as
 * invalid without listing every refusal. */
#define S(x) ((unsigned char)((x) + 1))

static const unsigned char table[POD_STATE_COUNT][POD_EVENT_COUNT] = {
    [POD_REQUESTED] = {
        [POD_EV_CREATE_SENT] = S(POD_CREATING),
        [POD_EV_FAILED] = S(POD_FAILED),           /* image lookup / template failed */
        [POD_EV_DRAIN] = S(POD_GONE),              /* nothing exists to delete */
        [POD_EV_ADOPTED] = S(POD_WAITING_READY),   /* found by its label, not created */
    },
    [POD_CREATING] = {
        [POD_EV_CREATED] = S(POD_WAITING_READY),
        [POD_EV_FAILED] = S(POD_FAILED),
        [POD_EV_DRAIN] = S(POD_DRAINING),          /* the answer still comes */
        [POD_EV_DELETED_EXTERNALLY] = S(POD_FAILED),
    },
    [POD_WAITING_READY] = {
        [POD_EV_READY] = S(POD_SERVING),
        [POD_EV_NOT_READY] = S(POD_WAITING_READY),
        [POD_EV_CALL_FINISHED] = S(POD_WAITING_READY), /* started before readiness was lost */
        [POD_EV_DRAIN] = S(POD_DRAINING),
        [POD_EV_FAILED] = S(POD_FAILED),           /* ready timeout, phase Failed */
        [POD_EV_DELETED_EXTERNALLY] = S(POD_FAILED),
    },
    [POD_SERVING] = {
        [POD_EV_READY] = S(POD_SERVING),
        [POD_EV_NOT_READY] = S(POD_WAITING_READY), /* stop routing calls to it */
        [POD_EV_CALL_STARTED] = S(POD_SERVING),
        [POD_EV_CALL_FINISHED] = S(POD_SERVING),
        [POD_EV_TTL_EXPIRED] = S(POD_DRAINING),
        [POD_EV_DRAIN] = S(POD_DRAINING),
        [POD_EV_FAILED] = S(POD_FAILED),
        [POD_EV_DELETED_EXTERNALLY] = S(POD_FAILED),
    },
    [POD_DRAINING] = {
        [POD_EV_CREATED] = S(POD_DRAINING),        /* drained while creating */
        [POD_EV_READY] = S(POD_DRAINING),
        [POD_EV_NOT_READY] = S(POD_DRAINING),
        [POD_EV_CALL_FINISHED] = S(POD_DRAINING),
        [POD_EV_DRAIN] = S(POD_DRAINING),
        [POD_EV_FAILED] = S(POD_FAILED),
        [POD_EV_DELETED_EXTERNALLY] = S(POD_FAILED),
        [POD_EV_DELETE_SENT] = S(POD_DELETING),
        [POD_EV_RELEASED] = S(POD_GONE),           /* shut down before its Delete */
    },
    [POD_DELETING] = {
        [POD_EV_NOT_READY] = S(POD_DELETING),      /* terminating pods turn unready */
        [POD_EV_CALL_FINISHED] = S(POD_DELETING),
        [POD_EV_DRAIN] = S(POD_DELETING),
        [POD_EV_FAILED] = S(POD_FAILED),           /* the Delete failed: retry from failed */
        [POD_EV_DELETED_EXTERNALLY] = S(POD_GONE),
        [POD_EV_DELETED] = S(POD_GONE),
    },
    [POD_FAILED] = {
        [POD_EV_NOT_READY] = S(POD_FAILED),
        [POD_EV_CALL_FINISHED] = S(POD_FAILED),
        [POD_EV_DRAIN] = S(POD_FAILED),
        [POD_EV_FAILED] = S(POD_FAILED),
        [POD_EV_DELETED_EXTERNALLY] = S(POD_FAILED), /* its Service is still to delete */
        [POD_EV_DELETE_SENT] = S(POD_DELETING),
        [POD_EV_RELEASED] = S(POD_GONE),           /* not ours to delete, or cannot be */
    },
    [POD_GONE] = {0},                              /* terminal */
};

static const char *const state_names[POD_STATE_COUNT] = {
    [POD_REQUESTED] = "requested",   [POD_CREATING] = "creating",
    [POD_WAITING_READY] = "waiting-ready", [POD_SERVING] = "serving",
    [POD_DRAINING] = "draining",     [POD_DELETING] = "deleting",
    [POD_FAILED] = "failed",         [POD_GONE] = "gone",
};

static const char *const event_names[POD_EVENT_COUNT] = {
    [POD_EV_CREATE_SENT] = "create-sent",     [POD_EV_CREATED] = "created",
    [POD_EV_READY] = "ready",                 [POD_EV_NOT_READY] = "not-ready",
    [POD_EV_CALL_STARTED] = "call-started",   [POD_EV_CALL_FINISHED] = "call-finished",
    [POD_EV_TTL_EXPIRED] = "ttl-expired",     [POD_EV_DRAIN] = "drain",
    [POD_EV_FAILED] = "failed",               [POD_EV_DELETED_EXTERNALLY] = "deleted-externally",
    [POD_EV_DELETE_SENT] = "delete-sent",     [POD_EV_DELETED] = "deleted",
    [POD_EV_ADOPTED] = "adopted",             [POD_EV_RELEASED] = "released",
};

int pod_state_next(pod_state state, pod_event event, pod_state *next)
{
    if ((unsigned)state >= POD_STATE_COUNT || (unsigned)event >= POD_EVENT_COUNT)
        return -1;
    unsigned char to = table[state][event];
    if (!to)
        return -1;
    *next = (pod_state)(to - 1);
    return 0;
}

const char *pod_state_name(pod_state state)
{
    return (unsigned)state < POD_STATE_COUNT ? state_names[state] : "?";
}

const char *pod_event_name(pod_event event)
{
    return (unsigned)event < POD_EVENT_COUNT ? event_names[event] : "?";
}

int pod_state_apply(const char *pod_name, pod_state *state, pod_event event)
{
    pod_state next;
    if (pod_state_next(*state, event, &next) < 0) {
        log_warn("pod %s: event %s refused in state %s", pod_name, pod_event_name(event),
                 pod_state_name(*state));
        return -1;
    }
    if (next == *state)
        log_v(3, "pod %s: %s --%s--> %s", pod_name, pod_state_name(*state), pod_event_name(event),
              pod_state_name(next));
    else
        log_info("pod %s: %s --%s--> %s", pod_name, pod_state_name(*state), pod_event_name(event),
                 pod_state_name(next));
    *state = next;
    return 0;
}
