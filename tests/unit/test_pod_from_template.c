/* Unit tests for pod_from_template and json_edit: a Pod and a Service
 * built from base templates (the built-in ones, and edited ones with fields
 * of their own), Porch's patches and refusals, and the tree editing they
 * stand on. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/json_edit.h"
#include "kube/pod_from_template.h"

static const char *const entry[] = {"/fn", "echo $$ $(HOME) $x"};

static pod_template_opts opts(void)
{
    return (pod_template_opts){
        .pod_id = "fn-v1-1-0123abcd", .namespace = "porch-fn-system", .image = "example.com/fn:v1",
        .wrapper_image = "example.com/wrapper:v2", .entrypoint = entry, .n_entrypoint = 2,
        .max_request_body_size = 6291456, .template_version = "42", .escape_dollar = 1,
    };
}

static json *parse(const char *text)
{
    buf err = {0};
    json *v = json_parse(text, strlen(text), &err);
    cr_assert(v, "%s: %s", text, err.data);
    buf_free(&err);
    return v;
}

/* The pod built from template text t, parsed; NULL with the error in err. */
static json *pod_from(const char *t, const pod_template_opts *o, buf *err)
{
    json *tmpl = parse(t);
    buf out = {0};
    int rc = pod_from_template(tmpl, o, &out, err);
    json_free(tmpl);
    json *pod = rc == 0 ? parse(out.data) : NULL;
    buf_free(&out);
    return pod;
}

static const char *str_at(const json *v, const char *const *path, size_t n)
{
    for (size_t i = 0; i < n && v; i++)
        v = path[i][0] == '#' ? (v->type == JSON_ARRAY && (size_t)atoi(path[i] + 1) < v->len
                                     ? v->items[atoi(path[i] + 1)] : NULL)
                              : json_get(v, path[i]);
    return json_str(v);
}
#define AT(v, ...) str_at(v, (const char *const[]){__VA_ARGS__}, \
                          sizeof (const char *const[]){__VA_ARGS__} / sizeof(const char *))

Test(pod_from_template, built_in_template_gives_porchs_pod)
{
    buf t = {0}, err = {0};
    cr_assert_eq(pod_base_template_json("base-pod-template", "porch-fn-system", "w:1", &t), 0);
    json *tmpl = parse(t.data);
    cr_assert_str_eq(AT(tmpl, "kind"), "PodTemplate");
    cr_assert_str_eq(AT(tmpl, "metadata", "name"), "base-pod-template");
    cr_assert_str_eq(AT(tmpl, "template", "spec", "initContainers", "#0", "image"), "w:1");
    json_free(tmpl);
    pod_template_opts o = opts();
    json *pod = pod_from(t.data, &o, &err);
    cr_assert(pod, "%s", err.data);
    cr_assert_str_eq(AT(pod, "kind"), "Pod");
    cr_assert_str_eq(AT(pod, "metadata", "generateName"), "fn-v1-1-0123abcd-");
    cr_assert_str_eq(AT(pod, "metadata", "namespace"), "porch-fn-system");
    cr_assert_str_eq(AT(pod, "metadata", "labels", "fn.kpt.dev/image"), "fn-v1-1-0123abcd");
    cr_assert_str_eq(AT(pod, "metadata", "annotations", "fn.kpt.dev/template-version"), "42");
    cr_assert_str_eq(AT(pod, "metadata", "annotations", "cluster-autoscaler.kubernetes.io/safe-to-evict"),
                     "true");
    cr_assert_null(json_get(json_get(json_get(pod, "metadata"), "annotations"), "fn.kpt.dev/owner"));
    cr_assert_str_eq(AT(pod, "spec", "initContainers", "#0", "image"), "example.com/wrapper:v2");
    cr_assert_str_eq(AT(pod, "spec", "containers", "#0", "image"), "example.com/fn:v1");
    const json *args = json_get(json_get(json_get(pod, "spec"), "containers")->items[0], "args");
    const char *want[] = {"--port", "9446", "--max-request-body-size", "6291456", "--", "/fn",
                          "echo $$$ $$(HOME) $x"};   /* Kubernetes gives the function its own text */
    cr_assert_eq(args->len, 7);
    for (size_t i = 0; i < 7; i++)
        cr_assert_str_eq(json_str(args->items[i]), want[i]);
    cr_assert_str_eq(AT(pod, "spec", "containers", "#0", "readinessProbe", "exec", "command", "#0"),
                     "/wrapper-server-tools/grpc-health-probe");
    json_free(pod);
    buf_free(&t);
    buf_free(&err);
}

Test(pod_from_template, the_templates_own_fields_are_kept)
{
    const char *t = "{\"metadata\":{\"name\":\"base-pod-template\",\"resourceVersion\":\"9\"},"
                    "\"template\":{\"metadata\":{\"name\":\"ignored\",\"labels\":{\"team\":\"a\","
                    "\"fn.kpt.dev/image\":\"forged\"}},\"spec\":{\"nodeSelector\":{\"disk\":\"ssd\"},"
                    "\"priority\":1000,\"initContainers\":[{\"name\":\"copy\",\"image\":\"x\"}],"
                    "\"containers\":[{\"name\":\"side\"},{\"name\":\"function\",\"args\":[\"--v\"],"
                    "\"env\":[{\"name\":\"A\",\"value\":\"\\u0000b\"}]}]}}}";
    buf err = {0};
    pod_template_opts o = opts();
    o.name = "fixed";
    o.owner = "me";
    json *pod = pod_from(t, &o, &err);
    cr_assert(pod, "%s", err.data);
    cr_assert_str_eq(AT(pod, "metadata", "name"), "fixed");
    cr_assert_null(json_get(json_get(pod, "metadata"), "generateName"));
    cr_assert_str_eq(AT(pod, "metadata", "labels", "team"), "a");
    cr_assert_str_eq(AT(pod, "metadata", "labels", "fn.kpt.dev/image"), "fn-v1-1-0123abcd");
    cr_assert_str_eq(AT(pod, "metadata", "annotations", "fn.kpt.dev/owner"), "me");
    cr_assert_str_eq(AT(pod, "spec", "nodeSelector", "disk"), "ssd");
    cr_assert_eq(json_get(json_get(pod, "spec"), "priority")->number, 1000);
    cr_assert_str_eq(AT(pod, "spec", "containers", "#0", "name"), "side");
    cr_assert_null(json_get(json_get(json_get(pod, "spec"), "containers")->items[0], "image"));
    cr_assert_str_eq(AT(pod, "spec", "containers", "#1", "args", "#0"), "--v");
    cr_assert_str_eq(AT(pod, "spec", "containers", "#1", "args", "#1"), "--port");
    const json *value = json_get(json_get(json_get(json_get(pod, "spec"), "containers")->items[1],
                                          "env")->items[0], "value");
    cr_assert_eq(value->len, 2);
    cr_assert_eq(memcmp(value->str, "\0b", 2), 0);   /* kept byte for byte */
    json_free(pod);
    buf_free(&err);
}

Test(pod_from_template, porchs_refusals)
{
    static const struct { const char *tmpl, *why; } cases[] = {
        {"{\"template\":{\"spec\":{\"initContainers\":[{}],\"containers\":[{\"name\":\"fn\"}]}}}",
         "failed to find the function container in the pod"},
        {"{\"template\":{\"spec\":{\"containers\":[{\"name\":\"function\"}]}}}",
         "the PodTemplate has no init container"},
        {"{\"template\":{\"spec\":{\"initContainers\":[],\"containers\":[{\"name\":\"function\"}]}}}",
         "the PodTemplate has no init container"},
        {"{\"metadata\":{}}", "the PodTemplate has no template"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf err = {0};
        pod_template_opts o = opts();
        cr_assert_null(pod_from(cases[i].tmpl, &o, &err), "%s", cases[i].tmpl);
        cr_assert(err.data && strstr(err.data, cases[i].why), "%s: %s", cases[i].tmpl, err.data);
        buf_free(&err);
    }
}

Test(pod_from_template, service_keeps_the_spec_and_sets_the_selector)
{
    buf t = {0}, out = {0}, err = {0};
    cr_assert_eq(service_base_template_json("base-service-template", "ns", &t), 0);
    json *tmpl = parse(t.data);
    cr_assert_str_eq(AT(tmpl, "apiVersion"), "config.porch.kpt.dev/v1alpha1");
    pod_template_opts o = opts();
    o.owner = "me";
    cr_assert_eq(service_from_template(tmpl, &o, &out, &err), 0, "%s", err.data);
    cr_assert_str_eq(out.data, "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":"
                     "\"fn-v1-1-0123abcd\",\"namespace\":\"porch-fn-system\",\"annotations\":"
                     "{\"fn.kpt.dev/owner\":\"me\"}},\"spec\":{\"type\":\"ClusterIP\",\"selector\":"
                     "{\"fn.kpt.dev/image\":\"fn-v1-1-0123abcd\"},\"ports\":[{\"protocol\":\"TCP\","
                     "\"port\":9446,\"targetPort\":9446}]}}");
    json_free(tmpl);
    buf_free(&t);
    buf_free(&out);
    buf_free(&err);
}

Test(json_edit, set_replaces_every_member_of_the_name)
{
    json *v = parse("{\"a\":1,\"b\":2,\"a\":3}");
    cr_assert_eq(json_set(v, "a", json_new_string("x")), 0);
    cr_assert_eq(json_set(v, "c", json_new(JSON_NULL)), 0);
    cr_assert_eq(json_push(json_want(v, "d", JSON_ARRAY), json_new(JSON_TRUE)), 0);
    cr_assert_eq(json_push(json_want(v, "b", JSON_ARRAY), json_new(JSON_FALSE)), 0);  /* 2 replaced */
    cr_assert_eq(json_set(v, "d", NULL), -1);
    cr_assert_eq(json_push(v, json_new(JSON_NULL)), -1);   /* not an array: value freed */
    buf out = {0};
    cr_assert_eq(json_write_value(&out, v), 0);
    cr_assert_str_eq(out.data, "{\"a\":\"x\",\"b\":[false],\"c\":null,\"d\":[true]}");
    json *c = json_copy(v);
    buf again = {0};
    cr_assert_eq(json_write_value(&again, c), 0);
    cr_assert_str_eq(again.data, out.data);
    json_free(c);
    json_free(v);
    buf_free(&out);
    buf_free(&again);
}

Test(json_edit, writing_escapes_and_numbers)
{
    json *v = parse("[\"a\\u0000\\n<\",-0.5,9446,1e21,{\"k\\\"\":{}}]");
    buf out = {0};
    cr_assert_eq(json_write_value(&out, v), 0);
    cr_assert_str_eq(out.data, "[\"a\\u0000\\n\\u003c\",-0.5,9446,1e+21,{\"k\\\"\":{}}]");
    json_free(v);
    json *inf = parse("[1e999]");   /* read as infinity: JSON cannot write it */
    cr_assert_eq(json_write_value(&out, inf), -1);
    json_free(inf);
    buf_free(&out);
}

Test(pod_from_template, pull_secret_named_once)
{
    const char *t = "{\"template\":{\"spec\":{\"initContainers\":[{}],\"containers\":[{\"name\":"
                    "\"function\"}],\"imagePullSecrets\":[{\"name\":\"other\"}]}}}";
    buf err = {0};
    pod_template_opts o = opts();
    o.pull_secret = "auth-secret";
    json *pod = pod_from(t, &o, &err);
    cr_assert(pod, "%s", err.data);
    const json *list = json_get(json_get(pod, "spec"), "imagePullSecrets");
    cr_assert_eq(list->len, 2);
    cr_assert_str_eq(AT(pod, "spec", "imagePullSecrets", "#1", "name"), "auth-secret");
    json_free(pod);
    /* named already: kept as it is */
    const char *named = "{\"template\":{\"spec\":{\"initContainers\":[{}],\"containers\":[{\"name\":"
                        "\"function\"}],\"imagePullSecrets\":[{\"name\":\"auth-secret\"}]}}}";
    pod = pod_from(named, &o, &err);
    cr_assert_eq(json_get(json_get(pod, "spec"), "imagePullSecrets")->len, 1);
    json_free(pod);
    buf_free(&err);
}

Test(pod_from_template, template_overrides_merged_as_porch)
{
    const char *t = "{\"template\":{\"spec\":{\"serviceAccountName\":\"base\",\"securityContext\":"
                    "{\"fsGroup\":1},\"initContainers\":[{\"name\":\"copy\",\"resources\":{\"limits\":"
                    "{\"cpu\":\"1\"}}}],\"containers\":[{\"name\":\"function\",\"env\":[{\"name\":\"A\"}],"
                    "\"resources\":{\"requests\":{\"cpu\":\"1\"},\"limits\":{\"cpu\":\"2\"}}}]}}}";
    static const struct { const char *ov, *field, *want; } cases[] = {
        /* an empty serviceAccountName keeps the template's, as Porch */
        {"{\"serviceAccountName\":\"\"}", "sa", "base"},
        {"{\"serviceAccountName\":\"x\"}", "sa", "x"},
        {"{\"securityContext\":{\"runAsUser\":7}}", "sc", "{\"runAsUser\":7}"},
        {"{\"securityContext\":null}", "sc", "{\"fsGroup\":1}"},
        /* requests only: the limits stay */
        {"{\"container\":{\"resources\":{\"requests\":{\"cpu\":\"3\"}}}}", "res",
         "{\"requests\":{\"cpu\":\"3\"},\"limits\":{\"cpu\":\"2\"}}"},
        {"{\"container\":{\"env\":[]}}", "env", "[]"},   /* Go's non-nil empty list */
        {"{\"container\":{\"envFrom\":[{\"secretRef\":{\"name\":\"s\"}}]}}", "envFrom",
         "[{\"secretRef\":{\"name\":\"s\"}}]"},
        {"{\"initContainer\":{\"resources\":{\"limits\":null,\"requests\":{\"memory\":\"1Mi\"}}}}", "init",
         "{\"limits\":{\"cpu\":\"1\"},\"requests\":{\"memory\":\"1Mi\"}}"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf err = {0}, got = {0};
        pod_template_opts o = opts();
        o.overrides = cases[i].ov;
        json *pod = pod_from(t, &o, &err);
        cr_assert(pod, "%s: %s", cases[i].ov, err.data);
        const json *spec = json_get(pod, "spec");
        const json *fn = json_get(spec, "containers")->items[0];
        const char *f = cases[i].field;
        const json *v = !strcmp(f, "sa") ? json_get(spec, "serviceAccountName")
                      : !strcmp(f, "sc") ? json_get(spec, "securityContext")
                      : !strcmp(f, "res") ? json_get(fn, "resources")
                      : !strcmp(f, "init") ? json_get(json_get(spec, "initContainers")->items[0], "resources")
                      : json_get(fn, f);
        if (v->type == JSON_STRING)
            buf_append_str(&got, v->str);
        else
            json_write_value(&got, v);
        cr_assert_str_eq(got.data, cases[i].want, "%s", cases[i].ov);
        json_free(pod);
        buf_free(&err);
        buf_free(&got);
    }
    /* the first container is not an object (the function is the second):
     * the overrides have nowhere to go, and say so */
    {
        buf err = {0};
        pod_template_opts o = opts();
        o.overrides = "{\"container\":{\"env\":[]}}";
        cr_assert_null(pod_from("{\"template\":{\"spec\":{\"initContainers\":[{}],\"containers\":"
                                "[\"x\",{\"name\":\"function\"}]}}}", &o, &err));
        cr_assert(err.data && strstr(err.data, "templateOverrides.container has no container"), "%s",
                  err.data);
        buf_free(&err);
    }
    /* not JSON: refused, naming why */
    buf err = {0};
    pod_template_opts o = opts();
    o.overrides = "{";
    cr_assert_null(pod_from(t, &o, &err));
    cr_assert(err.data && strstr(err.data, "offset"), "%s", err.data);
    buf_free(&err);
}
