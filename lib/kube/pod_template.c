/* pod_template: renders a function's Pod and Service; see pod_template.h.
 * The first half is a small writer over libyaml's event API (mappings,
 * sequences, strings quoted only when needed); the second half is the
 * objects, one function per part, in the order Kubernetes prints them. */
#include "kube/pod_template.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "kube/pod_owner.h"

#define TOOLS_DIR "/wrapper-server-tools"
#define TOOLS_VOLUME "wrapper-server-tools"
#define IMAGE_LABEL "fn.kpt.dev/image"

/* ---- YAML writer ---- */

typedef struct yw {
    yaml_emitter_t em;
    int failed;       /* set on the first error; later events are dropped */
    int bad_text;     /* the error was a value libyaml refused (not UTF-8) */
} yw;

static int write_to_buf(void *data, unsigned char *bytes, size_t size)
{
    return buf_append(data, bytes, size) == 0;
}

/* Emits an event built by a libyaml initializer (ok: its return value). */
static void put(yw *w, yaml_event_t *ev, int ok)
{
    if (!ok) {
        w->failed = w->bad_text = 1;
        return;
    }
    if (w->failed)
        yaml_event_delete(ev);
    else if (!yaml_emitter_emit(&w->em, ev))
        w->failed = 1;
}

int pod_template_plain_ok(const char *s)
{
    static const char *const words[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"};
    char c = s[0];
    int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    int flag = c == '-' && (s[1] == '-' || (s[1] >= 'a' && s[1] <= 'z') || (s[1] >= 'A' && s[1] <= 'Z'));
    if (!letter && !flag && c != '/' && c != '_')
        return 0;   /* digits, '.', '+', '~', '<', '=', indicators, "" */
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (!strcasecmp(s, words[i]))
            return 0;
    return 1;
}

static void str(yw *w, const char *s)
{
    yaml_event_t ev;
    yaml_scalar_style_t style = pod_template_plain_ok(s) ? YAML_ANY_SCALAR_STYLE
                                                         : YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    put(w, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s),
                                             1, 1, style));
}

static void num(yw *w, unsigned long long n)
{
    char text[24];
    yaml_event_t ev;
    snprintf(text, sizeof text, "%llu", n);
    put(w, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)text, (int)strlen(text),
                                             1, 0, YAML_PLAIN_SCALAR_STYLE));
}

static void map_begin(yw *w)
{
    yaml_event_t ev;
    put(w, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(yw *w)
{
    yaml_event_t ev;
    put(w, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void seq_begin(yw *w)
{
    yaml_event_t ev;
    put(w, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE));
}

static void seq_end(yw *w)
{
    yaml_event_t ev;
    put(w, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void empty_map(yw *w)
{
    yaml_event_t ev;
    put(w, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_FLOW_MAPPING_STYLE));
    map_end(w);
}

static void kv(yw *w, const char *key, const char *value)
{
    str(w, key);
    str(w, value);
}

static void kv_num(yw *w, const char *key, unsigned long long value)
{
    str(w, key);
    num(w, value);
}

static void str_seq(yw *w, const char *const *items, size_t n)
{
    seq_begin(w);
    for (size_t i = 0; i < n; i++)
        str(w, items[i]);
    seq_end(w);
}

static void doc_begin(yw *w)
{
    yaml_event_t ev;
    put(w, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
}

static void doc_end(yw *w)
{
    yaml_event_t ev;
    put(w, &ev, yaml_document_end_event_initialize(&ev, 1));
}

/* ---- the Pod ---- */

static void pod_metadata(yw *w, const pod_template_opts *o, const char *generate_name)
{
    str(w, "metadata");
    map_begin(w);
    if (o->name)
        kv(w, "name", o->name);
    else
        kv(w, "generateName", generate_name);
    kv(w, "namespace", o->namespace);
    str(w, "labels");
    map_begin(w);
    kv(w, IMAGE_LABEL, o->pod_id);
    map_end(w);
    str(w, "annotations");
    map_begin(w);
    kv(w, "cluster-autoscaler.kubernetes.io/safe-to-evict", "true");
    kv(w, "fn.kpt.dev/template-version", o->template_version);
    if (o->owner)
        kv(w, POD_OWNER_ANNOTATION, o->owner);
    map_end(w);
    map_end(w);
}

static void tools_mount(yw *w)
{
    str(w, "volumeMounts");
    seq_begin(w);
    map_begin(w);
    kv(w, "name", TOOLS_VOLUME);
    kv(w, "mountPath", TOOLS_DIR);
    map_end(w);
    seq_end(w);
}

static void init_container(yw *w, const pod_template_opts *o)
{
    static const char *const cp[] = {"cp", "-a", "/home/nonroot/wrapper-server/.", TOOLS_DIR};
    str(w, "initContainers");
    seq_begin(w);
    map_begin(w);
    kv(w, "name", "copy-wrapper-server");
    kv(w, "image", o->wrapper_image);
    kv(w, "imagePullPolicy", "IfNotPresent");
    str(w, "command");
    str_seq(w, cp, 4);
    tools_mount(w);
    map_end(w);
    seq_end(w);
}

int pod_template_arg(const char *arg, int escape_dollar, buf *out)
{
    if (!escape_dollar || (!strstr(arg, "$$") && !strstr(arg, "$(")))
        return buf_append_str(out, arg);
    int rc = 0;
    for (const char *c = arg; *c; c++)
        rc |= c[0] == '$' && (c[1] == '$' || c[1] == '(') ? buf_append_str(out, "$$")
                                                          : buf_append(out, c, 1);
    return rc;
}

static void entrypoint_arg(yw *w, const char *arg, int escape_dollar, int *oom)
{
    buf b = {0};
    *oom |= pod_template_arg(arg, escape_dollar, &b);
    str(w, b.data ? b.data : "");
    buf_free(&b);
}

static void function_args(yw *w, const pod_template_opts *o, int *oom)
{
    char port[8], size[24];
    snprintf(port, sizeof port, "%d", POD_WRAPPER_PORT);
    snprintf(size, sizeof size, "%llu", o->max_request_body_size);
    const char *const fixed[] = {"--port", port, "--max-request-body-size", size, "--"};
    str(w, "args");
    seq_begin(w);
    for (size_t i = 0; i < 5; i++)
        str(w, fixed[i]);
    for (size_t i = 0; i < o->n_entrypoint; i++)
        entrypoint_arg(w, o->entrypoint[i], o->escape_dollar, oom);
    seq_end(w);
}

static void otel_env(yw *w)
{
    static const char *const vars[][2] = {
        {"OTEL_METRICS_EXPORTER", "prometheus"},
        {"OTEL_TRACES_EXPORTER", "none"},
        {"OTEL_EXPORTER_PROMETHEUS_HOST", "0.0.0.0"},
    };
    str(w, "env");
    seq_begin(w);
    for (size_t i = 0; i < 3; i++) {
        map_begin(w);
        kv(w, "name", vars[i][0]);
        kv(w, "value", vars[i][1]);
        map_end(w);
    }
    seq_end(w);
}

static void probe(yw *w, const char *key, pod_probe kind)
{
    static const char *const exec[] = {TOOLS_DIR "/grpc-health-probe", "-addr", "localhost:9446"};
    str(w, key);
    map_begin(w);
    if (kind == POD_PROBE_GRPC) {
        str(w, "grpc");
        map_begin(w);
        kv_num(w, "port", POD_WRAPPER_PORT);
        map_end(w);
    } else {
        str(w, "exec");
        map_begin(w);
        str(w, "command");
        str_seq(w, exec, 3);
        map_end(w);
    }
    map_end(w);
}

static void function_container(yw *w, const pod_template_opts *o, int *oom)
{
    static const char *const command[] = {TOOLS_DIR "/wrapper-server"};
    str(w, "containers");
    seq_begin(w);
    map_begin(w);
    kv(w, "name", "function");
    kv(w, "image", o->image);
    kv(w, "imagePullPolicy", "IfNotPresent");
    str(w, "command");
    str_seq(w, command, 1);
    function_args(w, o, oom);
    otel_env(w);
    probe(w, "readinessProbe", o->probe);
    probe(w, "livenessProbe", o->probe);
    tools_mount(w);
    map_end(w);
    seq_end(w);
}

static void volumes(yw *w)
{
    str(w, "volumes");
    seq_begin(w);
    map_begin(w);
    kv(w, "name", TOOLS_VOLUME);
    str(w, "emptyDir");
    empty_map(w);
    map_end(w);
    seq_end(w);
}

static void pod_doc(yw *w, const pod_template_opts *o, int *oom)
{
    buf generate_name = {0};
    *oom |= buf_printf(&generate_name, "%s-", o->pod_id);
    doc_begin(w);
    map_begin(w);
    kv(w, "apiVersion", "v1");
    kv(w, "kind", "Pod");
    pod_metadata(w, o, generate_name.data ? generate_name.data : "");
    str(w, "spec");
    map_begin(w);
    init_container(w, o);
    function_container(w, o, oom);
    volumes(w);
    if (o->pull_secret) {
        str(w, "imagePullSecrets");
        seq_begin(w);
        map_begin(w);
        kv(w, "name", o->pull_secret);
        map_end(w);
        seq_end(w);
    }
    map_end(w);
    map_end(w);
    doc_end(w);
    buf_free(&generate_name);
}

/* ---- the Service ---- */

static void service_doc(yw *w, const pod_template_opts *o)
{
    doc_begin(w);
    map_begin(w);
    kv(w, "apiVersion", "v1");
    kv(w, "kind", "Service");
    str(w, "metadata");
    map_begin(w);
    kv(w, "name", o->pod_id);
    kv(w, "namespace", o->namespace);
    if (o->owner) {
        str(w, "annotations");
        map_begin(w);
        kv(w, POD_OWNER_ANNOTATION, o->owner);
        map_end(w);
    }
    map_end(w);
    str(w, "spec");
    map_begin(w);
    kv(w, "type", "ClusterIP");
    str(w, "selector");
    map_begin(w);
    kv(w, IMAGE_LABEL, o->pod_id);
    map_end(w);
    str(w, "ports");
    seq_begin(w);
    map_begin(w);
    kv(w, "protocol", "TCP");
    kv_num(w, "port", POD_WRAPPER_PORT);
    kv_num(w, "targetPort", POD_WRAPPER_PORT);
    map_end(w);
    seq_end(w);
    map_end(w);
    map_end(w);
    doc_end(w);
}

static void stream_event(yw *w, int start)
{
    yaml_event_t ev;
    if (start)
        put(w, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
    else
        put(w, &ev, yaml_stream_end_event_initialize(&ev));
}

int pod_template_render(const pod_template_opts *o, int which, buf *out, buf *err)
{
    yw w = {0};
    int oom = 0;
    if (!yaml_emitter_initialize(&w.em))
        return buf_fail(err, "out of memory");
    yaml_emitter_set_output(&w.em, write_to_buf, out);
    yaml_emitter_set_unicode(&w.em, 1);
    yaml_emitter_set_width(&w.em, -1);       /* never fold long arguments */
    stream_event(&w, 1);
    if (which & POD_TEMPLATE_POD)
        pod_doc(&w, o, &oom);
    if (which & POD_TEMPLATE_SERVICE)
        service_doc(&w, o);
    stream_event(&w, 0);
    if (!w.failed && !yaml_emitter_flush(&w.em))
        w.failed = 1;
    int rc = 0;
    if (w.failed || oom) {
        const char *why = oom ? "out of memory"
                          : w.bad_text ? "a value is not valid UTF-8 text"
                          : w.em.problem ? w.em.problem : "out of memory";
        rc = buf_fail(err, "cannot write YAML: %s", why);
    }
    yaml_emitter_delete(&w.em);
    return rc;
}
