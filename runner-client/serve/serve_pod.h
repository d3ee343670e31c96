/* serve_pod: `runner-client serve`'s pod runtime, as Porch's function
 * runner has it: every image without an exec FunctionConfig runs in its
 * function pod on the cluster (lib/kube/kube_pod_cache, lib/runtime/ev_pod).
 * One pod cache for the server's life: a second call reuses the pod, a
 * deleted pod is replaced on the next call (the cache keeps watching
 * serving pods), and concurrent first calls for one image wait for the
 * same pod creation. */
#ifndef KRM_RC_SERVE_POD_H
#define KRM_RC_SERVE_POD_H

#include <stdint.h>

#include "core/buf.h"
#include "core/loop.h"
#include "grpc/http1.h"
#include "kube/kube_client.h"
#include "kube/kube_pod_cache.h"
#include "kube/pod_template.h"   /* POD_DEFAULT_NAMESPACE */
#include "runtime/evaluator.h"
#include "cli/registry_flags.h"

/* The flags, as eval --kube and pod create take them (the registry flags
 * through registry_flags, the same parser). */
typedef struct serve_pod_flags {
    const char *kubeconfig, *context, *ns, *dial, *wrapper, *ready_timeout;
    const char *pod_ttl, *scan_interval;   /* idle pods reclaimed (Porch's flags) */
    const char *max_pods, *waitlist;       /* pods per image and when another starts */
    const char *max_retries;               /* --max-grpc-retries */
    const char *replica, *lease;           /* --replica-name, --lease-duration */
    const char *min_ready;                 /* --min-ready-pods */
    /* the base templates (Porch's pod-evaluator flags): names, wait, and
     * --skip-template-creation (0 or 1) */
    const char *pod_template, *service_template, *template_wait;
    int skip_templates;
    /* private registries (Porch's --enable-private-registries, on when 1):
     * the mounted dockerconfigjson and the Secret it becomes */
    int private_registries, private_registries_tls;
    const char *auth_secret_path, *auth_secret_name, *tls_secret_path;
    const char *ns_flag, *ready_flag;      /* as typed, for errors (NULL: --namespace,
                                              --ready-timeout; Porch's names are aliases) */
    const registry_flags *registry;   /* the images' lookups; NULL: defaults */
    /* An image's own time to live (a FunctionConfig's podExecutor), 0: --pod-ttl. */
    int64_t (*ttl_for)(const char *image, void *ctx);
    /* An image's own pod cap and waitlist (podExecutor's maxParallelExecutions
     * and preferredMaxQueueLength): changes what it has, leaves the rest. */
    void (*limits_for)(const char *image, void *ctx, int *max_pods, int *waitlist);
    /* An image's podExecutor.templateOverrides as JSON, or NULL. */
    const char *(*overrides_for)(const char *image, void *ctx);
    void *ttl_ctx;                 /* ttl_for's, limits_for's and overrides_for's */
} serve_pod_flags;

#define SERVE_POD_FLAGS_HELP \
    "  --kubeconfig F               the pod runtime's cluster (default $KUBECONFIG,\n" \
    "                               ~/.kube/config, in-cluster)\n" \
    "  --context C                  kubeconfig context (default: the current one)\n" \
    "  --pod-namespace NS           of the function pods (default porch-fn-system, as\n" \
    "                               Porch; --namespace NS is the same)\n" \
    "  --dial service|pod           the Service once the pod is Ready and its endpoints list\n" \
    "                               it (default, as Porch), or the pod IP as soon as its\n" \
    "                               wrapper answers health SERVING (clusters without\n" \
    "                               kube-proxy)\n" \
    "  --wrapper-server-image W     init container image (default $WRAPPER_SERVER_IMAGE)\n" \
    "  --pod-ready-timeout DUR      wait for a pod at most DUR (default 60s, as Porch;\n" \
    "                               --ready-timeout DUR is the same)\n" \
    "  --max-parallel-pods-per-function N  pods per function at most (default 1, as\n" \
    "                               Porch; podExecutor.maxParallelExecutions wins)\n" \
    "  --max-waitlist-length N      a call goes to the least-loaded pod of its function;\n" \
    "                               when that one has N calls (running or waiting) and\n" \
    "                               the function has fewer pods than its cap, a new pod\n" \
    "                               is started (default 2, as Porch;\n" \
    "                               podExecutor.preferredMaxQueueLength wins)\n" \
    "  --max-grpc-retries N         a call a pod ends UNAVAILABLE or whose connection\n" \
    "                               breaks is sent again, to another pod where there is\n" \
    "                               or may be one, at most N times (default 2, as Porch)\n" \
    "  --pod-ttl DUR                delete a function pod and its Service after DUR without\n" \
    "                               a call (default 30m, as Porch; a FunctionConfig's\n" \
    "                               podExecutor.timeToLive wins; 0: never)\n" \
    "  --scan-interval DUR          how often idle pods are looked for (default 1m)\n" \
    "  --replica-name NAME          this runner among replicas sharing the pod namespace\n" \
    "                               (default $POD_NAME, else the host name): held in its\n" \
    "                               Lease fn-runner-NAME and annotated on its pods\n" \
    "                               (fn.kpt.dev/owner); it calls, reclaims and deletes\n" \
    "                               only its own pods, and takes over those of a replica\n" \
    "                               whose Lease expired\n" \
    "  --lease-duration DUR         the Lease's duration, renewed every third of it\n" \
    "                               (default 15s)\n" \
    "  --min-ready-pods N           warm pods: each FunctionConfig with podExecutor.tags\n" \
    "                               keeps N pods started, before any call and through\n" \
    "                               the idle TTL, re-started when one goes (default 0;\n" \
    "                               its annotation fn.kpt.dev/min-ready-pods: \"N\" wins)\n" \
    "  --base-pod-template-name N   the PodTemplate function pods are made from, read\n" \
    "                               from the pod namespace (default base-pod-template,\n" \
    "                               as Porch); created from the built-in one when missing\n" \
    "  --base-service-template-name N  the ServiceTemplate of their Services (default\n" \
    "                               base-service-template)\n" \
    "  --skip-template-creation     never create them: a missing one is an error\n" \
    "  --template-wait-timeout DUR  wait up to DUR for a missing one to appear (default 0)\n" \
    "  --enable-private-registries  the dockerconfigjson at --registry-auth-secret-path\n" \
    "                               (default /var/tmp/config-secret/.dockerconfigjson, as\n" \
    "                               Porch) gives the image lookups' credentials and becomes\n" \
    "                               Secret --registry-auth-secret-name (default auth-secret)\n" \
    "                               in the pod namespace, named in every function pod's\n" \
    "                               imagePullSecrets\n" \
    "  --enable-private-registries-tls  with the above: the CA ca.crt (else ca.pem) in\n" \
    "                               --tls-secret-path (default /var/tmp/tls-secret/) is\n" \
    "                               trusted for registries, beside the system's\n" \
    "  --warm-up-pod-cache[=false]  at start, a pod for each FunctionConfig with\n" \
    "                               podExecutor.tags (its first prefix and tag; default true)\n" \
    REGISTRY_FLAGS_HELP

#define SERVE_POD_AUTH_PATH "/var/tmp/config-secret/.dockerconfigjson"   /* Porch's default */
#define SERVE_POD_MAX_PODS 64   /* pods per function at most (the cache's POD_MAX_PER_FUNCTION) */

typedef struct serve_pod serve_pod;

/* Checks the flags (exit 2 material): -1 with why in err. */
int serve_pod_check(const serve_pod_flags *f, buf *err);

/* What the pod runtime cannot run without, given (the wrapper server's
 * image): checked with the flags when it is to run, after each flag's
 * value. -1 with why in err. */
int serve_pod_require(const serve_pod_flags *f, buf *err);

/* Loads the Kubernetes configuration (kubectl's search; exec credential
 * plugins run now) and makes the client and the pod cache. NULL with why in
 * err: no configuration found says where it looked and that
 * --disable-runtimes=pod runs without a cluster. */
serve_pod *serve_pod_open(loop *l, const serve_pod_flags *f, uint32_t max_message, buf *err);
/* The pod evaluator (given to ev_multi, which destroys it); NULL: ENOMEM. */
evaluator *serve_pod_evaluator(serve_pod *p);
/* Starts image's pod now, before any call asks for it (Porch's
 * --warm-up-pod-cache); the outcome is logged. */
void serve_pod_warm(serve_pod *p, const char *image);
/* The images kept warm (pod_cache_set_warm), at start and after each
 * SIGHUP; a min below 0 takes --min-ready-pods. */
void serve_pod_keep_warm(serve_pod *p, pod_warm *images, int n);
/* A FunctionConfig's warm minimum: annotated (its annotation, -1: none) or --min-ready-pods. */
int serve_pod_min_ready(const serve_pod *p, int annotated);
/* The server port's other HTTP/1.1 GETs (rpc_server_config.http_get, ctx
 * the serve_pod or NULL when the pod runtime is off): /debug/pods, the
 * pods the cache holds as JSON, or with ?format=text as a table. */
int serve_pod_http_get(void *ctx, const char *path, const char *query, http1_response *r);
/* The API client (the FunctionConfigs' watch shares it). */
kube_client *serve_pod_client(serve_pod *p);
/* After the evaluator is destroyed. */
void serve_pod_close(serve_pod *p);

#endif
