/* Unit tests for lib/yaml_depth: the flow-nesting limit every YAML reader
 * applies, and that refusing costs little however deep the input goes. */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "krm/yaml_depth.h"

static void flow_nest(buf *out, const char *prefix, const char *open, const char *close, int depth,
                      const char *suffix)
{
    buf_reset(out);
    buf_append_str(out, prefix);
    for (int i = 0; i < depth; i++)
        buf_append_str(out, open);
    for (int i = 0; i < depth; i++)
        buf_append_str(out, close);
    buf_append_str(out, suffix);
}

static int check(const buf *in, size_t *line, size_t *column)
{
    *line = *column = 0;
    return yaml_flow_depth_check(in->data, in->len, line, column);
}

Test(yaml_depth, the_limit_is_exact_for_sequences_and_mappings)
{
    buf in = {0};
    size_t line, column;
    flow_nest(&in, "a: ", "[", "]", YAML_MAX_FLOW_DEPTH, "\n");
    cr_assert_eq(check(&in, &line, &column), 0);
    flow_nest(&in, "a:\n  b: ", "[", "]", YAML_MAX_FLOW_DEPTH + 1, "\n");
    cr_assert_eq(check(&in, &line, &column), -1);
    cr_assert_eq(line, 2);
    cr_assert_eq(column, 6 + YAML_MAX_FLOW_DEPTH, "column %zu", column);
    flow_nest(&in, "", "{a: ", "}", YAML_MAX_FLOW_DEPTH, "\n");
    cr_assert_eq(check(&in, &line, &column), 0);
    flow_nest(&in, "", "{a: ", "}", YAML_MAX_FLOW_DEPTH + 1, "\n");
    cr_assert_eq(check(&in, &line, &column), -1);
    buf_free(&in);
}

/* Block collections are not counted, and the count goes back down as flow
 * collections close: many shallow ones in a row are fine. */
Test(yaml_depth, only_open_flow_collections_count)
{
    buf in = {0};
    for (int i = 0; i < 300; i++)
        buf_printf(&in, "%*s- k:\n", 2 * i, "");
    for (int i = 0; i < 1000; i++)
        buf_append_str(&in, i ? ", [[[x]]]" : "- [[[[x]]]");
    buf_append_str(&in, "]\n");
    size_t line, column;
    cr_assert_eq(check(&in, &line, &column), 0);
    buf_free(&in);
}

/* Malformed YAML is left to the loader, which says what is wrong. */
Test(yaml_depth, malformed_yaml_is_not_its_business)
{
    buf in = {0};
    buf_append_str(&in, "a: [b\n");
    size_t line, column;
    cr_assert_eq(check(&in, &line, &column), 0);
    buf_free(&in);
}

/* libyaml's time per token grows with flow depth: 6 MiB of "[" took
 * minutes before; refused at the limit, it takes about a millisecond. The
 * bound here is generous for a loaded machine. */
Test(yaml_depth, megabytes_of_nesting_are_refused_at_once)
{
    buf in = {0};
    for (int i = 0; i < 6 * 1024 * 1024; i++)
        buf_append(&in, "[", 1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t line, column;
    cr_assert_eq(check(&in, &line, &column), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_lt(s, 0.5, "took %.3f s", s);
    cr_assert_eq(line, 1);
    cr_assert_eq(column, YAML_MAX_FLOW_DEPTH + 1);
    buf_free(&in);
}

Test(yaml_depth, the_message_names_the_limit)
{
    cr_assert_str_eq(YAML_FLOW_DEPTH_PROBLEM,
                     "flow collections ([...] or {...}) nested more than 128 deep");
}
