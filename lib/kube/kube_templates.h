/* kube_templates: the base PodTemplate and ServiceTemplate of the function
 * pods' namespace, read from the cluster and kept current, as Porch's pod
 * evaluator has them (its --base-pod-template-name, --base-service-
 * template-name, --skip-template-creation, --template-wait-timeout).
 *
 * At start, on the loop: each template is read (GET); a missing one is
 * looked for again every second while --template-wait-timeout lasts
 * (someone else, Helm, may be about to apply it), then created from the
 * built-in one (pod_from_template) or, with --skip-template-creation,
 * refused naming it. Once both are held they are watched (by name): an
 * edit is taken for the next pods, and a new PodTemplate resourceVersion,
 * the template version stamped on pods (fn.kpt.dev/template-version), is
 * told to the owner (the pod cache retires the pods of older versions). A
 * deleted template is created again (not with --skip-template-creation);
 * until it is back the last one seen is used. */
#ifndef KRM_KUBE_TEMPLATES_H
#define KRM_KUBE_TEMPLATES_H

#include <stdint.h>

#include "core/buf.h"
#include "core/json.h"
#include "kube/kube_client.h"

#define KUBE_TEMPLATES_POLL_NS (1000LL * 1000000)   /* a missing template looked for again */

typedef struct kube_templates_opts {
    const char *namespace;
    const char *pod_name;          /* NULL: base-pod-template */
    const char *service_name;      /* NULL: base-service-template */
    const char *wrapper_image;     /* the built-in PodTemplate's init container */
    int skip_creation;
    int64_t wait_ns;               /* how long a missing template is waited for; 0: not */
    /* A one-shot command's (eval --kube, pod create): the cluster's
     * templates when it has them, else the built-in ones (never created,
     * waited for or watched; a template that cannot be read, for any
     * reason, is the built-in one, said at verbosity 3). */
    int if_present;
} kube_templates_opts;

typedef struct kube_templates kube_templates;

/* ready runs from the loop once the reading ends: error NULL when both
 * templates are held, else why not (then kube_templates_retry reads them
 * again, without waiting). The strings in o must outlive t. NULL with why
 * in err. */
typedef void kube_templates_ready_fn(const char *error, void *ctx);
kube_templates *kube_templates_start(kube_client *c, const kube_templates_opts *o,
                                     kube_templates_ready_fn *ready, void *ctx, buf *err);
void kube_templates_free(kube_templates *t);
/* API calls in flight (a server about to exit lets them end: free t only
 * then, or they are left allocated). */
int kube_templates_busy(const kube_templates *t);
/* 1 when held, 0 while read, -1 when the reading failed. */
int kube_templates_state(const kube_templates *t);
/* After a failure: read them again (ready runs again). */
void kube_templates_retry(kube_templates *t);

/* The objects as the API server answered them (valid until the next change
 * is taken, on the loop), and the PodTemplate's resourceVersion; NULL
 * unless held. The ServiceTemplate is also NULL when the cluster has no
 * ServiceTemplate CRD (logged; Services are then the built-in one's). */
const json *kube_templates_pod(const kube_templates *t);
const json *kube_templates_service(const kube_templates *t);
const char *kube_templates_version(const kube_templates *t);

/* fn runs when the PodTemplate's version changed (one listener). */
typedef void kube_templates_change_fn(const char *version, void *ctx);
void kube_templates_on_change(kube_templates *t, kube_templates_change_fn *fn, void *ctx);

#endif
