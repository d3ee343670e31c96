/* strset: a set of strings; see strset.h. */
#include "core/strset.h"

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

static char **slot_of(const strset *set, const char *name)
{
    size_t i = hash_string(name) & (set->cap - 1);
    while (set->slots[i] && strcmp(set->slots[i], name) != 0)
        i = (i + 1) & (set->cap - 1);
    return &set->slots[i];
}

static int grow(strset *set)
{
    size_t cap = set->cap ? set->cap * 2 : 16;
    char **slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    strset bigger = {slots, cap, set->n};
    for (size_t i = 0; i < set->cap; i++)
        if (set->slots[i])
            *slot_of(&bigger, set->slots[i]) = set->slots[i];
    free(set->slots);
    *set = bigger;
    return 0;
}

int strset_add(strset *set, const char *name)
{
    if ((set->n + 1) * 2 > set->cap && grow(set) < 0)
        return -1;
    char **slot = slot_of(set, name);
    if (*slot)
        return 0;
    *slot = strdup(name);
    if (!*slot)
        return -1;
    set->n++;
    return 0;
}

int strset_has(const strset *set, const char *name)
{
    return set->cap && *slot_of(set, name) != NULL;
}

void strset_free(strset *set)
{
    for (size_t i = 0; i < set->cap; i++)
        free(set->slots[i]);
    free(set->slots);
    *set = (strset){0};
}
