/* registry_tags: a repository's tags, page by page; see registry_tags.h. */
#include "oci/registry_tags.h"

#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "oci/image_ref.h"
#include "oci/oci_manifest.h"
#include "oci/registry_http.h"

#define PAGE_MAX_BYTES (4u << 20)

struct registry_tags_op {
    reg_client *client;
    image_ref ref;
    char *image;
    char **tags;               /* this page's, handed to page() */
    size_t n, cap, total;
    int pages;
    buf path, err;
    registry_tags_page_fn *page;
    registry_tags_fn *done;
    void *ctx;
};

static void drop_page(registry_tags_op *op)
{
    for (size_t i = 0; i < op->n; i++)
        free(op->tags[i]);
    op->n = 0;
}

void registry_tags_cancel(registry_tags_op *op)
{
    if (!op)
        return;
    reg_client_free(op->client);
    image_ref_free(&op->ref);
    drop_page(op);
    free(op->tags);
    buf_free(&op->path);
    buf_free(&op->err);
    free(op->image);
    free(op);
}

static void finish(registry_tags_op *op, int rc)
{
    op->done(rc, op->total, rc < 0 ? (op->err.data ? op->err.data : "out of memory") : NULL, op->ctx);
    registry_tags_cancel(op);
}

static int add_tag(registry_tags_op *op, const char *tag)
{
    if (op->total == REGISTRY_TAGS_MAX)
        return buf_fail(&op->err, "the repository of image \"%s\" has more than %d tags (the "
                        "limit)", op->image, REGISTRY_TAGS_MAX);
    if (op->n == op->cap) {
        size_t cap = op->cap ? op->cap * 2 : 64;
        char **grown = realloc(op->tags, cap * sizeof *grown);
        if (!grown)
            return buf_fail(&op->err, "out of memory");
        op->tags = grown;
        op->cap = cap;
    }
    if (!(op->tags[op->n] = strdup(tag)))
        return buf_fail(&op->err, "out of memory");
    op->n++;
    op->total++;
    return 0;
}

/* The page's tags added. 0, or -1 with err set. */
static int read_page(registry_tags_op *op, const reg_response *r)
{
    buf jerr = {0};
    json *doc = json_parse_max(r->body.data, r->body.len, REGISTRY_JSON_MAX_VALUES, &jerr);
    const json *tags = json_get(doc, "tags");
    int rc = 0;
    if (!doc || (tags && tags->type != JSON_ARRAY && tags->type != JSON_NULL)) {
        buf_printf(&op->err, "the tag list of image \"%s\" from registry %s cannot be read: %s",
                   op->image, reg_client_host(op->client),
                   doc ? "\"tags\" is not an array" : jerr.data ? jerr.data : "out of memory");
        rc = -1;
    }
    for (size_t i = 0; rc == 0 && tags && tags->type == JSON_ARRAY && i < tags->len; i++) {
        const char *t = json_str(tags->items[i]);
        if (!t) {
            buf_printf(&op->err, "the tag list of image \"%s\" from registry %s cannot be read: "
                       "tag %zu is not a string", op->image, reg_client_host(op->client), i);
            rc = -1;
        } else {
            rc = add_tag(op, t);
        }
    }
    json_free(doc);
    buf_free(&jerr);
    return rc;
}

/* The next page's path below /v2/<repository>/ from a Link header
 * (`</v2/REPO/tags/list?last=x&n=100>; rel="next"`) into op->path: 1, 0
 * when there is none, -1 with err set when it leads elsewhere. */
static int next_page(registry_tags_op *op, const char *link)
{
    if (!link || !strstr(link, "rel=\"next\"") || link[0] != '<')
        return 0;
    const char *end = strchr(link, '>');
    size_t prefix_len = 4 + strlen(op->ref.repository) + 1;   /* "/v2/" REPO "/" */
    buf_reset(&op->path);
    if (end && (size_t)(end - link - 1) > prefix_len && !strncmp(link + 1, "/v2/", 4) &&
        !strncmp(link + 5, op->ref.repository, prefix_len - 5) && link[prefix_len] == '/' &&
        !strncmp(link + 1 + prefix_len, "tags/list?", 10))
        return buf_append(&op->path, link + 1 + prefix_len, (size_t)(end - link - 1) - prefix_len) < 0 ||
               buf_append(&op->path, "", 0) < 0 ? (buf_printf(&op->err, "out of memory"), -1) : 1;
    buf_printf(&op->err, "registry %s's next page of the tags of image \"%s\" is not in its "
               "repository (Link: %.200s); refused", reg_client_host(op->client), op->image, link);
    return -1;
}

static void on_page(int rc, reg_response *r, const buf *err, void *ctx);

static int page_start(registry_tags_op *op)
{
    if (++op->pages > REGISTRY_TAGS_PAGES)
        return buf_fail(&op->err, "the tag list of image \"%s\" has more than %d pages (the "
                        "limit)", op->image, REGISTRY_TAGS_PAGES);
    return reg_get_start(op->client, op->path.data, "application/json", PAGE_MAX_BYTES, on_page, op,
                         &op->err);
}

static void on_page(int rc, reg_response *r, const buf *err, void *ctx)
{
    registry_tags_op *op = ctx;
    if (rc < 0) {
        buf_append_str(&op->err, err->data ? err->data : "registry request failed");
        finish(op, -1);
        return;
    }
    if (r->status != 200) {
        buf_printf(&op->err, "registry %s answered HTTP %ld to GET %s of image \"%s\"",
                   reg_client_host(op->client), r->status, op->path.data, op->image);
        finish(op, -1);
        return;
    }
    if (read_page(op, r) < 0) {
        finish(op, -1);
        return;
    }
    op->page(op->tags, op->n, op->ctx);
    drop_page(op);
    int next = next_page(op, r->link);
    if (next < 0 || (next > 0 && page_start(op) < 0)) {
        finish(op, -1);
        return;
    }
    if (!next)
        finish(op, 0);
}

registry_tags_op *registry_tags_start(http_multi *m, const char *image, const registry_opts *opts,
                                      registry_tags_page_fn *page, registry_tags_fn *done, void *ctx,
                                      buf *err)
{
    registry_tags_op *op = calloc(1, sizeof *op);
    if (!op || !(op->image = strdup(image))) {
        free(op);
        buf_printf(err, "out of memory");
        return NULL;
    }
    op->page = page;
    op->done = done;
    op->ctx = ctx;
    if (image_ref_parse(image, &op->ref, err) < 0 ||
        !(op->client = reg_client_new(m, image, &op->ref, opts, err)))
        goto fail;
    if (buf_append_str(&op->path, "tags/list?n=1000") < 0 || page_start(op) < 0) {
        buf_append_str(err, op->err.data ? op->err.data : "out of memory");
        goto fail;
    }
    return op;
fail:
    registry_tags_cancel(op);
    return NULL;
}
