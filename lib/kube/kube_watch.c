/* kube_watch: watch streams, decoded line by line; see kube_watch.h. */
#include "kube/kube_watch.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/state_step.h"

#define BACKOFF_MIN_NS 250000000LL      /* 250 ms */
#define BACKOFF_MAX_NS 30000000000LL    /* 30 s */
#define WATCH_TIMEOUT_S 290             /* server-side end of one watch request (kubectl: 5-10 min) */
/* The client's own end of a watch request: a connection that died without
 * a FIN or RST (a NAT or load balancer dropping it) carries nothing, and the
 * server's end never arrives; past this the stream is reopened. */
#define WATCH_CLIENT_TIMEOUT_MS ((WATCH_TIMEOUT_S + 30) * 1000L)
/* A stream that lived at least this long was healthy: the backoff starts
 * again from its minimum, and when the server ended it cleanly (its
 * timeoutSeconds) it is reopened at once, quiet or not. A stream that ends
 * sooner counts as a failure, clean end and events or not, and the next one
 * waits the backoff: a server (or a proxy) that ends every watch after an
 * event is otherwise asked again thousands of times a second. */
#define WATCH_MIN_HEALTHY_NS 5000000000LL

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */

int kube_lines_feed(kube_lines *l, const char *data, size_t len, kube_line_fn *fn, void *ctx)
{
    size_t max = l->max ? l->max : KUBE_WATCH_MAX_LINE;
    while (len) {
        const char *nl = memchr(data, '\n', len);
        size_t take = nl ? (size_t)(nl - data) : len;
        if (l->partial.len + take > max)
            return -1;
        if (buf_append(&l->partial, data, take) < 0)
            return -1;
        if (!nl)
            break;
        data += take + 1;
        len -= take + 1;
        size_t n = l->partial.len;
        if (n && l->partial.data[n - 1] == '\r')
            n--;
        int rc = n ? fn(l->partial.data, n, ctx) : 0;
        buf_reset(&l->partial);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void kube_lines_free(kube_lines *l) { buf_free(&l->partial); }

const char *kube_event_type_name(kube_event_type t)
{
    static const char *const names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};
    return (unsigned)t < sizeof names / sizeof *names ? names[t] : "?";
}

int kube_event_parse(const char *line, size_t len, kube_event *ev, buf *err)
{
    memset(ev, 0, sizeof *ev);
    buf why = {0};
    ev->doc = json_parse_max(line, len, KUBE_EVENT_MAX_VALUES, &why);
    if (!ev->doc) {
        buf_printf(err, "watch event is not JSON (%s)", why.data ? why.data : "out of memory");
        buf_free(&why);
        return -1;
    }
    buf_free(&why);
    const char *type = json_get_str(ev->doc, "type");
    ev->object = json_get(ev->doc, "object");
    int t = -1;
    for (int i = KUBE_ADDED; type && i <= KUBE_ERROR; i++)
        if (!strcmp(type, kube_event_type_name((kube_event_type)i)))
            t = i;
    if (t < 0) {
        buf_printf(err, "watch event has %s type%s%s", type ? "an unknown" : "no",
                   type ? " " : "", type ? type : "");
        kube_event_free(ev);
        return -1;
    }
    if (!ev->object || ev->object->type != JSON_OBJECT) {
        buf_printf(err, "watch event %s has no object", type);
        kube_event_free(ev);
        return -1;
    }
    ev->type = (kube_event_type)t;
    ev->resource_version = kube_path_str(ev->object, "metadata.resourceVersion");
    if (ev->type == KUBE_ERROR) {
        const json *code = json_get(ev->object, "code");
        ev->code = code && code->type == JSON_NUMBER ? (long)code->number : 0;
    }
    return 0;
}

void kube_event_free(kube_event *ev)
{
    json_free(ev->doc);
    memset(ev, 0, sizeof *ev);
}

int64_t kube_watch_backoff_ns(unsigned attempt)
{
    int64_t ns = BACKOFF_MIN_NS;
    for (unsigned i = 0; i < attempt && ns < BACKOFF_MAX_NS; i++)
        ns *= 2;
    return ns < BACKOFF_MAX_NS ? ns : BACKOFF_MAX_NS;
}

/* ------------------------------------------------------------------------ */
/* Watching                                                                  */

/* A watch's life; it changes in watch_set only, whose table holds the
 * legal steps: LISTING -> STREAMING (reopened as often as the server ends
 * it), BACKING_OFF after a failure and back to either, FAILED when only the
 * user can help; stopped while listing: STOPPED until the list answers. */
typedef enum watch_phase {
    WATCH_LISTING,       /* its list request in flight */
    WATCH_STREAMING,     /* its watch request in flight */
    WATCH_BACKING_OFF,   /* the retry timer runs */
    WATCH_FAILED,        /* a client error the owner was told of: it stops the watch */
    WATCH_STOPPED,       /* stopped while listing (a list cannot be withdrawn) */
} watch_phase;

static const char *const watch_phase_names[] = {
    [WATCH_LISTING] = "LISTING", [WATCH_STREAMING] = "STREAMING",
    [WATCH_BACKING_OFF] = "BACKING_OFF", [WATCH_FAILED] = "FAILED", [WATCH_STOPPED] = "STOPPED",
};

static const unsigned watch_phase_next[] = {
    [WATCH_LISTING] = STATE_BIT(WATCH_STREAMING) | STATE_BIT(WATCH_BACKING_OFF) | STATE_BIT(WATCH_FAILED) |
                      STATE_BIT(WATCH_STOPPED),
    [WATCH_STREAMING] = STATE_BIT(WATCH_STREAMING) | STATE_BIT(WATCH_BACKING_OFF) | STATE_BIT(WATCH_FAILED),
    [WATCH_BACKING_OFF] = STATE_BIT(WATCH_LISTING) | STATE_BIT(WATCH_STREAMING),
    [WATCH_FAILED] = 0,
    [WATCH_STOPPED] = 0,
};

struct kube_watch {
    kube_client *c;
    loop *l;
    kube_ref ref;          /* owned (kube_ref_dup); its name is not used */
    kube_watch_fns fns;
    void *ctx;
    char *rv;              /* last resourceVersion seen */
    kube_lines lines;
    kube_req *stream;      /* the watch request in flight */
    int64_t stream_started_ns;
    json *refusal;         /* the Status the server answered instead of a stream (403...) */
    loop_timer retry;      /* armed: the next list or stream after a failure */
    unsigned attempt;
    watch_phase phase;
    /* Beside the phase: what has happened and what the next attempt does */
    int listed;            /* a list has answered once: failing now is not fatal */
    int relist;            /* the resourceVersion is gone (410): the next attempt lists */
};

static void watch_set(kube_watch *w, watch_phase next)
{
    int legal = state_step(watch_phase_next, watch_phase_names, w->phase, next, "watch %s",
                           w->ref.resource);
    assert(legal);
    (void)legal;   /* NDEBUG */
    w->phase = next;
}

static void relist(kube_watch *w);
static void open_stream(kube_watch *w);

static kube_ref ref_of(const kube_watch *w, const char *query)
{
    return (kube_ref){w->ref.api, w->ref.resource, w->ref.namespace, NULL, query};
}

static void set_rv(kube_watch *w, const char *rv)
{
    if (!rv || !*rv)
        return;
    char *copy = strdup(rv);
    if (copy) {
        free(w->rv);
        w->rv = copy;
    }
}

static void on_retry(loop *l, void *ctx)
{
    (void)l;
    kube_watch *w = ctx;
    if (w->relist || !w->rv)
        relist(w);
    else
        open_stream(w);
}

static void schedule(kube_watch *w)
{
    int64_t ns = kube_watch_backoff_ns(w->attempt);
    if (w->attempt < 64)
        w->attempt++;
    watch_set(w, WATCH_BACKING_OFF);
    loop_timer_arm(w->l, &w->retry, ns);
}

static void watch_free(kube_watch *w)
{
    json_free(w->refusal);
    kube_lines_free(&w->lines);
    kube_ref_free(&w->ref);
    free(w->rv);
    free(w);
}

static void on_list(const kube_result *r, void *ctx)
{
    kube_watch *w = ctx;
    if (w->phase == WATCH_STOPPED) {
        watch_free(w);
        return;
    }
    if (!r->ok) {
        /* The first list failing with a client error (401, 403, 404
         * namespace) needs the user; anything else may pass. */
        int fatal = !w->listed && r->status >= 400 && r->status < 500 && r->status != 429;
        if (fatal)
            watch_set(w, WATCH_FAILED);
        else
            schedule(w);
        if (w->fns.on_error)
            w->fns.on_error(r->error, fatal, w->ctx);
        return;
    }
    set_rv(w, kube_path_str(r->obj, "metadata.resourceVersion"));
    int again = w->listed;
    w->listed = 1;
    w->relist = 0;
    watch_set(w, WATCH_STREAMING);   /* opened once its owner has the list */
    if (w->fns.on_list)
        w->fns.on_list(r->obj, again, w->ctx);
    open_stream(w);
}

static void relist(kube_watch *w)
{
    buf err = {0};
    kube_ref ref = ref_of(w, w->ref.query);
    watch_set(w, WATCH_LISTING);
    if (kube_list(w->c, &ref, on_list, w, &err) < 0) {
        if (w->fns.on_error)
            w->fns.on_error(err.data ? err.data : "out of memory", 0, w->ctx);
        schedule(w);
    }
    buf_free(&err);
}

static int on_line(const char *line, size_t len, void *ctx)
{
    kube_watch *w = ctx;
    kube_event ev;
    buf err = {0};
    if (kube_event_parse(line, len, &ev, &err) < 0) {
        /* A refused watch (403, 404...) answers a Status, not events: keep
         * it for the error its end reports. */
        json *doc = json_parse_max(line, len, KUBE_EVENT_MAX_VALUES, NULL);
        const char *kind = json_get_str(doc, "kind");
        if (kind && !strcmp(kind, "Status") && !json_get(doc, "type")) {
            json_free(w->refusal);
            w->refusal = doc;
            buf_free(&err);
            return -1;
        }
        json_free(doc);
        log_warn("watch %s: %s", w->ref.resource, err.data ? err.data : "out of memory");
        buf_free(&err);
        return -1;   /* the stream is broken: reopen it */
    }
    if (ev.type == KUBE_ERROR) {
        if (ev.code == 410) {
            w->relist = 1;   /* our version is too old: list again */
            log_info("watch %s: resourceVersion %s is too old (410 Gone: %s); listing again",
                     w->ref.resource, w->rv ? w->rv : "?",
                     json_get_str(ev.object, "message") ? json_get_str(ev.object, "message") : "expired");
        } else
            log_warn("watch %s: error event: %s", w->ref.resource,
                     json_get_str(ev.object, "message") ? json_get_str(ev.object, "message") : "?");
        kube_event_free(&ev);
        return -1;
    }
    set_rv(w, ev.resource_version);
    if (ev.type != KUBE_BOOKMARK && w->fns.on_event)
        w->fns.on_event(ev.type, ev.object, w->ctx);
    kube_event_free(&ev);
    return 0;
}

static int on_stream_data(const char *data, size_t len, void *ctx)
{
    kube_watch *w = ctx;
    return kube_lines_feed(&w->lines, data, len, on_line, w) < 0 ? -1 : 0;
}

static void on_stream_done(const kube_resp *resp, void *ctx)
{
    kube_watch *w = ctx;
    w->stream = NULL;
    buf_reset(&w->lines.partial);
    if (w->refusal) {
        /* The list was allowed, the watch is not (an RBAC Role without
         * "watch"), or the namespace went: retrying cannot help, so a client
         * error ends the watch. */
        const json *c = json_get(w->refusal, "code");
        long code = c && c->type == JSON_NUMBER ? (long)c->number : resp->status;
        int fatal = code >= 400 && code < 500 && code != 410 && code != 429;
        buf text = {0};
        kube_ref ref = ref_of(w, NULL);
        kube_error_text(kube_client_config(w->c), "watch", &ref, code, 0, NULL, w->refusal, &text);
        json_free(w->refusal);
        w->refusal = NULL;
        if (code == 410)
            w->relist = 1;
        else if (w->fns.on_error)
            w->fns.on_error(text.data ? text.data : "watch refused", fatal, w->ctx);
        buf_free(&text);
        if (fatal) {
            watch_set(w, WATCH_FAILED);   /* the caller stops the watch */
            return;
        }
        schedule(w);
        return;
    }
    if (resp->status == 410) {
        w->relist = 1;
        log_info("watch %s: resourceVersion %s is too old (410 Gone); listing again", w->ref.resource,
                 w->rv ? w->rv : "?");
    }
    int healthy = loop_now_ns() - w->stream_started_ns >= WATCH_MIN_HEALTHY_NS;
    if (healthy)
        w->attempt = 0;
    if (healthy && !w->relist && resp->curl_code == 0 && resp->status == 200) {
        /* the server ended a healthy watch (its timeoutSeconds), with events
         * or quiet: reopen at once. Backing off here would leave a quiet
         * watch closed longer after each end, up to 30 s in which a pod's
         * change waits unseen. */
        open_stream(w);
        return;
    }
    if (!w->relist && (resp->curl_code || resp->status != 200) && w->fns.on_error) {
        buf text = {0};
        kube_ref ref = ref_of(w, NULL);
        kube_error_text(kube_client_config(w->c), "watch", &ref, resp->status, resp->curl_code,
                        resp->curl_error, NULL, &text);
        w->fns.on_error(text.data ? text.data : "watch failed", 0, w->ctx);
        buf_free(&text);
    }
    schedule(w);
}

static void open_stream(kube_watch *w)
{
    buf q = {0}, path = {0}, err = {0};
    watch_set(w, WATCH_STREAMING);
    buf_printf(&q, "watch=1&allowWatchBookmarks=true&timeoutSeconds=%d&resourceVersion=%s%s%s",
               WATCH_TIMEOUT_S, w->rv, w->ref.query ? "&" : "", w->ref.query ? w->ref.query : "");
    kube_ref ref = ref_of(w, q.data);
    if (q.data && kube_ref_path(&ref, &path) == 0) {
        kube_http_req rq = {"GET", path.data, NULL, NULL, 0, WATCH_CLIENT_TIMEOUT_MS, on_stream_data,
                            on_stream_done, w};
        w->stream_started_ns = loop_now_ns();
        w->stream = kube_http_start(kube_client_http(w->c), &rq, &err);
    }
    if (!w->stream) {
        if (w->fns.on_error)
            w->fns.on_error(err.data ? err.data : "watch: out of memory", 0, w->ctx);
        schedule(w);
    }
    buf_free(&q);
    buf_free(&path);
    buf_free(&err);
}

kube_watch *kube_watch_start(kube_client *c, const kube_ref *ref, const kube_watch_fns *fns,
                             void *ctx, buf *err)
{
    kube_watch *w = calloc(1, sizeof *w);
    if (!w) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    w->c = c;
    w->l = kube_client_loop(c);
    w->phase = WATCH_BACKING_OFF;   /* its first step is the first list */
    loop_timer_init(&w->retry, on_retry, w);
    w->fns = *fns;
    w->ctx = ctx;
    if (kube_ref_dup(ref, &w->ref) < 0) {
        kube_watch_stop(w);
        buf_printf(err, "out of memory");
        return NULL;
    }
    relist(w);
    return w;
}

void kube_watch_stop(kube_watch *w)
{
    if (!w)
        return;
    if (w->stream)
        kube_http_cancel(kube_client_http(w->c), w->stream);
    loop_timer_disarm(w->l, &w->retry);
    w->stream = NULL;
    if (w->phase == WATCH_LISTING)
        watch_set(w, WATCH_STOPPED);   /* a list call cannot be withdrawn: on_list frees w */
    else
        watch_free(w);
}
