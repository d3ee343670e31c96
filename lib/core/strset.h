/* strset: a set of NUL-terminated strings, by value.
 *
 * Why: the ResourceList judge must know which YAML anchor names it has
 * seen, so that an alias to an unknown one fails as yaml.v3 fails it,
 * without building a tree; hostile input may define any number of them, so
 * lookups must stay O(1). Open addressing with linear probing, FNV-1a
 * hashing, at most half full; the set owns copies of its strings. A zeroed
 * strset is an empty set. Each string may carry a number (strset_put), for
 * readers that must know more of an anchor than that it exists: the node it
 * names, what it expands to (lib/krm/yaml_limits.h). */
#ifndef KRM_STRSET_H
#define KRM_STRSET_H

#include <stddef.h>

typedef struct strset {
    char **slots;
    size_t *values;   /* beside slots: each string's number */
    size_t cap;   /* power of two, or 0 */
    size_t n;
} strset;

/* Adds a copy of s (nothing when it is already there). 0, or -1 when out of memory. */
int strset_add(strset *set, const char *s);
/* Adds s with `value`, or sets the value of s when it is there. 0, or -1
 * when out of memory. */
int strset_put(strset *set, const char *s, size_t value);
/* 1 with *value set when s is in the set (0 for one added by strset_add), else 0. */
int strset_get(const strset *set, const char *s, size_t *value);
/* 1 when s is in the set. */
int strset_has(const strset *set, const char *s);
/* Frees the strings and the table; the set is empty again. */
void strset_free(strset *set);

#endif
