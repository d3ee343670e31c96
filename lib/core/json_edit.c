/* json_edit: changing a JSON tree and writing it; see json_edit.h. */
#include "core/json_edit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

json *json_new(json_type t)
{
    json *v = calloc(1, sizeof *v);
    if (v)
        v->type = t;
    return v;
}

json *json_new_string(const char *s)
{
    json *v = json_new(JSON_STRING);
    if (v && !(v->str = strdup(s))) {
        free(v);
        return NULL;
    }
    if (v)
        v->len = strlen(s);
    return v;
}

/* Room for one more member of v (an array or object). */
static int grow(json *v)
{
    if (v->len < v->cap)
        return 0;
    size_t cap = v->cap ? 2 * v->cap : 4;
    json **items = realloc(v->items, cap * sizeof *items);
    if (!items)
        return -1;
    v->items = items;
    if (v->type == JSON_OBJECT) {
        char **keys = realloc(v->keys, cap * sizeof *keys);
        if (!keys)
            return -1;
        v->keys = keys;
    }
    v->cap = cap;
    return 0;
}

static int json_set_new(json *obj, const char *key, json *value);

int json_set(json *obj, const char *key, json *value)
{
    if (!value || !obj || obj->type != JSON_OBJECT) {
        json_free(value);
        return -1;
    }
    int placed = 0;
    for (size_t i = 0; i < obj->len; i++) {
        if (strcmp(obj->keys[i], key))
            continue;
        if (!placed) {   /* the first of that name takes the value; the others go */
            json_free(obj->items[i]);
            obj->items[i] = value;
            placed = 1;
            continue;
        }
        json_free(obj->items[i]);
        free(obj->keys[i]);
        memmove(obj->items + i, obj->items + i + 1, (obj->len - i - 1) * sizeof *obj->items);
        memmove(obj->keys + i, obj->keys + i + 1, (obj->len - i - 1) * sizeof *obj->keys);
        obj->len--;
        i--;
    }
    return placed ? 0 : json_set_new(obj, key, value);
}

/* Appends member key (repeated names kept, as read). */
static int json_set_new(json *obj, const char *key, json *value)
{
    char *k = value ? strdup(key) : NULL;
    if (!k || grow(obj) < 0) {
        free(k);
        json_free(value);
        return -1;
    }
    obj->keys[obj->len] = k;
    obj->items[obj->len++] = value;
    return 0;
}

int json_push(json *arr, json *value)
{
    if (!value || !arr || arr->type != JSON_ARRAY || grow(arr) < 0) {
        json_free(value);
        return -1;
    }
    arr->items[arr->len++] = value;
    return 0;
}

json *json_want(json *obj, const char *key, json_type t)
{
    json *v = (json *)json_get(obj, key);
    if (v && v->type == t)
        return v;
    if (!obj || obj->type != JSON_OBJECT || json_set(obj, key, json_new(t)) < 0)
        return NULL;
    return (json *)json_get(obj, key);
}

json *json_copy(const json *v)
{
    json *c = json_new(v->type);
    if (!c)
        return NULL;
    c->number = v->number;
    if (v->type == JSON_STRING) {
        if (!(c->str = malloc(v->len + 1))) {
            free(c);
            return NULL;
        }
        memcpy(c->str, v->str, v->len + 1);   /* a "\u0000" inside is kept */
        c->len = v->len;
        return c;
    }
    for (size_t i = 0; (v->type == JSON_ARRAY || v->type == JSON_OBJECT) && i < v->len; i++) {
        json *item = json_copy(v->items[i]);
        if (v->type == JSON_ARRAY ? json_push(c, item) < 0 : json_set_new(c, v->keys[i], item) < 0) {
            json_free(c);
            return NULL;
        }
    }
    return c;
}
