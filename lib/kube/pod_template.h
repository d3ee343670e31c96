/* pod_template: the Pod and the Service of one function, as YAML, the way
 * Porch's function runner builds them from its default templates.
 *
 * Why: a function pod must look exactly like Porch's (porch-compat §9) for
 * our runner to be a drop-in replacement: same init container copying the
 * wrapper server into an emptyDir, same `function` container arguments,
 * probes, label, annotations, and a ClusterIP Service named after the podId
 * selecting it. Rendering it in one place lets the CLI print it (`runner-
 * client pod render`, to inspect or `kubectl create -f -`) and the pod
 * runtime create it from the same code.
 *
 * What is rendered (Porch's inline template + its patches, the shipped
 * 22-function-templates.yaml adding `imagePullPolicy: IfNotPresent` and an
 * identical livenessProbe):
 *   Pod: generateName `<podId>-` (or name), namespace, label
 *     fn.kpt.dev/image=<podId>, annotations cluster-autoscaler.kubernetes.io/
 *     safe-to-evict="true" and fn.kpt.dev/template-version=<version>;
 *     initContainers[0] copy-wrapper-server (cp -a /home/nonroot/wrapper-
 *     server/. /wrapper-server-tools); containers[0] function: command
 *     /wrapper-server-tools/wrapper-server, args --port 9446
 *     --max-request-body-size N -- <entrypoint...>, OTEL env, readiness and
 *     liveness probes; volume wrapper-server-tools emptyDir {}.
 *   Service: name <podId>, ClusterIP, selector fn.kpt.dev/image=<podId>,
 *     TCP 9446 -> 9446.
 *
 * `$` in the entrypoint: Kubernetes expands `$(VAR)` (for variables the
 * container defines) and turns `$$` into `$` in command and args. Porch
 * copies the image's entrypoint unescaped, so `sh -c 'echo $$'` or an
 * argument naming `$(OTEL_TRACES_EXPORTER)` reaches the function changed.
 * With escape_dollar each `$` followed by `$` or `(` is doubled (other `$`,
 * such as "$@" or "$HOME", are left alone, Kubernetes keeps them), and the
 * function gets its entrypoint byte for byte, as under `kpt fn eval` with
 * Docker. The pod's identity (label, names, annotations) does not depend on
 * it, so pods Porch created are still recognised.
 *
 * The YAML is written with libyaml's event API; a string is written plain
 * only when no YAML 1.1 or 1.2 resolver could read it as anything else
 * (Kubernetes decodes with go-yaml), otherwise double-quoted: "true",
 * "9446", "-1", "2024-01-01", "" ... Integers (ports) are plain. */
#ifndef KRM_POD_TEMPLATE_H
#define KRM_POD_TEMPLATE_H

#include <stddef.h>

#include "core/buf.h"

#define POD_WRAPPER_PORT 9446
#define POD_DEFAULT_NAMESPACE "porch-fn-system"
#define POD_DEFAULT_TEMPLATE_VERSION "inline-v1"     /* Porch's inlineTemplateVersionv1 */
/* Written on a serving pod by a long-lived runner (kube_pod_cache's scan,
 * UTC, RFC 3339): its last call's end, which `runner-client pod list`
 * shows as the idle time. Not part of the rendered template. */
#define POD_LAST_CALL_ANNOTATION "fn.kpt.dev/last-call"
#define POD_DEFAULT_MAX_REQUEST_BODY 6291456ULL      /* 6 MiB, as Porch */

typedef enum pod_probe {
    POD_PROBE_EXEC,   /* exec /wrapper-server-tools/grpc-health-probe -addr localhost:9446 */
    POD_PROBE_GRPC,   /* grpc: {port: 9446} (Kubernetes >= 1.24) */
} pod_probe;

typedef struct pod_template_opts {
    const char *pod_id;            /* pod_id_make's result: label value, Service name */
    const char *name;              /* fixed pod name; NULL: generateName "<podId>-" */
    const char *namespace;
    const char *image;             /* the function image */
    const char *wrapper_image;     /* the init container's image */
    const char *const *entrypoint; /* the image's entrypoint */
    size_t n_entrypoint;
    unsigned long long max_request_body_size;
    const char *template_version;  /* fn.kpt.dev/template-version */
    pod_probe probe;
    int escape_dollar;             /* protect the entrypoint from $(VAR) / $$ expansion */
    const char *owner;             /* the runner replica making it (pod_owner), annotated on
                                      the Pod and the Service; NULL: none */
    const char *pull_secret;       /* a Secret named in imagePullSecrets (private registries);
                                      NULL: none */
    const char *overrides;         /* a FunctionConfig's podExecutor.templateOverrides as JSON
                                      (pod_from_template merges it; NULL: none) */
} pod_template_opts;

enum { POD_TEMPLATE_POD = 1, POD_TEMPLATE_SERVICE = 2 };

/* Appends the selected documents (POD_TEMPLATE_POD | POD_TEMPLATE_SERVICE),
 * separated by "---", to out. Returns 0, or -1 with a reason appended to err
 * (a value that is not UTF-8, out of memory). */
int pod_template_render(const pod_template_opts *o, int which, buf *out, buf *err);

/* Appends one entrypoint argument as the pod's args hold it: with
 * escape_dollar, each '$' before a '$' or a '(' doubled (Kubernetes turns
 * "$$" into "$" and "$(VAR)" into VAR's value, and keeps any other '$', so
 * the expanded text equals arg). 0, or -1 when out of memory. */
int pod_template_arg(const char *arg, int escape_dollar, buf *out);

/* 1 when s may be written as a plain YAML scalar and still read back as
 * that string by YAML 1.1 and 1.2 resolvers (exposed for the tests). */
int pod_template_plain_ok(const char *s);

#endif
