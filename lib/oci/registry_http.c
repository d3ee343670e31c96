/* registry_http: authenticated GETs to a registry over libcurl; see
 * registry_http.h. */
#include "oci/registry_http.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/json.h"
#include "oci/oci_manifest.h"
#include "oci/www_auth.h"

#define TOKEN_MAX_BYTES (1u << 20)
#define HEADERS_MAX_BYTES (64u << 10)   /* of one answer; registries send a few hundred bytes */
#define MAX_REDIRECTS 5

typedef enum auth_mode { AUTH_NONE, AUTH_BASIC, AUTH_BEARER } auth_mode;

typedef enum reg_op { OP_GET, OP_TOKEN } reg_op;

/* The secrets of one host and where they may go. Docker's rule: the
 * credentials for host H (from config.json) go to H itself and to the token
 * realm H's own challenge names; a token H's realm issued goes to H. The
 * registry's host is `home`; a host a redirect led to and that challenged
 * us is `away`, with its own credentials, never home's. */
typedef struct reg_auth {
    char *origin;         /* "scheme://host:port", lowercase: whom requests with these secrets reach */
    char *host;           /* "host" or "host:port": the config.json key, for messages */
    docker_cred cred;
    char *token;
    auth_mode mode;       /* what a request to origin carries: nothing, cred (Basic) or token */
    int challenged;       /* answered a challenge during the GET in progress */
} reg_auth;

struct reg_client {
    http_multi *m;
    const registry_opts *opts;   /* the caller's, outlives the client */
    http_xfer x;          /* x.easy: the one transfer at a time; x.ctx: this client */
    CURL *curl;           /* == x.easy */
    char *image;
    char *registry;       /* as in the reference, for messages and credentials */
    char *base;           /* "https://host/v2/<repository>/" */
    char *repository;
    reg_auth home, away;
    long timeout_ms;
    char errbuf[CURL_ERROR_SIZE];
    /* the GET in progress (reg_get_start until its fn) */
    reg_get_fn *fn;
    void *fn_ctx;
    buf url;              /* of the GET asked for */
    char *accept;
    size_t max_body;
    reg_op op;            /* the transfer running: the GET or the token fetch */
    reg_auth *token_for;  /* OP_TOKEN: whose challenge the token answers */
    char *retry_url;      /* OP_TOKEN: the URL to ask again with the token */
    /* the transfer running: one request, then one per redirect followed */
    struct curl_slist *headers;
    char *xfer_url;       /* of the request running (after redirects) */
    char *xfer_origin;    /* of the transfer's first URL: its secrets go there only */
    auth_mode xfer_mode;  /* the secrets of the transfer */
    const reg_auth *xfer_auth;
    auth_mode hop_mode;   /* what the request running carries (xfer_mode, or none after leaving) */
    int redirects;
    reg_response resp;
    size_t max;
    size_t header_bytes;
    int too_large, headers_too_large;
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

/* Where url goes: *origin "scheme://host:port" (lowercase, the port always
 * given) and, when host is not NULL, "host[:port]" with the port only when
 * the URL names one (as registries are named in config.json). -1 when curl
 * cannot parse the URL. */
static int url_origin(const char *url, char **origin, char **host)
{
    CURLU *u = curl_url();
    char *scheme = NULL, *h = NULL, *port = NULL, *given_port = NULL;
    int rc = -1;
    *origin = NULL;
    if (host)
        *host = NULL;
    if (u && !curl_url_set(u, CURLUPART_URL, url, 0) && !curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) &&
        !curl_url_get(u, CURLUPART_HOST, &h, 0) && !curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT)) {
        curl_url_get(u, CURLUPART_PORT, &given_port, 0);   /* absent: no port in the URL */
        buf o = {0}, hp = {0};
        buf_printf(&o, "%s://%s:%s", scheme, h, port);
        buf_printf(&hp, "%s%s%s", h, given_port ? ":" : "", given_port ? given_port : "");
        for (size_t i = 0; i < o.len; i++)
            if (o.data[i] >= 'A' && o.data[i] <= 'Z')
                o.data[i] += 'a' - 'A';
        *origin = o.data ? buf_steal(&o, NULL) : NULL;
        if (host)
            *host = hp.data ? buf_steal(&hp, NULL) : NULL;
        rc = *origin && (!host || *host) ? 0 : -1;
        buf_free(&o);
        buf_free(&hp);
        if (rc < 0) {
            free(*origin), *origin = NULL;
            if (host)
                free(*host), *host = NULL;
        }
    }
    curl_free(scheme);
    curl_free(h);
    curl_free(port);
    curl_free(given_port);
    curl_url_cleanup(u);
    return rc;
}

static void auth_free(reg_auth *a)
{
    free(a->origin);
    free(a->host);
    docker_cred_free(&a->cred);
    free(a->token);
    memset(a, 0, sizeof *a);
}

reg_client *reg_client_new(http_multi *m, const char *image, const image_ref *ref, const registry_opts *opts,
                           buf *err)
{
    http_global_init();
    reg_client *c = calloc(1, sizeof *c);
    if (!c) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    c->m = m;
    c->opts = opts;
    if (docker_config_lookup(opts->docker_config, ref->registry, &c->home.cred, err) < 0) {
        free(c);
        return NULL;
    }
    buf base = {0};
    int http = is_insecure(ref->api_host, opts) || is_insecure(ref->registry, opts);
    buf_printf(&base, "%s://%s/v2/%s/", http ? "http" : "https", ref->api_host, ref->repository);
    c->base = buf_steal(&base, NULL);
    c->image = strdup(image);
    c->registry = strdup(ref->registry);
    c->home.host = strdup(ref->registry);
    c->repository = strdup(ref->repository);
    c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 30000;
    c->curl = c->x.easy = curl_easy_init();
    c->x.done = xfer_done;
    c->x.ctx = c;
    if (!c->base || !c->image || !c->registry || !c->home.host || !c->repository || !c->curl ||
        url_origin(c->base, &c->home.origin, NULL) < 0) {
        reg_client_free(c);
        buf_printf(err, "out of memory");
        return NULL;
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
    free(c->xfer_origin);
    free(c->retry_url);
    reg_response_free(&c->resp);
    free(c->www_authenticate);
    free(c->realm);
    buf_free(&c->url);
    free(c->accept);
    auth_free(&c->home);
    auth_free(&c->away);
    free(c->image);
    free(c->registry);
    free(c->base);
    free(c->repository);
    free(c);
}

void reg_response_free(reg_response *r)
{
    buf_free(&r->body);
    free(r->content_type);
    free(r->docker_digest);
    free(r->link);
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
    t->header_bytes += n;
    if (t->header_bytes > HEADERS_MAX_BYTES) {
        t->headers_too_large = 1;
        return 0;
    }
    if (n >= 5 && !strncmp(line, "HTTP/", 5)) {   /* a new response (after a proxy's CONNECT) */
        free(t->resp.content_type), t->resp.content_type = NULL;
        free(t->resp.docker_digest), t->resp.docker_digest = NULL;
        free(t->resp.link), t->resp.link = NULL;
        free(t->www_authenticate), t->www_authenticate = NULL;
    } else if (header_is(line, n, "Content-Type")) {
        keep_header(&t->resp.content_type, line, n, 12);
    } else if (header_is(line, n, "Docker-Content-Digest")) {
        keep_header(&t->resp.docker_digest, line, n, 21);
    } else if (header_is(line, n, "Link")) {
        keep_header(&t->resp.link, line, n, 4);
    } else if (header_is(line, n, "WWW-Authenticate")) {
        keep_header(&t->www_authenticate, line, n, 16);
    }
    return n;
}

/* What a request carries: the secrets of a (Basic credentials or token) as
 * mode says, or nothing. curl sends them on this request only: redirects
 * are followed here, one request at a time (hop_start). */
static void set_auth(reg_client *c, auth_mode mode, const reg_auth *a)
{
    CURL *h = c->curl;
    curl_easy_setopt(h, CURLOPT_USERNAME, mode == AUTH_BASIC ? a->cred.username : NULL);
    curl_easy_setopt(h, CURLOPT_PASSWORD, mode == AUTH_BASIC ? a->cred.password : NULL);
    curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, mode == AUTH_BEARER ? a->token : NULL);
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, mode == AUTH_BEARER ? CURLAUTH_BEARER : CURLAUTH_BASIC);
}

/* Whether secrets may travel to url in clear text: https, or http to a host
 * we speak plain HTTP to anyway (loopback, --insecure-registry), as Docker
 * sends credentials over http only to registries it calls insecure. */
static int secrets_may_go(const reg_client *c, const char *url)
{
    if (strncasecmp(url, "http://", 7))
        return 1;
    char *origin = NULL, *host = NULL;
    int ok = url_origin(url, &origin, &host) == 0 && is_insecure(host, c->opts);
    free(origin);
    free(host);
    return ok;
}

/* Starts one request of the transfer: to url, carrying the transfer's
 * secrets only when url is on the origin they were meant for. */
static int hop_start(reg_client *c, char *url, buf *err)
{
    CURL *h = c->curl;
    char *origin = NULL;
    free(c->xfer_url);
    c->xfer_url = url;
    reg_response_free(&c->resp);
    free(c->www_authenticate);
    c->www_authenticate = NULL;
    c->too_large = c->headers_too_large = 0;
    c->header_bytes = 0;
    if (url_origin(url, &origin, NULL) < 0)
        return buf_fail(err, "registry %s: cannot parse the URL %s", c->registry, url);
    c->hop_mode = !strcmp(origin, c->xfer_origin) ? c->xfer_mode : AUTH_NONE;
    free(origin);
    if (c->hop_mode != AUTH_NONE && !secrets_may_go(c, url))
        return buf_fail(err, "registry %s: refusing to send %s for %s over plain HTTP to %s (name the host "
                        "with --insecure-registry if that is intended)", c->registry,
                        c->hop_mode == AUTH_BASIC ? "the credentials" : "the token", c->xfer_auth->host, url);
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "krm-fn-runtime/runner-client");
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->timeout_ms);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->timeout_ms < 10000 ? c->timeout_ms : 10000L);
    curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
    if (c->opts->ca_file)   /* beside the system's CA directory, which stays */
        curl_easy_setopt(h, CURLOPT_CAINFO, c->opts->ca_file);
    set_auth(c, c->hop_mode, c->xfer_auth);
    c->errbuf[0] = '\0';
    atomic_fetch_add(&requests_made, 1);
    return http_multi_add(c->m, &c->x, err);
}

/* Starts a transfer: GET url with the secrets of a as mode says (they stay
 * with url's origin), reading at most max bytes; xfer_done follows. -1
 * with err set. */
static int perform_start(reg_client *c, const char *url, const char *accept, auth_mode mode, const reg_auth *a,
                         size_t max, buf *err)
{
    curl_slist_free_all(c->headers);
    c->headers = NULL;
    free(c->xfer_origin);
    c->xfer_origin = NULL;
    c->xfer_mode = mode;
    c->xfer_auth = a;
    c->redirects = 0;
    c->max = max;
    char *first = strdup(url);
    if (!first || url_origin(url, &c->xfer_origin, NULL) < 0) {
        free(first);
        return buf_fail(err, first ? "registry %s: cannot parse the URL %s" : "out of memory", c->registry,
                        url);
    }
    if (accept) {
        buf accept_hdr = {0};
        buf_printf(&accept_hdr, "Accept: %s", accept);
        c->headers = accept_hdr.data ? curl_slist_append(NULL, accept_hdr.data) : NULL;
        buf_free(&accept_hdr);
        if (!c->headers) {
            free(first);
            return buf_fail(err, "out of memory");
        }
    }
    return hop_start(c, first, err);
}

/* The request ended: 0 with c->resp (any HTTP status), or -1 with err set. */
static int perform_end(reg_client *c, CURLcode rc, buf *err)
{
    const char *url = c->xfer_url;
    if (rc == CURLE_OK)
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->resp.status);
    if (rc != CURLE_OK || c->too_large) {
        if (c->too_large || rc == CURLE_FILESIZE_EXCEEDED)
            buf_printf(err, "registry %s: the answer to GET %s is larger than %zu bytes (the limit for it); "
                       "refused", c->registry, url, c->max);
        else if (c->headers_too_large)
            buf_printf(err, "registry %s: the headers of the answer to GET %s are longer than %u bytes (the "
                       "limit); refused", c->registry, url, HEADERS_MAX_BYTES);
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

/* After an answer: 1 when it redirected and the next request has started,
 * 0 when it is the final answer, -1 with err set when the redirect is
 * refused (too many, to another scheme than http(s), https to http). */
static int follow_redirect(reg_client *c, buf *err)
{
    long s = c->resp.status;
    char *next = NULL;
    if (s != 301 && s != 302 && s != 303 && s != 307 && s != 308)
        return 0;
    curl_easy_getinfo(c->curl, CURLINFO_REDIRECT_URL, &next);
    if (!next)
        return 0;   /* no Location: the caller sees the 3xx */
    int https = !strncasecmp(c->xfer_url, "https://", 8);
    if (++c->redirects > MAX_REDIRECTS)
        return buf_fail(err, "registry %s: GET %s was redirected more than %d times; refused", c->registry,
                        c->xfer_url, MAX_REDIRECTS);
    if (strncasecmp(next, "https://", 8) && (https || strncasecmp(next, "http://", 7)))
        return buf_fail(err, "registry %s: GET %s was redirected to %s, %s; refused", c->registry, c->xfer_url,
                        next, https ? "not https (a downgrade)" : "neither http nor https");
    char *copy = strdup(next);
    if (!copy)
        return buf_fail(err, "out of memory");
    return hop_start(c, copy, err) < 0 ? -1 : 1;
}

/* "anonymously (no credentials for HOST in FILE)" or "with the credentials
 * of user "U" from FILE": what was tried, for access-denied messages. */
static void describe_credentials(const reg_auth *a, buf *out)
{
    if (a->cred.username)
        buf_printf(out, "with the credentials of user \"%s\" from %s", a->cred.username, a->cred.file);
    else if (a->cred.file)
        buf_printf(out, "anonymously (no credentials for \"%s\" in %s)", a->host, a->cred.file);
    else
        buf_printf(out, "anonymously (no Docker config file: give one with --docker-config)");
}

/* "registry H" or "host B, where registry H redirected us", for messages. */
static void describe_host(const reg_client *c, const reg_auth *a, buf *out)
{
    if (a == &c->home)
        buf_printf(out, "registry %s", c->registry);
    else
        buf_printf(out, "host %s (where registry %s redirected the request)", a->host, c->registry);
}

static void append_escaped(CURL *h, buf *out, const char *s)
{
    char *e = curl_easy_escape(h, s, 0);
    buf_append_str(out, e ? e : "");
    curl_free(e);
}

/* Starts GET realm?service=…&scope=repository:NAME:pull with a's
 * credentials: the realm a's own challenge named. */
static int token_start(reg_client *c, reg_auth *a, const www_auth *ch, buf *err)
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
    c->token_for = a;
    c->op = OP_TOKEN;
    int rc = url.data ? perform_start(c, url.data, NULL, a->cred.username ? AUTH_BASIC : AUTH_NONE, a,
                                      TOKEN_MAX_BYTES, err)
                      : (buf_printf(err, "out of memory"), -1);
    buf_free(&url);
    buf_free(&scope);
    return rc;
}

/* The token service answered (c->resp): the token in a->token, or -1. */
static int token_end(reg_client *c, reg_auth *a, buf *err)
{
    buf jerr = {0};
    reg_response *r = &c->resp;
    int rc = -1;
    json *doc = r->status == 200 ? json_parse_max(r->body.data, r->body.len, REGISTRY_JSON_MAX_VALUES, &jerr) : NULL;
    const char *tok = www_auth_token_of(doc);
    if (tok) {
        free(a->token);
        a->token = strdup(tok);
        rc = a->token ? 0 : (buf_printf(err, "out of memory"), -1);
    } else {
        describe_host(c, a, err);
        buf_printf(err, ": the token service %s answered HTTP %ld %s (no token); tried ", c->realm ? c->realm : "",
                   r->status, r->status == 200 ? "without a usable token or access_token (a non-empty string without control bytes)" : "");
        describe_credentials(a, err);
    }
    json_free(doc);
    buf_free(&jerr);
    return rc;
}

static int get_again(reg_client *c, reg_auth *a, const char *url, buf *err)
{
    c->op = OP_GET;
    return perform_start(c, url, c->accept, a->mode, a, c->max_body, err);
}

/* After a 401 from a's host to url: choose how to authenticate from the
 * challenge. Returns 1 when the retry or the token fetch has started, -1
 * with err set. */
static int authenticate(reg_client *c, reg_auth *a, const char *url, const char *challenge, buf *err)
{
    www_auth ch;
    buf perr = {0};
    if (www_auth_parse(challenge ? challenge : "", &ch, &perr) < 0 || ch.scheme == WWW_AUTH_NONE) {
        describe_host(c, a, err);
        buf_printf(err, " answered 401 Unauthorized without a usable WWW-Authenticate challenge%s%s",
                   perr.len ? ": " : "", perr.len ? perr.data : "");
        buf_free(&perr);
        www_auth_free(&ch);
        return -1;
    }
    buf_free(&perr);
    int rc = -1;
    a->challenged = 1;
    if (ch.scheme == WWW_AUTH_BEARER && ch.realm && strncasecmp(ch.realm, "https://", 8) &&
        strncasecmp(ch.realm, "http://", 7)) {
        describe_host(c, a, err);
        buf_printf(err, " names a token realm \"%s\" that is not an http(s) URL", ch.realm);
    } else if (ch.scheme == WWW_AUTH_BEARER && ch.realm) {
        free(c->retry_url);
        c->retry_url = strdup(url);
        rc = !c->retry_url ? (buf_printf(err, "out of memory"), -1) : token_start(c, a, &ch, err) < 0 ? -1 : 1;
    } else if (ch.scheme == WWW_AUTH_BASIC && a->cred.username) {
        a->mode = AUTH_BASIC;
        rc = get_again(c, a, url, err) < 0 ? -1 : 1;
    } else if (ch.scheme == WWW_AUTH_BASIC) {
        describe_host(c, a, err);
        buf_printf(err, " requires credentials (Basic authentication) for image \"%s\"; tried ", c->image);
        describe_credentials(a, err);
    } else {
        describe_host(c, a, err);
        buf_printf(err, " asks for unsupported authentication \"%s\"%s", ch.scheme_name,
                   ch.scheme == WWW_AUTH_BEARER ? " (Bearer without realm)" : "");
    }
    www_auth_free(&ch);
    return rc;
}

static void denied(reg_client *c, const reg_auth *a, long status, buf *err)
{
    buf_printf(err, "access to image \"%s\" denied by ", c->image);
    describe_host(c, a, err);
    buf_printf(err, " (HTTP %ld %s); tried ", status, status == 401 ? "Unauthorized" : "Forbidden");
    describe_credentials(a, err);
}

/* The secrets for the host of url: home's for the registry's origin, else
 * those config.json has for that host (looked up afresh for a new host),
 * never the registry's. NULL with err set. */
static reg_auth *auth_for(reg_client *c, const char *url, buf *err)
{
    char *origin = NULL, *host = NULL;
    if (url_origin(url, &origin, &host) < 0) {
        buf_printf(err, "registry %s: cannot parse the URL %s", c->registry, url);
        return NULL;
    }
    reg_auth *a = &c->home;
    if (strcmp(origin, c->home.origin)) {
        a = &c->away;
        if (!a->origin || strcmp(origin, a->origin)) {
            auth_free(a);
            a->origin = origin;
            a->host = host;
            origin = host = NULL;
            if (docker_config_lookup(c->opts->docker_config, a->host, &a->cred, err) < 0) {
                auth_free(a);
                a = NULL;
            }
        }
    }
    free(origin);
    free(host);
    return a;
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

/* After the GET's final answer: done (0 or -1), or a retry or token fetch
 * started (1). A 401 to a request that carried no secrets is answered once
 * per host and GET, with that host's secrets. */
static int get_answered(reg_client *c, buf *err)
{
    if (c->resp.status != 401 && c->resp.status != 403)
        return 0;
    reg_auth *a = auth_for(c, c->xfer_url, err);
    if (!a)
        return -1;
    if (c->resp.status != 401 || c->hop_mode != AUTH_NONE || a->challenged) {
        denied(c, a, c->resp.status, err);
        return -1;
    }
    char *challenge = c->www_authenticate;
    c->www_authenticate = NULL;
    int rc = authenticate(c, a, c->xfer_url, challenge, err);
    free(challenge);
    return rc;
}

static void xfer_done(http_xfer *x, CURLcode code)
{
    reg_client *c = x->ctx;
    buf err = {0};
    int rc = perform_end(c, code, &err);
    if (rc == 0)
        rc = follow_redirect(c, &err);
    if (rc == 0 && c->op == OP_TOKEN) {
        rc = token_end(c, c->token_for, &err);
        if (rc == 0) {
            c->token_for->mode = AUTH_BEARER;
            rc = get_again(c, c->token_for, c->retry_url, &err) < 0 ? -1 : 1;
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
        return buf_fail(err, "out of memory");
    c->max_body = max_body;
    c->home.challenged = c->away.challenged = 0;
    c->fn = fn;
    c->fn_ctx = ctx;
    if (get_again(c, &c->home, c->url.data, err) < 0) {
        c->fn = NULL;
        return -1;
    }
    return 0;
}
