/* pod_from_template: Pods and Services from the cluster's base templates,
 * and the built-in templates; see pod_from_template.h. */
#include "kube/pod_from_template.h"

#include <stdio.h>
#include <string.h>

#include "core/json_edit.h"
#include "kube/pod_owner.h"

#define IMAGE_LABEL "fn.kpt.dev/image"
#define VERSION_ANNOTATION "fn.kpt.dev/template-version"
#define FUNCTION_CONTAINER "function"
#define WRITE_FAILED "cannot write the %s: a number in the template is out of range (JSON holds " \
                     "finite numbers only), or out of memory"

/* A copy of tmpl's "template" member to edit, or NULL with why in err. */
static json *template_copy(const json *tmpl, const char *kind, buf *err)
{
    const json *t = json_get(tmpl, "template");
    if (!t || t->type != JSON_OBJECT) {
        buf_printf(err, "the %s has no template", kind);
        return NULL;
    }
    json *copy = json_copy(t);
    if (!copy)
        buf_printf(err, "out of memory");
    return copy;
}

static int set_str(json *obj, const char *key, const char *value)
{
    return json_set(obj, key, json_new_string(value));
}

/* The "function" container gets the image and the wrapper's arguments. */
static int patch_function(json *spec, const pod_template_opts *o, buf *err)
{
    json *containers = (json *)json_get(spec, "containers");
    json *fn = NULL;
    for (size_t i = 0; containers && containers->type == JSON_ARRAY && i < containers->len; i++) {
        const char *name = json_get_str(containers->items[i], "name");
        if (name && !strcmp(name, FUNCTION_CONTAINER))
            fn = containers->items[i];
    }
    if (!fn)   /* Porch's words */
        return buf_fail(err, "failed to find the " FUNCTION_CONTAINER " container in the pod");
    char port[8], size[24];
    snprintf(port, sizeof port, "%d", POD_WRAPPER_PORT);
    snprintf(size, sizeof size, "%llu", o->max_request_body_size);
    const char *const fixed[] = {"--port", port, "--max-request-body-size", size, "--"};
    json *args = json_want(fn, "args", JSON_ARRAY);
    int rc = args ? 0 : -1;
    for (size_t i = 0; i < 5 && rc == 0; i++)
        rc = json_push(args, json_new_string(fixed[i]));
    for (size_t i = 0; i < o->n_entrypoint && rc == 0; i++) {
        buf arg = {0};
        rc = pod_template_arg(o->entrypoint[i], o->escape_dollar, &arg);
        rc = rc ? rc : json_push(args, json_new_string(arg.data ? arg.data : ""));
        buf_free(&arg);
    }
    if (rc == 0)
        rc = set_str(fn, "image", o->image);
    return rc < 0 ? buf_fail(err, "out of memory") : 0;
}

/* Private registries: the Secret in imagePullSecrets, unless the template
 * names it already (Porch's appendImagePullSecret). */
static int add_pull_secret(json *spec, const char *name)
{
    if (!name)
        return 0;
    json *list = json_want(spec, "imagePullSecrets", JSON_ARRAY);
    for (size_t i = 0; list && i < list->len; i++) {
        const char *have = json_get_str(list->items[i], "name");
        if (have && !strcmp(have, name))
            return 0;
    }
    json *ref = json_new(JSON_OBJECT);
    if (!list || !ref || set_str(ref, "name", name) < 0) {
        json_free(ref);
        return -1;
    }
    return json_push(list, ref);
}

/* A copy of v set as member key of obj, when v is there and not null (Go's
 * non-nil: an empty list replaces too). */
static int replace_with(json *obj, const char *key, const json *v)
{
    if (!v || v->type == JSON_NULL)
        return 0;
    return json_set(obj, key, json_copy(v));
}

/* Porch's mergeContainerOverrides: resources' requests and limits, envFrom
 * and env, each replacing the container's when given. -1 when out of
 * memory; -2 when the template has no such container to merge into. */
static int merge_container(json *c, const json *o)
{
    if (!o || o->type != JSON_OBJECT)
        return 0;
    if (!c || c->type != JSON_OBJECT)
        return -2;
    const json *res = json_get(o, "resources");
    json *have = NULL;
    if (res && res->type == JSON_OBJECT &&
        ((json_get(res, "requests") && json_get(res, "requests")->type != JSON_NULL) ||
         (json_get(res, "limits") && json_get(res, "limits")->type != JSON_NULL)) &&
        !(have = json_want(c, "resources", JSON_OBJECT)))
        return -1;
    if (have && (replace_with(have, "requests", json_get(res, "requests")) < 0 ||
                 replace_with(have, "limits", json_get(res, "limits")) < 0))
        return -1;
    return replace_with(c, "envFrom", json_get(o, "envFrom")) < 0 ||
           replace_with(c, "env", json_get(o, "env")) < 0 ? -1 : 0;
}

/* Porch's mergeTemplateOverrides, after its patches: serviceAccountName
 * when not empty, the pod's securityContext, and the first init container
 * and the first container (by index, as Porch: its contract puts the
 * wrapper's copy and the function there). */
static int merge_overrides(json *spec, const char *text, buf *err)
{
    json *ov = json_parse(text, strlen(text), err);
    if (!ov)
        return -1;
    int rc = 0;
    const char *sa = json_get_str(ov, "serviceAccountName");
    if (sa && *sa)
        rc = set_str(spec, "serviceAccountName", sa);
    if (rc == 0)
        rc = replace_with(spec, "securityContext", json_get(ov, "securityContext"));
    const json *inits = json_get(spec, "initContainers"), *cs = json_get(spec, "containers");
    if (rc == 0 && (rc = merge_container(inits && inits->type == JSON_ARRAY && inits->len
                                             ? inits->items[0] : NULL,
                                         json_get(ov, "initContainer"))) == -2)
        buf_printf(err, "the FunctionConfig's templateOverrides.initContainer has no init container "
                   "to go to: the PodTemplate's first init container is not an object");
    if (rc == 0 && (rc = merge_container(cs && cs->type == JSON_ARRAY && cs->len ? cs->items[0] : NULL,
                                         json_get(ov, "container"))) == -2)
        buf_printf(err, "the FunctionConfig's templateOverrides.container has no container to go "
                   "to: the PodTemplate's first container is not an object");
    json_free(ov);
    if (rc == -1)
        buf_printf(err, "cannot apply the FunctionConfig's templateOverrides: out of memory");
    return rc < 0 ? -1 : 0;
}

int pod_from_template(const json *tmpl, const pod_template_opts *o, buf *out, buf *err)
{
    json *t = template_copy(tmpl, "PodTemplate", err);
    if (!t)
        return -1;
    int rc = -1;
    json *spec = (json *)json_get(t, "spec");
    json *inits = (json *)json_get(spec, "initContainers");
    if (!spec || spec->type != JSON_OBJECT || !inits || inits->type != JSON_ARRAY || !inits->len ||
        inits->items[0]->type != JSON_OBJECT) {
        buf_printf(err, "the PodTemplate has no init container (the first one copies the wrapper "
                   "server into the function container)");
        goto out;
    }
    if (set_str(inits->items[0], "image", o->wrapper_image) < 0 || patch_function(spec, o, err) < 0 ||
        add_pull_secret(spec, o->pull_secret) < 0)
        goto oom;
    json *meta = json_want(t, "metadata", JSON_OBJECT);
    json *labels = meta ? json_want(meta, "labels", JSON_OBJECT) : NULL;
    json *notes = meta ? json_want(meta, "annotations", JSON_OBJECT) : NULL;
    buf generate = {0};
    int bad = !labels || !notes || buf_printf(&generate, "%s-", o->pod_id) < 0 ||
              set_str(meta, "namespace", o->namespace) < 0 ||
              set_str(notes, VERSION_ANNOTATION, o->template_version) < 0 ||
              set_str(labels, IMAGE_LABEL, o->pod_id) < 0 ||
              (o->owner && set_str(notes, POD_OWNER_ANNOTATION, o->owner) < 0) ||
              set_str(meta, o->name ? "name" : "generateName", o->name ? o->name : generate.data) < 0;
    buf_free(&generate);
    if (bad)
        goto oom;
    if (o->overrides && merge_overrides(spec, o->overrides, err) < 0)
        goto out;
    json_obj pod;
    json_obj_begin(&pod, out);
    json_obj_string(&pod, "apiVersion", "v1");
    json_obj_string(&pod, "kind", "Pod");
    json_obj_key(&pod, "metadata");
    pod.rc |= json_write_value(out, meta);
    json_obj_key(&pod, "spec");
    pod.rc |= json_write_value(out, spec);
    if (json_obj_end(&pod) < 0) {
        buf_printf(err, WRITE_FAILED, "Pod");
        goto out;
    }
    rc = 0;
    goto out;
oom:
    if (!err->len)
        buf_printf(err, "out of memory");
out:
    json_free(t);
    return rc;
}

int service_from_template(const json *tmpl, const pod_template_opts *o, buf *out, buf *err)
{
    json *t = template_copy(tmpl, "ServiceTemplate", err);
    if (!t)
        return -1;
    json *spec = json_want(t, "spec", JSON_OBJECT);
    json *selector = spec ? json_want(spec, "selector", JSON_OBJECT) : NULL;
    int rc = selector ? set_str(selector, IMAGE_LABEL, o->pod_id) : -1;
    json_obj svc, meta;
    json_obj_begin(&svc, out);
    json_obj_string(&svc, "apiVersion", "v1");
    json_obj_string(&svc, "kind", "Service");
    json_obj_key(&svc, "metadata");
    json_obj_begin(&meta, out);
    json_obj_string(&meta, "name", o->pod_id);
    json_obj_string(&meta, "namespace", o->namespace);
    if (o->owner) {
        json_obj_key(&meta, "annotations");
        json_obj notes;
        json_obj_begin(&notes, out);
        json_obj_string(&notes, POD_OWNER_ANNOTATION, o->owner);
        meta.rc |= json_obj_end(&notes);
    }
    svc.rc |= json_obj_end(&meta);
    json_obj_key(&svc, "spec");
    if (rc == 0)
        svc.rc |= json_write_value(out, spec);
    rc |= json_obj_end(&svc);
    json_free(t);
    if (rc < 0)
        buf_printf(err, WRITE_FAILED, "Service");
    return rc < 0 ? -1 : 0;
}

/* ---- the built-in templates ---- */

#define TOOLS "/wrapper-server-tools"
#define PROBE "{\"exec\":{\"command\":[\"" TOOLS "/grpc-health-probe\",\"-addr\",\"localhost:9446\"]}}"
#define MOUNTS "\"volumeMounts\":[{\"name\":\"wrapper-server-tools\",\"mountPath\":\"" TOOLS "\"}]"

/* Appends fmt with its %s filled by a, b and c JSON-quoted (fmt uses as many
 * as it needs: the rest are ignored by printf). */
static int fill(buf *out, const char *fmt, const char *a, const char *b, const char *c)
{
    buf q[3] = {{0}, {0}, {0}};
    const char *s[3] = {a, b, c};
    int rc = 0;
    for (int i = 0; i < 3; i++)
        rc |= json_write_string(&q[i], s[i], strlen(s[i]));
    if (rc == 0)
        rc = buf_printf(out, fmt, q[0].data, q[1].data, q[2].data);
    for (int i = 0; i < 3; i++)
        buf_free(&q[i]);
    return rc;
}

int pod_base_template_json(const char *name, const char *ns, const char *wrapper_image, buf *out)
{
    return fill(out,
        "{\"apiVersion\":\"v1\",\"kind\":\"PodTemplate\",\"metadata\":{\"name\":%s,\"namespace\":%s},"
        "\"template\":{\"metadata\":{\"annotations\":{\"cluster-autoscaler.kubernetes.io/safe-to-evict\":"
        "\"true\"}},\"spec\":{"
        "\"initContainers\":[{\"name\":\"copy-wrapper-server\",\"image\":%s,"
        "\"imagePullPolicy\":\"IfNotPresent\",\"command\":[\"cp\",\"-a\","
        "\"/home/nonroot/wrapper-server/.\",\"" TOOLS "\"]," MOUNTS "}],"
        "\"containers\":[{\"name\":\"function\",\"image\":\"to-be-replaced\","
        "\"imagePullPolicy\":\"IfNotPresent\",\"command\":[\"" TOOLS "/wrapper-server\"],"
        "\"env\":[{\"name\":\"OTEL_METRICS_EXPORTER\",\"value\":\"prometheus\"},"
        "{\"name\":\"OTEL_TRACES_EXPORTER\",\"value\":\"none\"},"
        "{\"name\":\"OTEL_EXPORTER_PROMETHEUS_HOST\",\"value\":\"0.0.0.0\"}],"
        "\"readinessProbe\":" PROBE ",\"livenessProbe\":" PROBE "," MOUNTS "}],"
        "\"volumes\":[{\"name\":\"wrapper-server-tools\",\"emptyDir\":{}}]}}}",
        name, ns, wrapper_image);
}

int service_base_template_json(const char *name, const char *ns, buf *out)
{
    return fill(out,
        "{\"apiVersion\":\"config.porch.kpt.dev/v1alpha1\",\"kind\":\"ServiceTemplate\","
        "\"metadata\":{\"name\":%s,\"namespace\":%s},\"template\":{\"spec\":{\"type\":\"ClusterIP\","
        "\"selector\":{\"" IMAGE_LABEL "\":\"to-be-replaced\"},"
        "\"ports\":[{\"protocol\":\"TCP\",\"port\":9446,\"targetPort\":9446}]}}}",
        name, ns, "");
}
