/* render_tree: a package and its subpackages rendered depth first; see
 * render_tree.h.
 *
 * The packages are held in pre-order (a package before what is beneath
 * it, names compared a path component at a time, as the walk met them);
 * each knows its parent, its subpackages and the objects of the input it
 * owns. They are rendered in post-order, each package's ResourceList
 * composed from its subpackages' rendered lists and its own objects, every
 * path annotation rewritten relative to it on the way (kpt_annotations). */
#include "eval/render_tree.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strset.h"
#include "pkg/event_list.h"
#include "pkg/kpt_annotations.h"
#include "eval/pipeline_run.h"
#include "pkg/pkg_item.h"
#include "pkg/rl_writer.h"
#include "core/term_text.h"

#define NO_PACKAGE SIZE_MAX

typedef struct index_list {
    size_t *v;
    size_t n, cap;
} index_list;

typedef struct package {
    char *rel;            /* its directory relative to the root; "" for the root */
    size_t parent;        /* NO_PACKAGE for the root */
    index_list children;  /* its direct subpackages, in name order */
    index_list own;       /* the input's items read from its own files */
    buf output;           /* its rendered ResourceList */
} package;

typedef struct tree {
    package *pkgs;        /* in pre-order */
    size_t n;
    strset by_rel;        /* rel -> index in pkgs */
    event_list input;     /* the package as read */
    pkg_item *items;      /* the input's items, located */
    size_t n_items;
} tree;

/* The array v of *cap elements of `size` bytes, n of them used, with room
 * for one more (moved, maybe); NULL when out of memory (v is kept). */
static void *grow(void *v, size_t *cap, size_t n, size_t size)
{
    if (n < *cap)
        return v;
    size_t grown = *cap ? *cap * 2 : 8;
    void *bigger = realloc(v, grown * size);
    if (bigger)
        *cap = grown;
    return bigger;
}

static int index_push(index_list *l, size_t x)
{
    size_t *v = grow(l->v, &l->cap, l->n, sizeof *v);
    if (!v)
        return -1;
    l->v = v;
    l->v[l->n++] = x;
    return 0;
}

static void tree_free(tree *t)
{
    for (size_t i = 0; i < t->n; i++) {
        free(t->pkgs[i].rel);
        free(t->pkgs[i].children.v);
        free(t->pkgs[i].own.v);
        buf_free(&t->pkgs[i].output);
    }
    free(t->pkgs);
    for (size_t i = 0; i < t->n_items; i++)
        pkg_item_free(&t->items[i]);
    free(t->items);
    strset_free(&t->by_rel);
    event_list_free(&t->input);
}

/* Paths compared a component at a time, each by its bytes (the walk's
 * order); a path before those beneath it when `ancestor_first`, after
 * them otherwise (post-order). */
static int path_order(const char *a, const char *b, int ancestor_first)
{
    while (*a && *b) {
        size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
        int c = memcmp(a, b, la < lb ? la : lb);
        if (c == 0)
            c = (la > lb) - (la < lb);
        if (c)
            return c;
        a += la + (a[la] == '/');
        b += lb + (b[lb] == '/');
    }
    if (!*a && !*b)
        return 0;
    int a_is_ancestor = !*a;
    return a_is_ancestor == ancestor_first ? -1 : 1;
}

static int pre_order(const void *x, const void *y)
{
    return path_order(((const package *)x)->rel, ((const package *)y)->rel, 1);
}

/* The package whose directory is `dir` or holds it most closely. */
static size_t owning_package(const tree *t, const char *dir, buf *scratch)
{
    size_t found;
    buf_reset(scratch);
    if (buf_append_str(scratch, dir) < 0)
        return NO_PACKAGE;
    for (;;) {
        if (strset_get(&t->by_rel, scratch->data, &found))
            return found;
        char *slash = strrchr(scratch->data, '/');
        if (!slash)
            break;
        *slash = '\0';
    }
    return strset_get(&t->by_rel, "", &found) ? found : NO_PACKAGE;
}

/* The directory part of a path ("" for a file at the top). */
static const char *dir_of(const char *path, buf *out)
{
    const char *slash = strrchr(path, '/');
    buf_reset(out);
    return buf_append(out, path, slash ? (size_t)(slash - path) : 0) < 0 ? NULL : out->data;
}

/* The items sequence of a parsed ResourceList: [*first, *end) are its
 * entries; -1 when it has none. */
static int items_of(const event_list *list, size_t *first, size_t *end)
{
    const size_t root = 2; /* STREAM_START, DOCUMENT_START, the root mapping */
    if (list->count < 4 || list->events[root].type != YAML_MAPPING_START_EVENT)
        return -1;
    size_t items = event_list_find_key(list, root, "items");
    if (items == EVENT_NONE || list->events[items].type != YAML_SEQUENCE_START_EVENT)
        return -1;
    *first = items + 1;
    *end = event_list_node_end(list, items) - 1;
    return 0;
}

/* Locates every item of the input; a Kptfile's directory is a package. */
static int find_packages(tree *t, buf *err)
{
    size_t at, end, cap = 0;
    if (items_of(&t->input, &at, &end) < 0)
        return 0;
    buf dir = { 0 };
    int rc = strset_put(&t->by_rel, "", 0);
    for (; rc == 0 && at < end; at = event_list_node_end(&t->input, at)) {
        pkg_item *items = grow(t->items, &cap, t->n_items, sizeof *items);
        if (!items) {
            rc = -1;
            break;
        }
        t->items = items;
        pkg_item *it = &t->items[t->n_items];
        if (pkg_item_locate(&t->input, at, event_list_node_end(&t->input, at), t->n_items, it,
                            err) < 0) {
            buf_free(&dir);
            return -1;
        }
        t->n_items++;
        const char *base = strrchr(it->path, '/');
        if (strcmp(base ? base + 1 : it->path, "Kptfile") == 0)
            rc = dir_of(it->path, &dir) ? strset_add(&t->by_rel, dir.data) : -1;
    }
    buf_free(&dir);
    if (rc < 0)
        buf_fail_line(err, "out of memory");
    return rc;
}

/* The packages in pre-order, each with its parent, subpackages and items. */
static int build_tree(tree *t, buf *err)
{
    if (!(t->pkgs = calloc(t->by_rel.n, sizeof *t->pkgs)))
        goto oom;
    for (size_t i = 0; i < t->by_rel.cap; i++)
        if (t->by_rel.slots[i]) {
            t->pkgs[t->n].parent = NO_PACKAGE;
            if (!(t->pkgs[t->n++].rel = strdup(t->by_rel.slots[i])))
                goto oom;
        }
    qsort(t->pkgs, t->n, sizeof *t->pkgs, pre_order);
    for (size_t i = 0; i < t->n; i++)
        if (strset_put(&t->by_rel, t->pkgs[i].rel, i) < 0)
            goto oom;
    buf scratch = { 0 }, dir = { 0 };
    int rc = 0;
    for (size_t i = 1; rc == 0 && i < t->n; i++) { /* pkgs[0] is the root */
        const char *rel = t->pkgs[i].rel;
        if (!dir_of(rel, &dir))
            rc = -1;
        else if ((t->pkgs[i].parent = owning_package(t, dir.data, &scratch)) ==
                 NO_PACKAGE)
            rc = -1;
        else
            rc = index_push(&t->pkgs[t->pkgs[i].parent].children, i);
    }
    for (size_t i = 0; rc == 0 && i < t->n_items; i++) {
        size_t owner;
        if (!dir_of(t->items[i].path, &dir) ||
            (owner = owning_package(t, dir.data, &scratch)) == NO_PACKAGE)
            rc = -1;
        else
            rc = index_push(&t->pkgs[owner].own, i);
    }
    buf_free(&scratch);
    buf_free(&dir);
    if (rc == 0)
        return 0;
oom:
    return buf_fail_line(err, "out of memory");
}

/* `path` (relative to package p's subpackage or to the root) made relative
 * to p: `prefix` joined before it. */
static int rebase(buf *out, const char *prefix, const char *path)
{
    buf_reset(out);
    return *prefix ? buf_printf(out, "%s/%s", prefix, path) : buf_append_str(out, path);
}

/* Package p's subpackage c, as it rendered: its items, their paths now
 * relative to p. */
static int add_subpackage_items(rl_writer *w, const package *p, const package *c)
{
    const char *rel_in_p = *p->rel ? c->rel + strlen(p->rel) + 1 : c->rel;
    event_list list = { 0 };
    buf path = { 0 };
    size_t at, end, position = 0;
    int rc = event_list_parse(c->output.data, c->output.len, c->rel, &list, w->err);
    if (rc == 0 && items_of(&list, &at, &end) < 0)
        at = end = 0;
    for (; rc == 0 && at < end; position++) {
        size_t next = event_list_node_end(&list, at);
        pkg_item it;
        buf why = { 0 };
        if (list.events[at].type != YAML_MAPPING_START_EVENT)
            rc = rl_writer_fail(w, "subpackage \"%s\": items[%zu] is %s, not an object", c->rel,
                                position, event_node_kind(&list.events[at]));
        else if (pkg_item_locate(&list, at, next, position, &it, &why) < 0)
            rc = rl_writer_fail(w, "subpackage \"%s\": %s", c->rel,
                                why.data ? why.data : "out of memory");
        else {
            rc = rebase(&path, rel_in_p, it.path) < 0
                     ? rl_writer_fail(w, "out of memory")
                     : kpt_annotations_emit_object(w, &list, at, next, path.data,
                                                   it.has_index ? it.index : KPT_NO_INDEX);
            pkg_item_free(&it);
        }
        buf_free(&why);
        at = next;
    }
    event_list_free(&list);
    buf_free(&path);
    return rc;
}

/* Package p's ResourceList: its subpackages' rendered items, then its own. */
static int compose_input(tree *t, const package *p, buf *out, buf *err)
{
    rl_writer w;
    rl_writer_init(&w, out, err, *p->rel ? p->rel : ".");
    buf path = { 0 };
    int rc = rl_writer_open(&w);
    if (rc == 0)
        rc = rl_writer_emit_new(&w, YAML_SEQUENCE_START_EVENT);
    for (size_t i = 0; rc == 0 && i < p->children.n; i++)
        rc = add_subpackage_items(&w, p, &t->pkgs[p->children.v[i]]);
    size_t skip = *p->rel ? strlen(p->rel) + 1 : 0;
    for (size_t i = 0; rc == 0 && i < p->own.n; i++) {
        const pkg_item *it = &t->items[p->own.v[i]];
        rc = rebase(&path, "", it->path + skip) < 0
                 ? rl_writer_fail(&w, "out of memory")
                 : kpt_annotations_emit_object(&w, &t->input, it->root, it->end, path.data,
                                               it->has_index ? it->index : KPT_NO_INDEX);
    }
    if (rc == 0)
        rc = rl_writer_emit_new(&w, YAML_SEQUENCE_END_EVENT);
    buf_free(&path);
    return rl_writer_close(&w, rc);
}

/* Renders package p (its subpackages are done). 0, 1 or 2 as render_tree. */
static int render_package(tree *t, package *p, const char *dir, const pipeline *root,
                          size_t max, eval_run *run)
{
    buf in = { 0 }, kptfile = { 0 }, err = { 0 };
    pipeline own = { 0 };
    const pipeline *steps = root;
    int rc = 0;
    if (compose_input(t, p, &in, &err) < 0) {
        /* what a subpackage's functions answered (a path out of it) */
        term_line(stderr, "runner-client %s: %s\n", eval_command,
                  err.len ? err.data : "out of memory");
        rc = 1;
    } else if (*p->rel && (buf_printf(&kptfile, "%s/%s", dir, p->rel) < 0 ||
                           pipeline_load_subpackage(&own, kptfile.data, max, &err) < 0)) {
        term_line(stderr, "runner-client %s: %s\n", eval_command,
                    err.len ? err.data : "out of memory");
        rc = 2;
    } else {
        if (*p->rel)
            steps = &own;
        term_line(stderr, "Package \"%s\":\n", *p->rel ? p->rel : dir);
        rc = pipeline_run(steps, in.data, in.len, run, 1, &p->output);
    }
    if (rc && *p->rel)
        term_line(stderr, "runner-client %s: subpackage \"%s\" failed: nothing is written\n",
                    eval_command, p->rel);
    pipeline_free(&own);
    buf_free(&in);
    buf_free(&kptfile);
    buf_free(&err);
    return rc;
}

static int post_order(const void *x, const void *y)
{
    return path_order((*(package *const *)x)->rel, (*(package *const *)y)->rel, 0);
}

/* Every package in post-order: subpackages before their parent, siblings
 * in name order (a loop, not a recursion: packages may nest as deep as
 * paths go). The one whose output is the render's is left in *last. */
static int render_all(tree *t, const char *dir, const pipeline *root, size_t max,
                      eval_run *run, package **last)
{
    package **order = malloc(t->n * sizeof *order);
    if (!order) {
        term_line(stderr, "runner-client %s: out of memory\n", eval_command);
        return 1;
    }
    for (size_t i = 0; i < t->n; i++)
        order[i] = &t->pkgs[i];
    qsort(order, t->n, sizeof *order, post_order);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < t->n; i++) {
        package *p = *last = order[i];
        rc = render_package(t, p, dir, root, max, run);
        for (size_t k = 0; k < p->children.n; k++) /* their items are in p's list now */
            buf_free(&t->pkgs[p->children.v[k]].output);
    }
    free(order);
    return rc;
}

int render_tree(const char *dir, const pipeline *root, const char *input, size_t len,
                size_t max, eval_run *run, buf *final)
{
    buf why = { 0 };
    tree t = { 0 };
    int rc = 0;
    if (event_list_parse(input, len, dir, &t.input, &why) < 0 || find_packages(&t, &why) < 0) {
        term_line(stderr, "runner-client %s: %s\n", eval_command,
                  why.len ? why.data : "out of memory");
        rc = 2;
    } else if (t.by_rel.n == 1) { /* no subpackage: the input as it is */
        tree_free(&t);
        t = (tree){ 0 };
        rc = pipeline_run(root, input, len, run, 1, final);
    } else if (build_tree(&t, &why) < 0) {
        term_line(stderr, "runner-client %s: %s\n", eval_command,
                  why.len ? why.data : "out of memory");
        rc = 1;
    } else {
        package *last = NULL;
        rc = render_all(&t, dir, root, max, run, &last);
        if (last && last->output.len &&
            buf_append(final, last->output.data, last->output.len) < 0)
            rc = 1;
    }
    if (rc)
        run->failed = 1;
    tree_free(&t);
    buf_free(&why);
    return rc;
}
