/* kube_http: libcurl's multi interface on our loop; see kube_http.h. */
#include "kube/kube_http.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define CONNECT_TIMEOUT_MS 10000L

struct kube_req {
    kube_http *h;
    CURL *curl;
    struct curl_slist *headers;
    kube_data_fn *on_data;
    kube_done_fn *on_done;
    void *ctx;
    buf body;
    int too_large;
    char errbuf[CURL_ERROR_SIZE];
    kube_req *next;   /* in h->reqs */
};

struct kube_http {
    loop *l;
    const kube_config *cfg;
    CURLM *multi;
    loop_timer *timer;
    char *base;          /* URL prefix: the server, or https://<tls-server-name>:port */
    struct curl_slist *connect_to;   /* tls-server-name: connect to the real host */
    char *auth_header;
    kube_req *reqs;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static void check_done(kube_http *h);

/* ------------------------------------------------------------------------ */
/* Loop glue                                                                 */

static void on_fd(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l;
    kube_http *h = ctx;
    int flags = 0;
    if (events & (EPOLLIN | EPOLLHUP))
        flags |= CURL_CSELECT_IN;
    if (events & EPOLLOUT)
        flags |= CURL_CSELECT_OUT;
    if (events & EPOLLERR)
        flags |= CURL_CSELECT_ERR;
    int running;
    curl_multi_socket_action(h->multi, fd, flags, &running);
    check_done(h);
}

static int socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e;
    (void)socketp;
    kube_http *h = userp;
    if (what == CURL_POLL_REMOVE) {
        loop_unwatch(h->l, s);
        return 0;
    }
    uint32_t ev = (what & CURL_POLL_IN ? LOOP_READ : 0) | (what & CURL_POLL_OUT ? LOOP_WRITE : 0);
    return loop_watch(h->l, s, ev, on_fd, h) < 0 ? -1 : 0;
}

static void on_timer(loop *l, void *ctx)
{
    (void)l;
    kube_http *h = ctx;
    h->timer = NULL;   /* freed by the loop after this returns */
    int running;
    curl_multi_socket_action(h->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(h);
}

/* curl's one timer: each call replaces it; -1 removes it. libcurl must not
 * be called from here, so the work happens in on_timer. */
static int timer_cb(CURLM *m, long timeout_ms, void *userp)
{
    (void)m;
    kube_http *h = userp;
    loop_timer_cancel(h->l, h->timer);
    h->timer = NULL;
    if (timeout_ms < 0)
        return 0;
    int64_t ns = timeout_ms > INT64_MAX / 1000000 ? INT64_MAX : (int64_t)timeout_ms * 1000000;
    h->timer = loop_timer_add(h->l, ns, on_timer, h);
    return h->timer ? 0 : -1;
}

/* ------------------------------------------------------------------------ */
/* Requests                                                                  */

static void req_free(kube_req *r)
{
    kube_http *h = r->h;
    for (kube_req **p = &h->reqs; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            break;
        }
    curl_multi_remove_handle(h->multi, r->curl);
    curl_easy_cleanup(r->curl);
    curl_slist_free_all(r->headers);
    buf_free(&r->body);
    free(r);
}

static void check_done(kube_http *h)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(h->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        kube_req *r = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        CURLcode code = m->data.result;
        kube_resp resp = {0};
        curl_easy_getinfo(r->curl, CURLINFO_RESPONSE_CODE, &resp.status);
        resp.curl_code = (int)code;
        if (code != CURLE_OK)
            resp.curl_error = r->too_large ? "the response is larger than the limit"
                              : r->errbuf[0] ? r->errbuf : curl_easy_strerror(code);
        resp.body = &r->body;
        kube_done_fn *done = r->on_done;
        void *ctx = r->ctx;
        /* unlink before the callback, which may start requests; the message
         * pointer m is not used again */
        curl_multi_remove_handle(h->multi, r->curl);
        if (done)
            done(&resp, ctx);
        req_free(r);
    }
}

static size_t on_body(char *data, size_t size, size_t n, void *ctx)
{
    kube_req *r = ctx;
    size_t len = size * n;
    if (r->on_data)
        return r->on_data(data, len, r->ctx) < 0 ? 0 : len;
    if (r->body.len + len > KUBE_HTTP_MAX_BODY) {
        r->too_large = 1;
        return 0;
    }
    return buf_append(&r->body, data, len) < 0 ? 0 : len;
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
    if (!r || !(r->curl = curl_easy_init()) || buf_printf(&url, "%s%s", h->base, rq->path) < 0) {
        buf_printf(err, "out of memory");
        goto fail;
    }
    r->h = h;
    r->on_data = rq->on_data;
    r->on_done = rq->on_done;
    r->ctx = rq->ctx;
    struct curl_slist *hd = curl_slist_append(NULL, "Accept: application/json");
    if (hd && h->auth_header)
        hd = curl_slist_append(hd, h->auth_header);
    if (hd && rq->content_type) {
        char ct[128];
        snprintf(ct, sizeof ct, "Content-Type: %s", rq->content_type);
        hd = curl_slist_append(hd, ct);
    }
    if (!hd) {
        buf_printf(err, "out of memory");
        goto fail;
    }
    r->headers = hd;
    CURL *c = r->curl;
    curl_easy_setopt(c, CURLOPT_URL, url.data);
    curl_easy_setopt(c, CURLOPT_PRIVATE, r);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
    if (!strcmp(rq->method, "GET"))
        curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
    if (rq->body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rq->body_len);
        curl_easy_setopt(c, CURLOPT_COPYPOSTFIELDS, rq->body);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, rq->method);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "krm-fn-runtime/runner-client");
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
    CURLMcode mc = curl_multi_add_handle(h->multi, c);
    if (mc != CURLM_OK) {
        buf_printf(err, "curl_multi_add_handle: %s", curl_multi_strerror(mc));
        curl_slist_free_all(r->headers);
        curl_easy_cleanup(c);
        free(r);
        return NULL;
    }
    r->next = h->reqs;
    h->reqs = r;
    return r;
fail:
    if (r && r->curl)
        curl_easy_cleanup(r->curl);
    if (r)
        curl_slist_free_all(r->headers);
    free(r);
    buf_free(&url);
    return NULL;
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
        return buf_printf(err, "out of memory"), -1;
    return 0;
}

kube_http *kube_http_new(loop *l, const kube_config *cfg, buf *err)
{
    pthread_once(&curl_once, curl_init_once);
    kube_http *h = calloc(1, sizeof *h);
    if (!h)
        return buf_printf(err, "out of memory"), NULL;
    h->l = l;
    h->cfg = cfg;
    h->multi = curl_multi_init();
    if (!h->multi) {
        buf_printf(err, "curl_multi_init failed");
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
        if (buf_printf(&a, "Authorization: Bearer %s", cfg->token) < 0) {
            buf_printf(err, "out of memory");
            kube_http_free(h);
            return NULL;
        }
        h->auth_header = buf_steal(&a, NULL);
    }
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
    return h;
}

void kube_http_free(kube_http *h)
{
    if (!h)
        return;
    while (h->reqs)
        req_free(h->reqs);
    if (h->multi)
        curl_multi_cleanup(h->multi);   /* may still call socket_cb: h is alive */
    loop_timer_cancel(h->l, h->timer);
    curl_slist_free_all(h->connect_to);
    if (h->auth_header)
        memset(h->auth_header, 0, strlen(h->auth_header));   /* the token */
    free(h->auth_header);
    free(h->base);
    free(h);
}
