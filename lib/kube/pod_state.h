/* pod_state: the life cycle of one function pod as an explicit state
 * machine (in the manner of Krustlet's pod state machine).
 *
 * Why: the function runner's pod cache reacts to many things at once (its own
 * API calls returning, pod watch events, calls starting and ending, TTL and
 * shutdown). Porch spreads that logic over flags and channels, which is how
 * a pod that lost readiness keeps receiving calls and a failed creation
 * leaves its Service behind. Here every reaction is one row of ONE table:
 * state x event -> next state, or refused. The owner of a pod feeds events
 * in; the table says what the pod becomes, and every change is logged.
 *
 * States:
 *   requested      the cache decided a pod is needed; nothing sent yet
 *   creating       the Create of Pod (and Service) is in flight
 *   waiting-ready  the pod exists; waiting for Ready and its Service endpoint
 *                  (a pod adopted at startup starts here)
 *   serving        ready: calls are routed to it
 *   draining       no new calls; in-flight calls may finish
 *   deleting       Delete of Pod and Service sent
 *   failed         unusable (creation, readiness or pod failure, deleted by
 *                  someone else); its waiters get the error; must be deleted
 *   gone           terminal: deleted, never created, or left to the cluster
 *
 * The state only says where the pod is; the number of calls in flight is
 * counted by the owner (it decides when a draining pod is empty and sends
 * the Delete). Self-loops (serving --call-started--> serving) are valid rows
 * so that a legitimate event is never refused just because it changes
 * nothing. */
#ifndef KRM_POD_STATE_H
#define KRM_POD_STATE_H

typedef enum pod_state {
    POD_REQUESTED,
    POD_CREATING,
    POD_WAITING_READY,
    POD_SERVING,
    POD_DRAINING,
    POD_DELETING,
    POD_FAILED,
    POD_GONE,
    POD_STATE_COUNT
} pod_state;

typedef enum pod_event {
    POD_EV_CREATE_SENT,        /* the Create request was sent */
    POD_EV_CREATED,            /* the API server accepted it (or AlreadyExists) */
    POD_EV_READY,              /* Ready=True and the Service endpoint is this pod, or
                                  (--dial=pod) its wrapper answers SERVING before Ready */
    POD_EV_NOT_READY,          /* readiness lost (or not yet there) */
    POD_EV_CALL_STARTED,       /* an EvaluateFunction call was sent to the pod */
    POD_EV_CALL_FINISHED,      /* a call returned (in any way) */
    POD_EV_TTL_EXPIRED,        /* idle longer than its time to live */
    POD_EV_DRAIN,              /* retire it: shutdown, template change, scale down */
    POD_EV_FAILED,             /* an API call failed, readiness timed out, phase Failed */
    POD_EV_DELETED_EXTERNALLY, /* the pod disappeared without our Delete */
    POD_EV_DELETE_SENT,        /* Delete of Pod and Service was sent */
    POD_EV_DELETED,            /* the Delete completed (or NotFound) */
    POD_EV_ADOPTED,            /* an existing pod was taken over (listed by its label) */
    POD_EV_RELEASED,           /* given up without a Delete (left to the cluster: a pod
                                  that timed out, could not be dialed, or out of memory) */
    POD_EVENT_COUNT
} pod_event;

/* The next state for `event` in `state`: 0 with *next set, or -1 when the
 * table refuses the event in that state (or either is out of range). */
int pod_state_next(pod_state state, pod_event event, pod_state *next);

/* "waiting-ready", "call-started", ...; "?" when out of range. */
const char *pod_state_name(pod_state state);
const char *pod_event_name(pod_event event);

/* Applies event to *state and logs it: "pod NAME: waiting-ready --ready-->
 * serving" (info; self-loops at verbosity 3). A refused event is logged as
 * a warning, leaves *state unchanged and returns -1; otherwise 0. */
int pod_state_apply(const char *pod_name, pod_state *state, pod_event event);

#endif
