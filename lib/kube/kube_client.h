/* kube_client: Kubernetes API calls on the event loop (get, list, create,
 * merge patch, delete, watch), with answers parsed by core/json and errors
 * phrased for the person who has to fix them.
 *
 * Errors name what failed and what to do: the API server unreachable (its
 * address and curl's reason), TLS verification (what failed), 401 (the
 * credentials tried and where they came from), 403 (the verb, resource and
 * namespace refused, and the RBAC rule that is missing), a missing
 * namespace. AlreadyExists (409), NotFound (404) and Gone (410) are also
 * flagged, for callers that treat them as outcomes rather than failures. */
#ifndef KRM_KUBE_CLIENT_H
#define KRM_KUBE_CLIENT_H

#include "core/json.h"
#include "core/loop.h"
#include "kube/kube_http.h"
#include "kube/kubeconfig.h"

typedef struct kube_client kube_client;

/* What a call is about: "/api/v1" + pods in namespace NS, maybe NAME. */
typedef struct kube_ref {
    const char *api;         /* "/api/v1", "/apis/apps/v1" */
    const char *resource;    /* "pods" */
    const char *namespace;   /* NULL: cluster-scoped */
    const char *name;        /* NULL: the collection */
    const char *query;       /* "labelSelector=..." (already escaped), or NULL */
} kube_ref;

typedef struct kube_result {
    int ok;                  /* 2xx */
    long status;             /* HTTP status, 0 when none */
    const json *obj;         /* the answer (object, list, or Status), or NULL */
    const char *error;       /* when !ok: one line for the user */
    int already_exists;      /* 409 AlreadyExists */
    int not_found;           /* 404 */
    int gone;                /* 410 (a watch's resourceVersion is too old) */
    const char *text;        /* kube_get_text: the body as received (NUL-terminated); when
                                cut, followed by a line saying so */
    size_t text_len;
    int cut;                 /* kube_get_text: the answer was longer than KUBE_TEXT_MAX */
} kube_result;

/* Called once per call; r and what it points to live until it returns. */
typedef void kube_result_fn(const kube_result *r, void *ctx);

#define KUBE_CALL_TIMEOUT_MS 30000L

/* cfg must outlive the client. NULL with why in err. */
kube_client *kube_client_new(loop *l, const kube_config *cfg, buf *err);
void kube_client_free(kube_client *c);

/* Each returns 0 when the call started (fn will be called), or -1 with why
 * in err. */
int kube_get(kube_client *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err);
/* A GET whose answer is not JSON (pods/NAME/log): ok answers leave obj
 * NULL and give the body in text; errors are read as for kube_get. At most
 * KUBE_TEXT_MAX bytes are asked for (limitBytes) and read, whatever the
 * server sends: past them the transfer is stopped and the result is cut
 * (r->cut, and a last line in text says so). A log asked for by its last
 * lines (tailLines) may still have lines of any length. */
#define KUBE_TEXT_MAX (64u << 10)
int kube_get_text(kube_client *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err);
int kube_list(kube_client *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err);
/* body: JSON or YAML (content_type "application/json" or "application/yaml"). */
int kube_create(kube_client *c, const kube_ref *ref, const char *content_type, const char *body,
                size_t len, kube_result_fn *fn, void *ctx, buf *err);
/* A JSON merge patch (RFC 7386). */
int kube_patch(kube_client *c, const kube_ref *ref, const char *patch, size_t len,
               kube_result_fn *fn, void *ctx, buf *err);
/* query may carry gracePeriodSeconds=N. */
int kube_delete(kube_client *c, const kube_ref *ref, kube_result_fn *fn, void *ctx, buf *err);
/* Abandons every call in flight made with ctx: their fn is not called (an
 * owner that goes away before its answers). Not from inside one of them. */
void kube_cancel(kube_client *c, void *ctx);

/* The user-facing text for an answer (exposed for tests): status and body
 * as received, or the curl failure. verb: "get", "list", "create"... */
void kube_error_text(const kube_config *cfg, const char *verb, const kube_ref *ref, long status,
                     int curl_code, const char *curl_error, const json *body, buf *out);

/* For lib/kube's own modules (kube_watch): the HTTP layer, the
 * configuration, and "/api/v1/namespaces/NS/RESOURCE[/NAME][?QUERY]". */
kube_http *kube_client_http(kube_client *c);
loop *kube_client_loop(kube_client *c);
const kube_config *kube_client_config(kube_client *c);
int kube_ref_path(const kube_ref *ref, buf *out);
/* A copy of `from` that owns its strings (each one set in `from`), for a
 * call or watch that outlives the ref it was given: 0, or -1 out of memory
 * (then `to` holds nothing). kube_ref_free frees such a copy's strings. */
int kube_ref_dup(const kube_ref *from, kube_ref *to);
void kube_ref_free(kube_ref *ref);

/* A dotted path into a JSON object: "metadata.name", "status.phase". */
const json *kube_path(const json *v, const char *dotted);
const char *kube_path_str(const json *v, const char *dotted);

#endif
