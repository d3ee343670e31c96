/* yaml_unmarshal: yaml.v3's "unmarshal errors" and duplicate-key check;
 * see yaml_unmarshal.h. */
#include "krm/yaml_unmarshal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/go_quote.h"
#include "core/utf8.h"
#include "krm/yaml_v3.h"

/* ------------------------------------------------------------------------ */
/* Error lines                                                               */

yaml_unmarshal_mark yaml_unmarshal_save(const yaml_unmarshal_errors *e)
{
    return (yaml_unmarshal_mark){e->text.len, e->count};
}

static void restore(yaml_unmarshal_errors *e, yaml_unmarshal_mark mark)
{
    e->text.len = mark.len;
    if (e->text.data)
        e->text.data[mark.len] = '\0';
    e->count = mark.count;
}

void yaml_unmarshal_errors_free(yaml_unmarshal_errors *e)
{
    buf_free(&e->text);
    e->count = 0;
}

/* Starts a new error line; returns 1 when it should be written out. */
static int begin_line(yaml_unmarshal_errors *e)
{
    if (++e->count > YAML_UNMARSHAL_MAX_ERRORS)
        return 0;
    return 1;
}

static int separator(yaml_unmarshal_errors *e)
{
    return e->text.len ? buf_append_str(&e->text, "\n  ") : 0;
}

int yaml_unmarshal_type_error(yaml_unmarshal_errors *e, const yaml_event_t *ev, size_t line,
                              const char *go_type)
{
    if (!begin_line(e))
        return 0;
    buf *b = &e->text;
    int rc = separator(e);
    rc |= buf_printf(b, "line %zu: cannot unmarshal ", line);
    size_t tag_at = b->len;
    rc |= yaml_v3_append_tag(b, ev);
    int collection_tag = rc == 0 && (strcmp(b->data + tag_at, "!!seq") == 0 ||
                                     strcmp(b->data + tag_at, "!!map") == 0);
    if (rc == 0 && !collection_tag) {
        const char *value = ev->type == YAML_SCALAR_EVENT ? (const char *)ev->data.scalar.value : "";
        size_t len = ev->type == YAML_SCALAR_EVENT ? ev->data.scalar.length : 0;
        size_t shown = len > 10 ? utf8_cut(value, len, 7) : len;
        rc |= buf_append(b, " `", 2);
        rc |= buf_append(b, value, shown);
        rc |= buf_append_str(b, len > 10 ? "...`" : "`");
    }
    rc |= buf_printf(b, " into %s", go_type);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------------------ */
/* Duplicate keys                                                            */

void yaml_unmarshal_keys_reset(yaml_unmarshal_keys *t)
{
    buf_reset(&t->arena);
    t->n = 0;
}

void yaml_unmarshal_keys_free(yaml_unmarshal_keys *t)
{
    buf_free(&t->arena);
    free(t->keys);
    *t = (yaml_unmarshal_keys){0};
}

int yaml_unmarshal_keys_add(yaml_unmarshal_keys *t, const yaml_event_t *ev, size_t line)
{
    if (t->n == YAML_UNMARSHAL_MAX_KEYS)
        return 0;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        yaml_unmarshal_key *keys = realloc(t->keys, cap * sizeof *keys);
        if (!keys)
            return -1;
        t->keys = keys;
        t->cap = cap;
    }
    const char *text = "";
    if (ev->type == YAML_SCALAR_EVENT)
        text = (const char *)ev->data.scalar.value;
    else if (ev->type == YAML_ALIAS_EVENT)
        text = (const char *)ev->data.alias.anchor;
    size_t len = ev->type == YAML_SCALAR_EVENT ? ev->data.scalar.length : strlen(text);
    char kind = (char)yaml_v3_kind_of(ev);
    yaml_unmarshal_key *k = &t->keys[t->n];
    k->offset = t->arena.len;
    k->len = len + 1;
    k->line = line;
    if (buf_append(&t->arena, &kind, 1) < 0 || buf_append(&t->arena, text, len) < 0)
        return -1;
    t->n++;
    return 0;
}

typedef struct key_order {
    const char *identity;
    size_t len;
    size_t index;
} key_order;

static int compare_key_order(const void *a, const void *b)
{
    const key_order *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->identity, y->identity, n);
    if (c)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* For each key, the index of the next later key with the same identity, or
 * SIZE_MAX. Returns NULL on ENOMEM; *any_dup tells whether one exists. */
static size_t *link_duplicates(const yaml_unmarshal_keys *t, int *any_dup)
{
    key_order *order = malloc(t->n * sizeof *order);
    size_t *next = malloc(t->n * sizeof *next);
    if (!order || !next) {
        free(order);
        free(next);
        return NULL;
    }
    for (size_t i = 0; i < t->n; i++) {
        order[i] = (key_order){t->arena.data + t->keys[i].offset, t->keys[i].len, i};
        next[i] = SIZE_MAX;
    }
    qsort(order, t->n, sizeof *order, compare_key_order);
    *any_dup = 0;
    for (size_t i = 1; i < t->n; i++) {
        if (order[i - 1].len == order[i].len &&
            memcmp(order[i - 1].identity, order[i].identity, order[i].len) == 0) {
            next[order[i - 1].index] = order[i].index;
            *any_dup = 1;
        }
    }
    free(order);
    return next;
}

static int duplicate_error(yaml_unmarshal_errors *e, const yaml_unmarshal_keys *t, size_t first,
                           size_t later)
{
    if (!begin_line(e))
        return 0;
    const yaml_unmarshal_key *k = &t->keys[later];
    buf *b = &e->text;
    int rc = separator(e);
    rc |= buf_printf(b, "line %zu: mapping key ", k->line);
    rc |= go_quote_bytes(t->arena.data + k->offset + 1, k->len - 1, b);
    rc |= buf_printf(b, " already defined at line %zu", t->keys[first].line);
    return rc ? -1 : 0;
}

int yaml_unmarshal_duplicates(yaml_unmarshal_errors *e, const yaml_unmarshal_keys *t,
                              yaml_unmarshal_mark mark)
{
    if (t->n < 2)
        return 0;
    int any_dup;
    size_t *next = link_duplicates(t, &any_dup);
    if (!next)
        return -1;
    if (any_dup)
        restore(e, mark);
    int rc = 0;
    for (size_t i = 0; any_dup && i < t->n && rc == 0; i++)
        for (size_t j = next[i]; j != SIZE_MAX && rc == 0; j = next[j])
            rc = duplicate_error(e, t, i, j);
    free(next);
    return rc < 0 ? -1 : any_dup;
}
