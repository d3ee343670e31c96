/* vec: a growable array of fixed-size items; see vec.h. */
#include "core/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The first allocation: room for this many items. */
#define VEC_FIRST_CAP 16

/* The capacity after cap when one more item is needed: doubled, not past
 * max_len nor past what size_t can count in bytes. 0 when no room is left. */
static size_t next_cap(size_t cap, size_t item_size, size_t max_len)
{
    size_t most = SIZE_MAX / item_size;   /* items whose bytes size_t can count */
    if (max_len < most)
        most = max_len;
    if (cap >= most)
        return 0;
    size_t grown = cap == 0 ? VEC_FIRST_CAP : cap <= most / 2 ? cap * 2 : most;
    return grown < most ? grown : most;
}

void *vec_push(vec *v, size_t item_size, size_t max_len)
{
    if (item_size == 0) {
        errno = EINVAL;
        return NULL;
    }
    if (v->len >= max_len) {
        errno = E2BIG;
        return NULL;
    }
    if (v->len == v->cap) {
        size_t cap = next_cap(v->cap, item_size, max_len);
        void *grown = cap ? realloc(v->items, cap * item_size) : NULL;
        if (!grown) {
            errno = ENOMEM;
            return NULL;
        }
        v->items = grown;
        v->cap = cap;
    }
    char *item = (char *)v->items + v->len * item_size;
    memset(item, 0, item_size);
    v->len++;
    return item;
}

void vec_free(vec *v)
{
    free(v->items);
    *v = (vec){ 0 };
}
