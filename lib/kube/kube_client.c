/* kube_client: Kubernetes API calls and their errors; see kube_client.h. */
#include "kube/kube_client.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

typedef struct call call;

struct kube_client {
    loop *l;
    const kube_config *cfg;
    kube_http *http;
    call *calls;             /* in flight, for kube_cancel and the client's free */
};

/* One call in flight: what it was, for the error text. */
struct call {
    kube_client *c;
    char verb[16];
    int text;                /* kube_get_text: keep the body as text */
    kube_ref ref;          /* owned (kube_ref_dup): for the error text */
    kube_result_fn *fn;
    void *ctx;
    kube_req *req;
    call *prev, *next;       /* in c->calls */
};

kube_client *kube_client_new(loop *l, const kube_config *cfg, buf *err)
{
    kube_client *c = calloc(1, sizeof *c);
    if (!c) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    c->cfg = cfg;
    c->l = l;
    if (!(c->http = kube_http_new(l, cfg, err))) {
        free(c);
        return NULL;
    }
    return c;
}

static void call_free(call *k);

void kube_client_free(kube_client *c)
{
    if (!c)
        return;
    kube_http_free(c->http);   /* its requests: their on_done is not called */
    while (c->calls) {
        call *k = c->calls;
        c->calls = k->next;
        call_free(k);
    }
    free(c);
}

static void call_unlink(call *k)
{
    if (k->prev)
        k->prev->next = k->next;
    else if (k->c->calls == k)
        k->c->calls = k->next;
    if (k->next)
        k->next->prev = k->prev;
    k->prev = k->next = NULL;
}

void kube_cancel(kube_client *c, void *ctx)
{
    for (call *k = c->calls, *next; k; k = next) {
        next = k->next;
        if (k->ctx != ctx)
            continue;
        call_unlink(k);
        kube_http_cancel(c->http, k->req);
        call_free(k);
    }
}

kube_http *kube_client_http(kube_client *c) { return c->http; }
loop *kube_client_loop(kube_client *c) { return c->l; }
const kube_config *kube_client_config(kube_client *c) { return c->cfg; }

const json *kube_path(const json *v, const char *dotted)
{
    char part[128];
    while (v && *dotted) {
        size_t n = strcspn(dotted, ".");
        if (n >= sizeof part)
            return NULL;
        memcpy(part, dotted, n);
        part[n] = '\0';
        v = json_get(v, part);
        dotted += n + (dotted[n] == '.');
    }
    return v;
}

const char *kube_path_str(const json *v, const char *dotted) { return json_str(kube_path(v, dotted)); }

/* ------------------------------------------------------------------------ */
/* Error text                                                                */

/* A subresource travels in the name ("POD/log"): RBAC names it with the
 * resource ("pods/log"), and so do the messages. */
static void describe_target(const kube_ref *ref, buf *out)
{
    const char *sub = ref->name ? strchr(ref->name, '/') : NULL;
    buf_append_str(out, ref->resource);
    if (sub)
        buf_append_str(out, sub);
    if (ref->name)
        buf_printf(out, " \"%.*s\"", sub ? (int)(sub - ref->name) : (int)strlen(ref->name), ref->name);
    if (ref->namespace)
        buf_printf(out, " in namespace \"%s\"", ref->namespace);
}

/* The RBAC rule a 403 says is missing: apiGroups from the path ("/api/v1"
 * is the core group ""; "/apis/discovery.k8s.io/v1" is discovery.k8s.io),
 * the resource with its subresource, the verb. */
static void describe_rule(const char *verb, const kube_ref *ref, buf *out)
{
    const char *group = "";
    int glen = 0;
    if (!strncmp(ref->api, "/apis/", 6)) {
        group = ref->api + 6;
        glen = (int)strcspn(group, "/");
    }
    const char *sub = ref->name ? strchr(ref->name, '/') : NULL;
    buf_printf(out, "missing RBAC rule: a %s with apiGroups [\"%.*s\"], resources [\"%s%s\"], "
               "verbs [\"%s\"], bound to this user by a %s", ref->namespace ? "Role" : "ClusterRole",
               glen, group, ref->resource, sub ? sub : "", verb,
               ref->namespace ? "RoleBinding in that namespace" : "ClusterRoleBinding");
}

static int is_tls_error(int code)
{
    return code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CONNECT_ERROR ||
           code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_CIPHER ||
           code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_ISSUER_ERROR ||
           code == CURLE_SSL_PINNEDPUBKEYNOTMATCH || code == CURLE_SSL_INVALIDCERTSTATUS ||
           code == CURLE_SSL_CRL_BADFILE || code == CURLE_USE_SSL_FAILED;
}

void kube_error_text(const kube_config *cfg, const char *verb, const kube_ref *ref, long status,
                     int curl_code, const char *curl_error, const json *body, buf *out)
{
    const char *msg = json_get_str(body, "message");
    const char *reason = json_get_str(body, "reason");
    if (curl_code && is_tls_error(curl_code)) {
        buf_printf(out, "TLS with the Kubernetes API server %s failed: %s (%s; check the cluster's "
                   "certificate-authority%s in %s)", cfg->server, curl_error,
                   cfg->ca_pem.len ? "verified against the kubeconfig's CA" : "verified against the system CAs",
                   cfg->tls_server_name ? " and tls-server-name" : " and the server name", cfg->source);
        return;
    }
    if (curl_code) {
        buf_printf(out, "cannot reach the Kubernetes API server %s: %s (from %s)", cfg->server,
                   curl_error, cfg->source);
        return;
    }
    switch (status) {
    case 401:
        buf_printf(out, "the Kubernetes API server %s refused our credentials (401 Unauthorized): "
                   "tried %s from %s; the token or certificate is wrong, expired or unknown to "
                   "this cluster", cfg->server, cfg->auth_kind, cfg->source);
        return;
    case 403:
        buf_printf(out, "forbidden: the API server refused to %s ", verb);
        describe_target(ref, out);
        buf_printf(out, " (%s): %s; ", cfg->source, msg ? msg : "403 Forbidden");
        describe_rule(verb, ref, out);
        return;
    case 404: {
        const char *kind = kube_path_str(body, "details.kind");
        if (kind && !strcmp(kind, "namespaces") && ref->namespace) {
            buf_printf(out, "namespace \"%s\" does not exist on %s (%s)", ref->namespace, cfg->server,
                       msg ? msg : "404 Not Found");
            return;
        }
        describe_target(ref, out);
        buf_printf(out, " not found (%s)", msg ? msg : "404 Not Found");
        return;
    }
    default:
        buf_printf(out, "%s ", verb);
        describe_target(ref, out);
        buf_printf(out, ": the API server answered %ld", status);
        if (reason)
            buf_printf(out, " %s", reason);
        if (msg)
            buf_printf(out, ": %s", msg);
        return;
    }
}

/* ------------------------------------------------------------------------ */
/* Calls                                                                     */

static void call_free(call *k)
{
    kube_ref_free(&k->ref);
    free(k);
}

static void on_done(const kube_resp *resp, void *ctx)
{
    call *k = ctx;
    call_unlink(k);   /* done: kube_cancel may no longer find it */
    kube_result r = {.status = resp->status};
    buf why = {0}, text = {0}, cut = {0};
    json *body = NULL;
    r.ok = resp->curl_code == 0 && resp->status >= 200 && resp->status < 300;
    if (resp->curl_code == 0 && resp->body->len && !(r.ok && k->text))
        body = json_parse_max(resp->body->data, resp->body->len, KUBE_JSON_MAX_VALUES, &why);
    r.obj = body;
    if (r.ok && k->text && resp->cut) {
        /* said where it is shown: the reader may not look at r.cut */
        if (buf_append(&cut, resp->body->data, resp->body->len) < 0 ||
            buf_printf(&cut, "\n[cut: the answer was longer than %u bytes; the rest was not read]",
                       KUBE_TEXT_MAX) < 0) {
            r.ok = 0;
            buf_printf(&text, "out of memory");
        }
        r.text = cut.data;
        r.text_len = cut.len;
        r.cut = 1;
    } else if (r.ok && k->text) {
        r.text = resp->body->data ? resp->body->data : "";
        r.text_len = resp->body->len;
    } else if (r.ok && !body && resp->body->len) {
        r.ok = 0;
        buf_printf(&text, "%s %s: the API server's answer is not JSON (%s)", k->verb, k->ref.resource,
                   why.data ? why.data : "?");
    } else if (!r.ok) {
        kube_ref ref = k->ref;
        ref.query = NULL;
        kube_error_text(k->c->cfg, k->verb, &ref, resp->status, resp->curl_code, resp->curl_error,
                        body, &text);
        const char *reason = json_get_str(body, "reason");
        r.already_exists = resp->status == 409 && reason && !strcmp(reason, "AlreadyExists");
        r.not_found = resp->status == 404;
        r.gone = resp->status == 410;
    }
    r.error = text.data ? text.data : r.ok ? NULL : "out of memory";
    k->fn(&r, k->ctx);
    json_free(body);
    buf_free(&why);
    buf_free(&text);
    buf_free(&cut);
    call_free(k);
}

static int start_as(kube_client *c, const char *verb, const char *method, const kube_ref *ref,
                    const char *content_type, const char *body, size_t len, int text,
                    kube_result_fn *fn, void *ctx, buf *err);

/* "/api/v1/namespaces/NS/pods/NAME?QUERY" */
int kube_ref_path(const kube_ref *ref, buf *out)
{
    buf_append_str(out, ref->api);
    if (ref->namespace)
        buf_printf(out, "/namespaces/%s", ref->namespace);
    buf_printf(out, "/%s", ref->resource);
    if (ref->name)
        buf_printf(out, "/%s", ref->name);
    if (ref->query && *ref->query)
        buf_printf(out, "?%s", ref->query);
    return out->data ? 0 : -1;
}

/* NULL stays NULL; 0, or -1 out of memory */
static int dup_field(const char *from, const char **to)
{
    *to = from ? strdup(from) : NULL;
    return from && !*to ? -1 : 0;
}

int kube_ref_dup(const kube_ref *from, kube_ref *to)
{
    *to = (kube_ref){0};
    if (dup_field(from->api, &to->api) < 0 || dup_field(from->resource, &to->resource) < 0 ||
        dup_field(from->namespace, &to->namespace) < 0 || dup_field(from->name, &to->name) < 0 ||
        dup_field(from->query, &to->query) < 0) {
        kube_ref_free(to);
        return -1;
    }
    return 0;
}

void kube_ref_free(kube_ref *ref)
{
    /* a copy's strings are its own (kube_ref_dup): const only for callers */
    const char *owned[] = {ref->api, ref->resource, ref->namespace, ref->name, ref->query};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++)
        free((char *)owned[i]);
    *ref = (kube_ref){0};
}

static int start(kube_client *c, const char *verb, const char *method, const kube_ref *ref,
                 const char *content_type, const char *body, size_t len, kube_result_fn *fn,
                 void *ctx, buf *err)
{
    return start_as(c, verb, method, ref, content_type, body, len, 0, fn, ctx, err);
}

static int start_as(kube_client *c, const char *verb, const char *method, const kube_ref *ref,
                    const char *content_type, const char *body, size_t len, int text,
                    kube_result_fn *fn, void *ctx, buf *err)
{
    call *k = calloc(1, sizeof *k);
    buf path = {0};
    if (!k || kube_ref_path(ref, &path) < 0)
        goto oom;
    k->c = c;
    k->text = text;
    snprintf(k->verb, sizeof k->verb, "%s", verb);
    k->fn = fn;
    k->ctx = ctx;
    if (kube_ref_dup(ref, &k->ref) < 0)
        goto oom;
    /* a text answer (a log) is asked for, and read, up to KUBE_TEXT_MAX */
    if (text)
        buf_printf(&path, "%climitBytes=%u", ref->query && *ref->query ? '&' : '?', KUBE_TEXT_MAX);
    kube_http_req rq = {method, path.data, content_type, body, len, KUBE_CALL_TIMEOUT_MS,
                        NULL, on_done, k, text ? KUBE_TEXT_MAX : 0, text};
    if (!(k->req = kube_http_start(c->http, &rq, err))) {
        call_free(k);
        buf_free(&path);
        return -1;
    }
    k->next = c->calls;
    if (c->calls)
        c->calls->prev = k;
    c->calls = k;
    buf_free(&path);
    return 0;
oom:
    if (k)
        call_free(k);
    buf_free(&path);
    buf_printf(err, "out of memory");
    return -1;
}

int kube_get(kube_client *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err)
{
    return start(c, "get", "GET", ref, NULL, NULL, 0, fn, ctx, err);
}

int kube_get_text(kube_client *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err)
{
    return start_as(c, "get", "GET", ref, NULL, NULL, 0, 1, fn, ctx, err);
}

int kube_list(kube_client *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err)
{
    return start(c, "list", "GET", ref, NULL, NULL, 0, fn, ctx, err);
}

int kube_create(kube_client *c, const kube_ref *ref, const char *content_type, const char *body,
                size_t len, kube_result_fn *fn, void *ctx, buf *err)
{
    return start(c, "create", "POST", ref, content_type, body, len, fn, ctx, err);
}

int kube_patch(kube_client *c, const kube_ref *ref, const char *patch, size_t len,
               kube_result_fn *fn, void *ctx, buf *err)
{
    return start(c, "patch", "PATCH", ref, "application/merge-patch+json", patch, len, fn, ctx, err);
}

int kube_delete(kube_client *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err)
{
    return start(c, "delete", "DELETE", ref, NULL, NULL, 0, fn, ctx, err);
}
