/* registry_http: authenticated GETs to a registry over libcurl; see
 * registry_http.h. */
#include "oci/registry_http.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"
#include "oci/www_auth.h"

#define TOKEN_MAX_BYTES (1u << 20)

typedef enum auth_mode { AUTH_NONE, AUTH_BASIC, AUTH_BEARER } auth_mode;

typedef enum reg_op { OP_GET, OP_TOKEN } reg_op;

struct reg_client {
    http_multi *m;
    http_xfer x;          /* x.easy: the one transfer at a time; x.ctx: this client */
    CURL *curl;           /* == x.easy */
    char *image;
    char *registry;       /* as in the reference, for messages and credentials */
    char *base;           /* "https://host/v2/<repository>/" */
    char *repository;
    docker_cred cred;
    char *token;
    auth_mode mode;
    long timeout_ms;
    char errbuf[CURL_ERROR_SIZE];
    /* the GET in progress (reg_get_start until its fn) */
    reg_get_fn *fn;
    void *fn_ctx;
    buf url;              /* of the GET asked for */
    char *accept;
    size_t max_body;
    int attempt;
    reg_op op;            /* the transfer running: the GET or the token fetch */
    /* the transfer running */
    struct curl_slist *headers;
    char *xfer_url;
    reg_response resp;
    size_t max;
    int too_large;
    char *www_authenticate;
    char *realm;          /* of the token fetch, for messages */
};

static atomic_size_t requests_made;

static void xfer_done(http_xfer *x, CURLcode code);

size_t reg_requests_made(void) { return atomic_load(&requests_made); }

const char *reg_client_host(const reg_client *c) { return c->registry; }

/* "host" of "host:port", "[v6]" of "[v6]:port". */
static size_t host_len(const char *hostport)
{
    if (hostport[0] == '[') {
        const char *close = strchr(hostport, ']');
        return close ? (size_t)(close - hostport) + 1 : strlen(hostport);
    }
    return strcspn(hostport, ":");
}

static int name_is(const char *s, size_t n, const char *name)
{
    return strlen(name) == n && !strncmp(s, name, n);
}

static int is_insecure(const char *hostport, const registry_opts *opts)
{
    size_t n = host_len(hostport);
    if (name_is(hostport, n, "localhost") || name_is(hostport, n, "127.0.0.1") || name_is(hostport, n, "[::1]"))
        return 1;
    for (size_t i = 0; i < opts->n_insecure; i++)
        if (!strcmp(opts->insecure[i], hostport) || name_is(hostport, n, opts->insecure[i]))
            return 1;
    return 0;
}

reg_client *reg_client_new(http_multi *m, const char *image, const image_ref *ref, const registry_opts *opts,
                           buf *err)
{
    http_global_init();
    reg_client *c = calloc(1, sizeof *c);
    if (!c)
        return buf_printf(err, "out of memory"), NULL;
    c->m = m;
    if (docker_config_lookup(opts->docker_config, ref->registry, &c->cred, err) < 0) {
        free(c);
        return NULL;
    }
    buf base = {0};
    int http = is_insecure(ref->api_host, opts) || is_insecure(ref->registry, opts);
    buf_printf(&base, "%s://%s/v2/%s/", http ? "http" : "https", ref->api_host, ref->repository);
    c->base = buf_steal(&base, NULL);
    c->image = strdup(image);
    c->registry = strdup(ref->registry);
    c->repository = strdup(ref->repository);
    c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
    c->curl = c->x.easy = curl_easy_init();
    c->x.done = xfer_done;
    c->x.ctx = c;
    if (!c->base || !c->image || !c->registry || !c->repository || !c->curl) {
        reg_client_free(c);
        return buf_printf(err, "out of memory"), NULL;
    }
    return c;
}

void reg_client_free(reg_client *c)
{
    if (!c)
        return;
    http_multi_remove(c->m, &c->x);
    if (c->curl)
        curl_easy_cleanup(c->curl);
    curl_slist_free_all(c->headers);
    free(c->xfer_url);
    reg_response_free(&c->resp);
    free(c->www_authenticate);
    free(c->realm);
    buf_free(&c->url);
    free(c->accept);
    docker_cred_free(&c->cred);
    free(c->image);
    free(c->registry);
    free(c->base);
    free(c->repository);
    free(c->token);
    free(c);
}

void reg_response_free(reg_response *r)
{
    buf_free(&r->body);
    free(r->content_type);
    free(r->docker_digest);
    memset(r, 0, sizeof *r);
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
    reg_client *t = arg;
    size_t len = size * n;
    if (t->resp.body.len + len > t->max) {
        t->too_large = 1;
        return 0;
    }
    return buf_append(&t->resp.body, data, len) < 0 ? 0 : len;
}

/* Stores a header's trimmed value in *slot (the first one wins). */
static void keep_header(char **slot, const char *line, size_t n, size_t name_len)
{
    const char *v = line + name_len + 1;
    size_t len = n - name_len - 1;
    while (len && (*v == ' ' || *v == '\t'))
        v++, len--;
    while (len && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' '))
        len--;
    if (!*slot)
        *slot = strndup(v, len);
}

static int header_is(const char *line, size_t n, const char *name)
{
    size_t len = strlen(name);
    return n > len && line[len] == ':' && !strncasecmp(line, name, len);
}

static size_t on_header(char *line, size_t size, size_t n, void *arg)
{
    reg_client *t = arg;
    n *= size;
    if (n >= 5 && !strncmp(line, "HTTP/", 5)) {   /* a new response (after a redirect) */
        free(t->resp.content_type), t->resp.content_type = NULL;
        free(t->resp.docker_digest), t->resp.docker_digest = NULL;
        free(t->www_authenticate), t->www_authenticate = NULL;
    } else if (header_is(line, n, "Content-Type")) {
        keep_header(&t->resp.content_type, line, n, 12);
    } else if (header_is(line, n, "Docker-Content-Digest")) {
        keep_header(&t->resp.docker_digest, line, n, 21);
    } else if (header_is(line, n, "WWW-Authenticate")) {
        keep_header(&t->www_authenticate, line, n, 16);
    }
    return n;
}

static void set_auth(reg_client *c, auth_mode mode)
{
    CURL *h = c->curl;
    curl_easy_setopt(h, CURLOPT_USERNAME, mode == AUTH_BASIC ? c->cred.username : NULL);
    curl_easy_setopt(h, CURLOPT_PASSWORD, mode == AUTH_BASIC ? c->cred.password : NULL);
    curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, mode == AUTH_BEARER ? c->token : NULL);
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, mode == AUTH_BEARER ? CURLAUTH_BEARER : CURLAUTH_BASIC);
}

/* Starts one GET of url on the multi; xfer_done follows. -1 with err set. */
static int perform_start(reg_client *c, const char *url, const char *accept, auth_mode mode, size_t max, buf *err)
{
    CURL *h = c->curl;
    curl_slist_free_all(c->headers);
    c->headers = NULL;
    reg_response_free(&c->resp);
    free(c->www_authenticate);
    c->www_authenticate = NULL;
    free(c->xfer_url);
    c->max = max;
    c->too_large = 0;
    if (!(c->xfer_url = strdup(url)))
        return buf_printf(err, "out of memory"), -1;
    if (accept) {
        buf accept_hdr = {0};
        buf_printf(&accept_hdr, "Accept: %s", accept);
        c->headers = accept_hdr.data ? curl_slist_append(NULL, accept_hdr.data) : NULL;
        buf_free(&accept_hdr);
        if (!c->headers)
            return buf_printf(err, "out of memory"), -1;
    }
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "krm-fn-runtime/runner-client");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms < 10000 ? c->timeout_ms : 10000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    set_auth(c, mode);
    c->errbuf[0] = '\0';
    atomic_fetch_add(&requests_made, 1);
    return http_multi_add(c->m, &c->x, err);
}

/* The transfer ended: 0 with c->resp (any HTTP status), or -1 with err set. */
static int perform_end(reg_client *c, CURLcode rc, buf *err)
{
    const char *url = c->xfer_url;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->resp.status);
    if (rc != CURLE_OK || c->too_large) {
        if (c->too_large)
            buf_printf(err, "answer to GET %s is larger than %zu bytes", url, c->max);
        else
            buf_printf(err, "cannot reach registry %s: %s%s", c->registry,
                       c->errbuf[0] ? c->errbuf : curl_easy_strerror(rc),
                       rc == CURLE_SSL_CONNECT_ERROR && !strncmp(url, "https:", 6)
                           ? " (a plain-HTTP registry? name it with --insecure-registry)" : "");
        reg_response_free(&c->resp);
        return -1;
    }
    buf_append(&c->resp.body, "", 0);
    return 0;
}

/* "anonymously (no credentials for HOST in FILE)" or "with the credentials
 * of user "U" from FILE": what was tried, for access-denied messages. */
static void describe_credentials(const reg_client *c, buf *out)
{
    if (c->cred.username)
        buf_printf(out, "with the credentials of user \"%s\" from %s", c->cred.username, c->cred.file);
    else if (c->cred.file)
        buf_printf(out, "anonymously (no credentials for \"%s\" in %s)", c->registry, c->cred.file);
    else
        buf_printf(out, "anonymously (no Docker config file: give one with --docker-config)");
}

static void append_escaped(CURL *h, buf *out, const char *s)
{
    char *e = curl_easy_escape(h, s, 0);
    buf_append_str(out, e ? e : "");
    curl_free(e);
}

/* Starts GET realm?service=…&scope=repository:NAME:pull. */
static int token_start(reg_client *c, const www_auth *ch, buf *err)
{
    buf url = {0}, scope = {0};
    buf_printf(&scope, "repository:%s:pull", c->repository);
    buf_printf(&url, "%s%c", ch->realm, strchr(ch->realm, '?') ? '&' : '?');
    if (ch->service) {
        buf_append_str(&url, "service=");
        append_escaped(c->curl, &url, ch->service);
        buf_append_str(&url, "&");
    }
    buf_append_str(&url, "scope=");
    append_escaped(c->curl, &url, scope.data);
    free(c->realm);
    c->realm = strdup(ch->realm);
    int rc = url.data ? perform_start(c, url.data, NULL, c->cred.username ? AUTH_BASIC : AUTH_NONE,
                                      TOKEN_MAX_BYTES, err)
                      : (buf_printf(err, "out of memory"), -1);
    buf_free(&url);
    buf_free(&scope);
    return rc;
}

/* The token service answered (c->resp): the token in c->token, or -1. */
static int token_end(reg_client *c, buf *err)
{
    buf jerr = {0};
    reg_response *r = &c->resp;
    int rc = -1;
    json *doc = r->status == 200 ? json_parse(r->body.data, r->body.len, &jerr) : NULL;
    const char *tok = json_get_str(doc, "token");
    if (!tok || !*tok)
        tok = json_get_str(doc, "access_token");
    if (tok && *tok) {
        free(c->token);
        c->token = strdup(tok);
        rc = c->token ? 0 : (buf_printf(err, "out of memory"), -1);
    } else {
        buf_printf(err, "registry %s: the token service %s answered HTTP %ld %s (no token); tried ", c->registry,
                   c->realm ? c->realm : "", r->status,
                   r->status == 200 ? "without a token or access_token" : "");
        describe_credentials(c, err);
    }
    json_free(doc);
    buf_free(&jerr);
    return rc;
}

/* After a 401: choose how to authenticate from the challenge. Returns 0 to
 * retry now, 1 when the token fetch has started, -1 with err set. */
static int authenticate(reg_client *c, const char *challenge, buf *err)
{
    www_auth ch;
    buf perr = {0};
    if (www_auth_parse(challenge ? challenge : "", &ch, &perr) < 0 || ch.scheme == WWW_AUTH_NONE) {
        buf_printf(err, "registry %s answered 401 Unauthorized without a usable WWW-Authenticate challenge%s%s",
                   c->registry, perr.len ? ": " : "", perr.len ? perr.data : "");
        buf_free(&perr);
        www_auth_free(&ch);
        return -1;
    }
    buf_free(&perr);
    int rc = -1;
    if (ch.scheme == WWW_AUTH_BEARER && ch.realm) {
        rc = token_start(c, &ch, err) < 0 ? -1 : 1;
    } else if (ch.scheme == WWW_AUTH_BASIC && c->cred.username) {
        c->mode = AUTH_BASIC;
        rc = 0;
    } else if (ch.scheme == WWW_AUTH_BASIC) {
        buf_printf(err, "registry %s requires credentials (Basic authentication) for image \"%s\"; tried ",
                   c->registry, c->image);
        describe_credentials(c, err);
    } else {
        buf_printf(err, "registry %s asks for unsupported authentication \"%s\"%s", c->registry, ch.scheme_name,
                   ch.scheme == WWW_AUTH_BEARER ? " (Bearer without realm)" : "");
    }
    www_auth_free(&ch);
    return rc;
}

static void denied(reg_client *c, long status, buf *err)
{
    buf_printf(err, "access to image \"%s\" denied by registry %s (HTTP %ld %s); tried ", c->image, c->registry,
               status, status == 401 ? "Unauthorized" : "Forbidden");
    describe_credentials(c, err);
}

/* The GET asked for ends: fn gets the answer, which it may keep (moved out
 * of c), and may start the next GET on c. */
static void get_finish(reg_client *c, int rc, buf *err)
{
    reg_response resp = c->resp;
    memset(&c->resp, 0, sizeof c->resp);
    if (rc < 0)
        reg_response_free(&resp);
    reg_get_fn *fn = c->fn;
    c->fn = NULL;
    fn(rc, &resp, err, c->fn_ctx);
    reg_response_free(&resp);
}

static int get_try(reg_client *c, buf *err)
{
    c->op = OP_GET;
    return perform_start(c, c->url.data, c->accept, c->mode, c->max_body, err);
}

/* After the GET's answer: done (0 or -1), or a retry or token fetch started (1). */
static int get_answered(reg_client *c, buf *err)
{
    if (c->resp.status != 401 && c->resp.status != 403)
        return 0;
    int retry = c->attempt == 0 && c->resp.status == 401 && c->mode == AUTH_NONE;
    c->attempt++;
    if (!retry) {
        denied(c, c->resp.status, err);
        return -1;
    }
    char *challenge = c->www_authenticate;
    c->www_authenticate = NULL;
    int rc = authenticate(c, challenge, err);
    free(challenge);
    if (rc == 0)   /* Basic: again with the credentials */
        rc = get_try(c, err) < 0 ? -1 : 1;
    else if (rc == 1)
        c->op = OP_TOKEN;
    return rc;
}

static void xfer_done(http_xfer *x, CURLcode code)
{
    reg_client *c = x->ctx;
    buf err = {0};
    int rc = perform_end(c, code, &err);
    if (rc == 0 && c->op == OP_TOKEN) {
        rc = token_end(c, &err);
        if (rc == 0) {
            c->mode = AUTH_BEARER;
            rc = get_try(c, &err) < 0 ? -1 : 1;
        }
    } else if (rc == 0) {
        rc = get_answered(c, &err);
    }
    if (rc <= 0)
        get_finish(c, rc, &err);
    buf_free(&err);
}

int reg_get_start(reg_client *c, const char *path, const char *accept, size_t max_body, reg_get_fn *fn, void *ctx,
                  buf *err)
{
    buf_reset(&c->url);
    free(c->accept);
    c->accept = accept ? strdup(accept) : NULL;
    if (buf_printf(&c->url, "%s%s", c->base, path) < 0 || (accept && !c->accept))
        return buf_printf(err, "out of memory"), -1;
    c->max_body = max_body;
    c->attempt = 0;
    c->fn = fn;
    c->fn_ctx = ctx;
    if (get_try(c, err) < 0) {
        c->fn = NULL;
        return -1;
    }
    return 0;
}
