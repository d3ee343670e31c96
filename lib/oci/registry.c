/* registry: image digest and entrypoint lookup through the registry v2 API,
 * with a per-process cache; see registry.h. */
#include "oci/registry.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "http/http_multi.h"
#include "oci/image_ref.h"
#include "oci/oci_manifest.h"
#include "oci/registry_http.h"

#define MANIFEST_MAX_BYTES (4u << 20)   /* distribution's own limit */
#define CONFIG_MAX_BYTES (16u << 20)
#define MAX_INDEX_DEPTH 4

typedef enum lookup_step { STEP_MANIFEST, STEP_CONFIG } lookup_step;

/* One lookup in flight: manifest (index -> the platform's manifest, up to
 * MAX_INDEX_DEPTH), then the config blob; each step a reg_get_start whose
 * answer starts the next. */
struct registry_op {
    http_multi *m;
    char *image;
    char *key;                /* cache key: image and platform */
    image_ref ref;
    reg_client *client;
    oci_platform platform;
    registry_result res;
    registry_result *out;     /* &res */
    buf errb;
    buf *err;                 /* &errb */
    lookup_step step;
    int depth;                /* indexes passed */
    char *want;               /* digest the manifest asked for must have, or NULL */
    buf path;                 /* of the GET in flight, for messages */
    oci_descriptor config;    /* from the manifest */
    char *config_digest;
    loop_defer deferred;      /* a cache hit or an early failure, answered next turn */
    int rc;
    registry_done_fn *done;
    void *ctx;
};
typedef struct registry_op lookup;

/* ---- cache ------------------------------------------------------------- */

typedef struct cache_entry {
    struct cache_entry *next;
    char *key;
    registry_result result;
} cache_entry;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cache_entry *cache_head;
static atomic_size_t cache_hits;

size_t registry_requests_made(void) { return reg_requests_made(); }
size_t registry_cache_hits(void) { return atomic_load(&cache_hits); }

static char **strings_dup(char *const *v, size_t n)
{
    char **out = calloc(n + 1, sizeof *out);
    for (size_t i = 0; out && i < n; i++) {
        if (!(out[i] = strdup(v[i]))) {
            oci_strings_free(out);
            return NULL;
        }
    }
    return out;
}

static char *dup_or_null(const char *s, int *ok)
{
    char *p = s ? strdup(s) : NULL;
    if (s && !p)
        *ok = 0;
    return p;
}

static int result_copy(const registry_result *src, registry_result *dst)
{
    int ok = 1;
    memset(dst, 0, sizeof *dst);
    dst->digest = dup_or_null(src->digest, &ok);
    dst->index_digest = dup_or_null(src->index_digest, &ok);
    dst->media_type = dup_or_null(src->media_type, &ok);
    dst->config_digest = dup_or_null(src->config_digest, &ok);
    dst->from_index = src->from_index;
    dst->n_entrypoint = src->n_entrypoint;
    dst->n_config_entrypoint = src->n_config_entrypoint;
    dst->n_config_cmd = src->n_config_cmd;
    dst->entrypoint = strings_dup(src->entrypoint, src->n_entrypoint);
    dst->config_entrypoint = strings_dup(src->config_entrypoint, src->n_config_entrypoint);
    dst->config_cmd = strings_dup(src->config_cmd, src->n_config_cmd);
    if (!ok || !dst->entrypoint || !dst->config_entrypoint || !dst->config_cmd) {
        registry_result_free(dst);
        return -1;
    }
    return 0;
}

static int cache_get(const char *key, registry_result *out)
{
    int found = 0;
    pthread_mutex_lock(&cache_lock);
    for (cache_entry *e = cache_head; e && !found; e = e->next)
        if (!strcmp(e->key, key))
            found = result_copy(&e->result, out) == 0;
    pthread_mutex_unlock(&cache_lock);
    if (found)
        atomic_fetch_add(&cache_hits, 1);
    return found;
}

static void cache_put(const char *key, const registry_result *r)
{
    cache_entry *e = calloc(1, sizeof *e);
    if (!e || !(e->key = strdup(key)) || result_copy(r, &e->result) < 0) {
        if (e)
            free(e->key);
        free(e);
        return;   /* not caching is always correct */
    }
    pthread_mutex_lock(&cache_lock);
    e->next = cache_head;
    cache_head = e;
    pthread_mutex_unlock(&cache_lock);
}

/* ---- digests ----------------------------------------------------------- */

static void sha256_digest(const void *data, size_t len, char out[72])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
    memcpy(out, "sha256:", 7);
    for (unsigned i = 0; i < n && i < 32; i++)
        snprintf(out + 7 + 2 * i, 3, "%02x", md[i]);
}

/* Checks body against the digest it must have; *actual gets its digest. */
static int verify_digest(lookup *lk, const char *what, const buf *body, const char *want, char actual[72])
{
    sha256_digest(body->data, body->len, actual);
    if (!want || !strcmp(want, actual))
        return 0;
    buf_printf(lk->err, "digest mismatch for %s of image \"%s\" from registry %s: expected %s, got %s", what,
               lk->image, reg_client_host(lk->client), want, actual);
    return -1;
}

/* ---- fetching ---------------------------------------------------------- */

/* Turns a non-200 answer into the user's message. */
static void http_failure(lookup *lk, const char *what, const char *path, reg_response *r)
{
    buf jerr = {0};
    json *doc = json_parse_max(r->body.data, r->body.len, REGISTRY_JSON_MAX_VALUES, &jerr);
    const json *errors = json_get(doc, "errors");
    const json *first = errors && errors->type == JSON_ARRAY && errors->len ? errors->items[0] : NULL;
    const char *code = json_get_str(first, "code"), *message = json_get_str(first, "message");
    if (r->status == 404) {
        buf_printf(lk->err, "image \"%s\" not found in registry %s (", lk->image, reg_client_host(lk->client));
        for (const char *p = code ? code : "HTTP 404 for "; *p; p++)
            buf_printf(lk->err, "%c", *p == '_' ? ' ' : (code && *p >= 'A' && *p <= 'Z') ? *p - 'A' + 'a' : *p);
        if (!code)
            buf_printf(lk->err, "%s %s", what, path);
        buf_append_str(lk->err, ")");
    } else {
        buf_printf(lk->err, "registry %s answered HTTP %ld to GET %s (%s) of image \"%s\"%s%s",
                   reg_client_host(lk->client), r->status, path, what, lk->image, message ? ": " : "",
                   message ? message : "");
    }
    json_free(doc);
    buf_free(&jerr);
}

/* A GET's answer as JSON; non-200 answers become errors. */
static json *answer_json(lookup *lk, const char *what, int rc, const reg_response *r, const buf *err)
{
    const char *path = lk->path.data;
    if (rc < 0) {
        buf_append_str(lk->err, err->data ? err->data : "registry request failed");
        return NULL;
    }
    if (r->status != 200) {
        http_failure(lk, what, path, (reg_response *)r);
        return NULL;
    }
    buf jerr = {0};
    json *doc = json_parse_max(r->body.data, r->body.len, REGISTRY_JSON_MAX_VALUES, &jerr);
    if (!doc)
        buf_printf(lk->err, "the %s of image \"%s\" from registry %s cannot be read as JSON: %s", what, lk->image,
                   reg_client_host(lk->client), jerr.data);
    buf_free(&jerr);
    return doc;
}

static void finish(lookup *lk, int rc);
static void on_manifest(int rc, reg_response *r, const buf *err, void *ctx);
static void on_config(int rc, reg_response *r, const buf *err, void *ctx);

/* Starts the GET of the manifest named by reference (a tag or a digest);
 * want: the digest it must have, if known. */
static int manifest_start(lookup *lk, const char *reference, const char *want)
{
    free(lk->want);
    lk->want = want ? strdup(want) : NULL;
    buf_reset(&lk->path);
    buf_printf(&lk->path, "manifests/%s", reference);
    if ((want && !lk->want) || !lk->path.data)
        return buf_fail(lk->err, "out of memory");
    lk->step = STEP_MANIFEST;
    return reg_get_start(lk->client, lk->path.data, OCI_MANIFEST_ACCEPT, MANIFEST_MAX_BYTES, on_manifest, lk,
                         lk->err);
}

/* The manifest's answer checked: its digest verified, its kind known. */
static json *manifest_answer(lookup *lk, int rc, const reg_response *r, const buf *err, char digest_out[72],
                             oci_kind *kind)
{
    const char *want_digest = lk->want;
    json *doc = answer_json(lk, "manifest", rc, r, err);
    if (doc && (verify_digest(lk, "the manifest", &r->body, want_digest, digest_out) < 0 ||
                (!want_digest && verify_digest(lk, "the manifest (Docker-Content-Digest)", &r->body,
                                               r->docker_digest, digest_out) < 0))) {
        json_free(doc);
        doc = NULL;
    }
    if (doc) {
        *kind = oci_kind_of(r->content_type, doc);
        if (*kind == OCI_KIND_SCHEMA1 || *kind == OCI_KIND_UNKNOWN) {
            buf_printf(lk->err, "image \"%s\" has a %s manifest (%s), which is not supported; push it again "
                       "with a current client (OCI or Docker schema 2)", lk->image,
                       *kind == OCI_KIND_SCHEMA1 ? "Docker schema 1" : "unknown",
                       r->content_type ? r->content_type : "no Content-Type");
            json_free(doc);
            doc = NULL;
        }
    }
    return doc;
}

/* The digest of index's entry for the platform (malloc'd), or NULL with err set. */
static char *select_child(lookup *lk, const json *index, int depth)
{
    oci_descriptor d;
    buf reason = {0};
    char *child = NULL;
    if (depth >= MAX_INDEX_DEPTH)
        buf_printf(&reason, "indexes nested more than %d deep", MAX_INDEX_DEPTH);
    else if (oci_index_select(index, &lk->platform, &d, &reason) == 0 && !(child = strdup(d.digest)))
        buf_printf(&reason, "out of memory");
    if (!child)
        buf_printf(lk->err, "image \"%s\" in registry %s: %s", lk->image, reg_client_host(lk->client), reason.data);
    buf_free(&reason);
    return child;
}

/* Starts the GET of the config blob the image manifest names. */
static int config_start(lookup *lk, const json *manifest)
{
    oci_descriptor d;
    buf reason = {0};
    if (oci_manifest_config(manifest, &d, &reason) < 0) {
        buf_printf(lk->err, "image \"%s\": %s", lk->image, reason.data);
        buf_free(&reason);
        return -1;
    }
    const json *mt = json_get(manifest, "mediaType");
    if (mt && mt->type == JSON_STRING && strlen(mt->str) != mt->len)
        return buf_fail(lk->err, "image \"%s\": the manifest's mediaType has a NUL byte (\\u0000) at offset %zu; "
                        "refused", lk->image, strlen(mt->str));
    lk->out->media_type = strdup(json_get_str(manifest, "mediaType") ? json_get_str(manifest, "mediaType") : "");
    lk->out->config_digest = strdup(d.digest);
    lk->config = d;
    lk->config.digest = lk->out->config_digest;   /* d's strings live in the manifest */
    lk->config.media_type = NULL;
    if (!lk->out->media_type || !lk->out->config_digest)
        return buf_fail(lk->err, "out of memory");
    buf_reset(&lk->path);
    buf_printf(&lk->path, "blobs/%s", d.digest);
    lk->step = STEP_CONFIG;
    return reg_get_start(lk->client, lk->path.data, NULL, CONFIG_MAX_BYTES, on_config, lk, lk->err);
}

/* The manifest came: an index leads to the platform's manifest, an image
 * manifest to its config. */
static void on_manifest(int rc, reg_response *r, const buf *err, void *ctx)
{
    lookup *lk = ctx;
    char digest[72];
    oci_kind kind;
    json *doc = manifest_answer(lk, rc, r, err, digest, &kind);
    int next = -1;
    if (doc && kind == OCI_KIND_INDEX) {
        if (!lk->out->index_digest)
            lk->out->index_digest = strdup(digest);
        lk->out->from_index = 1;
        char *child = select_child(lk, doc, lk->depth++);
        next = child ? manifest_start(lk, child, child) : -1;
        free(child);
    } else if (doc) {
        lk->out->digest = strdup(digest);
        next = config_start(lk, doc);
    }
    json_free(doc);
    if (next < 0)
        finish(lk, -1);
}

/* Porch's rule: Entrypoint when non-empty, else Cmd. */
static int read_command(lookup *lk, const json *config)
{
    registry_result *o = lk->out;
    buf reason = {0};
    if (oci_config_strings(config, "Entrypoint", &o->config_entrypoint, &o->n_config_entrypoint, &reason) < 0 ||
        oci_config_strings(config, "Cmd", &o->config_cmd, &o->n_config_cmd, &reason) < 0) {
        buf_printf(lk->err, "image \"%s\": %s", lk->image, reason.data);
        buf_free(&reason);
        return -1;
    }
    int use_ep = o->n_config_entrypoint > 0;
    o->n_entrypoint = use_ep ? o->n_config_entrypoint : o->n_config_cmd;
    o->entrypoint = strings_dup(use_ep ? o->config_entrypoint : o->config_cmd, o->n_entrypoint);
    if (!o->entrypoint)
        return buf_fail(lk->err, "out of memory");
    if (o->n_entrypoint == 0)
        return buf_fail(lk->err, "image \"%s\" has neither Entrypoint nor Cmd in its config (%s)", lk->image,
                        o->config_digest);
    return 0;
}

static void on_config(int rc, reg_response *r, const buf *err, void *ctx)
{
    lookup *lk = ctx;
    char actual[72];
    json *doc = answer_json(lk, "config", rc, r, err);
    const oci_descriptor *d = &lk->config;
    if (doc && verify_digest(lk, "the config", &r->body, d->digest, actual) < 0) {
        json_free(doc);
        doc = NULL;
    } else if (doc && d->size >= 0 && (size_t)d->size != r->body.len) {
        buf_printf(lk->err, "size mismatch for the config of image \"%s\": the manifest says %lld bytes, the "
                   "registry sent %zu", lk->image, d->size, r->body.len);
        json_free(doc);
        doc = NULL;
    }
    rc = doc && read_command(lk, doc) == 0 ? 0 : -1;
    if (rc == 0 && (!lk->out->digest || (lk->out->from_index && !lk->out->index_digest)))
        rc = -1, buf_printf(lk->err, "out of memory");
    json_free(doc);
    if (rc == 0 && lk->key)
        cache_put(lk->key, lk->out);
    finish(lk, rc);
}

/* ---- the lookup's life ------------------------------------------------- */

static void op_free(lookup *lk)
{
    if (!lk)
        return;
    loop_defer_cancel(&lk->deferred);
    reg_client_free(lk->client);
    image_ref_free(&lk->ref);
    registry_result_free(&lk->res);
    buf_free(&lk->errb);
    buf_free(&lk->path);
    free(lk->want);
    free(lk->key);
    free(lk->image);
    free(lk);
}

/* Hands the result to done (moved: done owns it on success), then frees. */
static void finish(lookup *lk, int rc)
{
    registry_result res;
    memset(&res, 0, sizeof res);
    if (rc == 0) {
        res = lk->res;
        memset(&lk->res, 0, sizeof lk->res);
    }
    lk->done(rc, rc == 0 ? &res : NULL, rc < 0 ? (lk->errb.data ? lk->errb.data : "image lookup failed") : NULL,
             lk->ctx);
    op_free(lk);
}

static void on_deferred(loop *l, void *ctx)
{
    (void)l;
    lookup *lk = ctx;
    finish(lk, lk->rc);
}

registry_op *registry_lookup_start(http_multi *m, const char *image, const registry_opts *opts,
                                   registry_done_fn *done, void *ctx, buf *err)
{
    lookup *lk = calloc(1, sizeof *lk);
    if (!lk || !(lk->image = strdup(image))) {
        free(lk);
        buf_printf(err, "out of memory");
        return NULL;
    }
    lk->m = m;
    lk->out = &lk->res;
    lk->err = &lk->errb;
    lk->done = done;
    lk->ctx = ctx;
    loop_defer_init(&lk->deferred, on_deferred, lk);
    const char *platform = opts->platform ? opts->platform : "linux/amd64";
    if (oci_platform_parse(platform, &lk->platform, err) < 0)
        goto fail;
    buf key = {0};
    buf_printf(&key, "%s\n%s", image, platform);
    lk->key = key.data ? buf_steal(&key, NULL) : NULL;
    if (lk->key && cache_get(lk->key, &lk->res)) {
        lk->rc = 0;
        loop_defer_post(http_multi_loop(m), &lk->deferred);
        return lk;
    }
    if (image_ref_parse(image, &lk->ref, err) < 0 || !(lk->client = reg_client_new(m, image, &lk->ref, opts, err)))
        goto fail;
    if (manifest_start(lk, image_ref_reference(&lk->ref), lk->ref.digest) < 0) {
        buf_append_str(err, lk->errb.data ? lk->errb.data : "out of memory");
        goto fail;
    }
    return lk;
fail:
    op_free(lk);
    return NULL;
}

void registry_lookup_cancel(registry_op *op) { op_free(op); }

/* ---- the blocking form, for the command line ------------------------------ */

typedef struct sync_wait {
    loop *l;
    int finished, rc;
    registry_result *out;
    buf *err;
} sync_wait;

static void sync_done(int rc, registry_result *res, const char *err, void *ctx)
{
    sync_wait *w = ctx;
    w->finished = 1;
    w->rc = rc;
    if (rc == 0)
        *w->out = *res;
    else
        buf_append_str(w->err, err);
    loop_stop(w->l);
}

int registry_lookup(const char *image, const registry_opts *opts, registry_result *out, buf *err)
{
    memset(out, 0, sizeof *out);
    sync_wait w = {.out = out, .err = err, .rc = -1};
    http_multi *m = NULL;
    if (!(w.l = loop_new()))
        return buf_fail(err, "cannot create an event loop for the registry lookup");
    if ((m = http_multi_new(w.l, err)) && registry_lookup_start(m, image, opts, sync_done, &w, err)) {
        /* every transfer has curl's timeout, so the loop ends */
        while (!w.finished && loop_run(w.l) == 0)
            ;
        if (!w.finished)
            buf_printf(err, "the event loop failed during the registry lookup");
    }
    http_multi_free(m);
    loop_free(w.l);
    return w.finished ? w.rc : -1;
}

void registry_result_free(registry_result *r)
{
    free(r->digest);
    free(r->index_digest);
    free(r->media_type);
    free(r->config_digest);
    oci_strings_free(r->entrypoint);
    oci_strings_free(r->config_entrypoint);
    oci_strings_free(r->config_cmd);
    memset(r, 0, sizeof *r);
}
