/* http_multi: libcurl's multi interface driven by our event loop.
 *
 * Why: the runner serves calls while it talks to the Kubernetes API and to
 * registries, so no HTTP request may block the loop or need a thread.
 * curl tells us which sockets to watch (CURLMOPT_SOCKETFUNCTION ->
 * loop_watch) and when to call it back (CURLMOPT_TIMERFUNCTION -> one loop
 * timer), and we hand it readiness with curl_multi_socket_action, as curl's
 * ephiperfifo example does with epoll. Transfers finish only after
 * socket_action returns (curl_multi_info_read), never inside
 * http_multi_add, so a done callback may start or cancel transfers.
 *
 * The caller configures its easy handle (URL, headers, TLS, write
 * callbacks) and embeds an http_xfer in its own request object; the driver
 * owns CURLOPT_PRIVATE and allocates nothing per transfer. Users:
 * lib/kube/kube_http (API server) and lib/oci/registry_http (registries). */
#ifndef KRM_HTTP_MULTI_H
#define KRM_HTTP_MULTI_H

#include <curl/curl.h>

#include "core/buf.h"
#include "core/loop.h"

typedef struct http_multi http_multi;
typedef struct http_xfer http_xfer;

/* The transfer ended (code CURLE_OK or curl's error; the easy handle's
 * error buffer has the details). x is no longer in the multi; the callee
 * may free it, re-add it, start or cancel other transfers. */
typedef void http_done_fn(http_xfer *x, CURLcode code);

struct http_xfer {
    CURL *easy;           /* set by the caller before http_multi_add */
    http_done_fn *done;
    void *ctx;            /* the caller's */
    int _added;           /* in the multi (driver only) */
};

/* Once per process, before any easy handle is made (idempotent). */
void http_global_init(void);

/* NULL with why in err. */
http_multi *http_multi_new(loop *l, buf *err);
/* Transfers still added are removed without their done. Not from a done
 * callback. */
void http_multi_free(http_multi *m);
loop *http_multi_loop(const http_multi *m);

/* Starts x (x->easy, x->done set). -1 with why in err. done runs later,
 * from the loop, exactly once unless http_multi_remove comes first. */
int http_multi_add(http_multi *m, http_xfer *x, buf *err);
/* Abandons x if it is running (done is not called); fine when it is not. */
void http_multi_remove(http_multi *m, http_xfer *x);

#endif
