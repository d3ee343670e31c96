/* pod_from_template: a function's Pod and Service built from the base
 * templates read from the cluster (a PodTemplate and a ServiceTemplate, as
 * Porch's pod evaluator reads `base-pod-template` and
 * `base-service-template`), and the built-in templates created when they
 * are missing.
 *
 * Why a second way to build a pod (pod_template renders the built-in one):
 * operators edit the base PodTemplate to give every function pod a node
 * selector, a security context, resources, labels; what they wrote must be
 * kept field for field, known to us or not. So the template's object is
 * taken as a tree and patched, as Porch's CreatePod patches it:
 *   - initContainers[0].image = the wrapper server image (the template must
 *     have one: Porch indexes it);
 *   - the container named "function": image = the function's, args = its
 *     args + --port 9446 --max-request-body-size N -- <entrypoint...> (each
 *     argument escaped as pod_template_arg says); none: refused with Porch's
 *     words;
 *   - metadata: namespace, the template's labels and annotations plus label
 *     fn.kpt.dev/image=<podId> and annotation fn.kpt.dev/template-version=<the
 *     PodTemplate's resourceVersion> (and the owner annotation); name or
 *     generateName "<podId>-".
 * The Service: name <podId>, the namespace, the owner annotation, and the
 * ServiceTemplate's spec with selector fn.kpt.dev/image=<podId> (Porch keeps
 * only name and namespace of its metadata).
 *
 * The built-in templates are Porch's inline ones (with the shipped
 * 22-function-templates.yaml's imagePullPolicy and livenessProbe, as
 * pod_template renders them), so a pod built from them is the pod
 * pod_template renders. */
#ifndef KRM_POD_FROM_TEMPLATE_H
#define KRM_POD_FROM_TEMPLATE_H

#include "core/buf.h"
#include "core/json.h"
#include "kube/pod_template.h"

#define POD_BASE_TEMPLATE_NAME "base-pod-template"          /* Porch's defaults */
#define SERVICE_BASE_TEMPLATE_NAME "base-service-template"

/* Appends the Pod as JSON, built from tmpl (a PodTemplate object as the API
 * server answers it) and o (pod_id, name, namespace, image, wrapper_image,
 * entrypoint, max_request_body_size, template_version, escape_dollar,
 * owner; probe is the template's). 0, or -1 with why in err. */
int pod_from_template(const json *tmpl, const pod_template_opts *o, buf *out, buf *err);
/* Appends the Service as JSON, built from tmpl (a ServiceTemplate object). */
int service_from_template(const json *tmpl, const pod_template_opts *o, buf *out, buf *err);

/* The built-in PodTemplate named name in namespace ns, as JSON to create. */
int pod_base_template_json(const char *name, const char *ns, const char *wrapper_image, buf *out);
/* The built-in ServiceTemplate (config.porch.kpt.dev/v1alpha1). */
int service_base_template_json(const char *name, const char *ns, buf *out);

#endif
