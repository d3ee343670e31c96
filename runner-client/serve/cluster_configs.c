/* cluster_configs: FunctionConfigs from the cluster; see cluster_configs.h. */
#include "serve/cluster_configs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/log.h"
#include "kube/kube_watch.h"

#define FC_API "/apis/config.porch.kpt.dev/v1alpha1"
#define FC_RESOURCE "functionconfigs"

/* One object as the server last showed it, and what serve made of it. */
typedef struct fc_object {
    char *name;
    char *text;            /* the object as JSON, as fnconfig_parse reads it; NULL: too large */
    size_t len;            /* text's length */
    int bad_number;        /* text is NULL for a number JSON cannot hold, not its size */
    char *rv;              /* metadata.resourceVersion */
    long long generation;
    int deleting;          /* metadata.deletionTimestamp set */
    char **finalizers;     /* metadata.finalizers */
    size_t n_finalizers;
    int has_finalizer;     /* ours among them */
    long long status_gen;  /* status.functionRunnerObservedGeneration, -1: none */
    char *status_error;    /* status.error, "" when none */
    char *error;           /* why serve does not apply it, NULL: applied */
    int writing;           /* a PATCH of it in flight */
    int again;             /* changed while writing: look again after */
    char *refused_rv;      /* a write refused at this resourceVersion: not tried again on it */
    uint64_t applied;      /* a hash of what the set was built from (applied_key): an
                              event changing only status or finalizers rebuilds nothing */
    int has_applied;
} fc_object;

struct cluster_configs {
    kube_client *c;
    char *ns, *functions_dir;
    int exec_enabled;
    cluster_configs_apply_fn *apply;
    void *ctx;
    kube_watch *w;
    fc_object *objs;
    size_t n;
    size_t writes;         /* PATCHes in flight */
    int stopped;
    loop *l;
    loop_timer tick;       /* the next rebuild, when rebuilds are being spaced */
    loop_defer soon;       /* a look at the objects after the current callbacks */
    int need_rebuild;
    int64_t rebuild_after; /* no rebuild before (loop_now_ns): see on_tick */
};

/* ---- objects ---------------------------------------------------------------- */

/* Drops what object_read read (the server's view of the object). */
static void object_forget_read(fc_object *o)
{
    free(o->text);
    free(o->rv);
    free(o->status_error);
    for (size_t i = 0; i < o->n_finalizers; i++)
        free(o->finalizers[i]);
    free(o->finalizers);
    o->text = o->rv = o->status_error = NULL;
    o->finalizers = NULL;
    o->n_finalizers = 0;
    o->has_finalizer = 0;
}

static void object_clear(fc_object *o)
{
    object_forget_read(o);
    free(o->name);
    free(o->error);
    free(o->refused_rv);
    *o = (fc_object){0};
}

static fc_object *find(cluster_configs *cc, const char *name)
{
    for (size_t i = 0; i < cc->n; i++)
        if (!strcmp(cc->objs[i].name, name))
            return &cc->objs[i];
    return NULL;
}

static long long number_at(const json *obj, const char *path, long long absent)
{
    const json *v = kube_path(obj, path);
    return v && v->type == JSON_NUMBER && v->number >= 0 && v->number < 9.2e18
        ? (long long)v->number : absent;
}

static char *dup_or_empty(const char *s)
{
    return strdup(s ? s : "");
}

/* Reads what serve needs of an object into o (its name already set); the
 * rest of o (error, writing, again, refused_rv) is kept. -1: out of memory. */
static int object_read(fc_object *o, const json *obj)
{
    buf text = {0};
    object_forget_read(o);
    /* written up to the bound and no further: a large object costs no more */
    int rc = json_write_tree(&text, obj, CLUSTER_CONFIG_MAX_BYTES);
    if (rc == -1) {
        buf_free(&text);
        return -1;
    }
    o->bad_number = rc == -2;
    int too_big = rc != 0 || text.len > CLUSTER_CONFIG_MAX_BYTES;   /* held as an error */
    if (too_big) {
        buf_free(&text);
    } else {
        o->len = text.len;
        o->text = text.data ? text.data : strdup("");
    }
    o->rv = dup_or_empty(kube_path_str(obj, "metadata.resourceVersion"));
    o->generation = number_at(obj, "metadata.generation", 0);
    o->deleting = kube_path(obj, "metadata.deletionTimestamp") != NULL &&
                  kube_path(obj, "metadata.deletionTimestamp")->type != JSON_NULL;
    o->status_gen = number_at(obj, "status.functionRunnerObservedGeneration", -1);
    o->status_error = dup_or_empty(kube_path_str(obj, "status.error"));
    const json *fin = kube_path(obj, "metadata.finalizers");
    if (fin && fin->type == JSON_ARRAY && fin->len) {
        o->finalizers = calloc(fin->len, sizeof *o->finalizers);
        if (!o->finalizers)
            return -1;
        for (size_t i = 0; i < fin->len; i++) {
            const char *f = json_str(fin->items[i]);
            if (!f)
                continue;
            if (!(o->finalizers[o->n_finalizers] = strdup(f)))
                return -1;
            o->has_finalizer |= !strcmp(f, CLUSTER_CONFIGS_FINALIZER);
            o->n_finalizers++;
        }
    }
    return o->rv && o->status_error && (o->text || too_big) ? 0 : -1;
}

/* Adds or refreshes the object; NULL when it has no name, the table is
 * full or memory ran out (logged). */
static fc_object *upsert(cluster_configs *cc, const json *obj)
{
    const char *name = kube_path_str(obj, "metadata.name");
    if (!name || !*name) {
        log_warn("FunctionConfigs in namespace %s: an object without metadata.name; ignored", cc->ns);
        return NULL;
    }
    fc_object *o = find(cc, name);
    if (!o) {
        if (cc->n >= CLUSTER_CONFIGS_MAX) {
            log_error("FunctionConfig %s/%s: ignored: namespace %s holds more than %d "
                      "FunctionConfigs, the most serve reads", cc->ns, name, cc->ns,
                      CLUSTER_CONFIGS_MAX);
            return NULL;
        }
        if (!cc->objs && !(cc->objs = calloc(CLUSTER_CONFIGS_MAX, sizeof *cc->objs)))
            goto oom;
        o = &cc->objs[cc->n];
        *o = (fc_object){.name = strdup(name)};
        if (!o->name)
            goto oom;
        cc->n++;
    }
    if (object_read(o, obj) == 0)
        return o;
    object_forget_read(o);   /* held as an error until it changes */
    o->rv = strdup("");
    o->status_error = strdup("");
    free(o->error);
    o->error = strdup("out of memory reading this object");
    return o;
oom:
    log_error("FunctionConfig %s/%s: out of memory; ignored", cc->ns, name);
    return NULL;
}

static void remove_object(cluster_configs *cc, const char *name)
{
    fc_object *o = find(cc, name);
    if (!o)
        return;
    object_clear(o);   /* a write in flight finds no object and does nothing */
    *o = cc->objs[--cc->n];
    cc->objs[cc->n] = (fc_object){0};
}

/* ---- writing back: finalizer and status -------------------------------------- */

typedef struct write_ctx {
    cluster_configs *cc;
    char name[254];
    char *rv;              /* the resourceVersion the write was made against */
    const char *what;      /* for the log: "finalizer", "status" */
} write_ctx;

static void write_ctx_free(write_ctx *wc)
{
    free(wc->rv);
    free(wc);
}

static void sync_object(cluster_configs *cc, fc_object *o);
static void later(cluster_configs *cc, int rebuild_too);

static void cluster_configs_free(cluster_configs *cc)
{
    loop_timer_disarm(cc->l, &cc->tick);   /* a write's answer after the stop may have asked */
    loop_defer_cancel(&cc->soon);
    for (size_t i = 0; i < cc->n; i++)
        object_clear(&cc->objs[i]);
    free(cc->objs);
    free(cc->ns);
    free(cc->functions_dir);
    free(cc);
}

static void on_written(const kube_result *r, void *ctx)
{
    write_ctx *wc = ctx;
    cluster_configs *cc = wc->cc;
    cc->writes--;
    if (cc->stopped) {
        if (!cc->writes)
            cluster_configs_free(cc);
        write_ctx_free(wc);
        return;
    }
    fc_object *o = find(cc, wc->name);
    if (o) {
        o->writing = 0;
        if (!r->ok) {
            /* a 409 (the object changed under us) comes back as a watch event */
            if (r->status != 409)
                log_error("FunctionConfig %s/%s: cannot write its %s: %s", cc->ns, wc->name,
                          wc->what, r->error ? r->error : "failed");
            free(o->refused_rv);   /* the version written against: a newer one is tried */
            o->refused_rv = wc->rv;
            wc->rv = NULL;
        } else if (r->obj && object_read(o, r->obj) < 0) {
            log_error("FunctionConfig %s/%s: out of memory reading the written object", cc->ns,
                      wc->name);
        }
        if (r->ok || o->again) {
            o->again = 0;
            later(cc, 0);
        }
    }
    write_ctx_free(wc);
}

static void write_patch(cluster_configs *cc, fc_object *o, const char *what, int status,
                        const buf *body)
{
    write_ctx *wc = calloc(1, sizeof *wc);
    buf name = {0}, err = {0};
    if (!wc || !body->data || !(wc->rv = strdup(o->rv)) ||
        buf_printf(&name, "%s%s", o->name, status ? "/status" : "") < 0) {
        log_error("FunctionConfig %s/%s: out of memory writing its %s", cc->ns, o->name, what);
        if (wc)
            write_ctx_free(wc);
        buf_free(&name);
        return;
    }
    wc->cc = cc;
    wc->what = what;
    snprintf(wc->name, sizeof wc->name, "%s", o->name);
    kube_ref ref = {.api = FC_API, .resource = FC_RESOURCE, .namespace = cc->ns, .name = name.data};
    if (kube_patch(cc->c, &ref, body->data, body->len, on_written, wc, &err) < 0) {
        log_error("FunctionConfig %s/%s: cannot write its %s: %s", cc->ns, o->name, what,
                  err.data ? err.data : "out of memory");
        write_ctx_free(wc);
    } else {
        o->writing = 1;
        cc->writes++;
    }
    buf_free(&name);
    buf_free(&err);
}

/* Our finalizer added to, or taken from, the finalizers the object has: a
 * merge patch replaces the whole list, so it carries the resourceVersion
 * read, and a list changed meanwhile is refused (409), not overwritten. */
static void write_finalizers(cluster_configs *cc, fc_object *o, int add)
{
    buf body = {0};
    json_obj meta;
    buf_append_str(&body, "{\"metadata\": ");
    json_obj_begin(&meta, &body);
    json_obj_string(&meta, "resourceVersion", o->rv);
    json_obj_key(&meta, "finalizers");
    buf_append_str(&body, "[");
    int n = 0;
    for (size_t i = 0; i < o->n_finalizers; i++) {
        if (!strcmp(o->finalizers[i], CLUSTER_CONFIGS_FINALIZER))
            continue;
        if (n++)
            buf_append_str(&body, ", ");
        json_write_string(&body, o->finalizers[i], strlen(o->finalizers[i]));
    }
    if (add) {
        if (n)
            buf_append_str(&body, ", ");
        json_write_string(&body, CLUSTER_CONFIGS_FINALIZER, strlen(CLUSTER_CONFIGS_FINALIZER));
    }
    buf_append_str(&body, "]");
    if (json_obj_end(&meta) < 0 || buf_append_str(&body, "}") < 0)
        buf_free(&body);
    write_patch(cc, o, "finalizer", 0, &body);
    buf_free(&body);
}

/* As Porch's reconciler: applied, the generation and an empty error; not
 * applied, the error alone (the generation last applied stays). */
static void write_status(cluster_configs *cc, fc_object *o)
{
    buf body = {0};
    json_obj st;
    buf_append_str(&body, "{\"status\": ");
    json_obj_begin(&st, &body);
    if (!o->error) {
        json_obj_key(&st, "functionRunnerObservedGeneration");
        st.rc |= buf_printf(&body, "%lld", o->generation);
    }
    json_obj_key(&st, "error");   /* Porch's omitempty: an empty error is no error field */
    st.rc |= o->error ? json_write_string(&body, o->error, strlen(o->error))
                      : buf_append_str(&body, "null");
    if (json_obj_end(&st) < 0 || buf_append_str(&body, "}") < 0)
        buf_free(&body);
    write_patch(cc, o, "status", 1, &body);
    buf_free(&body);
}

/* What the object should hold and does not, written (one write at a time
 * per object; the next follows its answer). */
static void sync_object(cluster_configs *cc, fc_object *o)
{
    if (o->writing) {
        o->again = 1;
        return;
    }
    if (!o->rv || !o->status_error)   /* out of memory reading it: nothing known to write */
        return;
    if (o->refused_rv && !strcmp(o->refused_rv, o->rv))
        return;
    if (o->deleting) {
        if (o->has_finalizer)
            write_finalizers(cc, o, 0);
        return;
    }
    if (!o->has_finalizer) {
        write_finalizers(cc, o, 1);
        return;
    }
    const char *want = o->error ? o->error : "";
    if (strcmp(o->status_error, want) || (!o->error && o->status_gen != o->generation))
        write_status(cc, o);
}

/* ---- the set ---------------------------------------------------------------- */

static int by_name(const void *a, const void *b)
{
    return strcmp(((const fc_object *)a)->name, ((const fc_object *)b)->name);
}

/* The object's error as status.error holds it: at most
 * CLUSTER_CONFIGS_STATUS_MAX bytes, cut on a UTF-8 boundary, saying so. */
static void set_error(fc_object *o, const char *why)
{
    static const char cut[] = " ... (cut)";
    size_t len = strlen(why);
    free(o->error);
    if (len > CLUSTER_CONFIGS_STATUS_MAX) {
        len = CLUSTER_CONFIGS_STATUS_MAX - (sizeof cut - 1);
        while (len && ((unsigned char)why[len] & 0xC0) == 0x80)
            len--;
    }
    o->error = malloc(len + sizeof cut);
    if (!o->error)
        return;
    memcpy(o->error, why, len);
    o->error[len] = '\0';
    if (len < strlen(why))
        strcat(o->error, cut);
}

/* Reads one object alone: its own errors (strict reading, its binary),
 * before the set's (a second object for one image). */
static int check_alone(cluster_configs *cc, const fc_object *o, const char *label, int *fd, buf *why)
{
    fnconfig one = {0};
    int rc = -1;
    if (!o->text && o->bad_number) {
        buf_append_str(why, "the object holds a number out of JSON's range (such as 1e400)");
    } else if (!o->text) {
        buf_printf(why, "the object is more than %u bytes as JSON, the most serve reads",
                   CLUSTER_CONFIG_MAX_BYTES);
    } else if (fnconfig_parse(label, o->text, o->len, cc->functions_dir, &one, why) == 0) {
        if (one.n != 1)
            buf_printf(why, "%s: not a FunctionConfig (apiVersion config.porch.kpt.dev/v1alpha1)",
                       label);
        else if (!cc->exec_enabled || !one.entries[0].binary.present)
            rc = 0;
        else if (*fd < 0 && (*fd = fnconfig_open_functions_dir(cc->functions_dir, why)) < 0)
            rc = -1;
        else
            rc = fnconfig_check_binaries(&one, *fd, cc->functions_dir, why);
    }
    fnconfig_free(&one);
    return rc;
}

/* Every object held, read again into a new set handed to the owner; then
 * each object's finalizer and status brought in line. */
static void rebuild(cluster_configs *cc)
{
    fnconfig cfg = {0};
    int fd = -1;
    size_t applied = 0;
    if (cc->n)
        qsort(cc->objs, cc->n, sizeof *cc->objs, by_name);   /* the same winner each time */
    size_t total = 0;
    for (size_t i = 0; i < cc->n; i++) {
        fc_object *o = &cc->objs[i];
        buf label = {0}, why = {0};
        free(o->error);
        o->error = NULL;
        if (o->deleting)
            continue;
        buf_printf(&label, "%s/functionconfigs/%s", cc->ns, o->name);
        total += o->text ? o->len : 0;
        int over = total > CLUSTER_CONFIGS_MAX_TOTAL;
        if (over)
            buf_printf(&why, "not read: the FunctionConfigs of namespace %s before it (by name) "
                       "and it pass %u bytes as JSON, the most serve reads", cc->ns,
                       CLUSTER_CONFIGS_MAX_TOTAL);
        if (!over && check_alone(cc, o, label.data ? label.data : "", &fd, &why) == 0 &&
            fnconfig_parse(label.data ? label.data : "", o->text, o->len, cc->functions_dir,
                           &cfg, &why) == 0) {
            applied++;
        } else {
            set_error(o, why.data ? why.data : "out of memory");
            log_error("FunctionConfig %s/%s not applied: %s", cc->ns, o->name,
                      o->error ? o->error : "out of memory");
        }
        buf_free(&label);
        buf_free(&why);
    }
    log_info("FunctionConfigs from namespace %s: %zu applied, %zu not", cc->ns, applied,
             cc->n - applied);
    cc->apply(&cfg, fd, cc->ctx);
    for (size_t i = 0; i < cc->n; i++)
        sync_object(cc, &cc->objs[i]);
}

/* What of an object the set depends on: all but status, finalizers and
 * the server's bookkeeping (a status write's echo changes nothing here;
 * an annotation, which moves no generation, does), kept as a 64-bit
 * FNV-1a hash. 0 in *has when it could not be made (too large, out of
 * memory): the object then rebuilds the set at each event. */
static uint64_t applied_key(const json *obj, int deleting, int *has)
{
    static const char *const parts[] = {"apiVersion", "kind", "spec", "metadata.annotations"};
    buf key = {0};
    int rc = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0] && rc == 0; i++) {
        const json *v = kube_path(obj, parts[i]);
        rc = v ? json_write_tree(&key, v, CLUSTER_CONFIG_MAX_BYTES) : 0;
        rc = rc ? rc : buf_printf(&key, ";");
    }
    rc = rc ? rc : buf_printf(&key, "%d", deleting);
    uint64_t h = 14695981039346656037ULL;
    for (size_t i = 0; rc >= 0 && i < key.len; i++)
        h = (h ^ (unsigned char)key.data[i]) * 1099511628211ULL;
    *has = rc >= 0 && key.len <= CLUSTER_CONFIG_MAX_BYTES && key.data;
    buf_free(&key);
    return h;
}

/* Watch callbacks run inside the HTTP layer's (libcurl's) callbacks, where
 * no request may be started: what an event asks for (a rebuild, writes,
 * the owner's pods) runs once the current callbacks are done (a deferred
 * call), one for a burst of
 * events (a list of many objects is one rebuild). */
static void on_tick(loop *l, void *ctx)
{
    cluster_configs *cc = ctx;
    int64_t now = loop_now_ns();
    loop_timer_disarm(l, &cc->tick);
    loop_defer_cancel(&cc->soon);
    if (cc->need_rebuild && now >= cc->rebuild_after) {
        cc->need_rebuild = 0;
        rebuild(cc);
        /* a rebuild reads every object (up to CLUSTER_CONFIGS_MAX_TOTAL
         * bytes, a few hundred ms): changes that come faster wait, so that
         * rebuilds take at most a fifth of the loop's time */
        int64_t took = loop_now_ns() - now;
        cc->rebuild_after = loop_deadline_ns(4 * took);
        return;
    }
    for (size_t i = 0; i < cc->n; i++)
        sync_object(cc, &cc->objs[i]);
    if (cc->need_rebuild)
        loop_timer_arm(l, &cc->tick, cc->rebuild_after - now);
}

static void later(cluster_configs *cc, int rebuild_too)
{
    cc->need_rebuild |= rebuild_too;
    if (!loop_timer_armed(&cc->tick))   /* else the spaced rebuild looks at them too */
        loop_defer_post(cc->l, &cc->soon);
}

/* ---- the watch ---------------------------------------------------------------- */

static void on_list(const json *list, int relisted, void *ctx)
{
    cluster_configs *cc = ctx;
    const json *items = json_get(list, "items");
    /* the list is the whole set: what it lacks was deleted */
    for (size_t i = cc->n; i-- > 0;) {
        int listed = 0;
        for (size_t j = 0; items && items->type == JSON_ARRAY && j < items->len && !listed; j++) {
            const char *name = kube_path_str(items->items[j], "metadata.name");
            listed = name && !strcmp(name, cc->objs[i].name);
        }
        if (!listed)
            remove_object(cc, cc->objs[i].name);
    }
    for (size_t j = 0; items && items->type == JSON_ARRAY && j < items->len; j++) {
        fc_object *o = upsert(cc, items->items[j]);
        if (o)
            o->applied = applied_key(items->items[j], o->deleting, &o->has_applied);
    }
    if (relisted)
        log_info("FunctionConfigs in namespace %s listed again", cc->ns);
    later(cc, 1);
}

static void on_event(kube_event_type type, const json *object, void *ctx)
{
    cluster_configs *cc = ctx;
    const char *name = kube_path_str(object, "metadata.name");
    if (type == KUBE_DELETED) {
        if (name && find(cc, name)) {
            remove_object(cc, name);
            later(cc, 1);
        }
        return;
    }
    fc_object *o = upsert(cc, object);
    if (!o)
        return;
    int has = 0;
    uint64_t key = applied_key(object, o->deleting, &has);
    if (has && o->has_applied && key == o->applied) {
        later(cc, 0);
        return;
    }
    o->applied = key;
    o->has_applied = has;
    later(cc, 1);
}

static void on_error(const char *message, int fatal, void *ctx)
{
    cluster_configs *cc = ctx;
    /* a 404 on the collection: the CRD is not installed (a missing
     * namespace is named as such by the client) */
    int no_crd = strstr(message, "404") && !strstr(message, "does not exist");
    if (fatal)
        log_error("FunctionConfigs in namespace %s: %s; no FunctionConfig is read from the "
                  "cluster until serve is restarted%s", cc->ns, message,
                  no_crd ? " (is the FunctionConfig CRD installed? kubectl apply -f "
                           "deploy/functionconfig-crd.yaml)" : "");
    else
        log_warn("FunctionConfigs in namespace %s: %s (watched again)", cc->ns, message);
}

cluster_configs *cluster_configs_start(kube_client *c, const cluster_configs_opts *o, buf *err)
{
    cluster_configs *cc = calloc(1, sizeof *cc);
    if (cc) {
        loop_timer_init(&cc->tick, on_tick, cc);
        loop_defer_init(&cc->soon, on_tick, cc);
    }
    if (!cc || !(cc->ns = strdup(o->namespace)) ||
        !(cc->functions_dir = strdup(o->functions_dir ? o->functions_dir : ""))) {
        if (cc)
            cluster_configs_free(cc);
        buf_append_str(err, "out of memory");
        return NULL;
    }
    cc->c = c;
    cc->l = kube_client_loop(c);
    cc->exec_enabled = o->exec_enabled;
    cc->apply = o->apply;
    cc->ctx = o->ctx;
    kube_ref ref = {.api = FC_API, .resource = FC_RESOURCE, .namespace = cc->ns};
    kube_watch_fns fns = {.on_list = on_list, .on_event = on_event, .on_error = on_error};
    if (!(cc->w = kube_watch_start(c, &ref, &fns, cc, err))) {
        cluster_configs_free(cc);
        return NULL;
    }
    return cc;
}

void cluster_configs_stop(cluster_configs *cc)
{
    if (!cc)
        return;
    kube_watch_stop(cc->w);
    loop_timer_disarm(cc->l, &cc->tick);
    loop_defer_cancel(&cc->soon);
    cc->stopped = 1;
    if (!cc->writes)
        cluster_configs_free(cc);
}
