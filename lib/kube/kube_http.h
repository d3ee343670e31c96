/* kube_http: HTTPS requests to the Kubernetes API server on the event loop.
 *
 * Why: the runner serves calls while it creates pods and watches them, so
 * an API request must never block the loop: requests are libcurl easy
 * handles run by lib/http/http_multi (curl's multi interface on the loop).
 * TLS and credentials come from a kube_config (CA, client certificate and
 * key as in-memory PEM blobs, bearer token, insecure, tls-server-name). */
#ifndef KRM_KUBE_HTTP_H
#define KRM_KUBE_HTTP_H

#include <stddef.h>

#include "core/buf.h"
#include "core/loop.h"
#include "kube/kubeconfig.h"

/* lib/http/http_multi.h (not included: kube_client.h readers such as
 * pod_status are in the static build, which has no curl.h) */
typedef struct http_multi http_multi;
typedef struct kube_http kube_http;
typedef struct kube_req kube_req;

/* How a request ended. */
typedef struct kube_resp {
    long status;             /* HTTP status; 0 when no response came */
    int curl_code;           /* CURLcode; 0 when the transfer completed */
    const char *curl_error;  /* curl's reason when curl_code != 0 */
    const buf *body;         /* the whole body (empty for streamed requests) */
    int cut;                 /* the body reached the request's max_body (cut_at_max): the
                                transfer was stopped there and body holds what came */
} kube_resp;

/* Streamed body bytes (watch). Called from inside libcurl: must not call
 * kube_http functions; return -1 to abort the request (it then ends with
 * curl_code CURLE_WRITE_ERROR). */
typedef int kube_data_fn(const char *data, size_t len, void *ctx);
/* The request ended; r is freed after this returns. May start requests. */
typedef void kube_done_fn(const kube_resp *resp, void *ctx);

typedef struct kube_http_req {
    const char *method;        /* "GET", "POST", "PATCH", "DELETE" */
    const char *path;          /* "/api/v1/namespaces/x/pods?limit=500" */
    const char *content_type;  /* for a body */
    const char *body;
    size_t body_len;
    long timeout_ms;           /* whole request; 0: none (a watch) */
    kube_data_fn *on_data;     /* NULL: collect the body */
    kube_done_fn *on_done;
    void *ctx;
    size_t max_body;           /* 0: KUBE_HTTP_MAX_BODY */
    int cut_at_max;            /* past max_body: stop reading, answer what came (resp->cut);
                                  0: the request fails ("larger than the limit") */
} kube_http_req;

#define KUBE_HTTP_MAX_BODY (64u << 20)   /* a list of thousands of pods fits */
/* JSON values one answer may hold (json_parse_max): a pod is a few hundred,
 * so a list of thousands fits, where 64 MiB of "[1,1,...]" from a hostile
 * server would be 32 million values (2.5 GB as a tree); this is 160 MB at
 * most. A watch event is one object, its line bounded by KUBE_WATCH_MAX_LINE. */
#define KUBE_JSON_MAX_VALUES 2000000u
#define KUBE_EVENT_MAX_VALUES 200000u
/* Requests (not streams: a watch holds its connection for minutes) in flight
 * at once; the others wait in order. Each one is a connection over HTTP/1.1,
 * so a command acting on thousands of pods stays within the descriptor
 * limit and does not flood the API server (kubectl's client paces itself
 * with QPS and burst for the same reason). */
#define KUBE_HTTP_MAX_INFLIGHT 16

/* cfg must outlive the client. NULL with why in err. */
kube_http *kube_http_new(loop *l, const kube_config *cfg, buf *err);
/* Cancels what is in flight (their on_done is not called). Not from a callback. */
void kube_http_free(kube_http *h);

/* The client's curl driver, for other transfers on the same loop (the pod
 * cache's registry lookups). Lives as long as the client. */
http_multi *kube_http_multi(const kube_http *h);

/* Starts a request, or queues it behind KUBE_HTTP_MAX_INFLIGHT others (its
 * timeout runs from when it starts). NULL with why in err (out of memory,
 * a header value refused, curl refused). */
kube_req *kube_http_start(kube_http *h, const kube_http_req *rq, buf *err);
/* Abandons a request: on_done is not called. Not from inside on_data. */
void kube_http_cancel(kube_http *h, kube_req *r);

#endif
