/* strset: a set of strings; see strset.h. */
#include "core/strset.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* FNV-1a. */
static size_t hash_string(const char *s)
{
    size_t h = 1469598103934665603u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

static size_t slot_of(const strset *set, const char *name)
{
    size_t i = hash_string(name) & (set->cap - 1);
    while (set->slots[i] && strcmp(set->slots[i], name) != 0)
        i = (i + 1) & (set->cap - 1);
    return i;
}

static int grow(strset *set)
{
    size_t cap = set->cap ? set->cap * 2 : 16;
    char **slots = calloc(cap, sizeof *slots);
    size_t *values = calloc(cap, sizeof *values);
    if (!slots || !values) {
        free(slots);
        free(values);
        return -1;
    }
    strset bigger = {slots, values, cap, set->n};
    for (size_t i = 0; i < set->cap; i++)
        if (set->slots[i]) {
            size_t at = slot_of(&bigger, set->slots[i]);
            bigger.slots[at] = set->slots[i];
            bigger.values[at] = set->values[i];
        }
    free(set->slots);
    free(set->values);
    *set = bigger;
    return 0;
}

/* Adds name (value 0) unless there; its slot, or SIZE_MAX when out of memory. */
static size_t add(strset *set, const char *name)
{
    if ((set->n + 1) * 2 > set->cap && grow(set) < 0)
        return SIZE_MAX;
    size_t at = slot_of(set, name);
    if (set->slots[at])
        return at;
    set->slots[at] = strdup(name);
    if (!set->slots[at])
        return SIZE_MAX;
    set->values[at] = 0;
    set->n++;
    return at;
}

int strset_add(strset *set, const char *name)
{
    return add(set, name) == SIZE_MAX ? -1 : 0;
}

int strset_put(strset *set, const char *name, size_t value)
{
    size_t at = add(set, name);
    if (at == SIZE_MAX)
        return -1;
    set->values[at] = value;
    return 0;
}

int strset_get(const strset *set, const char *name, size_t *value)
{
    if (!set->cap)
        return 0;
    size_t at = slot_of(set, name);
    if (!set->slots[at])
        return 0;
    *value = set->values[at];
    return 1;
}

int strset_has(const strset *set, const char *name)
{
    return set->cap && set->slots[slot_of(set, name)] != NULL;
}

void strset_free(strset *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->slots[i]);
    free(set->slots);
    free(set->values);
    *set = (strset){0};
}
