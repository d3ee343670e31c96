/* registry_http: HTTP GETs to one registry for one repository, with the
 * registry's authentication dance, over libcurl on the event loop
 * (lib/http/http_multi: no thread, no blocking call).
 *
 * libcurl (OpenSSL flavour) is used because HTTPS with the system's CA
 * store, redirects and proxies are far better served by a maintained
 * library than by our own TLS. Requests start anonymous; a 401 answer's
 * WWW-Authenticate says what to do: Bearer → fetch a pull token for the
 * repository from the realm (with Basic credentials when config.json has
 * some) and retry; Basic → retry with the credentials.
 *
 * Credentials follow the host that asks, as the Docker client's do: those
 * config.json has for the registry go to the registry and to the token
 * realm its own challenge names (on any host: Docker Hub's is
 * auth.docker.io); a token goes back to the host whose challenge it
 * answers. Redirects (blob downloads from a CDN) are followed here, one
 * request at a time, not by libcurl, so that each request's secrets are
 * chosen for its own origin (scheme, host, port): a request that left the
 * origin carries none, and a host a redirect led to that answers 401 gets
 * the credentials config.json has for that host, never the registry's. At
 * most 5 redirects, to http or https only, never from https to http. No
 * secret goes over http:// except to the hosts spoken to over http anyway.
 * Every answer is bounded: the body by the caller's max_body, the headers
 * to 64 KiB. http:// is used for localhost, 127.0.0.1, [::1] and the
 * hosts the options call insecure; https:// otherwise. */
#ifndef KRM_REGISTRY_HTTP_H
#define KRM_REGISTRY_HTTP_H

#include <stddef.h>

#include "core/buf.h"
#include "http/http_multi.h"
#include "oci/docker_config.h"
#include "oci/image_ref.h"
#include "oci/registry_opts.h"

typedef struct reg_client reg_client;

typedef struct reg_response {
    long status;
    buf body;
    char *content_type;      /* headers of the final response, NULL when absent */
    char *docker_digest;     /* Docker-Content-Digest */
    char *link;              /* Link (a tag list's next page) */
} reg_response;

/* A client for ref's registry and repository, its transfers run by m.
 * `image` is the string the user gave, for messages; opts (insecure hosts,
 * the config.json a redirect's host is looked up in) must outlive the
 * client. Returns NULL with a
 * reason in err (bad Docker config, out of memory). */
reg_client *reg_client_new(http_multi *m, const char *image, const image_ref *ref, const registry_opts *opts,
                           buf *err);
/* Abandons a GET in progress (its fn is not called). Not from inside fn. */
void reg_client_free(reg_client *c);

/* The GET ended: rc 0 with the final answer in resp (any status but
 * 401/403; fn may move it out, else it is freed after fn returns), or -1
 * with a message in err: unreachable (curl's text), body too large, or
 * access denied (401/403 after authenticating; the message says which
 * credentials were tried). fn may start the client's next GET. */
typedef void reg_get_fn(int rc, reg_response *resp, const buf *err, void *ctx);

/* Starts GET <scheme>://<api_host>/v2/<repository>/<path>, authenticating
 * as needed (token fetch and retry), reading at most max_body bytes; one
 * GET at a time per client. fn runs later from the loop, never inside this
 * call. -1 with err set when it cannot start. */
int reg_get_start(reg_client *c, const char *path, const char *accept, size_t max_body, reg_get_fn *fn, void *ctx,
                  buf *err);
void reg_response_free(reg_response *r);

/* The registry host as the user named it, and the base URL, for messages. */
const char *reg_client_host(const reg_client *c);

/* Requests made by every client in this process. */
size_t reg_requests_made(void);

#endif
