/* pod_status: a function pod's status read as ready / wait / fail fast; see
 * pod_status.h. */
#include "kube/pod_status.h"

#include <string.h>

#include "kube/kube_client.h"

/* Waiting reasons after which the kubelet will not start the container
 * without a change (image, configuration) or only retries with backoff. */
static const char *const fatal_waiting[] = {
    "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
    "CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
};

static int is_fatal_waiting(const char *reason)
{
    for (size_t i = 0; reason && i < sizeof fatal_waiting / sizeof *fatal_waiting; i++)
        if (!strcmp(reason, fatal_waiting[i]))
            return 1;
    return 0;
}

static long num_or(const json *v, long dflt)
{
    return v && v->type == JSON_NUMBER ? (long)v->number : dflt;
}

static int ready_condition(const json *pod)
{
    const json *conds = kube_path(pod, "status.conditions");
    for (size_t i = 0; conds && conds->type == JSON_ARRAY && i < conds->len; i++) {
        const char *type = json_get_str(conds->items[i], "type");
        const char *s = json_get_str(conds->items[i], "status");
        if (type && s && !strcmp(type, "Ready"))
            return !strcmp(s, "True");
    }
    return 0;
}

/* Looks at one container status; 1 when it decides FAIL (st filled). A
 * waiting reason worth showing is kept in st for WAIT. */
static int read_container(const json *cs, int init, pod_status *st)
{
    const char *name = json_get_str(cs, "name");
    const char *waiting = kube_path_str(cs, "state.waiting.reason");
    const json *term = kube_path(cs, "state.terminated");
    const json *last = kube_path(cs, "lastState.terminated");
    long restarts = num_or(json_get(cs, "restartCount"), 0);
    const json *t = term ? term : last;
    int fail = 0;
    if (is_fatal_waiting(waiting)) {
        fail = 1;
        st->reason = waiting;
        st->message = kube_path_str(cs, "state.waiting.message");
    } else if (term && (!init || num_or(json_get(term, "exitCode"), -1) != 0)) {
        /* an init container that exited 0 is done; any other exit is a failure */
        fail = 1;
        st->reason = json_get_str(term, "reason") ? json_get_str(term, "reason") : "Terminated";
        st->message = json_get_str(term, "message");
    } else if (!init && last && restarts > 0) {
        fail = 1;   /* it crashed once: the wrapper server does not exit on its own */
        st->reason = json_get_str(last, "reason") ? json_get_str(last, "reason") : "Restarted";
        st->message = json_get_str(last, "message");
    } else if (init && last && restarts > 0 && num_or(json_get(last, "exitCode"), -1) != 0) {
        fail = 1;   /* an init container failed and is being retried */
        st->reason = json_get_str(last, "reason") ? json_get_str(last, "reason") : "Error";
        st->message = json_get_str(last, "message");
    }
    if (fail || (waiting && !st->reason && strcmp(waiting, "PodInitializing"))) {
        st->container = name;
        st->init = init;
        if (!fail)
            st->reason = waiting;
        st->exit_code = num_or(json_get(t, "exitCode"), -1);
        st->exit_reason = json_get_str(t, "reason");
        st->previous = restarts > 0 && !term;
    }
    return fail;
}

void pod_status_read(const json *pod, pod_status *st)
{
    *st = (pod_status){.verdict = POD_VERDICT_WAIT, .exit_code = -1};
    st->name = kube_path_str(pod, "metadata.name");
    st->ip = kube_path_str(pod, "status.podIP");
    if (kube_path(pod, "metadata.deletionTimestamp")) {
        st->verdict = POD_VERDICT_TERMINATING;
        return;
    }
    const char *lists[] = {"status.initContainerStatuses", "status.containerStatuses"};
    for (int l = 0; l < 2; l++) {
        const json *cs = kube_path(pod, lists[l]);
        for (size_t i = 0; cs && cs->type == JSON_ARRAY && i < cs->len; i++)
            if (read_container(cs->items[i], l == 0, st)) {
                st->verdict = POD_VERDICT_FAIL;
                return;
            }
    }
    const char *phase = kube_path_str(pod, "status.phase");
    if (phase && (!strcmp(phase, "Failed") || !strcmp(phase, "Succeeded"))) {
        st->verdict = POD_VERDICT_FAIL;
        st->container = NULL;
        st->reason = kube_path_str(pod, "status.reason") ? kube_path_str(pod, "status.reason") : phase;
        st->message = kube_path_str(pod, "status.message");
        return;
    }
    if (phase && !strcmp(phase, "Running") && ready_condition(pod) && st->ip && *st->ip)
        st->verdict = POD_VERDICT_READY;
}

void pod_status_describe(const json *pod, const pod_status *st, buf *out)
{
    if (st->verdict == POD_VERDICT_TERMINATING) {
        buf_append_str(out, "being deleted");
        return;
    }
    if (st->verdict == POD_VERDICT_READY) {
        buf_printf(out, "Ready at %s", st->ip);
        return;
    }
    if (st->verdict == POD_VERDICT_WAIT) {
        const char *phase = kube_path_str(pod, "status.phase");
        buf_append_str(out, phase ? phase : "Pending");
        if (st->reason && st->container)
            buf_printf(out, ", %scontainer \"%s\": %s", st->init ? "init " : "", st->container, st->reason);
        else if (phase && !strcmp(phase, "Running"))
            buf_append_str(out, ", not Ready");
        return;
    }
    if (st->container)
        buf_printf(out, "%scontainer \"%s\": ", st->init ? "init " : "", st->container);
    else
        buf_append_str(out, "pod: ");
    buf_append_str(out, st->reason ? st->reason : "failed");
    if (st->message && *st->message)
        buf_printf(out, ": %s", st->message);
    /* The termination's reason only when it says more than the reason shown
     * ("CrashLoopBackOff ... (last exit code 3, Error)", not "Error (exit code 3, Error)"). */
    const char *exit_reason = st->exit_reason && !(st->reason && !strcmp(st->reason, st->exit_reason))
                                  ? st->exit_reason : NULL;
    if (st->exit_code >= 0)
        buf_printf(out, " (%sexit code %ld%s%s)", st->previous ? "last " : "", st->exit_code,
                   exit_reason ? ", " : "", exit_reason ? exit_reason : "");
}

const char *pod_verdict_name(pod_verdict v)
{
    switch (v) {
    case POD_VERDICT_WAIT: return "wait";
    case POD_VERDICT_READY: return "ready";
    case POD_VERDICT_FAIL: return "fail";
    case POD_VERDICT_TERMINATING: return "terminating";
    }
    return "?";
}

pod_recheck pod_status_recheck(const json *pod, int not_found, const char **why)
{
    *why = NULL;
    if (not_found)
        return POD_RECHECK_GONE;
    if (!pod)
        return POD_RECHECK_KEEP;
    const char *phase = kube_path_str(pod, "status.phase");
    if (kube_path(pod, "metadata.deletionTimestamp")) {   /* as pod_status_read reads it */
        *why = "being deleted";
        return POD_RECHECK_EVICT;
    }
    if (!phase || strcmp(phase, "Running")) {
        *why = phase ? phase : "";
        return POD_RECHECK_EVICT;
    }
    return POD_RECHECK_KEEP;
}
