/* Unit tests for vec, the growable array: items kept in order across
 * growth, each new one zeroed; the capacity doubles from 16 and stops at
 * the caller's bound, where a push fails with E2BIG leaving the vec as it
 * was; a capacity whose bytes would overflow size_t is refused with ENOMEM
 * before any allocation is tried. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/vec.h"

typedef struct pair {
    size_t key;
    char tag[12];
} pair;

Test(vec, items_survive_growth_in_order_and_start_zeroed)
{
    vec v = { 0 };
    for (size_t i = 0; i < 1000; i++) {
        pair *p = vec_push(&v, sizeof *p, VEC_NO_MAX);
        cr_assert_not_null(p, "push %zu", i);
        cr_assert_eq(p->key, 0);
        cr_assert_eq(p->tag[0], 0);
        p->key = i * 7;
        memset(p->tag, 'a' + (int)(i % 26), sizeof p->tag - 1);
    }
    cr_assert_eq(v.len, 1000);
    cr_assert_eq(v.cap, 1024, "16 doubled six times: %zu", v.cap);
    const pair *all = v.items;
    for (size_t i = 0; i < v.len; i++) {
        cr_assert_eq(all[i].key, i * 7);
        cr_assert_eq(all[i].tag[10], 'a' + (int)(i % 26));
        cr_assert_eq(all[i].tag[11], 0);
    }
    vec_free(&v);
    cr_assert_null(v.items);
    cr_assert_eq(v.len, 0);
    cr_assert_eq(v.cap, 0);
}

Test(vec, the_bound_caps_the_capacity_and_refuses_one_more)
{
    vec v = { 0 };
    for (int i = 0; i < 20; i++)
        cr_assert_not_null(vec_push(&v, sizeof(int), 20));
    cr_assert_eq(v.cap, 20, "grown to the bound, not to 32: %zu", v.cap);
    void *items = v.items;
    errno = 0;
    cr_assert_null(vec_push(&v, sizeof(int), 20));
    cr_assert_eq(errno, E2BIG);
    cr_assert_eq(v.len, 20);
    cr_assert_eq(v.items, items);
    vec_free(&v);

    for (int i = 0; i < 3; i++)
        cr_assert_not_null(vec_push(&v, sizeof(int), 3));
    cr_assert_eq(v.cap, 3, "a bound under the first capacity: %zu", v.cap);
    vec_free(&v);
}

Test(vec, a_size_past_size_max_is_refused_without_allocating)
{
    /* Full at the most items whose bytes size_t can count: a doubling (or
     * capacity x size) would wrap to a small allocation. The items are not
     * a heap block: were realloc reached, it would crash. */
    char not_heap[32];
    size_t item_size = 16;
    vec v = { .items = not_heap, .len = SIZE_MAX / item_size, .cap = SIZE_MAX / item_size };
    errno = 0;
    cr_assert_null(vec_push(&v, item_size, VEC_NO_MAX));
    cr_assert_eq(errno, ENOMEM);
    cr_assert_eq(v.items, not_heap);
    cr_assert_eq(v.len, SIZE_MAX / item_size);
    cr_assert_eq(v.cap, SIZE_MAX / item_size);
}

Test(vec, a_zero_item_size_is_refused)
{
    vec v = { 0 };
    errno = 0;
    cr_assert_null(vec_push(&v, 0, VEC_NO_MAX));
    cr_assert_eq(errno, EINVAL);
    cr_assert_null(v.items);
}
