/* Unit tests for buf's spare big buffers: off unless enabled; a freed
 * buffer of 1 MiB or more is kept and handed to the next big reservation
 * (the smallest that fits, contents moved), small ones are never kept, and
 * release frees them all. */
#include <criterion/criterion.h>
#include <string.h>

#include "core/buf.h"

#define MIB (1u << 20)

static void teardown(void)
{
    buf_spares_release();
    buf_spares_enable(0);
}

TestSuite(buf_spares, .fini = teardown);

Test(buf_spares, off_by_default)
{
    buf b = {0};
    cr_assert_eq(buf_reserve_exact(&b, 2 * MIB), 0);
    buf_free(&b);
    cr_assert_eq(buf_spares_bytes(), 0);
}

Test(buf_spares, big_buffers_are_reused_smallest_fit_first)
{
    buf_spares_enable(2);
    buf a = {0}, b = {0}, small = {0};
    cr_assert_eq(buf_reserve_exact(&a, 2 * MIB), 0);
    cr_assert_eq(buf_reserve_exact(&b, 5 * MIB), 0);
    cr_assert_eq(buf_reserve(&small, 1000), 0);
    char *pa = a.data, *pb = b.data;
    buf_free(&a);
    buf_free(&b);
    buf_free(&small);
    cr_assert_eq(buf_spares_bytes(), 7 * MIB);

    buf c = {0};
    cr_assert_eq(buf_append(&c, "head", 4), 0);       /* small contents move along */
    cr_assert_eq(buf_reserve_exact(&c, 3 * MIB), 0);
    cr_assert_eq(c.data, pb, "the 5 MiB spare is the only one that fits");
    cr_assert_eq(c.len, 4);
    cr_assert(!memcmp(c.data, "head", 5));
    buf d = {0};
    cr_assert_eq(buf_reserve(&d, MIB + 1), 0);
    cr_assert_eq(d.data, pa);
    cr_assert_eq(buf_spares_bytes(), 0);
    buf_free(&c);
    buf_free(&d);
    buf_spares_release();
    cr_assert_eq(buf_spares_bytes(), 0);
}

Test(buf_spares, a_bigger_buffer_replaces_the_smallest_when_full)
{
    buf_spares_enable(1);
    buf a = {0}, b = {0};
    cr_assert_eq(buf_reserve_exact(&a, 2 * MIB), 0);
    cr_assert_eq(buf_reserve_exact(&b, 4 * MIB), 0);
    buf_free(&a);
    buf_free(&b);
    cr_assert_eq(buf_spares_bytes(), 4 * MIB);
}

Test(buf, fail_appends_the_message_and_answers_minus_one)
{
    buf err = {0};
    buf_append_str(&err, "registry: ");
    cr_assert_eq(buf_fail(&err, "cannot read %s (%d)", "config.json", 2), -1);
    cr_assert_str_eq(err.data, "registry: cannot read config.json (2)");
    cr_assert_eq(err.len, strlen(err.data));
    buf_free(&err);
}
