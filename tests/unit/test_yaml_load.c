/* Unit tests for lib/krm/yaml_load and yaml_limits: libyaml's document
 * loader with the nesting and alias limits checked while it reads, and
 * that refusing costs little however deep or wide the input goes. */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "core/buf.h"
#include "krm/yaml_limits.h"
#include "krm/yaml_load.h"

static void nest(buf *out, const char *prefix, const char *open, const char *close, int depth,
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

/* Loads the first document of `in`; 0, or -1 with the 1-based line and
 * column and the problem of the refusal. */
static int load_doc(const buf *in, yaml_document_t *doc, size_t *line, size_t *column,
                    const char **problem)
{
    yaml_parser_t p;
    cr_assert(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)in->data, in->len);
    int ok = yaml_load(&p, in->len, doc);
    *line = p.problem_mark.line + 1;
    *column = p.problem_mark.column + 1;
    *problem = p.problem;
    yaml_parser_delete(&p);
    return ok ? 0 : -1;
}

static int check(const buf *in, size_t *line, size_t *column, const char **problem)
{
    yaml_document_t doc;
    int rc = load_doc(in, &doc, line, column, problem);
    yaml_document_delete(&doc);
    return rc;
}

static size_t node_count(const yaml_document_t *doc)
{
    return (size_t)(doc->nodes.top - doc->nodes.start);
}

Test(yaml_load, the_flow_limit_is_exact_for_sequences_and_mappings)
{
    buf in = {0};
    size_t line, column;
    const char *problem;
    nest(&in, "a: ", "[", "]", YAML_MAX_FLOW_DEPTH, "\n");
    cr_assert_eq(check(&in, &line, &column, &problem), 0);
    nest(&in, "a:\n  b: ", "[", "]", YAML_MAX_FLOW_DEPTH + 1, "\n");
    cr_assert_eq(check(&in, &line, &column, &problem), -1);
    cr_assert_eq(line, 2);
    cr_assert_eq(column, 6 + YAML_MAX_FLOW_DEPTH, "column %zu", column);
    cr_assert_str_eq(problem, YAML_FLOW_DEPTH_PROBLEM);
    nest(&in, "", "{a: ", "}", YAML_MAX_FLOW_DEPTH, "\n");
    cr_assert_eq(check(&in, &line, &column, &problem), 0);
    nest(&in, "", "{a: ", "}", YAML_MAX_FLOW_DEPTH + 1, "\n");
    cr_assert_eq(check(&in, &line, &column, &problem), -1);
    buf_free(&in);
}

/* Block nesting counts too: 1000 levels load, the 1001st is refused on
 * its own line. */
Test(yaml_load, the_depth_limit_counts_every_collection)
{
    buf in = {0};
    size_t line, column;
    const char *problem;
    for (int i = 0; i < YAML_MAX_DEPTH - 1; i++)
        buf_printf(&in, "%*sk:\n", i, "");
    buf_printf(&in, "%*s- x\n", YAML_MAX_DEPTH - 1, "");
    cr_assert_eq(check(&in, &line, &column, &problem), 0, "%s", problem);
    buf_printf(&in, "%*s- y: z\n", YAML_MAX_DEPTH - 1, "");
    cr_assert_eq(check(&in, &line, &column, &problem), -1);
    cr_assert_str_eq(problem, YAML_DEPTH_PROBLEM);
    cr_assert_eq(line, YAML_MAX_DEPTH + 1, "line %zu", line);
    buf_free(&in);
}

/* Open collections are what counts: many shallow ones in a row are fine. */
Test(yaml_load, only_open_collections_count)
{
    buf in = {0};
    for (int i = 0; i < 300; i++)
        buf_printf(&in, "%*s- k:\n", 2 * i, "");
    for (int i = 0; i < 1000; i++)
        buf_append_str(&in, i ? ", [[[x]]]" : "- [[[[x]]]");
    buf_append_str(&in, "]\n");
    size_t line, column;
    const char *problem;
    cr_assert_eq(check(&in, &line, &column, &problem), 0, "%s", problem);
    buf_free(&in);
}

/* libyaml's time per token grows with flow depth, and a tree of 2,000,000
 * levels took 800 MiB: refused at the limit, either takes about a
 * millisecond. The bound here is generous for a loaded machine. */
Test(yaml_load, megabytes_of_nesting_are_refused_at_once)
{
    buf flow = {0}, block = {0};
    for (int i = 0; i < 6 * 1024 * 1024; i++)
        buf_append(&flow, "[", 1);
    for (int i = 0; i < 2000000; i++)
        buf_append(&block, "- ", 2);
    buf_append_str(&block, "x\n");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t line, column;
    const char *problem;
    cr_assert_eq(check(&flow, &line, &column, &problem), -1);
    cr_assert_eq(line, 1);
    cr_assert_eq(column, YAML_MAX_FLOW_DEPTH + 1);
    cr_assert_eq(check(&block, &line, &column, &problem), -1);
    cr_assert_str_eq(problem, YAML_DEPTH_PROBLEM);
    cr_assert_eq(column, 2 * YAML_MAX_DEPTH + 1, "column %zu", column);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    cr_assert_lt(s, 0.5, "took %.3f s", s);
    buf_free(&flow);
    buf_free(&block);
}

/* Ten aliases of ten aliases ... : a few hundred bytes standing for
 * gigabytes are refused; a modest reuse of an anchor loads, shared. */
Test(yaml_load, alias_bombs_are_refused_and_modest_aliases_load)
{
    buf in = {0};
    buf_append_str(&in, "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for (char c = 'b'; c <= 'i'; c++) {
        buf_printf(&in, "%c: &%c [", c, c);
        for (int i = 0; i < 9; i++)
            buf_printf(&in, "%s*%c", i ? "," : "", c - 1);
        buf_append_str(&in, "]\n");
    }
    size_t line, column;
    const char *problem;
    cr_assert_eq(check(&in, &line, &column, &problem), -1);
    cr_assert_str_eq(problem, YAML_ALIAS_PROBLEM);
    cr_assert_lt(line, 10);

    buf_reset(&in);
    buf_append_str(&in, "base: &b {image: x, config: {k: v}}\none: *b\ntwo: *b\n");
    yaml_document_t doc;
    cr_assert_eq(load_doc(&in, &doc, &line, &column, &problem), 0, "%s", problem);
    cr_assert_eq(node_count(&doc), 11);   /* the aliases share the anchored node */
    yaml_document_delete(&doc);
    buf_free(&in);
}

/* libyaml's loader builds a cycle for an alias inside its own anchor's
 * node, and recursive readers never come back; yaml.v3 refuses it too. */
Test(yaml_load, an_alias_inside_its_anchor_is_refused)
{
    buf in = {0};
    buf_append_str(&in, "a: &x\n  b: [1, *x]\n");
    size_t line, column;
    const char *problem;
    cr_assert_eq(check(&in, &line, &column, &problem), -1);
    cr_assert_str_eq(problem, YAML_CYCLE_PROBLEM);
    cr_assert_eq(line, 2);
    buf_reset(&in);
    buf_append_str(&in, "a: *nothing\n");
    cr_assert_eq(check(&in, &line, &column, &problem), -1);
    cr_assert_str_eq(problem, "found undefined alias");
    buf_free(&in);
}

/* The tree is the one libyaml's own loader builds: ids, tags, styles,
 * pairs, shared aliases; nodes also keep where they were. */
Test(yaml_load, the_tree_is_libyamls)
{
    buf in = {0};
    buf_append_str(&in, "%YAML 1.1\n---\nkind: &k Kptfile\nlist: [1, \"two\", !!str 3, *k]\n"
                        "map:\n  x: {y: z}\n  q: |\n    text\n...\n");
    yaml_document_t ours, theirs;
    size_t line, column;
    const char *problem;
    cr_assert_eq(load_doc(&in, &ours, &line, &column, &problem), 0, "%s", problem);
    yaml_parser_t p;
    cr_assert(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)in.data, in.len);
    cr_assert(yaml_parser_load(&p, &theirs));
    yaml_parser_delete(&p);
    cr_assert_eq(node_count(&ours), node_count(&theirs));
    for (size_t i = 0; i < node_count(&ours); i++) {
        const yaml_node_t *a = &ours.nodes.start[i], *b = &theirs.nodes.start[i];
        cr_assert_eq(a->type, b->type, "node %zu", i + 1);
        cr_assert_str_eq((const char *)a->tag, (const char *)b->tag, "node %zu", i + 1);
        cr_assert_eq(a->start_mark.line, b->start_mark.line, "node %zu", i + 1);
        if (a->type == YAML_SCALAR_NODE) {
            cr_assert_str_eq((const char *)a->data.scalar.value, (const char *)b->data.scalar.value);
            cr_assert_eq(a->data.scalar.style, b->data.scalar.style);
        } else if (a->type == YAML_SEQUENCE_NODE) {
            size_t n = (size_t)(a->data.sequence.items.top - a->data.sequence.items.start);
            cr_assert_eq(n, (size_t)(b->data.sequence.items.top - b->data.sequence.items.start));
            cr_assert_eq(memcmp(a->data.sequence.items.start, b->data.sequence.items.start,
                                n * sizeof(yaml_node_item_t)), 0);
        } else {
            size_t n = (size_t)(a->data.mapping.pairs.top - a->data.mapping.pairs.start);
            cr_assert_eq(n, (size_t)(b->data.mapping.pairs.top - b->data.mapping.pairs.start));
            cr_assert_eq(memcmp(a->data.mapping.pairs.start, b->data.mapping.pairs.start,
                                n * sizeof(yaml_node_pair_t)), 0);
        }
    }
    cr_assert_eq(ours.start_implicit, theirs.start_implicit);
    cr_assert_eq(ours.end_implicit, theirs.end_implicit);
    cr_assert_not_null(ours.version_directive);
    yaml_document_delete(&ours);
    yaml_document_delete(&theirs);
    buf_free(&in);
}

/* A stream of documents loads one per call, then an empty one. */
Test(yaml_load, documents_one_by_one)
{
    buf in = {0};
    buf_append_str(&in, "a: 1\n---\nb: &x 2\n---\nc: *x\n");
    yaml_parser_t p;
    cr_assert(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)in.data, in.len);
    yaml_document_t doc;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(yaml_load(&p, in.len, &doc), 1);
        cr_assert_not_null(yaml_document_get_root_node(&doc));
        yaml_document_delete(&doc);
    }
    cr_assert_eq(yaml_load(&p, in.len, &doc), 0);   /* anchors are per document */
    cr_assert_str_eq(p.problem, "found undefined alias");
    yaml_parser_delete(&p);
    buf_free(&in);
}

Test(yaml_load, the_messages_name_the_limits)
{
    cr_assert_str_eq(YAML_FLOW_DEPTH_PROBLEM,
                     "flow collections ([...] or {...}) nested more than 128 deep");
    cr_assert_str_eq(YAML_DEPTH_PROBLEM, "collections nested more than 1000 deep");
}
