/* pkg_write: a function's output back into package files; see pkg_write.h. */
#include "pkg/pkg_write.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/vec.h"
#include "pkg/event_list.h"
#include "pkg/pkg_item.h"
#include "pkg/pkg_stage.h"
#include "pkg/rl_writer.h"

/* ---- the items of a ResourceList ------------------------------------------- */

/* Parses rl and finds its items: *items is the sequence's start event, or
 * EVENT_NONE when there are none. */
static int find_items(const char *rl, size_t len, const char *name, event_list *list,
                      size_t *items, buf *err)
{
    if (event_list_parse(rl, len, name, list, err) < 0)
        return -1;
    const size_t root = 2; /* STREAM_START, DOCUMENT_START, root */
    if (list->count < 4 || list->events[root].type != YAML_MAPPING_START_EVENT)
        return buf_fail_line(err, "%s: not a ResourceList (a mapping with items)", name);
    *items = event_list_find_key(list, root, "items");
    if (*items != EVENT_NONE && event_is_null(&list->events[*items]))
        *items = EVENT_NONE;
    if (*items != EVENT_NONE && list->events[*items].type != YAML_SEQUENCE_START_EVENT)
        return buf_fail_line(err, "%s: items is %s, not a sequence", name,
                             event_node_kind(&list->events[*items]));
    return 0;
}

/* Calls each(ctx, list, root, end, position) for every item of the
 * sequence at `items` (EVENT_NONE: none). */
typedef int (*item_fn)(void *ctx, event_list *list, size_t root, size_t end, size_t position);

static int walk_items(event_list *list, size_t items, const char *name, item_fn each, void *ctx,
                      buf *err)
{
    if (items == EVENT_NONE)
        return 0;
    size_t position = 0;
    for (size_t at = items + 1; list->events[at].type != YAML_SEQUENCE_END_EVENT; position++) {
        size_t end = event_list_node_end(list, at);
        if (list->events[at].type != YAML_MAPPING_START_EVENT)
            return buf_fail_line(err, "%s: items[%zu] is %s, not a KRM object", name, position,
                                 event_node_kind(&list->events[at]));
        if (each(ctx, list, at, end, position) < 0)
            return -1;
        at = end;
    }
    return 0;
}

/* ---- unwrap ------------------------------------------------------------------ */

static int unwrap_item(void *ctx, event_list *list, size_t root, size_t end, size_t position)
{
    (void)position;
    return pkg_item_emit(ctx, list, root, end);
}

int pkg_unwrap(const char *rl, size_t len, const char *name, buf *out, buf *err)
{
    event_list list = { 0 };
    size_t items;
    if (find_items(rl, len, name, &list, &items, err) < 0)
        return -1;
    rl_writer w;
    rl_writer_init(&w, out, err, name);
    int rc = rl_writer_open_stream(&w);
    if (rc == 0)
        rc = walk_items(&list, items, name, unwrap_item, &w, err);
    rc = rl_writer_close(&w, rc);
    event_list_free(&list);
    return rc;
}

/* ---- layout ------------------------------------------------------------------ */

typedef struct layout_build {
    const char *name;
    vec items;                /* of pkg_item */
    buf *err;
} layout_build;

static int by_place(const void *a, const void *b)
{
    const pkg_item *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    if (c)
        return c;
    unsigned long xi = x->has_index ? x->index : ULONG_MAX, yi = y->has_index ? y->index : ULONG_MAX;
    if (xi != yi)
        return xi < yi ? -1 : 1;
    return x->position < y->position ? -1 : x->position > y->position;
}

static int collect_item(void *ctx, event_list *list, size_t root, size_t end, size_t position)
{
    layout_build *b = ctx;
    pkg_item item;
    buf why = {0};
    if (pkg_item_locate(list, root, end, position, &item, &why) < 0) {
        /* why names the item; say whose it is */
        buf_fail_line(b->err, "%s: %s", b->name, why.data ? why.data : "out of memory");
        buf_free(&why);
        return -1;
    }
    pkg_item *kept = vec_push(&b->items, sizeof *kept, VEC_NO_MAX);
    if (!kept) {
        pkg_item_free(&item);
        return buf_fail_line(b->err, "%s: out of memory", b->name);
    }
    *kept = item;
    return 0;
}

/* Two items numbered alike for one file: kpt refuses the output. */
static int check_unique(const layout_build *b)
{
    const pkg_item *items = b->items.items;
    for (size_t i = 1; i < b->items.len; i++) {
        const pkg_item *p = &items[i - 1], *q = &items[i];
        if (p->has_index && q->has_index && p->index == q->index && !strcmp(p->path, q->path))
            return buf_fail_line(b->err, "%s: resource at path \"%s\" and index \"%lu\" already "
                                 "exists", b->name, q->path, q->index);
    }
    return 0;
}

/* Emits the items of each file, in order, into the layout's files. */
static int emit_files(layout_build *b, event_list *list, pkg_layout *out)
{
    const pkg_item *items = b->items.items;
    for (size_t i = 0; i < b->items.len;) {
        size_t j = i;
        while (j < b->items.len && !strcmp(items[j].path, items[i].path))
            j++;
        pkg_file *f = &out->files[out->n];
        *f = (pkg_file){ .path = strdup(items[i].path) };
        if (!f->path)
            return buf_fail_line(b->err, "%s: out of memory", b->name);
        out->n++;
        rl_writer w;
        rl_writer_init(&w, &f->text, b->err, b->name);
        int rc = rl_writer_open_stream(&w);
        for (size_t k = i; rc == 0 && k < j; k++)
            rc = pkg_item_emit(&w, list, items[k].root, items[k].end);
        if (rl_writer_close(&w, rc) < 0)
            return -1;
        i = j;
    }
    return 0;
}

int pkg_layout_build(const char *rl, size_t len, const char *name, pkg_layout *out, buf *err)
{
    *out = (pkg_layout){ 0 };
    layout_build b = { .name = name, .err = err };
    event_list list = { 0 };
    size_t items;
    int rc = find_items(rl, len, name, &list, &items, err);
    if (rc == 0)
        rc = walk_items(&list, items, name, collect_item, &b, err);
    pkg_item *all = b.items.items;
    if (rc == 0 && b.items.len)
        qsort(all, b.items.len, sizeof *all, by_place);
    if (rc == 0)
        rc = check_unique(&b);
    if (rc == 0 && b.items.len && !(out->files = calloc(b.items.len, sizeof *out->files)))
        rc = buf_fail_line(err, "%s: out of memory", name);
    if (rc == 0)
        rc = emit_files(&b, &list, out);
    for (size_t i = 0; i < b.items.len; i++)
        pkg_item_free(&all[i]);
    vec_free(&b.items);
    event_list_free(&list);
    if (rc < 0)
        pkg_layout_free(out);
    return rc;
}

void pkg_layout_free(pkg_layout *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->files[i].path);
        buf_free(&l->files[i].text);
    }
    free(l->files);
    *l = (pkg_layout){ 0 };
}

/* ---- files --------------------------------------------------------------------- */

/* The package (or -o's parent) as the user named it: links on the way to
 * it are the user's; everything below is pkg_stage's, never through a link. */
static int open_root(const char *dir, buf *err)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        buf_fail_line(err, "%s: %s", dir, strerror(errno));
    return fd;
}

static int by_path(const void *key, const void *file)
{
    return strcmp(key, ((const pkg_file *)file)->path);
}

/* A layout's files are sorted by path: a lookup costs log n, and comparing
 * two layouts n log n, whatever number of files a function answers. */
static const pkg_file *find_file(const pkg_layout *l, const char *path)
{
    return l->n ? bsearch(path, l->files, l->n, sizeof *l->files, by_path) : NULL;
}

static int same_text(const pkg_file *a, const pkg_file *b)
{
    return a && b && a->text.len == b->text.len &&
           (a->text.len == 0 || memcmp(a->text.data, b->text.data, a->text.len) == 0);
}

/* Applies changes[0..n) under dir, as one all-or-nothing write-back. */
static int apply(const char *dir, const pkg_change *changes, size_t n, buf *err)
{
    int root = open_root(dir, err);
    if (root < 0)
        return -1;
    int rc = pkg_stage_apply(root, dir, changes, n, err);
    close(root);
    return rc;
}

int pkg_write_in_place(const char *dir, const pkg_layout *in, const pkg_layout *out, buf *err)
{
    pkg_change *changes = calloc(in->n + out->n + 1, sizeof *changes);
    size_t n = 0;
    if (!changes)
        return buf_fail_line(err, "%s: out of memory", dir);
    for (size_t i = 0; i < out->n; i++)
        if (!same_text(&out->files[i], find_file(in, out->files[i].path)))
            changes[n++] = (pkg_change){ .path = out->files[i].path, .text = &out->files[i].text };
    for (size_t i = 0; i < in->n; i++)
        if (!find_file(out, in->files[i].path))
            changes[n++] = (pkg_change){ .path = in->files[i].path };
    pkg_stage_leftovers(dir);
    int rc = n ? apply(dir, changes, n, err) : 0;
    free(changes);
    return rc;
}

/* mkdir -p: a directory the user named (-o DIR, --results-dir), so links
 * on its way are followed, as the shell's mkdir -p does. */
int pkg_make_dirs(const char *dir, buf *err)
{
    char path[PATH_MAX];
    size_t len = strlen(dir);
    if (len >= sizeof path)
        return buf_fail_line(err, "%s: %s", dir, strerror(ENAMETOOLONG));
    memcpy(path, dir, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char saved = path[i];
        path[i] = '\0';
        struct stat st;
        if (mkdir(path, 0777) < 0 && !(errno == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
            if (errno == EEXIST)
                errno = ENOTDIR;
            return buf_fail_line(err, "%s: %s", path, strerror(errno));
        }
        path[i] = saved;
    }
    return 0;
}

/* -o DIR: DIR is made by the write-back itself, as a staged directory of
 * its parent renamed into place at the end, so a failure leaves no DIR
 * behind (its missing parents are made first, as mkdir -p). */
int pkg_write_new(const char *dir, const pkg_layout *out, buf *err)
{
    /* DIR, trailing slashes dropped, as its parent `up` and its name `base` */
    char path[PATH_MAX];
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (len >= sizeof path)
        return buf_fail_line(err, "%s: %s", dir, strerror(ENAMETOOLONG));
    memcpy(path, dir, len);
    path[len] = '\0';
    char *slash = strrchr(path, '/');
    const char *up = !slash ? "." : slash == path ? "/" : path;
    const char *base = slash ? slash + 1 : path;
    if (slash)
        *slash = '\0';
    if (!strcmp(base, ".") || !strcmp(base, ".."))
        return buf_fail_line(err, "%s: names no new directory", dir);
    if (pkg_make_dirs(up, err) < 0)
        return -1;
    if (out->n == 0 && mkdir(dir, 0777) < 0)
        return buf_fail_line(err, "%s: %s", dir, strerror(errno));
    /* the files, under base/ */
    pkg_change *changes = calloc(out->n + 1, sizeof *changes);
    buf *paths = calloc(out->n + 1, sizeof *paths);
    int rc = changes && paths ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        rc = buf_printf(&paths[i], "%s/%s", base, out->files[i].path);
        changes[i] = (pkg_change){ .path = paths[i].data, .text = &out->files[i].text };
    }
    if (rc < 0)
        buf_fail_line(err, "%s: out of memory", dir);
    else if (out->n)
        rc = apply(up, changes, out->n, err);
    for (size_t i = 0; paths && i < out->n; i++)
        buf_free(&paths[i]);
    free(paths);
    free(changes);
    return rc;
}
