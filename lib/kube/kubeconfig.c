/* kubeconfig: finding and reading the API server's address and credentials
 * as kubectl does; see kubeconfig.h.
 *
 * How: every file of the chain is loaded with libyaml's document API (a
 * kubeconfig is YAML or JSON) and kept loaded while the named entries are
 * gathered, first file wins per name; then the chosen context's cluster and
 * user are read field by field. Lenient like kubectl about fields we do not
 * use (extensions, preferences, auth-provider...), strict about the types
 * of the ones we use: a token written as a number is a mistake to report,
 * not to guess around. */
#include "kube/kubeconfig.h"

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

#include "core/base64.h"
#include "core/fdio.h"
#include "core/header_value.h"
#include "core/json.h"
#include "krm/yaml_load.h"
#include "krm/yaml_node.h"
#include "kube/pod_id.h"

#define KUBECONFIG_MAX_FILE (4u << 20)   /* kubeconfigs with embedded certificates are KiBs */
#define CRED_MAX_FILE (1u << 20)         /* a token, a CA bundle, a key */
#define SA_DIR_DEFAULT "/var/run/secrets/kubernetes.io/serviceaccount"

static const char *sa_dir_override;

void kube_config_test_overrides(const char *sa_dir, int exec_timeout)
{
    sa_dir_override = sa_dir;
    kube_exec_test_timeout(exec_timeout);
}

/* ------------------------------------------------------------------------ */
/* Loaded files and named entries                                            */

typedef struct kc_file {
    char *path;
    yaml_document_t doc;
    int loaded;
} kc_file;

/* One clusters[i] / users[i] / contexts[i] entry: where it was found and its
 * inner mapping (cluster:, user:, context:). */
typedef struct kc_entry {
    const char *name;
    kc_file *file;
    size_t index;
    yaml_node_t *body;   /* may be NULL: an entry with no body */
} kc_entry;

typedef struct kc_list {
    kc_entry *v;
    size_t n, cap;
} kc_list;

typedef struct kc_set {
    kc_file *files;
    size_t n_files;
    kc_list clusters, users, contexts;
    const char *current;         /* first non-empty current-context */
    kc_file *current_file;
    buf *err;
} kc_set;

/* What an error about a field starts with: the file and the entry. */
typedef struct kc_where {
    const kc_set *s;
    const kc_file *file;
    const char *section;   /* "clusters", "users", "contexts", or NULL at top */
    size_t index;
    const char *name;
    const char *inner;     /* "cluster", "user", "context" */
} kc_where;

__attribute__((format(printf, 3, 4)))
static int failf(const kc_where *w, const char *field, const char *fmt, ...)
{
    buf_printf(w->s->err, "%s: ", w->file->path);
    if (w->section)
        buf_printf(w->s->err, "%s[%zu] (\"%s\").%s.", w->section, w->index, w->name, w->inner);
    buf_printf(w->s->err, "%s: ", field);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(w->s->err, fmt, ap);
    va_end(ap);
    return -1;
}

static int type_error(const kc_where *w, const char *field, const char *want, const yaml_node_t *n)
{
    return failf(w, field, "must be %s, not %s", want, yaml_vkind_name(yaml_node_kind(n)));
}

static yaml_node_t *map_get(yaml_document_t *d, const yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    yaml_node_t *found = NULL;   /* the last one when repeated, as go-yaml via JSON does */
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && !strcmp(yaml_node_text(k), key))
            found = yaml_document_get_node(d, p->value);
    }
    return found;
}

/* A string field: absent or null gives NULL; an empty string counts as unset
 * (kubectl treats "" as not given). */
static int get_str(const kc_where *w, yaml_document_t *d, const yaml_node_t *map, const char *key,
                   const char **out)
{
    yaml_node_t *n = map_get(d, map, key);
    yaml_vkind k = yaml_node_kind(n);
    *out = NULL;
    if (k == YV_NULL)
        return 0;
    if (k != YV_STRING)
        return type_error(w, key, "a string", n);
    if (strlen(yaml_node_text(n)) != n->data.scalar.length)
        return failf(w, key, "must not contain NUL characters");
    *out = *yaml_node_text(n) ? yaml_node_text(n) : NULL;
    return 0;
}

static int get_bool(const kc_where *w, yaml_document_t *d, const yaml_node_t *map, const char *key,
                    int *out)
{
    yaml_node_t *n = map_get(d, map, key);
    yaml_vkind k = yaml_node_kind(n);
    *out = 0;
    if (k == YV_NULL)
        return 0;
    int v = k == YV_BOOL ? yaml_bool_parse(yaml_node_text(n)) : -1;
    if (v < 0 && k == YV_BOOL && n->tag && !strcmp((const char *)n->tag, YAML_BOOL_TAG))
        v = !strcmp(yaml_node_text(n), "true");
    if (v < 0)
        return type_error(w, key, "a boolean", n);
    *out = v;
    return 0;
}

static int oom(const kc_set *s)
{
    buf_reset(s->err);
    buf_printf(s->err, "out of memory");
    return -1;
}

static int list_add(kc_set *s, kc_list *l, const kc_entry *e)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, e->name))
            return 0;   /* an earlier file (or entry) set it: first wins */
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        kc_entry *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return oom(s);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = *e;
    return 0;
}

/* Gathers the named entries of one top-level list (clusters, users,
 * contexts) of a file. */
static int gather(kc_set *s, kc_file *f, const yaml_node_t *root, const char *section,
                  const char *inner, kc_list *l)
{
    kc_where top = {s, f, NULL, 0, NULL, NULL};
    yaml_node_t *seq = map_get(&f->doc, root, section);
    yaml_vkind k = yaml_node_kind(seq);
    if (k == YV_NULL)
        return 0;
    if (k != YV_LIST)
        return type_error(&top, section, "a list", seq);
    size_t n = (size_t)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *item = yaml_document_get_node(&f->doc, seq->data.sequence.items.start[i]);
        char field[64];
        snprintf(field, sizeof field, "%s[%zu]", section, i);
        if (yaml_node_kind(item) != YV_MAP)
            return type_error(&top, field, "a mapping", item);
        const char *name;
        snprintf(field, sizeof field, "%s[%zu].name", section, i);
        yaml_node_t *nn = map_get(&f->doc, item, "name");
        if (yaml_node_kind(nn) != YV_STRING)
            return type_error(&top, field, "a string", nn);
        name = yaml_node_text(nn);
        if (!*name)
            return failf(&top, field, "must not be empty");
        yaml_node_t *body = map_get(&f->doc, item, inner);
        yaml_vkind bk = yaml_node_kind(body);
        if (bk != YV_NULL && bk != YV_MAP) {
            snprintf(field, sizeof field, "%s[%zu].%s", section, i, inner);
            return type_error(&top, field, "a mapping", body);
        }
        kc_entry e = {name, f, i, bk == YV_MAP ? body : NULL};
        if (list_add(s, l, &e) < 0)
            return -1;
    }
    return 0;
}

static int yaml_error(const yaml_parser_t *p, const char *file, buf *err)
{
    if (p->error == YAML_MEMORY_ERROR)
        return buf_fail(err, "%s: out of memory", file);
    const char *problem = p->problem ? p->problem : "invalid YAML";
    if (p->error == YAML_READER_ERROR)
        return buf_fail(err, "%s: byte %zu: %s", file, p->problem_offset, problem);
    buf_printf(err, "%s: line %zu, column %zu: %s", file, p->problem_mark.line + 1,
               p->problem_mark.column + 1, problem);
    return -1;
}

/* Loads one file into f; 1 loaded, 0 missing (when missing_ok), -1 error. */
static int load_file(kc_set *s, kc_file *f, int missing_ok)
{
    buf data = {0};
    char why[FDIO_WHY_MAX];
    if (file_read_at(AT_FDCWD, f->path, 0, KUBECONFIG_MAX_FILE, &data, why) < 0) {
        int e = errno;
        buf_free(&data);
        if (e == ENOENT && missing_ok)
            return 0;
        return buf_fail(s->err, "%s: %s", f->path, why);
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) {
        buf_free(&data);
        return oom(s);
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)(data.data ? data.data : ""), data.len);
    int ok = yaml_load(&p, data.len, &f->doc);
    int rc = ok ? 1 : yaml_error(&p, f->path, s->err);
    yaml_parser_delete(&p);
    buf_free(&data);
    f->loaded = ok;
    return rc;
}

static int add_file(kc_set *s, kc_file *f)
{
    kc_where top = {s, f, NULL, 0, NULL, NULL};
    yaml_node_t *root = yaml_document_get_root_node(&f->doc);
    yaml_vkind k = yaml_node_kind(root);
    if (k == YV_NULL)
        return 0;   /* an empty file, as kubectl allows */
    if (k != YV_MAP)
        return buf_fail(s->err, "%s: must be a mapping (a kubeconfig), not %s", f->path,
                        yaml_vkind_name(k));
    const char *cur;
    if (gather(s, f, root, "clusters", "cluster", &s->clusters) < 0 ||
        gather(s, f, root, "users", "user", &s->users) < 0 ||
        gather(s, f, root, "contexts", "context", &s->contexts) < 0 ||
        get_str(&top, &f->doc, root, "current-context", &cur) < 0)
        return -1;
    if (cur && !s->current) {
        s->current = cur;
        s->current_file = f;
    }
    return 0;
}

static void set_free(kc_set *s)
{
    for (size_t i = 0; i < s->n_files; i++) {
        if (s->files[i].loaded)
            yaml_document_delete(&s->files[i].doc);
        free(s->files[i].path);
    }
    free(s->files);
    free(s->clusters.v);
    free(s->users.v);
    free(s->contexts.v);
}

static const kc_entry *find(const kc_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].name, name))
            return &l->v[i];
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Fields of the chosen cluster and user                                     */

/* path, or dir-of(file)/path when relative (kubectl resolves paths in a
 * kubeconfig against the file that names them). */
static char *resolve_path(const char *file, const char *path)
{
    buf b = {0};
    const char *slash = strrchr(file, '/');
    if (path[0] != '/' && slash)
        buf_printf(&b, "%.*s/%s", (int)(slash - file), file, path);
    else
        buf_append_str(&b, path);
    return b.data ? buf_steal(&b, NULL) : NULL;
}

static int dup_into(const kc_set *s, char **dst, const char *src)
{
    if (!src)
        return 0;
    *dst = strdup(src);
    return *dst ? 0 : oom(s);
}

/* A "-data" field (base64) or a file field into out; both is an error, as
 * in kubectl's validation. */
static int read_pem(const kc_where *w, const kc_entry *e, const char *data_key,
                    const char *file_key, buf *out, const char **from)
{
    const char *data, *file;
    yaml_document_t *d = &e->file->doc;
    *from = NULL;
    if (get_str(w, d, e->body, data_key, &data) < 0 || get_str(w, d, e->body, file_key, &file) < 0)
        return -1;
    if (data && file)
        return failf(w, data_key, "given together with %s; give one of them", file_key);
    if (data) {
        if (base64_decode(data, strlen(data), out) < 0)
            return failf(w, data_key, "is not valid base64");
        *from = data_key;
        return 0;
    }
    if (!file)
        return 0;
    char *path = resolve_path(e->file->path, file);
    if (!path)
        return oom(w->s);
    int rc = 0;
    char why[FDIO_WHY_MAX];
    if (file_read_at(AT_FDCWD, path, 0, CRED_MAX_FILE, out, why) < 0)
        rc = failf(w, file_key, "%s: %s", path, why);
    free(path);
    *from = file_key;
    return rc;
}

static int read_cluster(const kc_set *s, const kc_entry *e, kube_config *c)
{
    kc_where w = {s, e->file, "clusters", e->index, e->name, "cluster"};
    yaml_document_t *d = &e->file->doc;
    const char *server, *tls_name, *from;
    if (get_str(&w, d, e->body, "server", &server) < 0 ||
        get_str(&w, d, e->body, "tls-server-name", &tls_name) < 0 ||
        get_bool(&w, d, e->body, "insecure-skip-tls-verify", &c->insecure) < 0 ||
        read_pem(&w, e, "certificate-authority-data", "certificate-authority", &c->ca_pem, &from) < 0)
        return -1;
    if (!server)
        return failf(&w, "server", "required (the API server's https://host:port)");
    if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
        return failf(&w, "server", "must be an https:// (or http://) URL, not \"%s\"", server);
    if (c->insecure && from)
        return failf(&w, "insecure-skip-tls-verify", "true together with %s: give one of them "
                     "(kubectl refuses both)", from);
    /* it becomes the host of every request's URL */
    if (tls_name && tls_name[strspn(tls_name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "0123456789.-_")])
        return failf(&w, "tls-server-name", "\"%s\" is not a host name", tls_name);
    size_t len = strlen(server);
    while (len > 8 && server[len - 1] == '/')
        len--;
    c->server = strndup(server, len);
    return c->server ? dup_into(s, &c->tls_server_name, tls_name) : oom(s);
}

static int read_exec(const kc_where *uw, const kc_entry *e, yaml_node_t *n, kube_config *c)
{
    kc_where w = *uw;
    char inner[64];
    snprintf(inner, sizeof inner, "user.exec");
    w.inner = inner;
    yaml_document_t *d = &e->file->doc;
    if (yaml_node_kind(n) != YV_MAP)
        return type_error(uw, "exec", "a mapping", n);
    const char *cmd, *api, *hint;
    if (get_str(&w, d, n, "command", &cmd) < 0 || get_str(&w, d, n, "apiVersion", &api) < 0 ||
        get_str(&w, d, n, "installHint", &hint) < 0)
        return -1;
    if (!cmd)
        return failf(&w, "command", "required");
    if (!api)
        return failf(&w, "apiVersion", "required (client.authentication.k8s.io/v1 or v1beta1)");
    if (strcmp(api, "client.authentication.k8s.io/v1") && strcmp(api, "client.authentication.k8s.io/v1beta1"))
        return failf(&w, "apiVersion", "\"%s\" is not supported (client.authentication.k8s.io/v1 "
                     "or v1beta1)", api);
    /* A command with a '/' is a path, relative to the kubeconfig; a bare
     * name is looked up in PATH, as client-go does. */
    c->exec.command = strchr(cmd, '/') ? resolve_path(e->file->path, cmd) : strdup(cmd);
    if (!c->exec.command || dup_into(w.s, &c->exec.api_version, api) < 0 ||
        dup_into(w.s, &c->exec.install_hint, hint) < 0)
        return oom(w.s);
    yaml_node_t *args = map_get(d, n, "args"), *env = map_get(d, n, "env");
    yaml_vkind ak = yaml_node_kind(args), ek = yaml_node_kind(env);
    if (ak != YV_NULL && ak != YV_LIST)
        return type_error(&w, "args", "a list of strings", args);
    if (ek != YV_NULL && ek != YV_LIST)
        return type_error(&w, "env", "a list of {name, value}", env);
    size_t na = ak == YV_LIST ? (size_t)(args->data.sequence.items.top - args->data.sequence.items.start) : 0;
    size_t ne = ek == YV_LIST ? (size_t)(env->data.sequence.items.top - env->data.sequence.items.start) : 0;
    c->exec.args = calloc(na + 1, sizeof *c->exec.args);
    c->exec.env = calloc(ne + 1, sizeof *c->exec.env);
    if (!c->exec.args || !c->exec.env)
        return oom(w.s);
    char field[64];
    for (size_t i = 0; i < na; i++) {
        yaml_node_t *a = yaml_document_get_node(d, args->data.sequence.items.start[i]);
        snprintf(field, sizeof field, "args[%zu]", i);
        if (yaml_node_kind(a) != YV_STRING)
            return type_error(&w, field, "a string", a);
        if (dup_into(w.s, &c->exec.args[i], yaml_node_text(a)) < 0)
            return -1;
    }
    for (size_t i = 0; i < ne; i++) {
        yaml_node_t *v = yaml_document_get_node(d, env->data.sequence.items.start[i]);
        const char *name, *value;
        snprintf(field, sizeof field, "env[%zu]", i);
        if (yaml_node_kind(v) != YV_MAP)
            return type_error(&w, field, "a mapping {name, value}", v);
        snprintf(inner, sizeof inner, "user.exec.env[%zu]", i);
        if (get_str(&w, d, v, "name", &name) < 0 || get_str(&w, d, v, "value", &value) < 0)
            return -1;
        if (!name || strchr(name, '='))
            return failf(&w, "name", "required, without '='");
        buf b = {0};
        if (buf_printf(&b, "%s=%s", name, value ? value : "") < 0)
            return oom(w.s);
        c->exec.env[i] = buf_steal(&b, NULL);
        snprintf(inner, sizeof inner, "user.exec");
    }
    return 0;
}

static int auth_kind_add(const kc_set *s, buf *kind, const char *what)
{
    if ((kind->len && buf_append_str(kind, " + ") < 0) || buf_append_str(kind, what) < 0)
        return oom(s);
    return 0;
}

static int read_user(const kc_set *s, const kc_entry *e, kube_config *c)
{
    kc_where w = {s, e->file, "users", e->index, e->name, "user"};
    yaml_document_t *d = &e->file->doc;
    const char *token, *token_file, *cert_from, *key_from;
    if (get_str(&w, d, e->body, "token", &token) < 0 ||
        get_str(&w, d, e->body, "tokenFile", &token_file) < 0 ||
        read_pem(&w, e, "client-certificate-data", "client-certificate", &c->cert_pem, &cert_from) < 0 ||
        read_pem(&w, e, "client-key-data", "client-key", &c->key_pem, &key_from) < 0)
        return -1;
    if (cert_from && !key_from)
        return failf(&w, cert_from, "given without client-key or client-key-data");
    if (key_from && !cert_from)
        return failf(&w, key_from, "given without client-certificate or client-certificate-data");
    yaml_node_t *exec = map_get(d, e->body, "exec");
    if (yaml_node_kind(exec) != YV_NULL && read_exec(&w, e, exec, c) < 0)
        return -1;
    buf kind = {0}, why = {0};
    int rc = 0;
    if (token && header_value_check("the token", token, strlen(token), &why) < 0)
        rc = failf(&w, "token", "%s", why.data);
    else if (token)
        rc = dup_into(s, &c->token, token);
    else if (token_file) {
        c->token_file = resolve_path(e->file->path, token_file);
        buf t = {0};
        char read_why[FDIO_WHY_MAX];
        if (!c->token_file)
            rc = oom(s);
        else if (file_read_at(AT_FDCWD, c->token_file, 0, CRED_MAX_FILE, &t, read_why) < 0)
            rc = failf(&w, "tokenFile", "%s: %s", c->token_file, read_why);
        else {
            while (t.len && strchr(" \t\r\n", t.data[t.len - 1]))
                t.data[--t.len] = '\0';   /* files written by echo end in a newline */
            if (header_value_check("the token", t.data ? t.data : "", t.len, &why) < 0)
                rc = failf(&w, "tokenFile", "%s: %s", c->token_file, why.data);
            else
                c->token = buf_steal(&t, NULL);
        }
        buf_free(&t);
    }
    buf_free(&why);
    if (rc == 0 && token)
        rc = auth_kind_add(s, &kind, "bearer token");
    if (rc == 0 && token_file) {
        char what[PATH_MAX + 16];
        snprintf(what, sizeof what, "token file %s", c->token_file);
        rc = auth_kind_add(s, &kind, what);
    }
    if (rc == 0 && cert_from)
        rc = auth_kind_add(s, &kind, "client certificate");
    if (rc == 0 && c->exec.command && !token && !token_file) {
        char what[PATH_MAX + 16];
        snprintf(what, sizeof what, "exec plugin %s", c->exec.command);
        rc = auth_kind_add(s, &kind, what);
    }
    if (rc == 0)
        c->auth_kind = kind.len ? buf_steal(&kind, NULL) : strdup("none");
    buf_free(&kind);
    return rc == 0 && !c->auth_kind ? oom(s) : rc;
}

/* "kubeconfig F, context "C", user "U"" for messages. */
static int set_source(const kc_set *s, kube_config *c, const char *files, const char *ctx,
                      const char *user)
{
    buf b = {0};
    buf_printf(&b, "kubeconfig %s, context \"%s\"", files, ctx);
    if (user)
        buf_printf(&b, ", user \"%s\"", user);
    c->source = b.data ? buf_steal(&b, NULL) : NULL;
    return c->source ? 0 : oom(s);
}

static int resolve_context(kc_set *s, const kube_config_opts *o, const char *files, kube_config *c)
{
    const char *name = o->context && *o->context ? o->context : s->current;
    if (!name)
        return buf_fail(s->err, "%s: no current-context is set and --context was not given", files);
    const kc_entry *ctx = find(&s->contexts, name);
    if (!ctx) {
        if (name == s->current)
            return buf_fail(s->err, "%s: current-context: context \"%s\" is not defined in contexts",
                            s->current_file->path, name);
        return buf_fail(s->err, "%s: --context: context \"%s\" is not defined in contexts", files,
                        name);
    }
    kc_where w = {s, ctx->file, "contexts", ctx->index, ctx->name, "context"};
    yaml_document_t *d = &ctx->file->doc;
    const char *cluster, *user, *ns;
    if (get_str(&w, d, ctx->body, "cluster", &cluster) < 0 ||
        get_str(&w, d, ctx->body, "user", &user) < 0 ||
        get_str(&w, d, ctx->body, "namespace", &ns) < 0)
        return -1;
    if (!cluster)
        return failf(&w, "cluster", "required (the name of an entry in clusters)");
    /* it goes into every request's path */
    if (ns && !dns1123_label_valid(ns))
        return failf(&w, "namespace", "\"%s\" is not a namespace name (a DNS-1123 label)", ns);
    const kc_entry *ce = find(&s->clusters, cluster);
    if (!ce)
        return failf(&w, "cluster", "cluster \"%s\" is not defined in clusters", cluster);
    if (read_cluster(s, ce, c) < 0)
        return -1;
    const kc_entry *ue = user ? find(&s->users, user) : NULL;
    if (user && !ue)
        return failf(&w, "user", "user \"%s\" is not defined in users", user);
    if (ue && read_user(s, ue, c) < 0)
        return -1;
    if (!ue && !(c->auth_kind = strdup("none")))
        return oom(s);
    const char *use_ns = o->namespace && *o->namespace ? o->namespace : ns ? ns : "default";
    if (dup_into(s, &c->namespace, use_ns) < 0)
        return -1;
    return set_source(s, c, files, name, user);
}

static int load_chain(kc_set *s, char **paths, size_t n, int missing_ok, const kube_config_opts *o,
                      const char *files, kube_config *c)
{
    s->files = calloc(n ? n : 1, sizeof *s->files);
    if (!s->files)
        return oom(s);
    size_t found = 0;
    for (size_t i = 0; i < n; i++) {
        kc_file *f = &s->files[s->n_files++];
        f->path = paths[i];
        paths[i] = NULL;
        int rc = load_file(s, f, missing_ok);
        if (rc < 0)
            return -1;
        if (rc == 0)
            continue;
        found++;
        if (add_file(s, f) < 0)
            return -1;
    }
    if (!found)
        return buf_fail(s->err, "KUBECONFIG=%s: none of its files exists", files);
    return resolve_context(s, o, files, c);
}

/* ------------------------------------------------------------------------ */
/* In-cluster                                                                */

static int in_cluster(const char *dir, const kube_config_opts *o, kube_config *c, buf *err)
{
    const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
    buf path = {0}, ns = {0};
    int rc = -1;
    if (!port || !*port)
        port = "443";
    buf_printf(&path, "%s/token", dir);
    buf t = {0};
    char why[FDIO_WHY_MAX];
    if (file_read_at(AT_FDCWD, path.data, 0, CRED_MAX_FILE, &t, why) < 0) {
        buf_printf(err, "in-cluster: %s: %s", path.data, why);
        goto out;
    }
    while (t.len && strchr(" \t\r\n", t.data[t.len - 1]))
        t.data[--t.len] = '\0';
    buf bad = {0};
    if (header_value_check("the token", t.data ? t.data : "", t.len, &bad) < 0) {
        buf_printf(err, "in-cluster: %s: %s", path.data, bad.data);
        buf_free(&bad);
        goto out;
    }
    c->token = buf_steal(&t, NULL);
    c->token_file = buf_steal(&path, NULL);
    buf_printf(&path, "%s/ca.crt", dir);
    if (file_read_at(AT_FDCWD, path.data, 0, CRED_MAX_FILE, &c->ca_pem, why) < 0) {
        buf_printf(err, "in-cluster: %s: %s", path.data, why);
        goto out;
    }
    buf_reset(&path);
    buf_printf(&path, "%s/namespace", dir);
    if (file_read_at(AT_FDCWD, path.data, 0, 256, &ns, why) == 0)
        while (ns.len && strchr(" \t\r\n", ns.data[ns.len - 1]))
            ns.data[--ns.len] = '\0';
    if (ns.len && (strlen(ns.data) != ns.len || !dns1123_label_valid(ns.data))) {
        buf_printf(err, "in-cluster: %s: \"%s\" is not a namespace name (a DNS-1123 label)",
                   path.data, ns.data);
        goto out;
    }
    const char *use_ns = o->namespace && *o->namespace ? o->namespace : ns.len ? ns.data : "default";
    buf server = {0}, src = {0}, kind = {0};
    buf_printf(&server, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
    buf_printf(&src, "in-cluster service account (%s)", dir);
    buf_printf(&kind, "service account token %s", c->token_file);
    c->server = server.data ? buf_steal(&server, NULL) : NULL;
    c->source = src.data ? buf_steal(&src, NULL) : NULL;
    c->auth_kind = kind.data ? buf_steal(&kind, NULL) : NULL;
    c->namespace = strdup(use_ns);
    if (!c->server || !c->source || !c->auth_kind || !c->namespace)
        buf_printf(err, "out of memory");
    else
        rc = 0;
out:
    buf_free(&t);
    buf_free(&path);
    buf_free(&ns);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */

static int split_list(const char *list, char ***out, size_t *n)
{
    size_t cap = 1;
    for (const char *p = list; *p; p++)
        cap += *p == ':';
    *out = calloc(cap, sizeof **out);
    if (!*out)
        return -1;
    *n = 0;
    for (const char *p = list;;) {
        size_t len = strcspn(p, ":");
        if (len) {
            char *s = strndup(p, len);
            if (!s)
                return -1;
            /* the same file twice adds nothing (client-go deduplicates) */
            int dup = 0;
            for (size_t i = 0; i < *n; i++)
                dup |= !strcmp((*out)[i], s);
            if (dup)
                free(s);
            else
                (*out)[(*n)++] = s;
        }
        if (!p[len])
            break;
        p += len + 1;
    }
    return 0;
}

int kube_config_load(const kube_config_opts *opts, kube_config *out, buf *err)
{
    kube_config_opts none = {0};
    const kube_config_opts *o = opts ? opts : &none;
    memset(out, 0, sizeof *out);
    const char *env = getenv("KUBECONFIG");
    const char *home = getenv("HOME");
    char **paths = NULL;
    size_t n = 0;
    int missing_ok = 0, rc;
    buf files = {0};
    kc_set s = {.err = err};
    if (o->kubeconfig && *o->kubeconfig) {
        paths = calloc(1, sizeof *paths);
        if (paths && (paths[0] = strdup(o->kubeconfig)))
            n = 1;
        buf_append_str(&files, o->kubeconfig);
    } else if (env && *env) {
        if (split_list(env, &paths, &n) < 0)
            n = 0;
        missing_ok = 1;
        buf_append_str(&files, env);
    } else {
        buf_printf(&files, "%s/.kube/config", home && *home ? home : "");
        struct stat st;
        if (home && *home && stat(files.data, &st) == 0) {
            paths = calloc(1, sizeof *paths);
            if (paths && (paths[0] = strdup(files.data)))
                n = 1;
        } else {
            const char *dir = sa_dir_override ? sa_dir_override : SA_DIR_DEFAULT;
            const char *host = getenv("KUBERNETES_SERVICE_HOST");
            if (host && *host) {
                rc = in_cluster(dir, o, out, err);
            } else {
                buf_printf(err, "no Kubernetes configuration found: no --kubeconfig, KUBECONFIG is "
                           "unset, %s does not exist, and not running in a cluster "
                           "(KUBERNETES_SERVICE_HOST is unset)", files.data ? files.data : "~/.kube/config");
                rc = -1;
            }
            goto done;
        }
    }
    if (!paths || !files.data || (o->kubeconfig && *o->kubeconfig && !n)) {
        rc = oom(&s);
        goto done;
    }
    rc = load_chain(&s, paths, n, missing_ok, o, files.data, out);
done:
    for (size_t i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
    set_free(&s);
    buf_free(&files);
    if (rc < 0)
        kube_config_free(out);
    return rc;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

void kube_config_free(kube_config *cfg)
{
    free(cfg->server);
    free(cfg->tls_server_name);
    buf_free(&cfg->ca_pem);
    free(cfg->token);
    free(cfg->token_file);
    buf_free(&cfg->cert_pem);
    buf_free(&cfg->key_pem);
    free(cfg->exec.command);
    strv_free(cfg->exec.args);
    strv_free(cfg->exec.env);
    free(cfg->exec.api_version);
    free(cfg->exec.install_hint);
    free(cfg->namespace);
    free(cfg->source);
    free(cfg->auth_kind);
    memset(cfg, 0, sizeof *cfg);
}
