/* Unit tests for pod_template: the rendered Pod and Service are read back
 * with libyaml and checked field by field against Porch's template
 * (porch-compat §9), including how each scalar is quoted, the `$` escaping
 * of entrypoint arguments, both probe kinds and the YAML quoting rule. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "krm/rl_edit.h"
#include "kube/pod_template.h"
#include "scoped_buf.h"

typedef struct rendered {
    buf text;
    yaml_document_t docs[3];
    int n;
} rendered;

static const char *const entry[] = {"/usr/local/bin/function", "--flag", "true", "echo $$ $(HOME) $x", "9446"};

static pod_template_opts base_opts(void)
{
    return (pod_template_opts){
        .pod_id = "set-namespace-v041-1-0123abcd", .namespace = "porch-fn-system",
        .image = "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1",
        .wrapper_image = "docker.io/nephio/porch-wrapper-server:latest",
        .entrypoint = entry, .n_entrypoint = 5, .max_request_body_size = 6291456,
        .template_version = "inline-v1", .probe = POD_PROBE_EXEC, .escape_dollar = 1,
    };
}

static void render(const pod_template_opts *o, int which, rendered *r)
{
    SCOPED_BUF err = {0};
    memset(r, 0, sizeof *r);
    cr_assert_eq(pod_template_render(o, which, &r->text, &err), 0, "%s", err.data);
    yaml_parser_t p;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (unsigned char *)r->text.data, r->text.len);
    for (;;) {
        cr_assert_lt(r->n, 3);
        cr_assert(yaml_parser_load(&p, &r->docs[r->n]), "not YAML: %s\n%s", p.problem, r->text.data);
        if (!yaml_document_get_root_node(&r->docs[r->n])) {
            yaml_document_delete(&r->docs[r->n]);
            break;
        }
        r->n++;
    }
    yaml_parser_delete(&p);
}

static void release(rendered *r)
{
    for (int i = 0; i < r->n; i++)
        yaml_document_delete(&r->docs[i]);
    buf_free(&r->text);
}

/* The node at a dotted path ("spec.containers.0.args"); keys may contain
 * '/' but not '.', so label keys are looked up with node_key. 0: none. */
static int node_at(yaml_document_t *d, int id, const char *path)
{
    char *copy = strdup(path), *save = NULL;
    for (char *part = strtok_r(copy, ".", &save); part && id; part = strtok_r(NULL, ".", &save)) {
        yaml_node_t *n = yaml_document_get_node(d, id ? id : 1);
        if (n && n->type == YAML_SEQUENCE_NODE) {
            long i = strtol(part, NULL, 10);
            yaml_node_item_t *items = n->data.sequence.items.start;
            id = i < n->data.sequence.items.top - items ? items[i] : 0;
        } else {
            id = rl_yaml_get(d, id, part);
        }
    }
    free(copy);
    return id;
}

static yaml_node_t *node(yaml_document_t *d, const char *path)
{
    int id = node_at(d, 1, path);
    cr_assert_neq(id, 0, "no %s", path);
    return yaml_document_get_node(d, id);
}

static const char *text(yaml_document_t *d, const char *path)
{
    yaml_node_t *n = node(d, path);
    cr_assert_eq(n->type, YAML_SCALAR_NODE, "%s is not a scalar", path);
    return (const char *)n->data.scalar.value;
}

static void expect_str(yaml_document_t *d, const char *path, const char *want)
{
    cr_assert_str_eq(text(d, path), want, "%s", path);
}

/* A string that YAML would read as something else must be quoted. */
static void expect_quoted(yaml_document_t *d, const char *path, const char *want)
{
    expect_str(d, path, want);
    cr_assert_eq(node(d, path)->data.scalar.style, YAML_DOUBLE_QUOTED_SCALAR_STYLE, "%s not quoted", path);
}

static void expect_int(yaml_document_t *d, const char *path, const char *want)
{
    expect_str(d, path, want);
    cr_assert_eq(node(d, path)->data.scalar.style, YAML_PLAIN_SCALAR_STYLE, "%s is quoted", path);
}

static size_t length(yaml_document_t *d, const char *path)
{
    yaml_node_t *n = node(d, path);
    if (n->type == YAML_SEQUENCE_NODE)
        return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    cr_assert_eq(n->type, YAML_MAPPING_NODE, "%s", path);
    return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

static const char *label(yaml_document_t *d, const char *map_path, const char *key)
{
    int id = rl_yaml_get(d, node_at(d, 1, map_path), key);
    cr_assert_neq(id, 0, "no %s in %s", key, map_path);
    return rl_yaml_text(d, id);
}

Test(pod_template, pod_matches_porch)
{
    pod_template_opts o = base_opts();
    rendered r;
    render(&o, POD_TEMPLATE_POD | POD_TEMPLATE_SERVICE, &r);
    cr_assert_eq(r.n, 2, "%s", r.text.data);
    yaml_document_t *d = &r.docs[0];
    expect_str(d, "apiVersion", "v1");
    expect_str(d, "kind", "Pod");
    expect_str(d, "metadata.generateName", "set-namespace-v041-1-0123abcd-");
    cr_assert_eq(node_at(d, 1, "metadata.name"), 0);
    expect_str(d, "metadata.namespace", "porch-fn-system");
    cr_assert_str_eq(label(d, "metadata.labels", "fn.kpt.dev/image"), "set-namespace-v041-1-0123abcd");
    cr_assert_eq(length(d, "metadata.labels"), 1);
    cr_assert_str_eq(label(d, "metadata.annotations", "cluster-autoscaler.kubernetes.io/safe-to-evict"), "true");
    cr_assert_str_eq(label(d, "metadata.annotations", "fn.kpt.dev/template-version"), "inline-v1");
    cr_assert(strstr(r.text.data, "safe-to-evict: \"true\"\n"), "%s", r.text.data);

    expect_str(d, "spec.initContainers.0.name", "copy-wrapper-server");
    expect_str(d, "spec.initContainers.0.image", "docker.io/nephio/porch-wrapper-server:latest");
    expect_str(d, "spec.initContainers.0.imagePullPolicy", "IfNotPresent");
    cr_assert_eq(length(d, "spec.initContainers.0.command"), 4);
    expect_str(d, "spec.initContainers.0.command.0", "cp");
    expect_str(d, "spec.initContainers.0.command.1", "-a");
    expect_str(d, "spec.initContainers.0.command.2", "/home/nonroot/wrapper-server/.");
    expect_str(d, "spec.initContainers.0.command.3", "/wrapper-server-tools");
    expect_str(d, "spec.initContainers.0.volumeMounts.0.name", "wrapper-server-tools");
    expect_str(d, "spec.initContainers.0.volumeMounts.0.mountPath", "/wrapper-server-tools");

    expect_str(d, "spec.containers.0.name", "function");
    expect_str(d, "spec.containers.0.image", "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1");
    expect_str(d, "spec.containers.0.command.0", "/wrapper-server-tools/wrapper-server");
    cr_assert_eq(length(d, "spec.containers.0.command"), 1);
    expect_str(d, "spec.containers.0.volumeMounts.0.mountPath", "/wrapper-server-tools");
    expect_str(d, "spec.volumes.0.name", "wrapper-server-tools");
    cr_assert_eq(length(d, "spec.volumes.0.emptyDir"), 0);
    release(&r);
}

Test(pod_template, args_env_and_quoting)
{
    pod_template_opts o = base_opts();
    rendered r;
    render(&o, POD_TEMPLATE_POD, &r);
    cr_assert_eq(r.n, 1);
    yaml_document_t *d = &r.docs[0];
    cr_assert_eq(length(d, "spec.containers.0.args"), 10);
    expect_str(d, "spec.containers.0.args.0", "--port");
    expect_quoted(d, "spec.containers.0.args.1", "9446");
    expect_str(d, "spec.containers.0.args.2", "--max-request-body-size");
    expect_quoted(d, "spec.containers.0.args.3", "6291456");
    expect_str(d, "spec.containers.0.args.4", "--");
    expect_str(d, "spec.containers.0.args.5", "/usr/local/bin/function");
    expect_str(d, "spec.containers.0.args.6", "--flag");
    expect_quoted(d, "spec.containers.0.args.7", "true");
    expect_str(d, "spec.containers.0.args.8", "echo $$$ $$(HOME) $x");   /* escaped */
    expect_quoted(d, "spec.containers.0.args.9", "9446");
    static const char *const env[][2] = {{"OTEL_METRICS_EXPORTER", "prometheus"},
                                         {"OTEL_TRACES_EXPORTER", "none"},
                                         {"OTEL_EXPORTER_PROMETHEUS_HOST", "0.0.0.0"}};
    cr_assert_eq(length(d, "spec.containers.0.env"), 3);
    for (int i = 0; i < 3; i++) {
        char path[64];
        snprintf(path, sizeof path, "spec.containers.0.env.%d.name", i);
        expect_str(d, path, env[i][0]);
        snprintf(path, sizeof path, "spec.containers.0.env.%d.value", i);
        expect_str(d, path, env[i][1]);
    }
    expect_quoted(d, "spec.containers.0.env.2.value", "0.0.0.0");
    release(&r);
}

Test(pod_template, dollar_kept_as_porch_when_not_escaping)
{
    pod_template_opts o = base_opts();
    o.escape_dollar = 0;
    rendered r;
    render(&o, POD_TEMPLATE_POD, &r);
    expect_str(&r.docs[0], "spec.containers.0.args.8", "echo $$ $(HOME) $x");
    release(&r);
}

Test(pod_template, dollar_escaping_cases)
{
    static const char *const in[] = {"$", "a$", "$$", "a$$", "$$$", "$(", "$(X)", "$$(X)", "$@", "${X}", "x$)"};
    static const char *const want[] = {"$", "a$", "$$$", "a$$$", "$$$$$", "$$(", "$$(X)", "$$$$(X)",
                                       "$@", "${X}", "x$)"};
    pod_template_opts o = base_opts();
    o.entrypoint = in;
    o.n_entrypoint = sizeof in / sizeof *in;
    rendered r;
    render(&o, POD_TEMPLATE_POD, &r);
    for (size_t i = 0; i < o.n_entrypoint; i++) {
        char path[64];
        snprintf(path, sizeof path, "spec.containers.0.args.%zu", i + 5);
        expect_str(&r.docs[0], path, want[i]);
    }
    release(&r);
}

Test(pod_template, probes)
{
    pod_template_opts o = base_opts();
    rendered r;
    render(&o, POD_TEMPLATE_POD, &r);
    static const char *const probes[] = {"readinessProbe", "livenessProbe"};
    for (int i = 0; i < 2; i++) {
        char path[80];
        snprintf(path, sizeof path, "spec.containers.0.%s.exec.command", probes[i]);
        cr_assert_eq(length(&r.docs[0], path), 3);
        snprintf(path, sizeof path, "spec.containers.0.%s.exec.command.0", probes[i]);
        expect_str(&r.docs[0], path, "/wrapper-server-tools/grpc-health-probe");
        snprintf(path, sizeof path, "spec.containers.0.%s.exec.command.1", probes[i]);
        expect_str(&r.docs[0], path, "-addr");
        snprintf(path, sizeof path, "spec.containers.0.%s.exec.command.2", probes[i]);
        expect_str(&r.docs[0], path, "localhost:9446");
    }
    release(&r);
    o.probe = POD_PROBE_GRPC;
    render(&o, POD_TEMPLATE_POD, &r);
    for (int i = 0; i < 2; i++) {
        char path[80];
        snprintf(path, sizeof path, "spec.containers.0.%s", probes[i]);
        cr_assert_eq(length(&r.docs[0], path), 1);
        snprintf(path, sizeof path, "spec.containers.0.%s.grpc.port", probes[i]);
        expect_int(&r.docs[0], path, "9446");
    }
    release(&r);
}

Test(pod_template, fixed_name)
{
    pod_template_opts o = base_opts();
    o.name = o.pod_id;
    rendered r;
    render(&o, POD_TEMPLATE_POD, &r);
    expect_str(&r.docs[0], "metadata.name", "set-namespace-v041-1-0123abcd");
    cr_assert_eq(node_at(&r.docs[0], 1, "metadata.generateName"), 0);
    release(&r);
}

Test(pod_template, service)
{
    pod_template_opts o = base_opts();
    rendered r;
    render(&o, POD_TEMPLATE_SERVICE, &r);
    cr_assert_eq(r.n, 1);
    yaml_document_t *d = &r.docs[0];
    expect_str(d, "apiVersion", "v1");
    expect_str(d, "kind", "Service");
    expect_str(d, "metadata.name", "set-namespace-v041-1-0123abcd");
    expect_str(d, "metadata.namespace", "porch-fn-system");
    cr_assert_eq(length(d, "metadata"), 2);
    expect_str(d, "spec.type", "ClusterIP");
    cr_assert_str_eq(label(d, "spec.selector", "fn.kpt.dev/image"), "set-namespace-v041-1-0123abcd");
    cr_assert_eq(length(d, "spec.ports"), 1);
    expect_str(d, "spec.ports.0.protocol", "TCP");
    expect_int(d, "spec.ports.0.port", "9446");
    expect_int(d, "spec.ports.0.targetPort", "9446");
    release(&r);
}

/* A serve replica names itself on what it makes (pod_owner); without one,
 * the objects are Porch's exactly. */
Test(pod_template, owner_annotated_on_pod_and_service)
{
    pod_template_opts o = base_opts();
    o.owner = "runner-7f9c-abcde";
    rendered r;
    render(&o, POD_TEMPLATE_POD | POD_TEMPLATE_SERVICE, &r);
    cr_assert_eq(r.n, 2);
    cr_assert_str_eq(label(&r.docs[0], "metadata.annotations", "fn.kpt.dev/owner"), "runner-7f9c-abcde");
    cr_assert_eq(length(&r.docs[0], "metadata.annotations"), 3);
    cr_assert_str_eq(label(&r.docs[1], "metadata.annotations", "fn.kpt.dev/owner"), "runner-7f9c-abcde");
    cr_assert_eq(length(&r.docs[1], "metadata.annotations"), 1);
    release(&r);
    o.owner = NULL;
    render(&o, POD_TEMPLATE_POD | POD_TEMPLATE_SERVICE, &r);
    cr_assert_eq(length(&r.docs[0], "metadata.annotations"), 2);
    cr_assert_eq(node_at(&r.docs[1], 1, "metadata.annotations"), 0);
    release(&r);
}

Test(pod_template, empty_entrypoint_and_odd_text)
{
    static const char *const odd[] = {"", "a: b", "#x", "line\nbreak", "ünï", "- x", "~", "null", "Yes",
                                      "2024-01-01", "0x1F", "1e3", ".inf", "<<", "@x", "'q'", "\"q\"", "*a"};
    pod_template_opts o = base_opts();
    o.n_entrypoint = 0;
    rendered r;
    render(&o, POD_TEMPLATE_POD, &r);
    cr_assert_eq(length(&r.docs[0], "spec.containers.0.args"), 5);
    expect_str(&r.docs[0], "spec.containers.0.args.4", "--");
    release(&r);
    o.entrypoint = odd;
    o.n_entrypoint = sizeof odd / sizeof *odd;
    render(&o, POD_TEMPLATE_POD, &r);
    for (size_t i = 0; i < o.n_entrypoint; i++) {
        char path[64];
        snprintf(path, sizeof path, "spec.containers.0.args.%zu", i + 5);
        yaml_node_t *n = node(&r.docs[0], path);
        cr_assert_str_eq((char *)n->data.scalar.value, odd[i]);
        cr_assert_neq(n->data.scalar.style, YAML_PLAIN_SCALAR_STYLE, "%s written plain", odd[i]);
    }
    release(&r);
}

Test(pod_template, refuses_invalid_utf8)
{
    static const char *const bad[] = {"\xff"};
    pod_template_opts o = base_opts();
    o.entrypoint = bad;
    o.n_entrypoint = 1;
    buf out = {0};
    SCOPED_BUF err = {0};
    cr_assert_eq(pod_template_render(&o, POD_TEMPLATE_POD, &out, &err), -1);
    cr_assert(strstr(err.data, "not valid UTF-8"), "%s", err.data);
    buf_free(&out);
}

Test(pod_template, plain_rule)
{
    static const char *const plain[] = {"a", "cp", "-a", "--port", "--", "/wrapper-server-tools",
                                        "localhost:9446", "inline-v1", "IfNotPresent", "_x", "yess"};
    static const char *const quoted[] = {"", "true", "True", "FALSE", "yes", "No", "on", "OFF", "y",
                                         "N", "null", "NULL", "~", "9446", "-1", "+1", "0.0.0.0",
                                         ".5", "1e3", "2024-01-01", "-", "- a", "<<", "=", "-.inf",
                                         "*a", "&a", "!a", "%a", "@a", "`a", "'a'", "\"a\"", "{a}",
                                         "[a]", "#a", "|a", ">a", "?a", ",a", ":a"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++)
        cr_assert(pod_template_plain_ok(plain[i]), "\"%s\" should be plain", plain[i]);
    for (size_t i = 0; i < sizeof quoted / sizeof *quoted; i++)
        cr_assert_not(pod_template_plain_ok(quoted[i]), "\"%s\" should be quoted", quoted[i]);
}
