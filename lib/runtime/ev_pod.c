/* ev_pod: EvaluateFunction through a function pod; see ev_pod.h.
 *
 * A call: pod_cache_get -> the pod's link (one HTTP/2 connection per pod,
 * opened on the first call, gc_connect_start on the loop) -> a stream on it
 * (gc_call_start) -> done. Later and concurrent calls to the same pod take
 * streams on the same connection.
 *
 * A link is retired (no new calls; closed once its calls have ended) when
 * its pod leaves the cache (pod_cache_on_drop: failed, deleted, or not
 * dialable), or when its connection is found broken or going away (the
 * server's GOAWAY, a reset): the next call opens a new one. A call that the
 * connection ended before the server answered (gc_result.transport), that
 * the server refused UNAVAILABLE (shutting down: the function never ran), or
 * whose connection could not be made is sent again, up to max_retries
 * times, to the pod the cache gives after checking the failing one
 * (pod_cache_retry), on a fresh connection (EvaluateFunction is a pure
 * function of its request: a second send is safe). A call the function
 * answered is never sent again. The last failure drops the pod from the
 * cache and fails the call. */
#include "runtime/ev_pod.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/semver.h"
#include "core/state_step.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"
#include "oci/image_tag.h"
#include "oci/registry_tags.h"
#include "krm/resourcelist.h"
#include "evaluator.pb-c.h"

#define EVALUATE_PATH "/evaluator.FunctionEvaluator/EvaluateFunction"
#define CONNECT_TIMEOUT_NS (10LL * 1000000000)

typedef struct pod_call pod_call;
typedef struct pod_link pod_link;

typedef struct pod_ev {
    evaluator base;
    loop *l;
    pod_cache *pc;
    ev_pod_opts o;
    ev_pod_last last;
    pod_link *links;           /* live and retired, until closed */
} pod_ev;

/* One HTTP/2 connection to one pod, shared by the calls to it. */
struct pod_link {
    pod_ev *p;
    pod_link *next;
    char *image, *pod, *addr;
    gc_dialing *dialing;
    gc_conn *conn;
    pod_call *queue;           /* calls waiting for the connect */
    int via_service;           /* addr is the pod's Service (its ClusterIP) */
    int calls;                 /* calls queued or running on it */
    int retired;               /* no new calls; closed once calls is 0 */
    loop_defer closing;        /* the close, from the loop */
};

/* Where a call stands. It is counted among its pod's calls (the pod cache's
 * pod_cache_call_begin) exactly while CONNECTING or RUNNING. */
typedef enum pod_call_state {
    POD_CALL_NEW,              /* started, its image not yet settled */
    POD_CALL_LISTING_TAGS,     /* its Tag is a constraint: the repository's tags are listed */
    POD_CALL_FAILING,          /* failed at start: the failure is delivered from the loop */
    POD_CALL_WAITING_POD,      /* the pod cache is asked for a pod (again, on a retry) */
    POD_CALL_CONNECTING,       /* has its pod; queued for its link's connect */
    POD_CALL_RUNNING,          /* a stream on the link's connection */
    POD_CALL_ENDED,            /* answered, failed or cancelled: done (or gone) was told */
} pod_call_state;

static const char *const pod_call_state_names[] = {
    [POD_CALL_NEW] = "NEW", [POD_CALL_LISTING_TAGS] = "LISTING_TAGS",
    [POD_CALL_FAILING] = "FAILING", [POD_CALL_WAITING_POD] = "WAITING_POD",
    [POD_CALL_CONNECTING] = "CONNECTING", [POD_CALL_RUNNING] = "RUNNING",
    [POD_CALL_ENDED] = "ENDED",
};

/* Every state may end (a failure, or the caller going away); a call that
 * left its pod without an answer waits for a pod again (a retry). */
static const unsigned pod_call_next[] = {
    [POD_CALL_NEW] = STATE_BIT(POD_CALL_LISTING_TAGS) | STATE_BIT(POD_CALL_FAILING) |
                     STATE_BIT(POD_CALL_WAITING_POD) | STATE_BIT(POD_CALL_ENDED),
    [POD_CALL_LISTING_TAGS] = STATE_BIT(POD_CALL_WAITING_POD) | STATE_BIT(POD_CALL_ENDED),
    [POD_CALL_FAILING] = STATE_BIT(POD_CALL_ENDED),
    [POD_CALL_WAITING_POD] = STATE_BIT(POD_CALL_CONNECTING) | STATE_BIT(POD_CALL_ENDED),
    [POD_CALL_CONNECTING] = STATE_BIT(POD_CALL_RUNNING) | STATE_BIT(POD_CALL_WAITING_POD) |
                            STATE_BIT(POD_CALL_ENDED),
    [POD_CALL_RUNNING] = STATE_BIT(POD_CALL_WAITING_POD) | STATE_BIT(POD_CALL_ENDED),
    [POD_CALL_ENDED] = 0,
};

struct pod_call {
    ev_call base;
    pod_call_state state;      /* changed only by pod_call_set_state */
    ev_request req;
    char *image;
    ev_done_fn *done;
    void *ctx;
    pod_waiter *waiter;
    pod_link *link;            /* while queued or running on it */
    pod_call *queued_next;
    gc_stream *stream;
    int retries;               /* sent again after a pod failed it without an answer */
    int via_service;           /* the cache answered the Service, not the pod's IP */
    char *pod;                 /* the pod dialed */
    char *addr;
    buf packed;                /* the request message */
    registry_tags_op *listing; /* the repository's tags, for a Tag constraint */
    char *constraint;          /* that Tag, while listing, */
    semver_constraint *want;   /* as read */
    char *best;                /* the highest tag matching it so far, */
    semver best_v;             /* as read */
    loop_defer deferred;       /* a failure delivered from the loop: */
    int deferred_code;         /* its status, */
    buf deferred_why;          /* and its message */
    ev_result res;
    buf message;
    Evaluator__EvaluateFunctionResponse *resp;
    int64_t arrived_ns;        /* for /metrics: its duration */
    int64_t wait_ns;           /* its first wait for a pod; -1: none yet */
    pod_severity severity;     /* its results' worst (unknown until read) */
};

static void link_submit(pod_ev *p, pod_call *c);
static void on_pod(const pod_answer *a, void *ctx);

static int on_its_pod(pod_call_state s)
{
    return s == POD_CALL_CONNECTING || s == POD_CALL_RUNNING;
}

/* The one place a call's state changes. The pod cache counts a pod's calls
 * (one with calls is never reclaimed as idle, and its idle time starts at
 * the last call's end): a call is counted from its pod's answer until it
 * leaves that pod. */
static void pod_call_set_state(pod_call *c, pod_call_state next)
{
    int legal = state_step(pod_call_next, pod_call_state_names, c->state, next,
                           "pod call for \"%s\"", c->image && *c->image ? c->image
                           : c->req.image ? c->req.image : "");   /* the request's, until settled */
    assert(legal);
    (void)legal;   /* NDEBUG */
    pod_ev *p = (pod_ev *)c->base.ev;
    if (!on_its_pod(c->state) && on_its_pod(next))
        pod_cache_call_begin(p->pc, c->image, c->pod);
    else if (on_its_pod(c->state) && !on_its_pod(next))
        pod_cache_call_end(p->pc, c->image, c->pod);
    c->state = next;
}

/* krm_pod_runtime_calls_total and the calls' figures (the pod cache keeps
 * them per image) */
static void count_call(pod_call *c, int code)
{
    pod_call_figures f = {.code = code, .code_name = grpc_code_name(code),
                          .duration_ns = loop_now_ns() - c->arrived_ns, .wait_ns = c->wait_ns,
                          .severity = code == GRPC_OK ? c->severity : POD_SEVERITY_UNKNOWN};
    if (*c->image)
        pod_cache_count_call(((pod_ev *)c->base.ev)->pc, c->image, &f);
}

/* The worst severity among the results of a function's ResourceList, read
 * as the runner reads one (its items skipped by rl_scan, not parsed: the
 * cost is the results'); unknown when it is not in rl_scan's subset. */
static pod_severity worst_severity(const uint8_t *data, size_t len)
{
    /* A list with no "results" anywhere in it has none: most calls of a
     * mutator answer without parsing (the scan is on the answer's path). */
    if (!memmem(data, len, "results", 7))
        return POD_SEVERITY_NONE;
    rl_list rl;
    buf err = {0};   /* not shown: a list the scan cannot read has an unknown severity */
    int rc = rl_parse_with((const char *)data, len, RL_PARSE_SCAN_ONLY, &rl, &err);
    buf_free(&err);
    if (rc != 0)
        return POD_SEVERITY_UNKNOWN;
    pod_severity worst = rl.n_results || rl.n_results_omitted ? POD_SEVERITY_INFO : POD_SEVERITY_NONE;
    for (size_t i = 0; i < rl.n_results; i++) {
        const char *sev = rl.results[i].severity ? rl.results[i].severity : "";
        pod_severity v = !strcmp(sev, "error") ? POD_SEVERITY_ERROR
                         : !strcmp(sev, "warning") ? POD_SEVERITY_WARNING : POD_SEVERITY_INFO;
        if (v > worst)
            worst = v;
    }
    if (rl.n_results_omitted && worst < POD_SEVERITY_ERROR)
        worst = POD_SEVERITY_UNKNOWN;   /* results not kept may hold a worse one */
    rl_free(&rl);
    return worst;
}

static void finish(pod_call *c, int code, const char *message)
{
    if (c->state == POD_CALL_ENDED)
        return;
    pod_call_set_state(c, POD_CALL_ENDED);
    count_call(c, code);
    if (code != GRPC_OK) {
        buf_append_str(&c->message, message ? message : "");
        c->res = (ev_result){.code = code, .message = c->message.data ? c->message.data : ""};
    }
    c->done(&c->base, &c->res, c->ctx);
}

/* c ended on its pod without the function's answer: sent again (0) after
 * the cache's check of that pod, or -1 when its retries are spent. */
static int retry(pod_call *c, const char *why)
{
    pod_ev *p = (pod_ev *)c->base.ev;
    if (c->retries >= p->o.max_retries)
        return -1;
    c->retries++;
    log_v(1, "function pod %s: %s; sending the call again (retry %d of %d)", c->pod, why,
          c->retries, p->o.max_retries);
    pod_call_set_state(c, POD_CALL_WAITING_POD);   /* it leaves the pod, which may be checked and dropped */
    if (!(c->waiter = pod_cache_retry(p->pc, c->image, c->pod, why, on_pod, c)))
        return -1;
    return 0;
}

/* ---- links ---------------------------------------------------------------- */

static void link_free(pod_link *k)
{
    pod_ev *p = k->p;
    for (pod_link **q = &p->links; *q; q = &(*q)->next)
        if (*q == k) {
            *q = k->next;
            break;
        }
    k->retired = 1;
    for (pod_call *c = k->queue; c; c = c->queued_next)
        c->link = NULL;   /* waiting for the connect: they no longer hold k */
    gc_connect_cancel(k->dialing);
    gc_close(k->conn);   /* calls still running end CANCELLED (an evaluator going away) */
    loop_defer_cancel(&k->closing);
    free(k->image);
    free(k->pod);
    free(k->addr);
    free(k);
}

static void close_now(loop *l, void *ctx)
{
    (void)l;
    pod_link *k = ctx;
    log_v(2, "function pod %s: connection to %s closed", k->pod, k->addr);
    link_free(k);
}

/* Closed from the loop: this may run inside the connection's own callback. */
static void link_close_when_idle(pod_link *k)
{
    if (k->retired && !k->calls)
        loop_defer_post(k->p->l, &k->closing);
}

static void link_retire(pod_link *k)
{
    k->retired = 1;
    link_close_when_idle(k);
}

/* The call leaves its link (answered, cancelled, or moving to another). */
static void link_leave(pod_call *c)
{
    pod_link *k = c->link;
    if (!k)
        return;
    for (pod_call **q = &k->queue; *q; q = &(*q)->queued_next)
        if (*q == c) {
            *q = c->queued_next;
            break;
        }
    c->link = NULL;
    k->calls--;
    link_close_when_idle(k);
}

static void on_drop(const char *image, const char *pod, void *ctx)
{
    pod_ev *p = ctx;
    for (pod_link *k = p->links; k; k = k->next)
        if (!k->retired && !strcmp(k->pod, pod) && !strcmp(k->image, image))
            link_retire(k);
}

static void on_answer(const gc_result *r, void *ctx)
{
    pod_call *c = ctx;
    pod_ev *p = (pod_ev *)c->base.ev;
    c->stream = NULL;
    pod_link *k = c->link;
    link_leave(c);
    if (r->transport && !k->retired)
        link_retire(k);   /* the connection ended it: the next call opens another */
    if ((r->transport || r->status == GRPC_UNAVAILABLE) && retry(c, r->message) == 0)
        return;
    if (r->status != GRPC_OK) {
        if (r->status == GRPC_UNAVAILABLE)
            pod_cache_forget(p->pc, c->image, c->pod, r->message);
        buf m = {0};
        buf_printf(&m, "%s (function pod %s)", r->message, c->pod);
        finish(c, r->status, m.data);
        buf_free(&m);
        return;
    }
    c->resp = evaluator__evaluate_function_response__unpack(NULL, r->response_len, r->response);
    if (!c->resp) {
        finish(c, GRPC_INTERNAL, "the function pod's answer is not an EvaluateFunctionResponse");
        return;
    }
    c->res = (ev_result){.code = GRPC_OK, .out = c->resp->resource_list.data,
                         .out_len = c->resp->resource_list.len, .log = c->resp->log.data,
                         .log_len = c->resp->log.len};
    c->severity = worst_severity(c->resp->resource_list.data, c->resp->resource_list.len);
    finish(c, GRPC_OK, NULL);
}

/* Starts c on its link's connection; 0, or -1 when the connection can take
 * no new stream (then c has left the link). */
static int link_send(pod_call *c)
{
    pod_ev *p = (pod_ev *)c->base.ev;
    c->stream = gc_call_start(c->link->conn, EVALUATE_PATH, c->packed.data, c->packed.len,
                              p->o.call_timeout_ns, on_answer, c);
    if (c->stream) {
        pod_call_set_state(c, POD_CALL_RUNNING);
        return 0;
    }
    link_leave(c);
    return -1;
}

static void on_connected(gc_conn *conn, const char *error, void *ctx)
{
    pod_link *k = ctx;
    pod_ev *p = k->p;
    k->dialing = NULL;
    k->calls++;   /* held: the calls below may end and free nothing of k */
    if (!conn) {
        /* A ClusterIP leads nowhere on a cluster without kube-proxy (or its
         * replacement): say what would work there. */
        buf why = {0};
        if (k->via_service)
            buf_printf(&why, "%s (dialed through the Service's ClusterIP: on a cluster without "
                       "kube-proxy nothing routes it; --dial=pod dials the pod's IP)", error);
        const char *msg = why.data ? why.data : error;
        log_v(1, "function pod %s: %s", k->pod, msg);
        link_retire(k);
        int dropped = 0;
        while (k->queue) {
            pod_call *c = k->queue;
            link_leave(c);
            if (retry(c, msg) == 0)
                continue;
            if (!dropped++)
                pod_cache_forget(p->pc, k->image, k->pod, msg);
            finish(c, GRPC_UNAVAILABLE, msg);
        }
        buf_free(&why);
    } else {
        k->conn = conn;
        log_v(2, "function pod %s: connected to %s", k->pod, k->addr);
        while (k->queue) {
            pod_call *c = k->queue;
            k->queue = c->queued_next;
            if (link_send(c) < 0)
                finish(c, GRPC_UNAVAILABLE, "the new connection to the function pod takes no call");
        }
    }
    k->calls--;
    link_close_when_idle(k);
}

/* The live link to c's pod at c's address, or a new one (connecting). */
static pod_link *link_get(pod_ev *p, pod_call *c, buf *err)
{
    for (pod_link *k = p->links; k; k = k->next)
        if (!k->retired && !strcmp(k->pod, c->pod) && !strcmp(k->addr, c->addr))
            return k;
    pod_link *k = calloc(1, sizeof *k);
    if (!k || !(k->image = strdup(c->image)) || !(k->pod = strdup(c->pod)) ||
        !(k->addr = strdup(c->addr))) {
        if (k) {
            free(k->image);
            free(k->pod);
        }
        free(k);
        buf_printf(err, "out of memory");
        return NULL;
    }
    k->p = p;
    loop_defer_init(&k->closing, close_now, k);
    k->via_service = c->via_service;
    if (!(k->dialing = gc_connect_start(p->l, c->addr, p->o.connect_timeout_ns, p->o.max_message,
                                        on_connected, k, err))) {
        free(k->image);
        free(k->pod);
        free(k->addr);
        free(k);
        return NULL;
    }
    k->next = p->links;
    p->links = k;
    return k;
}

/* c onto its pod's connection: sent now, or queued for the connect. */
static void link_submit(pod_ev *p, pod_call *c)
{
    buf err = {0};
    for (int tries = 0; tries < 2; tries++) {
        pod_link *k = link_get(p, c, &err);
        if (!k)
            break;
        c->link = k;
        k->calls++;
        if (!k->conn) {   /* in order, behind the calls already waiting */
            pod_call **q = &k->queue;
            while (*q)
                q = &(*q)->queued_next;
            c->queued_next = NULL;
            *q = c;
            return;
        }
        if (link_send(c) == 0)
            return;
        link_retire(k);   /* broken or going away: the next try opens another */
    }
    finish(c, GRPC_UNAVAILABLE, err.data ? err.data : "cannot start the call to the function pod");
    buf_free(&err);
}

static void on_pod(const pod_answer *a, void *ctx)
{
    pod_call *c = ctx;
    pod_ev *p = (pod_ev *)c->base.ev;
    c->waiter = NULL;
    if (c->wait_ns < 0)
        c->wait_ns = loop_now_ns() - c->arrived_ns;
    if (a->error) {
        finish(c, GRPC_UNAVAILABLE, a->error);
        return;
    }
    snprintf(p->last.pod, sizeof p->last.pod, "%s", a->pod);
    snprintf(p->last.uid, sizeof p->last.uid, "%s", a->uid ? a->uid : "");
    snprintf(p->last.addr, sizeof p->last.addr, "%s", a->name);
    p->last.created = a->created;
    p->last.ready = a->ready;
    p->last.pod_wait_ns = a->waited_ns;
    c->via_service = a->name && strcmp(a->name, a->addr) != 0;
    free(c->pod);
    free(c->addr);
    c->addr = NULL;
    if (!(c->pod = strdup(a->pod)) || !(c->addr = strdup(a->addr))) {
        finish(c, GRPC_UNAVAILABLE, "out of memory");
        return;
    }
    pod_call_set_state(c, POD_CALL_CONNECTING);
    link_submit(p, c);
}

static int pack(pod_call *c)
{
    Evaluator__EvaluateFunctionRequest req = EVALUATOR__EVALUATE_FUNCTION_REQUEST__INIT;
    req.resource_list.data = (uint8_t *)c->req.input;
    req.resource_list.len = c->req.input_len;
    req.image = c->image;
    size_t size = evaluator__evaluate_function_request__get_packed_size(&req);
    if (buf_reserve(&c->packed, size) < 0)
        return -1;
    evaluator__evaluate_function_request__pack(&req, (uint8_t *)c->packed.data);
    c->packed.len = size;
    return 0;
}

static void deliver_deferred(loop *l, void *ctx)
{
    (void)l;
    pod_call *c = ctx;
    finish(c, c->deferred_code, c->deferred_why.data ? c->deferred_why.data : "out of memory");
}

static void start_on_pod(pod_call *c);

/* kpt's filterParseTags: hash-like and git-build tags are no candidates */
static int not_a_release_tag(const char *tag)
{
    return !strncmp(tag, "sha256-", 7) || strstr(tag, "-git-") != NULL;
}

/* A page of the repository's tags: its highest match kept if it is the
 * highest yet (the pages are not kept). */
static void on_tag_page(char *const *tags, size_t n, void *ctx)
{
    pod_call *c = ctx;
    const char *page_best = semver_highest(c->want, tags, n, not_a_release_tag);
    semver v;
    if (!page_best || semver_parse(page_best, &v, NULL) < 0 ||
        (c->best && semver_compare(&v, &c->best_v) <= 0))
        return;
    char *copy = strdup(page_best);
    if (!copy)
        return;   /* out of memory: a lower match (or none) is named */
    free(c->best);
    c->best = copy;
    c->best_v = v;
}

/* The repository's tags are listed: the call goes on with the highest match. */
static void on_tags(int rc, size_t n, const char *err, void *ctx)
{
    pod_call *c = ctx;
    c->listing = NULL;   /* freed after this returns */
    if (rc == 0 && c->best) {
        buf image = {0};
        if (buf_printf(&image, "%s:%s", c->image, c->best) < 0) {
            finish(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
            return;
        }
        log_info("Tag \"%s\" on \"%s\": runs %s (the highest of %zu tags)", c->constraint,
                 c->image, image.data, n);
        free(c->image);
        c->image = image.data;
        start_on_pod(c);
        return;
    }
    buf msg = {0};
    buf_printf(&msg, "failed to resolve tag for image \"%s\" with constraint \"%s\": ", c->image,
               c->constraint);
    if (rc < 0)
        buf_printf(&msg, "listing the repository's tags failed: %s", err ? err : "");
    else
        buf_printf(&msg, "no tag could be found matching the version constraint \"%s\" (of %zu "
                   "tags)", c->constraint, n);
    finish(c, rc < 0 ? GRPC_UNAVAILABLE : GRPC_NOT_FOUND, msg.data ? msg.data : "out of memory");
    buf_free(&msg);
}

/* The image the pod runs: the request's, with its Tag applied as kpt
 * applies a function's tag. 0; 1 when the repository's tags are being
 * listed first (on_tags goes on); -1 with the call's failure set for
 * deliver_deferred (out of memory included). */
static int apply_tag(pod_call *c, const ev_request *req)
{
    const char *image = req->image ? req->image : "";
    if (!*image) {
        c->deferred_code = GRPC_INVALID_ARGUMENT;
        buf_append_str(&c->deferred_why, "the pod runtime needs the function's image");
        return -1;
    }
    if (!req->tag || !*req->tag)
        return (c->image = strdup(image)) ? 0 : -1;
    buf tagged = {0};
    int rc = image_tag_apply(image, req->tag, &tagged, &c->deferred_why);
    if (rc > 0) {
        c->image = tagged.data;   /* handed over */
        log_info("Tag \"%s\" on \"%s\": runs %s", req->tag, image, c->image);
        return 0;
    }
    pod_ev *p = (pod_ev *)c->base.ev;
    if (rc == 0 && p->o.tags_multi) {
        c->image = tagged.data;   /* the repository, until a tag is picked */
        c->deferred_code = GRPC_RESOURCE_EXHAUSTED;   /* out of memory, unless told below */
        buf why = {0};
        c->want = semver_constraint_parse(req->tag, &why);   /* image_tag_apply read it */
        buf_free(&why);
        if (!c->want || !(c->constraint = strdup(req->tag)))
            return -1;
        c->listing = registry_tags_start(p->o.tags_multi, c->image, p->o.tags_registry, on_tag_page,
                                         on_tags, c, &c->deferred_why);
        c->deferred_code = GRPC_FAILED_PRECONDITION;   /* a Docker config it cannot read */
        return c->listing ? 1 : -1;
    }
    buf_free(&tagged);
    c->deferred_code = GRPC_INVALID_ARGUMENT;
    if (rc == 0) {
        /* Porch's words, and why: a constraint is resolved against the
         * registry's tags, which the pod runtime does not list yet */
        c->deferred_code = GRPC_UNIMPLEMENTED;
        buf_printf(&c->deferred_why, "failed to resolve tag for image \"%s\" with constraint "
                   "\"%s\": the pod runtime does not list a registry's tags yet; give an exact "
                   "version or tag", image, req->tag);
    }
    return -1;
}

/* The image is known: the call asks the cache for a pod of it. */
static void start_on_pod(pod_call *c)
{
    pod_ev *p = (pod_ev *)c->base.ev;
    if (pack(c) < 0 || !(c->waiter = pod_cache_get(p->pc, c->image, on_pod, c))) {
        finish(c, GRPC_RESOURCE_EXHAUSTED, "out of memory");
        return;
    }
    pod_call_set_state(c, POD_CALL_WAITING_POD);
}

static ev_call *pod_start(evaluator *base, const ev_request *req, ev_done_fn *done, void *ctx)
{
    pod_ev *p = (pod_ev *)base;
    pod_call *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->req = *req;   /* before pack(), which reads the input */
    c->base.ev = base;
    c->done = done;
    c->ctx = ctx;
    c->arrived_ns = loop_now_ns();
    c->wait_ns = -1;
    c->severity = POD_SEVERITY_UNKNOWN;
    loop_defer_init(&c->deferred, deliver_deferred, c);
    int tagged = apply_tag(c, req);
    if (tagged > 0) {
        pod_call_set_state(c, POD_CALL_LISTING_TAGS);   /* on_tags goes on */
        return &c->base;
    }
    if (tagged < 0) {
        if (!c->image && !(c->image = strdup("")))
            goto oom;
        pod_call_set_state(c, POD_CALL_FAILING);
        loop_defer_post(p->l, &c->deferred);
        return &c->base;
    }
    if (pack(c) < 0)
        goto oom;
    if (!(c->waiter = pod_cache_get(p->pc, c->image, on_pod, c)))
        goto oom;
    pod_call_set_state(c, POD_CALL_WAITING_POD);
    return &c->base;
oom:
    if (c) {
        free(c->image);
        buf_free(&c->packed);
        buf_free(&c->deferred_why);
        semver_constraint_free(c->want);
        free(c->constraint);
    }
    free(c);
    return NULL;
}

static void call_release(ev_call *base)
{
    pod_call *c = (pod_call *)base;
    pod_ev *p = (pod_ev *)base->ev;
    assert(c->state == POD_CALL_ENDED);   /* counted out of its pod */
    pod_cache_cancel(p->pc, c->waiter);
    loop_defer_cancel(&c->deferred);
    gc_call_cancel(c->stream);   /* running: its stream is reset, the connection stays */
    link_leave(c);
    if (c->resp)
        evaluator__evaluate_function_response__free_unpacked(c->resp, NULL);
    buf_free(&c->packed);
    buf_free(&c->message);
    buf_free(&c->deferred_why);
    registry_tags_cancel(c->listing);
    semver_constraint_free(c->want);
    free(c->best);
    free(c->constraint);
    free(c->image);
    free(c->pod);
    free(c->addr);
    free(c);
}

static void pod_free_call(ev_call *base) { call_release(base); }

static void pod_cancel(ev_call *base, ev_gone_fn *gone, void *gone_ctx)
{
    pod_call *c = (pod_call *)base;
    if (c->state != POD_CALL_ENDED) {   /* the caller went away: CANCELLED, as go-grpc-prometheus counts it */
        pod_call_set_state(c, POD_CALL_ENDED);
        count_call(c, GRPC_CANCELLED);
    }
    call_release(base);
    if (gone)
        gone(gone_ctx);
}

static void pod_destroy(evaluator *base)
{
    pod_ev *p = (pod_ev *)base;
    pod_cache_off_drop(p->pc, on_drop, p);
    while (p->links)
        link_free(p->links);
    free(p);
}

static const ev_ops pod_ops = {
    .name = "pod",
    .start = pod_start,
    .cancel = pod_cancel,
    .free_call = pod_free_call,
    .destroy = pod_destroy,
};

evaluator *ev_pod_new(loop *l, pod_cache *pc, const ev_pod_opts *o)
{
    pod_ev *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->base.ops = &pod_ops;
    p->l = l;
    p->pc = pc;
    p->o = *o;
    if (pod_cache_on_drop(pc, on_drop, p) < 0) {
        free(p);
        return NULL;
    }
    if (p->o.connect_timeout_ns <= 0)
        p->o.connect_timeout_ns = CONNECT_TIMEOUT_NS;
    if (!p->o.max_message)
        p->o.max_message = 6291456;
    return &p->base;
}

const ev_pod_last *ev_pod_last_call(evaluator *e)
{
    pod_ev *p = (pod_ev *)e;
    return p->last.pod[0] ? &p->last : NULL;
}
