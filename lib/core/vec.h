/* vec: a growable array of fixed-size items.
 *
 * The one place where an array that grows one item at a time doubles its
 * capacity, so the overflow checks (of the doubling and of capacity x item
 * size) and the caller's bound on the count are written once. A vec starts
 * as { 0 }; its items are contiguous, so they can be indexed, sorted with
 * qsort or handed on as an array.
 *
 *     entry *e = vec_push(&list, sizeof *e, VEC_NO_MAX);
 *     if (!e) ... errno: ENOMEM, or E2BIG past the bound
 *     entry *all = list.items;   (list.len of them) */
#ifndef KRM_VEC_H
#define KRM_VEC_H

#include <stddef.h>
#include <stdint.h>

typedef struct vec {
    void *items;   /* NULL until the first push */
    size_t len;    /* items in use */
    size_t cap;    /* items allocated */
} vec;

/* max_len for a vec bounded only by memory (and by SIZE_MAX bytes). */
#define VEC_NO_MAX SIZE_MAX

/* Appends an item of item_size bytes, zeroed, and returns it; the pointer
 * is valid until the next push. NULL, the vec unchanged, with errno E2BIG
 * when it already holds max_len items, ENOMEM when the memory could not be
 * had or its size would overflow. */
void *vec_push(vec *v, size_t item_size, size_t max_len);
/* Releases the array (not what its items point to), back to { 0 }. */
void vec_free(vec *v);

#endif
