/* pkg_item: where an output item goes and what of it is written; see
 * pkg_item.h. */
#include "pkg/pkg_item.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "pkg/err_line.h"
#include "pkg/kpt_annotations.h"

#define INTERNAL_PREFIX "internal.config.kubernetes.io/"

int pkg_item_is_bookkeeping(const char *key, size_t len)
{
    static const char *const legacy[] = { KPT_LEGACY_PATH_KEY, KPT_LEGACY_INDEX_KEY,
                                          "config.k8s.io/id" };
    size_t prefix = sizeof INTERNAL_PREFIX - 1;
    if (len > prefix && memcmp(key, INTERNAL_PREFIX, prefix) == 0)
        return 1;
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++)
        if (strlen(legacy[i]) == len && memcmp(key, legacy[i], len) == 0)
            return 1;
    return 0;
}

/* ---- reading -------------------------------------------------------------- */

/* The text of a scalar value event, or NULL (absent, not a scalar). */
static const char *scalar_text(const event_list *list, size_t at)
{
    if (at == EVENT_NONE || list->events[at].type != YAML_SCALAR_EVENT)
        return NULL;
    return (const char *)list->events[at].data.scalar.value;
}

static size_t mapping_key(const event_list *list, size_t map, const char *key)
{
    if (map == EVENT_NONE || list->events[map].type != YAML_MAPPING_START_EVENT)
        return EVENT_NONE;
    return event_list_find_key(list, map, key);
}

/* An annotation's value: the internal key, else the legacy one. */
static const char *annotation(const event_list *list, size_t annos, const char *key,
                              const char *legacy)
{
    const char *v = scalar_text(list, mapping_key(list, annos, key));
    return v && *v ? v : scalar_text(list, mapping_key(list, annos, legacy));
}

/* "KIND/NAME" of the object, for messages (err_line_fail makes it one line). */
static void describe(const event_list *list, size_t root, buf *out)
{
    const char *kind = scalar_text(list, mapping_key(list, root, "kind"));
    size_t meta = mapping_key(list, root, "metadata");
    const char *name = scalar_text(list, mapping_key(list, meta, "name"));
    buf_printf(out, "%s/%s", kind ? kind : "?", name ? name : "?");
}

/* Cleans `path` into out as Go's path.Clean would, refusing an absolute
 * path or one that climbs out. Returns 0 or -1 with a reason in why. */
static int clean_path(const char *path, buf *out, const char **why)
{
    if (path[0] == '/') {
        *why = "is absolute";
        return -1;
    }
    size_t depth = 0;
    for (const char *p = path; *p;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            if (depth == 0) {
                *why = "leaves the package";
                return -1;
            }
            char *last = strrchr(out->data, '/');
            out->len = last ? (size_t)(last - out->data) : 0;
            out->data[out->len] = '\0';
            depth--;
        } else if (n && !(n == 1 && p[0] == '.')) {
            if ((out->len && buf_append_str(out, "/") < 0) || buf_append(out, p, n) < 0) {
                *why = "out of memory";
                return -1;
            }
            depth++;
        }
        p += n + (slash ? 1 : 0);
    }
    if (depth == 0) {
        *why = "names no file";
        return -1;
    }
    return 0;
}

/* kyaml's default name: [NAMESPACE/]KIND_NAME.yaml, KIND lower-cased. */
static int default_path(const event_list *list, size_t root, size_t meta, buf *out)
{
    const char *kind = scalar_text(list, mapping_key(list, root, "kind"));
    const char *name = scalar_text(list, mapping_key(list, meta, "name"));
    const char *ns = scalar_text(list, mapping_key(list, meta, "namespace"));
    if (ns && *ns && buf_printf(out, "%s/", ns) < 0)
        return -1;
    for (const char *k = kind ? kind : ""; *k; k++) {
        char c = *k >= 'A' && *k <= 'Z' ? (char)(*k - 'A' + 'a') : *k;
        if (buf_append(out, &c, 1) < 0)
            return -1;
    }
    return buf_printf(out, "_%s.yaml", name ? name : "");
}

static int parse_index(const char *text, unsigned long *out)
{
    if (!*text || strlen(text) > 9)
        return -1;
    unsigned long v = 0;
    for (const char *p = text; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (unsigned long)(*p - '0');
    }
    *out = v;
    return 0;
}

/* A NUL byte in a value that becomes a file name: the name would end at it
 * ("x.yaml\0/../.." written as "x.yaml"), so the item is refused, with
 * the whole value quoted. Returns -1 with err set, else 0. */
static int refuse_nul(const event_list *list, size_t at, const char *field, size_t position,
                      const char *what, buf *err)
{
    if (at == EVENT_NONE || list->events[at].type != YAML_SCALAR_EVENT)
        return 0;
    const yaml_event_t *e = &list->events[at];
    buf why = { 0 };
    if (!err_line_nul(&why, field, (const char *)e->data.scalar.value, e->data.scalar.length))
        return 0;
    buf_fail_line(err, "items[%zu] (%s): %s", position, what,
                  why.data ? why.data : "out of memory");
    buf_free(&why);
    return -1;
}

/* Every value a file's name or place is made of, checked for NUL bytes. */
static int refuse_nuls(const event_list *list, size_t root, size_t meta, size_t annos,
                       size_t position, const char *what, buf *err)
{
    static const char *const annotations[] = { KPT_PATH_KEY, KPT_LEGACY_PATH_KEY, KPT_INDEX_KEY,
                                               KPT_LEGACY_INDEX_KEY };
    for (size_t i = 0; i < sizeof annotations / sizeof annotations[0]; i++)
        if (refuse_nul(list, mapping_key(list, annos, annotations[i]), annotations[i], position,
                       what, err) < 0)
            return -1;
    if (refuse_nul(list, mapping_key(list, root, "kind"), "kind", position, what, err) < 0 ||
        refuse_nul(list, mapping_key(list, meta, "name"), "metadata.name", position, what, err) < 0)
        return -1;
    return refuse_nul(list, mapping_key(list, meta, "namespace"), "metadata.namespace", position,
                      what, err);
}

/* pkg_item_locate for the item described as `what`. */
static int locate(const event_list *list, size_t root, size_t meta, size_t annos,
                  size_t position, const char *what, pkg_item *it, buf *err)
{
    if (refuse_nuls(list, root, meta, annos, position, what, err) < 0)
        return -1;
    const char *path = annotation(list, annos, KPT_PATH_KEY, KPT_LEGACY_PATH_KEY);
    const char *index = annotation(list, annos, KPT_INDEX_KEY, KPT_LEGACY_INDEX_KEY);
    buf raw = { 0 }, clean = { 0 };
    const char *why = NULL;
    if (path && *path ? buf_append_str(&raw, path) < 0 : default_path(list, root, meta, &raw) < 0)
        why = "out of memory";
    else if (buf_append_str(&clean, "") < 0)
        why = "out of memory";
    if (why || clean_path(raw.data, &clean, &why) < 0) {
        buf_fail_line(err, "items[%zu] (%s): path \"%s\" %s", position, what,
                      raw.data ? raw.data : "", why);
        buf_free(&raw);
        buf_free(&clean);
        return -1;
    }
    buf_free(&raw);
    it->path = clean.data;
    if (index && *index) {
        if (parse_index(index, &it->index) < 0) {
            buf_fail_line(err, "items[%zu] (%s): index \"%s\" is not a number", position,
                          what, index);
            pkg_item_free(it);
            return -1;
        }
        it->has_index = 1;
    }
    return 0;
}

int pkg_item_locate(const event_list *list, size_t root, size_t end, size_t position,
                    pkg_item *it, buf *err)
{
    *it = (pkg_item){ .root = root, .end = end, .position = position };
    size_t meta = mapping_key(list, root, "metadata");
    size_t annos = mapping_key(list, meta, "annotations");
    buf described = { 0 };
    describe(list, root, &described);
    const char *what = described.data ? described.data : "?/?";
    int rc = locate(list, root, meta, annos, position, what, it, err);
    buf_free(&described);
    return rc;
}

void pkg_item_free(pkg_item *it)
{
    free(it->path);
    it->path = NULL;
}

/* ---- writing -------------------------------------------------------------- */

/* Number of pairs of the mapping at `map`. */
static size_t count_pairs(const event_list *list, size_t map)
{
    size_t n = 0;
    for (size_t at = map + 1; list->events[at].type != YAML_MAPPING_END_EVENT; n++)
        at = event_list_node_end(list, event_list_node_end(list, at));
    return n;
}

static int key_is_bookkeeping(const yaml_event_t *k)
{
    return k->type == YAML_SCALAR_EVENT &&
           pkg_item_is_bookkeeping((const char *)k->data.scalar.value, k->data.scalar.length);
}

/* Copies [from, to) leaving out [skip_from, skip_to). */
static int copy_around(rl_writer *w, event_list *list, size_t from, size_t skip_from,
                       size_t skip_to, size_t to)
{
    if (rl_writer_copy(w, list, from, skip_from) < 0)
        return -1;
    event_list_drop(list, skip_from, skip_to);
    return rl_writer_copy(w, list, skip_to, to);
}

/* Copies the annotation pairs [at, close) but the bookkeeping ones. */
static int copy_kept_pairs(rl_writer *w, event_list *list, size_t at, size_t close)
{
    while (at < close) {
        size_t next = event_list_node_end(list, event_list_node_end(list, at));
        if (key_is_bookkeeping(&list->events[at]))
            event_list_drop(list, at, next);
        else if (rl_writer_copy(w, list, at, next) < 0)
            return -1;
        at = next;
    }
    return 0;
}

static int emit_object(rl_writer *w, event_list *list, size_t root, size_t end)
{
    size_t meta = mapping_key(list, root, "metadata");
    size_t annos = mapping_key(list, meta, "annotations");
    if (annos == EVENT_NONE || list->events[annos].type != YAML_MAPPING_START_EVENT)
        return rl_writer_copy(w, list, root, end);
    size_t close = event_list_node_end(list, annos) - 1, kept = 0, dropped = 0;
    for (size_t at = annos + 1; at < close;) {
        if (key_is_bookkeeping(&list->events[at]))
            dropped++;
        else
            kept++;
        at = event_list_node_end(list, event_list_node_end(list, at));
    }
    if (dropped == 0)
        return rl_writer_copy(w, list, root, end);
    if (kept == 0 && count_pairs(list, meta) == 1) /* metadata held only the annotations */
        return copy_around(w, list, root, meta - 1, event_list_node_end(list, meta), end);
    if (kept == 0)
        return copy_around(w, list, root, annos - 1, close + 1, end);
    if (rl_writer_copy(w, list, root, annos + 1) < 0 ||
        copy_kept_pairs(w, list, annos + 1, close) < 0)
        return -1;
    return rl_writer_copy(w, list, close, end);
}

int pkg_item_emit(rl_writer *w, event_list *list, size_t root, size_t end)
{
    if (rl_writer_emit_new(w, YAML_DOCUMENT_START_EVENT) < 0 ||
        emit_object(w, list, root, end) < 0)
        return -1;
    return rl_writer_emit_new(w, YAML_DOCUMENT_END_EVENT);
}
