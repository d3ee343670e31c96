/* rl_edit: YAML objects as libyaml document trees; see rl_edit.h.
 *
 * libyaml documents are append-only arrays of nodes addressed by 1-based
 * ids; a collection refers to its children by id, and a key set twice
 * points its pair at the newer node. Copies go through a map from source
 * ids to destination ids, filled before a collection's children are
 * copied, so anchors/aliases stay shared.
 *
 * yaml_emitter_dump frees the document it writes, so rl_doc_emit writes a
 * fresh copy and the caller's document survives. */
#include "krm/rl_edit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "krm/yaml_load.h"

struct rl_doc {
    yaml_document_t doc;
};

static const char OOM[] = "out of memory";

/* ---- reading nodes ---------------------------------------------------------- */

static yaml_node_t *node(const yaml_document_t *doc, int id)
{
    return id > 0 ? yaml_document_get_node((yaml_document_t *)doc, id) : NULL;
}

static int root_id(const yaml_document_t *doc)
{
    return doc->nodes.start < doc->nodes.top ? 1 : 0;
}

static int node_type(const yaml_document_t *doc, int id)
{
    const yaml_node_t *n = node(doc, id);
    return n ? (int)n->type : (int)YAML_NO_NODE;
}

const yaml_document_t *rl_doc_yaml(const rl_doc *d)
{
    return &d->doc;
}

const char *rl_yaml_text(const yaml_document_t *doc, int id)
{
    const yaml_node_t *n = node(doc, id);
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

int rl_yaml_is_null(const yaml_document_t *doc, int id)
{
    const yaml_node_t *n = node(doc, id);
    if (!n)
        return 1;
    if (n->type != YAML_SCALAR_NODE)
        return 0;
    if (n->tag && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
        return 1;
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    static const char *const spellings[] = { "", "~", "null", "Null", "NULL" };
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
        if (strcmp((const char *)n->data.scalar.value, spellings[i]) == 0)
            return 1;
    return 0;
}

/* Index of the pair with scalar key `key` in mapping `map`, or -1. */
static long pair_index(const yaml_document_t *doc, int map, const char *key)
{
    const yaml_node_t *m = node(doc, map);
    if (!m || m->type != YAML_MAPPING_NODE)
        return -1;
    for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
        const char *text = rl_yaml_text(doc, p->key);
        if (text && strcmp(text, key) == 0)
            return p - m->data.mapping.pairs.start;
    }
    return -1;
}

int rl_yaml_get(const yaml_document_t *doc, int map, const char *key)
{
    if (map == 0)
        map = root_id(doc);
    long i = pair_index(doc, map, key);
    return i < 0 ? 0 : node(doc, map)->data.mapping.pairs.start[i].value;
}

static const char *type_name(int type)
{
    switch (type) {
    case YAML_SCALAR_NODE:
        return "a scalar";
    case YAML_SEQUENCE_NODE:
        return "a sequence";
    case YAML_MAPPING_NODE:
        return "a mapping";
    default:
        return "empty";
    }
}

/* ---- building nodes ----------------------------------------------------------- */

/* A string value's style: plain when YAML cannot read it as anything but
 * that string, else double-quoted ("1", "true", "a: b" stay strings). */
static yaml_scalar_style_t string_style(const char *s)
{
    static const char *const words[] = { "y", "n", "yes", "no", "true", "false",
                                         "on", "off", "null" };
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || strchr("-_./", *p)))
            return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcasecmp(s, words[i]) == 0)
            return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
    return YAML_PLAIN_SCALAR_STYLE;
}

/* A new string scalar; 0 when out of memory. */
static int add_string(yaml_document_t *doc, const char *s)
{
    return yaml_document_add_scalar(doc, NULL, (yaml_char_t *)s, (int)strlen(s),
                                    string_style(s));
}

static int add_mapping(yaml_document_t *doc)
{
    return yaml_document_add_mapping(doc, NULL, YAML_BLOCK_MAPPING_STYLE);
}

/* map[key] = value (replacing the first pair with that key, else appended).
 * Returns 0 or -1 when out of memory. */
static int map_set(yaml_document_t *doc, int map, const char *key, int value)
{
    long i = pair_index(doc, map, key);
    if (i >= 0) {
        node(doc, map)->data.mapping.pairs.start[i].value = value;
        return 0;
    }
    int k = add_string(doc, key);
    return k && yaml_document_append_mapping_pair(doc, map, k, value) ? 0 : -1;
}

static int map_set_string(yaml_document_t *doc, int map, const char *key, const char *value)
{
    int v = add_string(doc, value);
    return v ? map_set(doc, map, key, v) : -1;
}

static int new_document(yaml_document_t *doc)
{
    return yaml_document_initialize(doc, NULL, NULL, NULL, 1, 1) ? 0 : -1;
}

/* ---- copying nodes between documents ------------------------------------------ */

typedef struct copier {
    const yaml_document_t *src;
    yaml_document_t *dst;
    int *map;          /* src id - 1 -> dst id, 0: not copied yet */
    const char *fail;  /* why the copy failed */
} copier;

static int copier_init(copier *c, const yaml_document_t *src, yaml_document_t *dst)
{
    size_t n = (size_t)(src->nodes.top - src->nodes.start);
    *c = (copier){ .src = src, .dst = dst, .map = calloc(n ? n : 1, sizeof(int)) };
    return c->map ? 0 : -1;
}

static void copier_free(copier *c)
{
    free(c->map);
    c->map = NULL;
}

static int copy_node(copier *c, int id, int depth);

static int copy_children(copier *c, const yaml_node_t *n, int to, int depth)
{
    if (n->type == YAML_SEQUENCE_NODE) {
        for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
             it++) {
            int child = copy_node(c, *it, depth + 1);
            if (!child || !yaml_document_append_sequence_item(c->dst, to, child))
                return -1;
        }
        return 0;
    }
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
        int k = copy_node(c, p->key, depth + 1);
        int v = k ? copy_node(c, p->value, depth + 1) : 0;
        if (!v || !yaml_document_append_mapping_pair(c->dst, to, k, v))
            return -1;
    }
    return 0;
}

/* Copies node `id` of c->src (and what it reaches) into c->dst; returns the
 * new id, or 0 with c->fail set. `depth` counts enclosing collections. */
static int copy_node(copier *c, int id, int depth)
{
    const yaml_node_t *n = node(c->src, id);
    if (!n) {
        c->fail = "dangling node";
        return 0;
    }
    if (c->map[id - 1])
        return c->map[id - 1];
    if (depth > RL_EDIT_MAX_DEPTH) {
        c->fail = "nested too deeply (more than " RL_EDIT_MAX_DEPTH_TEXT " levels)";
        return 0;
    }
    int to;
    switch (n->type) {
    case YAML_SCALAR_NODE:
        to = yaml_document_add_scalar(c->dst, n->tag, n->data.scalar.value,
                                      (int)n->data.scalar.length, n->data.scalar.style);
        break;
    case YAML_SEQUENCE_NODE:
        to = yaml_document_add_sequence(c->dst, n->tag, n->data.sequence.style);
        break;
    case YAML_MAPPING_NODE:
        to = yaml_document_add_mapping(c->dst, n->tag, n->data.mapping.style);
        break;
    default:
        c->fail = "empty node";
        return 0;
    }
    c->fail = OOM;
    if (!to)
        return 0;
    c->map[id - 1] = to;
    if (n->type != YAML_SCALAR_NODE && copy_children(c, n, to, depth) < 0)
        return 0;
    return to;
}

/* A new document holding src's root mapping without top-level `omit_key`
 * (NULL: none). Returns 0, or -1 with err set (out is then empty). */
static int clone_document(const yaml_document_t *src, const char *omit_key, yaml_document_t *out,
                          buf *err)
{
    copier c;
    if (new_document(out) < 0 || copier_init(&c, src, out) < 0) {
        yaml_document_delete(out);
        buf_fail_line(err, OOM);
        return -1;
    }
    const yaml_node_t *root = node(src, root_id(src));
    int rc = 0;
    int to = yaml_document_add_mapping(out, root->tag, root->data.mapping.style);
    c.map[0] = to;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start;
         to && rc == 0 && p < root->data.mapping.pairs.top; p++) {
        const char *key = rl_yaml_text(src, p->key);
        if (omit_key && key && strcmp(key, omit_key) == 0)
            continue;
        int k = copy_node(&c, p->key, 1);
        int v = k ? copy_node(&c, p->value, 1) : 0;
        if (!v || !yaml_document_append_mapping_pair(out, to, k, v))
            rc = -1;
    }
    if (!to || rc < 0) {
        buf_fail_line(err, "%s", to ? c.fail : OOM);
        yaml_document_delete(out);
        rc = -1;
    }
    copier_free(&c);
    return rc;
}

/* ---- loading ------------------------------------------------------------------ */

static void parser_err(const yaml_parser_t *p, buf *err)
{
    const char *problem = p->problem ? p->problem : OOM;
    if (p->context)
        buf_fail_line(err, "line %zu: %s %s", p->problem_mark.line + 1, p->context, problem);
    else
        buf_fail_line(err, "line %zu: %s", p->problem_mark.line + 1, problem);
}

/* Loads exactly one document whose root is a mapping. */
static rl_doc *load_mapping(const char *data, size_t len, buf *err)
{
    rl_doc *d = calloc(1, sizeof *d);
    yaml_parser_t p;
    if (!d || !yaml_parser_initialize(&p)) {
        free(d);
        buf_fail_line(err, OOM);
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    yaml_document_t extra = { 0 };
    int ok = 0;
    if (!yaml_load(&p, len, &d->doc)) {
        parser_err(&p, err);
    } else if (!root_id(&d->doc)) {
        buf_fail_line(err, "no YAML document");
    } else if (!yaml_load(&p, len, &extra)) {
        parser_err(&p, err);
    } else if (root_id(&extra)) {
        buf_fail_line(err, "expected one YAML document, found more");
    } else if (node_type(&d->doc, 1) != YAML_MAPPING_NODE) {
        buf_fail_line(err, "expected a mapping (a KRM object), found %s",
                type_name(node_type(&d->doc, 1)));
    } else {
        ok = 1;
    }
    yaml_document_delete(&extra);
    yaml_parser_delete(&p);
    if (!ok) {
        rl_doc_free(d);
        return NULL;
    }
    return d;
}

rl_doc *rl_doc_load_object(const char *data, size_t len, buf *err)
{
    return load_mapping(data, len, err);
}

/* One key of a ConfigMap's data: where it first and last appears. */
typedef struct key_span {
    const char *key;
    size_t first, last;
} key_span;

static int by_key_then_first(const void *a, const void *b)
{
    const key_span *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->first > y->first) - (x->first < y->first);
}

static int by_first(const void *a, const void *b)
{
    const key_span *x = a, *y = b;
    return (x->first > y->first) - (x->first < y->first);
}

/* data's keys, each once, in the order they first appear, with where they
 * last appear (whose value wins); *n_keys of them. Sorting, not a lookup
 * per pair: a Kptfile's configMap may hold a hundred thousand entries, and
 * looking each up among the others cost their square. NULL when out of
 * memory. */
static key_span *distinct_keys(const rl_kv *data, size_t n, size_t *n_keys)
{
    key_span *spans = calloc(n ? n : 1, sizeof *spans);
    if (!spans)
        return NULL;
    for (size_t i = 0; i < n; i++)
        spans[i] = (key_span){ data[i].key, i, i };
    qsort(spans, n, sizeof *spans, by_key_then_first);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && !strcmp(spans[out - 1].key, spans[i].key))
            spans[out - 1].last = spans[i].first;
        else
            spans[out++] = spans[i];
    }
    qsort(spans, out, sizeof *spans, by_first);
    *n_keys = out;
    return spans;
}

rl_doc *rl_doc_config_map(const char *name, const rl_kv *data, size_t n)
{
    rl_doc *d = calloc(1, sizeof *d);
    size_t n_keys = 0;
    key_span *keys = distinct_keys(data, n, &n_keys);
    if (!d || !keys || new_document(&d->doc) < 0) {
        free(d);
        free(keys);
        return NULL;
    }
    yaml_document_t *doc = &d->doc;
    int root = add_mapping(doc), meta = add_mapping(doc), map = add_mapping(doc);
    int ok = root && meta && map && map_set_string(doc, root, "apiVersion", "v1") == 0 &&
             map_set_string(doc, root, "kind", "ConfigMap") == 0 &&
             map_set(doc, root, "metadata", meta) == 0 &&
             map_set_string(doc, meta, "name", name) == 0 && map_set(doc, root, "data", map) == 0;
    for (size_t i = 0; ok && i < n_keys; i++) {
        int k = add_string(doc, keys[i].key), v = k ? add_string(doc, data[keys[i].last].value) : 0;
        ok = v && yaml_document_append_mapping_pair(doc, map, k, v);
    }
    free(keys);
    if (!ok) {
        rl_doc_free(d);
        return NULL;
    }
    return d;
}

void rl_doc_free(rl_doc *d)
{
    if (!d)
        return;
    yaml_document_delete(&d->doc);
    free(d);
}

/* ---- writing -------------------------------------------------------------------- */

static int write_to_buf(void *data, unsigned char *bytes, size_t size)
{
    return buf_append(data, bytes, size) == 0;
}

int rl_doc_emit(const rl_doc *d, const char *omit_key, buf *out, buf *err)
{
    yaml_document_t copy;
    if (clone_document(&d->doc, omit_key, &copy, err) < 0)
        return -1;
    size_t start = out->len;
    yaml_emitter_t e;
    if (!yaml_emitter_initialize(&e)) {
        yaml_document_delete(&copy);
        buf_fail_line(err, OOM);
        return -1;
    }
    yaml_emitter_set_output(&e, write_to_buf, out);
    yaml_emitter_set_unicode(&e, 1);
    yaml_emitter_set_width(&e, -1); /* never fold long scalars */
    yaml_emitter_set_indent(&e, 2);
    /* yaml_emitter_dump frees `copy`, whether it succeeds or not. */
    int opened = yaml_emitter_open(&e);
    int ok = opened && yaml_emitter_dump(&e, &copy) && yaml_emitter_close(&e) &&
             yaml_emitter_flush(&e);
    if (!ok)
        buf_fail_line(err, "cannot write YAML: %s", e.problem ? e.problem : OOM);
    yaml_emitter_delete(&e);
    if (!opened)
        yaml_document_delete(&copy); /* dump never took it */
    if (ok && out->len > start && out->data[out->len - 1] != '\n' && buf_append(out, "\n", 1) < 0) {
        buf_fail_line(err, OOM);
        ok = 0;
    }
    if (!ok) {
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    }
    return ok ? 0 : -1;
}
