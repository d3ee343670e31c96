/* fnconfig: reads Porch FunctionConfig objects from YAML files and answers
 * the runner's two questions about a request image: is there a local binary
 * for it, and which pod parameters apply. See fnconfig.h.
 *
 * Why strict: the same objects are applied to clusters, where the API server
 * rejects unknown fields and wrong types. Accepting here what the cluster
 * rejects (or silently dropping a misspelt field) would make a configuration
 * behave differently in the two places, so every such problem is an error
 * naming the file, the document and the field.
 *
 * How: each document is loaded with libyaml's document API (files are small
 * and capped at FNCONFIG_MAX_FILE_SIZE) and walked over the known fields
 * only; opaque parts (templateOverrides' contents, metadata besides name and
 * namespace, status) are not visited, so aliases and deep nesting there cost
 * nothing. Plain scalars are typed as kubectl types them (YAML 1.1, as
 * sigs.k8s.io/yaml does): `yes`, `on`, `true` are booleans, `1.0` a number.
 *
 * Matching follows Porch's FunctionConfigStore (binary executor: short name,
 * repository prefix, exact tag) and pod cache manager (pod parameters keyed
 * by metadata.name), with the prefix comparison made path-aware; see
 * prefix_accepts. */
#include "krm/fnconfig.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "core/beneath.h"
#include "core/duration.h"
#include "core/fdio.h"
#include "core/numparse.h"
#include "krm/yaml_json.h"
#include "krm/yaml_load.h"
#include "krm/yaml_node.h"

#define FC_API_VERSION "config.porch.kpt.dev/v1alpha1"
#define FC_KIND "FunctionConfig"

enum { PATH_TEXT_MAX = 256 };   /* field paths in messages, e.g. "spec.podExecutor.tags[3]" */

/* ------------------------------------------------------------------------ */
/* Memory                                                                    */

static void strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void entry_free(fnconfig_entry *e)
{
    free(e->file);
    free(e->name);
    free(e->namespace);
    free(e->image);
    strv_free(e->prefixes, e->n_prefixes);
    strv_free(e->binary.tags, e->binary.n_tags);
    free(e->binary.path);
    free(e->binary.written);
    free(e->binary.beneath);
    strv_free(e->pod.tags, e->pod.n_tags);
    free(e->pod.service_account);
    free(e->pod.overrides);
    strv_free(e->go.tags, e->go.n_tags);
    free(e->go.id);
    memset(e, 0, sizeof *e);
}

/* Drops entries past the first n (used to undo a failed load). */
static void truncate_entries(fnconfig *c, size_t n)
{
    while (c->n > n)
        entry_free(&c->entries[--c->n]);
}

void fnconfig_free(fnconfig *c)
{
    truncate_entries(c, 0);
    free(c->entries);
    c->entries = NULL;
    strset_free(&c->names);
    strset_free(&c->images);
}

/* The sets may keep names of entries a failed parse dropped again: they
 * only tell where no duplicate can be (check_duplicates). */
static int append_entry(fnconfig *c, const fnconfig_entry *e)
{
    if (strset_add(&c->names, e->name) < 0 || strset_add(&c->images, e->image) < 0)
        return -1;
    if ((c->n & (c->n - 1)) == 0) {   /* 0, 1, 2, 4, ...: full, grow to double */
        size_t cap = c->n ? c->n * 2 : 1;
        fnconfig_entry *p = realloc(c->entries, cap * sizeof *p);
        if (!p)
            return -1;
        c->entries = p;
    }
    c->entries[c->n++] = *e;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

/* What every message about one document starts with. */
typedef struct doc_ctx {
    yaml_document_t *d;
    const char *file;
    int doc;
    const char *name;   /* metadata.name once known, for the message prefix */
    buf *err;
} doc_ctx;

/* "<file>: document <n> (FunctionConfig "<name>"): <path>: <message>"; returns -1. */
__attribute__((format(printf, 3, 4)))
static int failf(const doc_ctx *x, const char *path, const char *fmt, ...)
{
    buf_printf(x->err, "%s: document %d (FunctionConfig", x->file, x->doc);
    if (x->name)
        buf_printf(x->err, " \"%s\"", x->name);
    buf_printf(x->err, "): %s: ", path);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(x->err, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_oom(const doc_ctx *x)
{
    buf_printf(x->err, "%s: document %d: out of memory", x->file, x->doc);
    return -1;
}

/* path + "." + key into out (just key at the root), cut to fit. */
static void field_path(char out[PATH_TEXT_MAX], const char *path, const char *key, size_t key_len)
{
    int k = key_len > 100 ? 100 : (int)key_len;
    if (*path)
        snprintf(out, PATH_TEXT_MAX, "%s.%.*s", path, k, key);
    else
        snprintf(out, PATH_TEXT_MAX, "%.*s", k, key);
}

static void item_path(char out[PATH_TEXT_MAX], const char *path, size_t i)
{
    snprintf(out, PATH_TEXT_MAX, "%s[%zu]", path, i);
}

/* ------------------------------------------------------------------------ */
/* Field readers                                                             */

static int type_error(const doc_ctx *x, const char *path, const char *want, const yaml_node_t *n)
{
    return failf(x, path, "must be %s, not %s", want, yaml_vkind_name(yaml_node_kind(n)));
}

/* A string field; absent or null leaves *out NULL. */
static int read_string(const doc_ctx *x, const yaml_node_t *n, const char *path, char **out)
{
    yaml_vkind k = yaml_node_kind(n);
    if (k == YV_NULL)
        return 0;
    if (k != YV_STRING)
        return type_error(x, path, "a string", n);
    if (strlen(yaml_node_text(n)) != n->data.scalar.length)
        return failf(x, path, "must not contain NUL characters");
    *out = strdup(yaml_node_text(n));
    return *out ? 0 : fail_oom(x);
}

/* A required non-empty string. */
static int read_required(const doc_ctx *x, const yaml_node_t *n, const char *path, char **out)
{
    if (read_string(x, n, path, out) < 0)
        return -1;
    if (!*out)
        return failf(x, path, "required");
    if (!**out)
        return failf(x, path, "must not be empty");
    return 0;
}

/* A list of strings; absent or null gives an empty list. */
static int read_strings(const doc_ctx *x, const yaml_node_t *n, const char *path,
                        char ***out, size_t *n_out)
{
    yaml_vkind k = yaml_node_kind(n);
    if (k == YV_NULL)
        return 0;
    if (k != YV_LIST)
        return type_error(x, path, "a list of strings", n);
    size_t count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    if (count == 0)
        return 0;
    *out = calloc(count, sizeof **out);
    if (!*out)
        return fail_oom(x);
    for (size_t i = 0; i < count; i++) {
        char sub[PATH_TEXT_MAX];
        item_path(sub, path, i);
        yaml_node_t *item = yaml_document_get_node(x->d, n->data.sequence.items.start[i]);
        if (yaml_node_kind(item) != YV_STRING)
            return type_error(x, sub, "a string", item);
        if (read_string(x, item, sub, &(*out)[i]) < 0)
            return -1;
        (*n_out)++;
    }
    return 0;
}

/* Executor tags: at least one when required, none empty. */
static int read_tags(const doc_ctx *x, const yaml_node_t *n, const char *path, int required,
                     char ***out, size_t *n_out)
{
    if (read_strings(x, n, path, out, n_out) < 0)
        return -1;
    if (required && *n_out == 0)
        return failf(x, path, "must list at least one tag");
    for (size_t i = 0; i < *n_out; i++) {
        if (!(*out)[i][0]) {
            char sub[PATH_TEXT_MAX];
            item_path(sub, path, i);
            return failf(x, sub, "must not be empty");
        }
    }
    return 0;
}

/* A non-negative int; absent or null gives 0. */
static int read_count(const doc_ctx *x, const yaml_node_t *n, const char *path, int *out)
{
    yaml_vkind k = yaml_node_kind(n);
    if (k == YV_NULL)
        return 0;
    long long v;
    if (k != YV_NUMBER)
        return type_error(x, path, "an integer", n);
    if (yaml_int_parse(yaml_node_text(n), &v) < 0)
        return failf(x, path, "must be an integer, not %s", yaml_node_text(n));
    if (v < 0 || v > INT_MAX)
        return failf(x, path, "must be between 0 and %d, not %lld", INT_MAX, v);
    *out = (int)v;
    return 0;
}

/* Go's time.ParseDuration syntax: units required except for "0"; a negative
 * duration is accepted and, as in Porch ("TTL if > 0"), means the default. */
static int go_duration(const char *s, int64_t *ns)
{
    int neg = *s == '-';
    const char *body = (*s == '-' || *s == '+') ? s + 1 : s;
    if (strcmp(body, "0") == 0) {
        *ns = 0;
        return 0;
    }
    if (strspn(body, "0123456789.") == strlen(body))   /* "" or a bare number */
        return -1;
    int64_t v;
    if (duration_parse(body, &v) < 0)
        return -1;
    *ns = neg ? 0 : v;
    return 0;
}

static int read_duration(const doc_ctx *x, const yaml_node_t *n, const char *path, int64_t *out)
{
    yaml_vkind k = yaml_node_kind(n);
    if (k == YV_NULL)
        return 0;
    if (k != YV_STRING)
        return type_error(x, path, "a duration string such as \"30m\"", n);
    if (go_duration(yaml_node_text(n), out) < 0)
        return failf(x, path, "invalid duration \"%s\" (want e.g. \"30m\", \"1h30m\", \"90s\")",
                     yaml_node_text(n));
    return 0;
}

/* A field that must be a mapping when present; 1 present, 0 absent/null, -1 error. */
static int want_mapping(const doc_ctx *x, const yaml_node_t *n, const char *path)
{
    yaml_vkind k = yaml_node_kind(n);
    if (k == YV_NULL)
        return 0;
    if (k != YV_MAP)
        return type_error(x, path, "a mapping", n);
    return 1;
}

/* Sorts a mapping's values into vals[] by the field names in known[] (vals
 * zeroed by the caller). Duplicate known fields are errors; unknown fields
 * and non-string keys are errors when strict and skipped otherwise. */
static int map_fields(const doc_ctx *x, const yaml_node_t *map, const char *path,
                      const char *const *known, size_t n_known, yaml_node_t **vals, int strict)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->d, p->key);
        if (yaml_node_kind(k) != YV_STRING) {
            if (strict)
                return failf(x, *path ? path : "(top level)", "field names must be strings, not %s",
                             yaml_vkind_name(yaml_node_kind(k)));
            continue;
        }
        const char *key = yaml_node_text(k);
        size_t key_len = k->data.scalar.length;
        char sub[PATH_TEXT_MAX];
        field_path(sub, path, key, key_len);
        size_t i = 0;
        while (i < n_known && !(strlen(known[i]) == key_len && memcmp(known[i], key, key_len) == 0))
            i++;
        if (i == n_known) {
            if (strict)
                return failf(x, sub, "unknown field");
            continue;
        }
        if (vals[i])
            return failf(x, sub, "duplicate field");
        vals[i] = yaml_document_get_node(x->d, p->value);
    }
    return 0;
}

#define COUNT(a) (sizeof(a) / sizeof *(a))

/* ------------------------------------------------------------------------ */
/* The FunctionConfig schema                                                 */

static int parse_binary(const doc_ctx *x, const yaml_node_t *n, fnconfig_entry *e)
{
    static const char *const known[] = {"tags", "path"};
    yaml_node_t *v[COUNT(known)] = {0};
    if (map_fields(x, n, "spec.binaryExecutor", known, COUNT(known), v, 1) < 0 ||
        read_tags(x, v[0], "spec.binaryExecutor.tags", 1, &e->binary.tags, &e->binary.n_tags) < 0 ||
        read_required(x, v[1], "spec.binaryExecutor.path", &e->binary.path) < 0)
        return -1;
    e->binary.present = 1;
    return 0;
}

static int parse_template_overrides(const doc_ctx *x, const yaml_node_t *n, fnconfig_entry *e)
{
    static const char *const known[] = {
        "serviceAccountName", "securityContext", "initContainer", "container",
    };
    static const char *const paths[] = {
        NULL, "spec.podExecutor.templateOverrides.securityContext",
        "spec.podExecutor.templateOverrides.initContainer",
        "spec.podExecutor.templateOverrides.container",
    };
    yaml_node_t *v[COUNT(known)] = {0};
    if (map_fields(x, n, "spec.podExecutor.templateOverrides", known, COUNT(known), v, 1) < 0 ||
        read_string(x, v[0], "spec.podExecutor.templateOverrides.serviceAccountName",
                    &e->pod.service_account) < 0)
        return -1;
    for (size_t i = 1; i < COUNT(known); i++)
        if (want_mapping(x, v[i], paths[i]) < 0)
            return -1;
    buf json = {0};
    if (yaml_node_to_json(x->d, n, &json) < 0 || !(e->pod.overrides = buf_steal(&json, NULL))) {
        buf_free(&json);
        return failf(x, "spec.podExecutor.templateOverrides", "not writable as JSON (a number "
                    "such as .inf, a non-string key) or out of memory");
    }
    e->pod.has_template_overrides = 1;
    return 0;
}

static int parse_pod(const doc_ctx *x, const yaml_node_t *n, fnconfig_entry *e)
{
    static const char *const known[] = {
        "tags", "timeToLive", "maxParallelExecutions", "preferredMaxQueueLength", "templateOverrides",
    };
    yaml_node_t *v[COUNT(known)] = {0};
    if (map_fields(x, n, "spec.podExecutor", known, COUNT(known), v, 1) < 0 ||
        read_tags(x, v[0], "spec.podExecutor.tags", 0, &e->pod.tags, &e->pod.n_tags) < 0 ||
        read_duration(x, v[1], "spec.podExecutor.timeToLive", &e->pod.ttl_ns) < 0 ||
        read_count(x, v[2], "spec.podExecutor.maxParallelExecutions", &e->pod.max_parallel) < 0 ||
        read_count(x, v[3], "spec.podExecutor.preferredMaxQueueLength", &e->pod.queue_len) < 0)
        return -1;
    int has = want_mapping(x, v[4], "spec.podExecutor.templateOverrides");
    if (has < 0 || (has && parse_template_overrides(x, v[4], e) < 0))
        return -1;
    e->pod.present = 1;
    return 0;
}

static int parse_go(const doc_ctx *x, const yaml_node_t *n, fnconfig_entry *e)
{
    static const char *const known[] = {"tags", "id"};
    yaml_node_t *v[COUNT(known)] = {0};
    if (map_fields(x, n, "spec.goExecutor", known, COUNT(known), v, 1) < 0 ||
        read_tags(x, v[0], "spec.goExecutor.tags", 1, &e->go.tags, &e->go.n_tags) < 0 ||
        read_string(x, v[1], "spec.goExecutor.id", &e->go.id) < 0)
        return -1;
    e->go.present = 1;
    return 0;
}

/* spec.image is matched against the last path segment of an image name, so
 * a full reference there could never match: say so instead of ignoring it. */
static int check_short_image(const doc_ctx *x, const char *image)
{
    if (strpbrk(image, "/:@"))
        return failf(x, "spec.image", "must be the short image name without '/', ':' or '@' "
                     "(e.g. \"set-namespace\"), not \"%s\"", image);
    return 0;
}

/* Runs one executor parser when its field is a mapping. */
static int parse_executor(const doc_ctx *x, const yaml_node_t *n, const char *path, fnconfig_entry *e,
                          int (*parse)(const doc_ctx *, const yaml_node_t *, fnconfig_entry *))
{
    int has = want_mapping(x, n, path);
    return has < 0 ? -1 : has ? parse(x, n, e) : 0;
}

static int parse_spec(const doc_ctx *x, const yaml_node_t *n, fnconfig_entry *e)
{
    static const char *const known[] = {
        "image", "prefixes", "podExecutor", "binaryExecutor", "goExecutor",
    };
    yaml_node_t *v[COUNT(known)] = {0};
    int has = want_mapping(x, n, "spec");
    if (has < 0 || (has && map_fields(x, n, "spec", known, COUNT(known), v, 1) < 0))
        return -1;
    if (read_required(x, v[0], "spec.image", &e->image) < 0 ||
        check_short_image(x, e->image) < 0 ||
        read_strings(x, v[1], "spec.prefixes", &e->prefixes, &e->n_prefixes) < 0 ||
        parse_executor(x, v[2], "spec.podExecutor", e, parse_pod) < 0 ||
        parse_executor(x, v[3], "spec.binaryExecutor", e, parse_binary) < 0 ||
        parse_executor(x, v[4], "spec.goExecutor", e, parse_go) < 0)
        return -1;
    if (!e->pod.present && !e->binary.present && !e->go.present)
        return failf(x, "spec", "At least one configuration must be specified "
                     "(podExecutor, binaryExecutor or goExecutor)");
    return 0;
}

/* A whole number within [min, max], as a string; -1 with why. */
static int annotation_count(const char *value, unsigned long long min, unsigned long long max,
                            const char *unit, uint64_t *out, buf *why)
{
    unsigned long long v;
    if (parse_uint(value, max, &v) < 0 || v < min) {
        buf_printf(why, "want a whole number%s %llu-%llu in a string, not \"%.40s\"", unit, min,
                   max, value);
        return -1;
    }
    *out = v;
    return 0;
}

/* A Kubernetes binary quantity of whole MiB ("512Mi", "2Gi", "1Ti") within
 * [1, max] MiB; -1 with why. A bare number would be bytes to Kubernetes and
 * MiB to our flags: it is refused rather than guessed. */
static int annotation_mib(const char *value, unsigned long long max, uint64_t *out, buf *why)
{
    static const struct {
        const char *suffix;
        unsigned shift;   /* MiB per unit, as a power of two */
    } units[] = {{"Mi", 0}, {"Gi", 10}, {"Ti", 20}};
    size_t len = strlen(value);
    for (size_t i = 0; i < COUNT(units); i++) {
        if (len < 3 || strcmp(value + len - 2, units[i].suffix))
            continue;
        char digits[24];
        unsigned long long v;
        if (len - 2 < sizeof digits) {
            memcpy(digits, value, len - 2);
            digits[len - 2] = '\0';
            if (parse_uint(digits, max >> units[i].shift, &v) == 0 && v > 0) {
                *out = v << units[i].shift;
                return 0;
            }
        }
        break;
    }
    buf_printf(why, "want a size in whole MiB, 1Mi-%lluTi (e.g. \"512Mi\", \"2Gi\"), not "
               "\"%.40s\"", max >> 20, value);
    return -1;
}

#define SANDBOX_ANNOTATION_PREFIX "fn.kpt.dev/sandbox-"
#define MIB_MAX (1ULL << 30)   /* as --sandbox-memory and --sandbox-file-size allow */

int fnconfig_annotation(fnconfig_entry *e, const char *key, const char *value, buf *why)
{
    if (!strcmp(key, FNCONFIG_MIN_READY_ANNOTATION)) {
        uint64_t min;
        if (annotation_count(value, 0, FNCONFIG_MAX_MIN_READY, "", &min, why) < 0)
            return -1;
        e->pod.min_ready = (int)min;
        return 1;
    }
    if (strncmp(key, SANDBOX_ANNOTATION_PREFIX, strlen(SANDBOX_ANNOTATION_PREFIX)))
        return 0;
    const char *name = key + strlen(SANDBOX_ANNOTATION_PREFIX);
    fnconfig_sandbox *sb = &e->sandbox;
    int rc;
    if (!strcmp(name, "network")) {
        if (strcmp(value, "true") && strcmp(value, "false")) {
            buf_printf(why, "want \"true\" or \"false\", not \"%.40s\"", value);
            return -1;
        }
        sb->network = !strcmp(value, "true");
        return 1;
    }
    if (!strcmp(name, "memory"))
        rc = annotation_mib(value, MIB_MAX, &sb->memory_mib, why);
    else if (!strcmp(name, "file-size"))
        rc = annotation_mib(value, MIB_MAX, &sb->file_size_mib, why);
    else if (!strcmp(name, "cpu"))
        rc = annotation_count(value, 1, 1ULL << 40, " of seconds", &sb->cpu_seconds, why);
    else if (!strcmp(name, "processes"))
        rc = annotation_count(value, 300, 4194303, "", &sb->processes, why);
    else if (!strcmp(name, "open-files"))
        rc = annotation_count(value, 16, 1ULL << 20, "", &sb->open_files, why);
    else {   /* a typo would otherwise leave the function with the default */
        buf_append_str(why, "not a sandbox setting: want fn.kpt.dev/sandbox-network, -memory, "
                       "-cpu, -processes, -file-size or -open-files");
        return -1;
    }
    return rc < 0 ? -1 : 1;
}

/* Ours among the annotations, each through fnconfig_annotation; they are
 * strings ("2"), as Kubernetes has them. */
static int parse_annotations(const doc_ctx *x, const yaml_node_t *n, fnconfig_entry *e)
{
    int has = want_mapping(x, n, "metadata.annotations");
    if (has <= 0)
        return has;
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->d, p->key);
        yaml_node_t *v = yaml_document_get_node(x->d, p->value);
        if (yaml_node_kind(k) != YV_STRING || strlen(yaml_node_text(k)) != k->data.scalar.length)
            continue;   /* not a key of ours */
        const char *key = yaml_node_text(k);
        buf why = {0};
        int rc = 0;
        if (yaml_node_kind(v) != YV_STRING) {   /* ours only: others are Porch's business */
            fnconfig_entry probe = {.pod.min_ready = -1, .sandbox = FNCONFIG_SANDBOX_UNSET};
            if (fnconfig_annotation(&probe, key, "", &why) != 0) {
                buf_free(&why);
                buf path = {0};
                buf_printf(&path, "metadata.annotations.%s", key);
                rc = type_error(x, path.data ? path.data : key,
                                "a string (annotations are strings: \"2\")", v);
                buf_free(&path);
                return rc;
            }
            continue;
        }
        const char *text = yaml_node_text(v);
        if (strlen(text) != v->data.scalar.length)
            rc = fnconfig_annotation(e, key, "\\0 (a NUL byte)", &why);
        else
            rc = fnconfig_annotation(e, key, text, &why);
        if (rc < 0) {
            buf path = {0};
            buf_printf(&path, "metadata.annotations.%s", key);
            failf(x, path.data ? path.data : key, "%s", why.data ? why.data : "out of memory");
            buf_free(&path);
        }
        buf_free(&why);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int parse_metadata(const doc_ctx *x, const yaml_node_t *n, fnconfig_entry *e)
{
    static const char *const known[] = {"name", "namespace", "annotations"};
    yaml_node_t *v[COUNT(known)] = {0};
    int has = want_mapping(x, n, "metadata");
    if (has < 0 || (has && map_fields(x, n, "metadata", known, COUNT(known), v, 0) < 0))
        return -1;
    if (read_required(x, v[0], "metadata.name", &e->name) < 0 ||
        read_string(x, v[1], "metadata.namespace", &e->namespace) < 0 ||
        parse_annotations(x, v[2], e) < 0)
        return -1;
    return 0;
}

/* The top level: TypeMeta, ObjectMeta, spec and status (status not read). */
static int parse_object(const doc_ctx *x, const yaml_node_t *root, fnconfig_entry *e)
{
    static const char *const known[] = {"apiVersion", "kind", "metadata", "spec", "status"};
    yaml_node_t *v[COUNT(known)] = {0};
    if (map_fields(x, root, "", known, COUNT(known), v, 1) < 0 ||
        parse_metadata(x, v[2], e) < 0 ||
        parse_spec(x, v[3], e) < 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Documents                                                                 */

/* The value of a top-level string field, or NULL. */
static const char *top_string(const doc_ctx *x, const yaml_node_t *map, const char *key)
{
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->d, p->key);
        yaml_node_t *v = yaml_document_get_node(x->d, p->value);
        if (yaml_node_kind(k) == YV_STRING && strcmp(yaml_node_text(k), key) == 0)
            return yaml_node_kind(v) == YV_STRING ? yaml_node_text(v) : NULL;
    }
    return NULL;
}

static int is_function_config(const doc_ctx *x, const yaml_node_t *root)
{
    if (!root || root->type != YAML_MAPPING_NODE)
        return 0;
    const char *api = top_string(x, root, "apiVersion");
    const char *kind = top_string(x, root, "kind");
    return api && kind && strcmp(api, FC_API_VERSION) == 0 && strcmp(kind, FC_KIND) == 0;
}

/* metadata.name as written (unchecked), so that every message can name the
 * object, even one about a field read before metadata. */
static const char *peek_name(const doc_ctx *x, const yaml_node_t *root)
{
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(x->d, p->key);
        yaml_node_t *v = yaml_document_get_node(x->d, p->value);
        if (yaml_node_kind(k) == YV_STRING && strcmp(yaml_node_text(k), "metadata") == 0 && yaml_node_kind(v) == YV_MAP) {
            const char *name = top_string(x, v, "name");
            return name && *name ? name : NULL;
        }
    }
    return NULL;
}

/* Go's filepath.Clean, lexically: empty and "." segments go, ".." takes
 * the segment before it. "/a/./b/../c//d" -> "/a/c/d"; "a/./b//c/../d" ->
 * "a/b/d"; nothing left is "/" or ".". At the root of an absolute path ".."
 * stays there; in a relative one a ".." with nothing before it climbs above
 * the start, and *escaped is set (when given). NULL only on ENOMEM. */
static char *path_clean(const char *raw, int *escaped)
{
    int absolute = raw[0] == '/';
    char *out = malloc(strlen(raw) + 2);
    if (!out)
        return NULL;
    size_t o = 0;
    for (const char *p = raw; *p;) {
        while (*p == '/')
            p++;
        const char *seg = p;
        while (*p && *p != '/')
            p++;
        size_t n = (size_t)(p - seg);
        if (n == 0 || (n == 1 && seg[0] == '.'))
            continue;
        if (n == 2 && seg[0] == '.' && seg[1] == '.') {
            if (o == 0 && !absolute && escaped)
                *escaped = 1;
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
            continue;
        }
        if (absolute || o > 0)
            out[o++] = '/';
        memcpy(out + o, seg, n);
        o += n;
    }
    if (o == 0)
        out[o++] = absolute ? '/' : '.';
    out[o] = '\0';
    return out;
}

/* raw is absolute. */
static char *clean_abs(const char *raw)
{
    return path_clean(raw, NULL);
}

/* The cleaned form of a relative path, or *out NULL when the path is
 * absolute or a ".." climbs above its start. Returns -1 only on ENOMEM. */
static int clean_beneath(const char *raw, char **out)
{
    *out = NULL;
    if (raw[0] == '/')
        return 0;
    int escaped = 0;
    char *clean = path_clean(raw, &escaped);
    if (!clean)
        return -1;
    if (escaped)
        free(clean);
    else
        *out = clean;
    return 0;
}

/* Porch: filepath.Abs(filepath.Join(functions_dir, path)) for a relative
 * path. The path as written and its form beneath functions_dir are kept for
 * the exec runtime (fnconfig_open_binary), which runs only the latter. */
static int resolve_binary_path(const doc_ctx *x, const char *functions_dir, fnconfig_entry *e)
{
    if (!e->binary.present)
        return 0;
    if (!(e->binary.written = strdup(e->binary.path)) ||
        clean_beneath(e->binary.path, &e->binary.beneath) < 0)
        return fail_oom(x);
    if (e->binary.path[0] == '/')
        return 0;
    buf raw = {0};
    const char *dir = functions_dir ? functions_dir : "";
    if (dir[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        if (!cwd)
            return failf(x, "spec.binaryExecutor.path", "cannot resolve \"%s\": getcwd: %s",
                         e->binary.path, strerror(errno));
        buf_printf(&raw, "%s/", cwd);
        free(cwd);
    }
    buf_printf(&raw, "%s/%s", dir, e->binary.path);
    char *clean = raw.data ? clean_abs(raw.data) : NULL;
    buf_free(&raw);
    if (!clean)
        return fail_oom(x);
    free(e->binary.path);
    e->binary.path = clean;
    return 0;
}

/* Porch's store is keyed by metadata.name and its binary cache by
 * spec.image: a second object with either would silently replace the first. */
static int check_duplicates(const doc_ctx *x, const fnconfig *c, const fnconfig_entry *e)
{
    if (!strset_has(&c->names, e->name) && !strset_has(&c->images, e->image))
        return 0;   /* the common case; else find the other for the message */
    for (size_t i = 0; i < c->n; i++) {
        const fnconfig_entry *o = &c->entries[i];
        if (strcmp(o->name, e->name) == 0)
            return failf(x, "metadata.name", "duplicate: FunctionConfig \"%s\" is already defined "
                         "in %s document %d", e->name, o->file, o->doc);
        if (strcmp(o->image, e->image) == 0)
            return failf(x, "spec.image", "duplicate: image \"%s\" is already configured by %s "
                         "document %d (FunctionConfig \"%s\")", e->image, o->file, o->doc, o->name);
    }
    return 0;
}

static int add_document(doc_ctx *x, const yaml_node_t *root, const char *functions_dir, fnconfig *c)
{
    fnconfig_entry e = {.pod.min_ready = -1, .sandbox = FNCONFIG_SANDBOX_UNSET};
    x->name = peek_name(x, root);
    e.doc = x->doc;
    e.file = strdup(x->file);
    int rc = !e.file ? fail_oom(x) : parse_object(x, root, &e);
    if (rc == 0)
        rc = resolve_binary_path(x, functions_dir, &e);
    if (rc == 0)
        rc = check_duplicates(x, c, &e);
    if (rc == 0 && append_entry(c, &e) < 0)
        rc = fail_oom(x);
    if (rc < 0)
        entry_free(&e);
    return rc;
}

static int syntax_error(const yaml_parser_t *p, const char *file, int doc, buf *err)
{
    if (p->error == YAML_MEMORY_ERROR) {
        buf_printf(err, "%s: out of memory", file);
        return -1;
    }
    const char *problem = p->problem ? p->problem : "invalid YAML";
    if (p->error == YAML_READER_ERROR) {
        buf_printf(err, "%s: document %d: byte %zu: %s", file, doc, p->problem_offset, problem);
        return -1;
    }
    buf_printf(err, "%s: document %d: line %zu, column %zu: %s", file, doc,
               p->problem_mark.line + 1, p->problem_mark.column + 1, problem);
    if (p->context)
        buf_printf(err, " (%s at line %zu, column %zu)", p->context,
                   p->context_mark.line + 1, p->context_mark.column + 1);
    return -1;
}

int fnconfig_parse(const char *file, const char *data, size_t len, const char *functions_dir,
                   fnconfig *cfg, buf *err)
{
    size_t n0 = cfg->n;
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        buf_printf(err, "%s: out of memory", file);
        return -1;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    int rc = 0;
    for (int doc = 1; rc == 0; doc++) {
        yaml_document_t d;
        if (!yaml_load(&p, len, &d)) {
            rc = syntax_error(&p, file, doc, err);
            break;
        }
        yaml_node_t *root = yaml_document_get_root_node(&d);
        doc_ctx x = {&d, file, doc, NULL, err};
        if (root && is_function_config(&x, root))
            rc = add_document(&x, root, functions_dir, cfg);
        yaml_document_delete(&d);
        if (!root)   /* no root: the end of the stream */
            break;
    }
    yaml_parser_delete(&p);
    if (rc < 0)
        truncate_entries(cfg, n0);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Files and directories                                                     */

static int read_file(const char *path, buf *data, buf *err)
{
    char why[FDIO_WHY_MAX];
    if (file_read_at(AT_FDCWD, path, 0, FNCONFIG_MAX_FILE_SIZE, data, why) == 0)
        return 0;
    buf_printf(err, "%s: %s", path, why);
    return -1;
}

static int load_file(const char *path, const char *functions_dir, fnconfig *c, buf *err)
{
    buf data = {0};
    int rc = read_file(path, &data, err);
    if (rc == 0)
        rc = fnconfig_parse(path, data.data ? data.data : "", data.len, functions_dir, c, err);
    buf_free(&data);
    return rc;
}

static int has_yaml_suffix(const char *name)
{
    size_t n = strlen(name);
    return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) || (n > 4 && strcmp(name + n - 4, ".yml") == 0);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Appends "dir/name" to the list unless it is a directory named x.yaml or
 * a dangling link (links are followed); a FIFO, device or socket is listed
 * so that reading it refuses it by name rather than skipping it unseen.
 * Returns -1 only on ENOMEM. */
static int add_yaml_file(const char *dir, const char *name, char ***v, size_t *n, size_t *cap)
{
    size_t len = strlen(dir);
    buf full = {0};
    struct stat st;
    if (buf_printf(&full, "%s%s%s", dir, len && dir[len - 1] == '/' ? "" : "/", name) < 0)
        return -1;
    if (stat(full.data, &st) < 0 || S_ISDIR(st.st_mode)) {
        buf_free(&full);
        return 0;
    }
    if (*n == *cap) {
        size_t grown = *cap ? *cap * 2 : 16;
        char **p = realloc(*v, grown * sizeof *p);
        if (!p) {
            buf_free(&full);
            return -1;
        }
        *v = p;
        *cap = grown;
    }
    (*v)[(*n)++] = full.data;
    return 0;
}

/* The directory's *.yaml / *.yml regular files as "dir/name", sorted by
 * name; names starting with '.' are skipped. */
static int list_yaml_files(const char *dir, char ***out, size_t *n, buf *err)
{
    DIR *d = opendir(dir);
    if (!d) {
        buf_printf(err, "%s: %s", dir, strerror(errno));
        return -1;
    }
    size_t cap = 0;
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d)))
        if (de->d_name[0] != '.' && has_yaml_suffix(de->d_name))
            rc = add_yaml_file(dir, de->d_name, out, n, &cap);
    closedir(d);
    if (rc < 0) {
        buf_printf(err, "%s: out of memory", dir);
        return -1;
    }
    if (*n)
        qsort(*out, *n, sizeof **out, cmp_str);
    return 0;
}

static int load_dir(const char *dir, const char *functions_dir, fnconfig *c, buf *err)
{
    char **files = NULL;
    size_t n = 0;
    int rc = list_yaml_files(dir, &files, &n, err);
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = load_file(files[i], functions_dir, c, err);
    strv_free(files, n);
    return rc;
}

static int load_path(const char *path, const char *functions_dir, fnconfig *c, buf *err)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        buf_printf(err, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return load_dir(path, functions_dir, c, err);
    return load_file(path, functions_dir, c, err);
}

int fnconfig_load_many(const char *const *paths, size_t n, const char *functions_dir,
                       fnconfig *out, buf *err)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        if (load_path(paths[i], functions_dir, out, err) < 0) {
            fnconfig_free(out);
            return -1;
        }
    }
    return 0;
}

int fnconfig_load(const char *path, const char *functions_dir, fnconfig *out, buf *err)
{
    return fnconfig_load_many(&path, 1, functions_dir, out, err);
}

/* ------------------------------------------------------------------------ */
/* Matching                                                                  */

/* Does the repository part of an image (before its last '/', "" when there
 * is none) fall under prefix? Porch matches ^(?:QuoteMeta(p1)|...) against
 * the repository part, with --default-image-prefix's trailing '/' trimmed.
 * Prefixes are written with that trailing '/' ("ghcr.io/kptdev/krm-functions-
 * catalog/"), so we compare repo + "/" with the prefix as written. The result
 * is Porch's for every prefix without a trailing '/', and for those with one:
 *   - the default prefix stays on a path boundary (Porch's trimmed default
 *     also accepts "ghcr.io/kptdev/krm-functions-catalog-other/fn");
 *   - an explicit "reg.io/team/" accepts "reg.io/team/fn" (in Porch it only
 *     accepts deeper repositories such as "reg.io/team/sub/fn").
 * An empty prefix accepts everything (Porch's empty regex); a non-empty one
 * never accepts an image without '/'. */
static int prefix_accepts(const char *repo, size_t repo_len, const char *prefix)
{
    size_t plen = strlen(prefix);
    if (plen == 0)
        return 1;
    if (repo_len == 0)
        return 0;
    if (plen <= repo_len)
        return memcmp(repo, prefix, plen) == 0;
    return plen == repo_len + 1 && memcmp(repo, prefix, repo_len) == 0 && prefix[repo_len] == '/';
}

static int entry_accepts_repo(const fnconfig_entry *e, const char *repo, size_t repo_len,
                              const char *default_prefix)
{
    if (e->n_prefixes == 0)
        return 1;
    for (size_t i = 0; i < e->n_prefixes; i++) {
        const char *p = e->prefixes[i][0] ? e->prefixes[i] : default_prefix ? default_prefix : "";
        if (prefix_accepts(repo, repo_len, p))
            return 1;
    }
    return 0;
}

static const char *find_tag(char *const *tags, size_t n, const char *tag)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tags[i], tag) == 0)
            return tags[i];
    return NULL;
}

/* Position of the last '/' in s[0..len), or -1. */
static long last_slash(const char *s, size_t len)
{
    const char *p = memrchr(s, '/', len);
    return p ? (long)(p - s) : -1;
}

/* The entry with a binary executor for the name image[0..name_len) (no tag
 * or digest), or NULL. */
static const fnconfig_entry *binary_entry(const fnconfig *c, const char *image, size_t name_len,
                                          const char *default_prefix)
{
    long slash = last_slash(image, name_len);
    size_t repo_len = slash < 0 ? 0 : (size_t)slash;
    const char *short_name = image + (slash + 1);
    size_t short_len = name_len - (size_t)(slash + 1);
    for (size_t i = 0; i < c->n; i++) {
        const fnconfig_entry *e = &c->entries[i];
        if (!e->binary.present || strlen(e->image) != short_len ||
            memcmp(e->image, short_name, short_len) != 0)
            continue;
        /* spec.image is unique: no other entry can match */
        return entry_accepts_repo(e, image, repo_len, default_prefix) ? e : NULL;
    }
    return NULL;
}

const fnconfig_entry *fnconfig_match_binary(const fnconfig *c, const char *image,
                                            const char *default_prefix, const char **tag_out)
{
    if (strchr(image, '@'))
        return NULL;
    size_t name_len = strlen(image);
    long slash = last_slash(image, name_len);
    const char *colon = strrchr(image, ':');
    const char *tag = "latest";
    if (colon && colon - image > slash) {
        name_len = (size_t)(colon - image);
        tag = colon + 1;
    }
    const fnconfig_entry *e = binary_entry(c, image, name_len, default_prefix);
    const char *t = e ? find_tag(e->binary.tags, e->binary.n_tags, tag) : NULL;
    if (!t)
        return NULL;
    if (tag_out)
        *tag_out = t;
    return e;
}

/* Porch's keys are split at ":v": other tags are no versions to it */
static int not_a_v_tag(const char *tag)
{
    return tag[0] != 'v';
}

const fnconfig_entry *fnconfig_match_binary_version(const fnconfig *c, const char *name,
                                                    const char *default_prefix,
                                                    const semver_constraint *want,
                                                    const char **tag_out)
{
    const fnconfig_entry *e = binary_entry(c, name, strlen(name), default_prefix);
    const char *best = e ? semver_highest(want, e->binary.tags, e->binary.n_tags, not_a_v_tag)
                         : NULL;
    if (!best)
        return NULL;
    if (tag_out)
        *tag_out = best;
    return e;
}

/* Porch's GetImageName: the last path segment without tag or digest. */
static void image_short_name(const char *image, const char **s, size_t *len)
{
    size_t end = strcspn(image, "@");
    long slash = last_slash(image, end);
    const char *seg = image + (slash + 1);
    size_t seg_len = end - (size_t)(slash + 1);
    const char *colon = memrchr(seg, ':', seg_len);
    *s = seg;
    *len = colon ? (size_t)(colon - seg) : seg_len;
}

const fnconfig_entry *fnconfig_pod_params(const fnconfig *c, const char *image)
{
    const char *s;
    size_t len;
    image_short_name(image, &s, &len);
    for (size_t i = 0; i < c->n; i++) {
        const fnconfig_entry *e = &c->entries[i];
        if (strlen(e->name) == len && memcmp(e->name, s, len) == 0)
            return e->pod.present ? e : NULL;
    }
    return NULL;
}

int fnconfig_resolve_image(const char *default_prefix, const char *image, buf *out)
{
    if (!strchr(image, '/') && default_prefix && *default_prefix) {
        size_t plen = strlen(default_prefix);
        if (buf_append_str(out, default_prefix) < 0 ||
            (default_prefix[plen - 1] != '/' && buf_append_str(out, "/") < 0))
            return -1;
    }
    return buf_append_str(out, image);
}

/* ------------------------------------------------------------------------ */
/* Binaries beneath --functions                                              */

static const char *dir_text(const char *functions_dir)
{
    return functions_dir && *functions_dir ? functions_dir : ".";
}

static const char *written_path(const fnconfig_entry *e)
{
    return e->binary.written ? e->binary.written : e->binary.path;
}

int fnconfig_open_functions_dir(const char *functions_dir, buf *err)
{
    int fd = open(dir_text(functions_dir), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        buf_printf(err, "--functions %s: %s", dir_text(functions_dir), strerror(errno));
    return fd;
}

int fnconfig_open_binary(int functions_fd, const char *functions_dir, const fnconfig_entry *e,
                         int inheritable, buf *why)
{
    const char *dir = dir_text(functions_dir);
    const char *written = written_path(e);
    if (!e->binary.beneath) {
        buf_printf(why, "\"%s\" resolves outside --functions %s", written, dir);
        if (written[0] == '/')
            buf_append_str(why, " (absolute paths are refused: give it relative to that directory)");
        return -1;
    }
    int fd = beneath_open_links(functions_fd, e->binary.beneath,
                                O_PATH | (inheritable ? 0 : O_CLOEXEC));
    if (fd >= 0)
        return fd;
    if (errno == EXDEV)
        buf_printf(why, "\"%s\" resolves outside --functions %s: a symlink on the way leads out "
                   "of it or is absolute (only relative links that stay inside are followed)",
                   written, dir);
    else if (errno == ENOSYS)
        buf_printf(why, "\"%s\": openat2: %s (Linux 5.6 or later is needed to check that it "
                   "stays beneath --functions %s)", written, strerror(errno), dir);
    else
        buf_printf(why, "\"%s\" (%s): %s", written, e->binary.path, strerror(errno));
    return -1;
}

/* The file behind fd is something exec can run; else why says what it is. */
static void check_runnable(int fd, const fnconfig_entry *e, buf *why)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        buf_printf(why, "\"%s\" (%s): fstat: %s", written_path(e), e->binary.path,
                   strerror(errno));
    else if (!S_ISREG(st.st_mode))
        buf_printf(why, "\"%s\" (%s) is not a regular file", written_path(e), e->binary.path);
    else if (!(st.st_mode & 0111))
        buf_printf(why, "\"%s\" (%s) is not executable (mode %04o)", written_path(e),
                   e->binary.path, (unsigned)(st.st_mode & 07777));
}

int fnconfig_check_binaries(const fnconfig *c, int functions_fd, const char *functions_dir, buf *err)
{
    for (size_t i = 0; i < c->n; i++) {
        const fnconfig_entry *e = &c->entries[i];
        if (!e->binary.present)
            continue;
        buf why = {0};
        int fd = fnconfig_open_binary(functions_fd, functions_dir, e, 0, &why);
        if (fd >= 0) {
            check_runnable(fd, e, &why);
            close(fd);
        }
        if (why.len) {
            buf_printf(err, "%s: document %d (FunctionConfig \"%s\"): spec.binaryExecutor.path: %s",
                       e->file, e->doc, e->name, why.data);
            buf_free(&why);
            return -1;
        }
    }
    return 0;
}
