/* kube_http: API server requests on http_multi; see kube_http.h. */
#include "kube/kube_http.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "core/header_value.h"
#include "core/log.h"
#include "http/http_multi.h"

#define CONNECT_TIMEOUT_MS 10000L
#define USER_AGENT "krm-fn-runtime/runner-client"

struct kube_req {
    kube_http *h;
    http_xfer x;        /* x.easy: the transfer; x.ctx: this request */
    struct curl_slist *headers;
    kube_data_fn *on_data;
    kube_done_fn *on_done;
    void *ctx;
    buf body;
    size_t max_body;
    int too_large, cut_at_max, cut;
    int counted;        /* holds one of the KUBE_HTTP_MAX_INFLIGHT places */
    int queued;         /* waits in h->queue, not yet in the multi */
    kube_req *next_queued;
    char what[160];     /* "GET /api/v1/...", for the log */
    int64_t started_ns;
    char errbuf[CURL_ERROR_SIZE];
    kube_req *next;   /* in h->reqs */
};

struct kube_http {
    http_multi *m;
    const kube_config *cfg;
    char *base;          /* URL prefix: the server, or https://<tls-server-name>:port */
    struct curl_slist *connect_to;   /* tls-server-name: connect to the real host */
    char *token;         /* "Bearer <token>": the Authorization header's value */
    kube_req *reqs;
    kube_req *queue, *queue_tail;   /* requests waiting for a place, oldest first */
    int inflight;                   /* counted requests in the multi */
    loop_defer pump;                /* starts queued requests from the loop */
};

static void schedule_pump(kube_http *h);

http_multi *kube_http_multi(const kube_http *h) { return h->m; }

/* ------------------------------------------------------------------------ */
/* Requests                                                                  */

static void unqueue(kube_http *h, kube_req *r)
{
    kube_req *prev = NULL;
    for (kube_req *q = h->queue; q; prev = q, q = q->next_queued)
        if (q == r) {
            if (prev)
                prev->next_queued = r->next_queued;
            else
                h->queue = r->next_queued;
            if (h->queue_tail == r)
                h->queue_tail = prev;
            break;
        }
    r->queued = 0;
}

static void req_free(kube_req *r)
{
    kube_http *h = r->h;
    for (kube_req **p = &h->reqs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    if (r->queued)
        unqueue(h, r);
    if (r->counted) {
        h->inflight--;
        schedule_pump(h);   /* a place is free */
    }
    http_multi_remove(h->m, &r->x);
    curl_easy_cleanup(r->x.easy);
    curl_slist_free_all(r->headers);
    buf_free(&r->body);
    free(r);
}

static void req_done(http_xfer *x, CURLcode code)
{
    kube_req *r = x->ctx;
    kube_resp resp = {0};
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &resp.status);
    if (r->cut && code == CURLE_WRITE_ERROR)
        code = CURLE_OK;   /* we stopped it, at the limit the caller chose */
    resp.cut = r->cut;
    resp.curl_code = (int)code;
    if (code != CURLE_OK)
        resp.curl_error = r->too_large ? "the response is larger than the limit"
                          : r->errbuf[0] ? r->errbuf : curl_easy_strerror(code);
    resp.body = &r->body;
    /* one line per API round trip, to count them (a warm pod lookup is one) */
    log_v(3, "API %s -> %ld in %.1f ms", r->what, resp.status,
          (double)(loop_now_ns() - r->started_ns) / 1e6);
    if (r->on_done)
        r->on_done(&resp, r->ctx);
    req_free(r);
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    kube_req *r = ctx;
    size_t len = size * n;
    if (r->on_data)
        return r->on_data(data, len, r->ctx) < 0 ? 0 : len;
    if (len > r->max_body - r->body.len) {
        if (!r->cut_at_max) {
            r->too_large = 1;
            return 0;
        }
        r->cut = 1;   /* keep what fits, then stop reading: the rest is never received */
        buf_append(&r->body, data, r->max_body - r->body.len);
        return 0;
    }
    return buf_append(&r->body, data, len) < 0 ? 0 : len;
}

/* Every header a request carries is made here, its value checked first
 * (core/header_value: a CR or LF would add headers of its own). */
static int header_add(struct curl_slist **list, const char *name, const char *value, buf *err)
{
    buf line = {0}, what = {0};
    buf_printf(&what, "the %s header's value", name);
    int rc = header_value_check(what.data ? what.data : name, value, strlen(value), err);
    if (rc == 0 && buf_printf(&line, "%s: %s", name, value) < 0)
        rc = (buf_printf(err, "out of memory"), -1);
    struct curl_slist *more = rc == 0 ? curl_slist_append(*list, line.data) : NULL;
    if (rc == 0 && !more)
        rc = (buf_printf(err, "out of memory"), -1);
    if (more)
        *list = more;
    if (line.data)
        memset(line.data, 0, line.len);   /* it may hold the token */
    buf_free(&line);
    buf_free(&what);
    return rc;
}

static void set_tls(kube_http *h, CURL *c)
{
    const kube_config *cfg = h->cfg;
    if (cfg->insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (cfg->ca_pem.len) {
        struct curl_blob ca = {cfg->ca_pem.data, cfg->ca_pem.len, CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &ca);
    }
    if (cfg->cert_pem.len && cfg->key_pem.len) {
        struct curl_blob cert = {cfg->cert_pem.data, cfg->cert_pem.len, CURL_BLOB_COPY};
        struct curl_blob key = {cfg->key_pem.data, cfg->key_pem.len, CURL_BLOB_COPY};
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
    if (h->connect_to)
        curl_easy_setopt(c, CURLOPT_CONNECT_TO, h->connect_to);
}

kube_req *kube_http_start(kube_http *h, const kube_http_req *rq, buf *err)
{
    kube_req *r = calloc(1, sizeof *r);
    buf url = {0};
    if (!r || !(r->x.easy = curl_easy_init()) || buf_printf(&url, "%s%s", h->base, rq->path) < 0) {
        buf_printf(err, "out of memory");
        goto fail;
    }
    r->h = h;
    snprintf(r->what, sizeof r->what, "%s %s", rq->method, rq->path);
    r->started_ns = loop_now_ns();
    r->on_data = rq->on_data;
    r->on_done = rq->on_done;
    r->ctx = rq->ctx;
    r->max_body = rq->max_body ? rq->max_body : KUBE_HTTP_MAX_BODY;
    r->cut_at_max = rq->cut_at_max;
    if (header_add(&r->headers, "Accept", "application/json", err) < 0 ||
        header_add(&r->headers, "User-Agent", USER_AGENT, err) < 0 ||
        (h->token && header_add(&r->headers, "Authorization", h->token, err) < 0) ||
        (rq->content_type && header_add(&r->headers, "Content-Type", rq->content_type, err) < 0))
        goto fail;
    CURL *c = r->x.easy;
    r->x.done = req_done;
    r->x.ctx = r;
    curl_easy_setopt(c, CURLOPT_URL, url.data);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
    if (!strcmp(rq->method, "GET"))
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (rq->body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
        curl_easy_setopt(c, CURLOPT_COPYPOSTFIELDS, rq->body);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, rq->timeout_ms > 0 ? rq->timeout_ms : 0L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->errbuf);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    set_tls(h, c);
    buf_free(&url);
    /* a stream (a watch) is not counted: it would hold a place for minutes */
    if (!rq->on_data && (h->queue || h->inflight >= KUBE_HTTP_MAX_INFLIGHT)) {
        r->queued = 1;
        if (h->queue_tail)
            h->queue_tail->next_queued = r;
        else
            h->queue = r;
        h->queue_tail = r;
    } else if (http_multi_add(h->m, &r->x, err) < 0) {
        curl_slist_free_all(r->headers);
        curl_easy_cleanup(c);
        free(r);
        return NULL;
    } else if (!rq->on_data) {
        r->counted = 1;
        h->inflight++;
    }
    r->next = h->reqs;
    h->reqs = r;
    return r;
fail:
    if (r && r->x.easy)
        curl_easy_cleanup(r->x.easy);
    if (r)
        curl_slist_free_all(r->headers);
    free(r);
    buf_free(&url);
    return NULL;
}

/* Starts queued requests while places are free; from the loop, so a
 * failure to start can be answered through on_done at once. */
static void on_pump(loop *l, void *ctx)
{
    (void)l;
    kube_http *h = ctx;
    while (h->queue && h->inflight < KUBE_HTTP_MAX_INFLIGHT) {
        kube_req *r = h->queue;
        unqueue(h, r);
        buf err = {0};
        r->started_ns = loop_now_ns();
        if (http_multi_add(h->m, &r->x, &err) == 0) {
            r->counted = 1;
            h->inflight++;
        } else {
            kube_resp resp = {.curl_code = CURLE_OUT_OF_MEMORY, .body = &r->body,
                              .curl_error = err.data ? err.data : "out of memory"};
            if (r->on_done)
                r->on_done(&resp, r->ctx);
            req_free(r);
        }
        buf_free(&err);
    }
}

static void schedule_pump(kube_http *h)
{
    if (h->queue)
        loop_defer_post(http_multi_loop(h->m), &h->pump);
}

void kube_http_cancel(kube_http *h, kube_req *r)
{
    (void)h;
    if (r)
        req_free(r);
}

/* ------------------------------------------------------------------------ */
/* Client                                                                    */

/* For tls-server-name: the URL names that host (so curl sends it as SNI
 * and verifies the certificate against it) and CONNECT_TO sends the
 * connection to the server's real host and port. */
static int tls_name_route(kube_http *h, buf *err)
{
    const char *server = h->cfg->server;
    const char *hp = strstr(server, "://");
    hp = hp ? hp + 3 : server;
    size_t hp_len = strcspn(hp, "/");
    const char *colon = NULL;
    if (hp[0] == '[') {
        const char *close = memchr(hp, ']', hp_len);
        colon = close && close + 1 < hp + hp_len && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memchr(hp, ':', hp_len);
    }
    size_t host_len = colon ? (size_t)(colon - hp) : hp_len;
    const char *port = colon ? colon + 1 : "443";
    int port_len = colon ? (int)(hp + hp_len - port) : 3;
    buf base = {0}, route = {0};
    buf_printf(&base, "https://%s:%.*s%s", h->cfg->tls_server_name, port_len, port, hp + hp_len);
    buf_printf(&route, "%s:%.*s:%.*s:%.*s", h->cfg->tls_server_name, port_len, port, (int)host_len, hp,
               port_len, port);
    h->connect_to = route.data ? curl_slist_append(NULL, route.data) : NULL;
    h->base = base.data ? buf_steal(&base, NULL) : NULL;
    buf_free(&route);
    buf_free(&base);
    if (!h->connect_to || !h->base)
        return buf_fail(err, "out of memory");
    return 0;
}

kube_http *kube_http_new(loop *l, const kube_config *cfg, buf *err)
{
    kube_http *h = calloc(1, sizeof *h);
    if (!h) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    loop_defer_init(&h->pump, on_pump, h);
    h->cfg = cfg;
    if (!(h->m = http_multi_new(l, err))) {
        kube_http_free(h);
        return NULL;
    }
    if (cfg->tls_server_name && !strncmp(cfg->server, "https://", 8)) {
        if (tls_name_route(h, err) < 0) {
            kube_http_free(h);
            return NULL;
        }
    } else if (!(h->base = strdup(cfg->server))) {
        buf_printf(err, "out of memory");
        kube_http_free(h);
        return NULL;
    }
    if (cfg->token) {
        buf a = {0};
        if (buf_printf(&a, "Bearer %s", cfg->token) < 0) {
            buf_printf(err, "out of memory");
            kube_http_free(h);
            return NULL;
        }
        h->token = buf_steal(&a, NULL);
        /* refused here once, with the source named, rather than at each request */
        if (header_value_check("the bearer token", cfg->token, strlen(cfg->token), err) < 0) {
            buf_printf(err, " (from %s)", cfg->source ? cfg->source : "the kubeconfig");
            kube_http_free(h);
            return NULL;
        }
    }
    return h;
}

void kube_http_free(kube_http *h)
{
    if (!h)
        return;
    h->queue = h->queue_tail = NULL;   /* the requests are all in h->reqs */
    for (kube_req *r = h->reqs; r; r = r->next)
        r->queued = r->counted = 0;
    while (h->reqs)
        req_free(h->reqs);
    loop_defer_cancel(&h->pump);
    http_multi_free(h->m);
    curl_slist_free_all(h->connect_to);
    if (h->token)
        memset(h->token, 0, strlen(h->token));
    free(h->token);
    free(h->base);
    free(h);
}
