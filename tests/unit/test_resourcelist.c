/* Unit tests for lib/krm/resourcelist: the ResourceList check Porch's wrapper
 * applies to a function's output (krm-functions-sdk fn.ParseResourceList),
 * and the text and JSON it renders results as.
 *
 * Expected error strings are the Go SDK's, as ParseResourceList produces
 * them on yaml.v3; where yaml.v3 reports a libyaml problem, the libyaml
 * wording is the same one. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "krm/resourcelist.h"
#include "krm/rl_results.h"
#include "../fuzz/rl_outcome.h"
#include "scoped_buf.h"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

/* Every input is also parsed both ways (items through lib/krm/rl_scan and
 * through libyaml): whichever way rl_parse takes, the answer is the same. */
static void check_both_ways(const char *data, size_t len)
{
    buf scanned = {0}, full = {0};
    cr_assert_geq(rl_outcomes_differ(data, len, &scanned, &full), 0,
                  "rl_scan: %s\nlibyaml: %s", scanned.data, full.data);
    buf_free(&scanned);
    buf_free(&full);
    /* and judged in steps as the server does, one event at a time or a
     * few: the same answer */
    static const rl_parse_mode modes[] = {RL_PARSE_AUTO, RL_PARSE_LIBYAML};
    static const size_t budgets[] = {1, 7};
    for (size_t m = 0; m < 2; m++) {
        for (size_t b = 0; b < 2; b++) {
            buf whole = {0}, stepped = {0};
            cr_assert_eq(rl_steps_differ(data, len, modes[m], budgets[b], &whole, &stepped), 0,
                         "in one call: %s\nin steps of %zu: %s", whole.data, budgets[b],
                         stepped.data);
            buf_free(&whole);
            buf_free(&stepped);
        }
    }
}

static rl_list parse_ok(const char *yaml)
{
    check_both_ways(yaml, strlen(yaml));
    rl_list rl;
    SCOPED_BUF err = {0};
    int rc = rl_parse(yaml, strlen(yaml), &rl, &err);
    cr_assert_eq(rc, 0, "rl_parse failed: %s\ninput:\n%s", err.data, yaml);
    return rl;
}

/* Parses `len` bytes that must be rejected, and checks the reason. */
static void expect_error_bytes(const char *data, size_t len, const char *want)
{
    check_both_ways(data, len);
    rl_list rl;
    SCOPED_BUF err = {0};
    int rc = rl_parse(data, len, &rl, &err);
    cr_assert_eq(rc, -1, "rl_parse accepted input that should fail with: %s", want);
    cr_assert_str_eq(err.data, want);
    cr_assert_eq(rl.n_results, 0);
    cr_assert_null(rl.results);
    cr_assert_null(rl.kind);
}

static void expect_error(const char *yaml, const char *want)
{
    expect_error_bytes(yaml, strlen(yaml), want);
}

/* The results text for input that must parse; caller frees. */
static char *text_of(const char *yaml)
{
    rl_list rl = parse_ok(yaml);
    buf out = {0};
    cr_assert_eq(rl_results_text(&rl, &out), 0);
    rl_free(&rl);
    size_t len;
    return buf_steal(&out, &len);
}

static char *json_of(const char *yaml)
{
    rl_list rl = parse_ok(yaml);
    buf out = {0};
    cr_assert_eq(rl_results_json(&rl, &out), 0);
    rl_free(&rl);
    size_t len;
    return buf_steal(&out, &len);
}

static void expect_text(const char *yaml, const char *want)
{
    char *got = text_of(yaml);
    cr_assert_str_eq(got, want);
    free(got);
}

static void expect_json(const char *yaml, const char *want)
{
    char *got = json_of(yaml);
    cr_assert_str_eq(got, want);
    free(got);
}

#define RL "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
#define YAML_ERR "failed to parse input bytes: failed to parse input bytes: yaml: "
#define DECODE_ERR(lines) "yaml: unmarshal errors:\n  " lines "\nfailed to decode results"

/* ------------------------------------------------------------------------ */
/* Valid lists                                                               */

Test(resourcelist, parses_yaml_list)
{
    rl_list rl = parse_ok(RL
        "items:\n"
        "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n"
        "- apiVersion: apps/v1\n  kind: Deployment\n  metadata:\n    name: b\n"
        "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data: {k: v}\n");
    cr_assert_str_eq(rl.kind, "ResourceList");
    cr_assert_str_eq(rl.api_version, "config.kubernetes.io/v1");
    cr_assert_eq(rl.n_items, 2);
    cr_assert_eq(rl.has_function_config, 1);
    cr_assert_eq(rl.n_results, 0);
    cr_assert_eq(rl_error_count(&rl), 0);
    rl_free(&rl);
}

Test(resourcelist, parses_json_list)
{
    rl_list rl = parse_ok(
        "{\"apiVersion\":\"config.kubernetes.io/v1\",\"kind\":\"ResourceList\","
        "\"items\":[{\"kind\":\"A\"},{\"kind\":\"B\",\"spec\":{\"x\":[1,2,{\"y\":null}]}},{}],"
        "\"functionConfig\":{\"data\":{}},"
        "\"results\":[{\"message\":\"bad\",\"severity\":\"error\","
        "\"resourceRef\":{\"apiVersion\":\"v1\",\"kind\":\"A\",\"name\":\"n\"}}]}");
    cr_assert_eq(rl.n_items, 3);
    cr_assert_eq(rl.has_function_config, 1);
    cr_assert_eq(rl.n_results, 1);
    cr_assert_str_eq(rl.results[0].message, "bad");
    cr_assert_str_eq(rl.results[0].ref_name, "n");
    cr_assert_eq(rl_error_count(&rl), 1);
    rl_free(&rl);
}

Test(resourcelist, items_and_function_config_are_optional)
{
    rl_list rl = parse_ok("kind: ResourceList\n");
    cr_assert_eq(rl.n_items, 0);
    cr_assert_eq(rl.has_function_config, 0);
    cr_assert_null(rl.api_version);
    rl_free(&rl);
    rl = parse_ok("kind: ResourceList\nitems: []\n");
    cr_assert_eq(rl.n_items, 0);
    rl_free(&rl);
}

Test(resourcelist, api_version_is_not_checked)
{
    rl_list rl = parse_ok("apiVersion: example.com/v9\nkind: ResourceList\n");
    cr_assert_str_eq(rl.api_version, "example.com/v9");
    rl_free(&rl);
}

Test(resourcelist, item_contents_are_not_inspected)
{
    rl_list rl = parse_ok(RL
        "items:\n"
        "- a: &x [1, {b: [[[], {}]]}]\n  c: *x\n  ? [complex, key]\n  : v\n"
        "- !!map {tagged: true}\n"
        "- {kind: ResourceList, items: 5, results: oops}\n");
    cr_assert_eq(rl.n_items, 3);
    cr_assert_eq(rl.n_results, 0);
    rl_free(&rl);
}

Test(resourcelist, first_of_duplicate_top_level_keys_wins)
{
    rl_list rl = parse_ok("kind: ResourceList\nkind: ConfigMap\nitems: [{}]\nitems: 7\n"
                          "results: [{message: one}]\nresults: [{message: two}, {}]\n");
    cr_assert_eq(rl.n_items, 1);
    cr_assert_eq(rl.n_results, 1);
    cr_assert_str_eq(rl.results[0].message, "one");
    rl_free(&rl);
}

Test(resourcelist, quoted_keys_and_byte_order_mark)
{
    rl_list rl = parse_ok("\xef\xbb\xbf\"kind\": 'ResourceList'\n'items': [{}, {}]\n");
    cr_assert_eq(rl.n_items, 2);
    rl_free(&rl);
}

/* ------------------------------------------------------------------------ */
/* Errors, in the SDK's words                                                */

Test(resourcelist, empty_input)
{
    const char *want = "failed to parse input bytes: expected exactly one object, got 0";
    expect_error("", want);
    expect_error("  \n\n", want);
    expect_error("# only a comment\n", want);
    expect_error_bytes(NULL, 0, want);
}

Test(resourcelist, several_documents)
{
    expect_error("kind: ResourceList\n---\nkind: ResourceList\n",
                 "failed to parse input bytes: expected exactly one object, got 2");
    expect_error("---\na: 1\n---\nb: 2\n---\nc: 3\n",
                 "failed to parse input bytes: expected exactly one object, got 3");
}

Test(resourcelist, top_level_not_a_mapping)
{
    expect_error("just a string\n", "failed to parse input bytes: failed to extract objects: unhandled node kind 8");
    expect_error("- kind: ResourceList\n", "failed to parse input bytes: failed to extract objects: unhandled node kind 2");
    expect_error("[]", "failed to parse input bytes: failed to extract objects: unhandled node kind 2");
    expect_error("---\n", "failed to parse input bytes: failed to extract objects: unhandled node kind 8");
    /* a non-mapping document anywhere is reported before the count */
    expect_error("kind: ResourceList\n---\n", "failed to parse input bytes: failed to extract objects: unhandled node kind 8");
}

Test(resourcelist, wrong_kind)
{
    expect_error("apiVersion: v1\nkind: ConfigMap\n", "input was of unexpected kind \"ConfigMap\"; expected ResourceList");
    expect_error("apiVersion: v1\n", "input was of unexpected kind \"\"; expected ResourceList");
    expect_error("kind: resourcelist\n", "input was of unexpected kind \"resourcelist\"; expected ResourceList");
    expect_error("{}", "input was of unexpected kind \"\"; expected ResourceList");
}

Test(resourcelist, kind_that_is_not_a_string_reads_as_empty)
{
    const char *want = "input was of unexpected kind \"\"; expected ResourceList";
    expect_error("kind: 5\n", want);
    expect_error("kind: true\n", want);
    expect_error("kind: null\n", want);
    expect_error("kind: [ResourceList]\n", want);
    expect_error("kind: !custom ResourceList\n", want);
}

Test(resourcelist, kind_is_quoted_like_go)
{
    expect_error("kind: \"a\\\"b\\\\c\\td\\u00e9\\u200b\\x01\\0\"\n",
                 "input was of unexpected kind \"a\\\"b\\\\c\\td\xc3\xa9\\u200b\\x01\\x00\"; expected ResourceList");
}

Test(resourcelist, tagged_and_quoted_kind_are_strings)
{
    rl_list rl = parse_ok("kind: !!str ResourceList\n");
    rl_free(&rl);
    rl = parse_ok("kind: \"ResourceList\"\n");
    rl_free(&rl);
}

Test(resourcelist, malformed_yaml)
{
    expect_error(RL "items: [\n", YAML_ERR "line 3: did not find expected node content");
    expect_error("a: b: c\n", YAML_ERR "mapping values are not allowed in this context");
    expect_error("kind: ResourceList\nitems:\n  - a\n - b\n", YAML_ERR "line 3: did not find expected key");
    expect_error("kind: 'unterminated\n", YAML_ERR "line 2: found unexpected end of stream");
}

Test(resourcelist, syntax_error_in_a_later_document_wins)
{
    expect_error("kind: ConfigMap\n---\nkind: [\n", YAML_ERR "line 3: did not find expected node content");
}

Test(resourcelist, items_not_a_list)
{
    expect_error("kind: ResourceList\nitems: {a: 1}\n",
                 "failed when tried to get items: incorrect type, was *internal.MapVariant");
    expect_error("kind: ResourceList\nitems: 5\n",
                 "failed when tried to get items: incorrect type, was *internal.scalarVariant");
    expect_error("kind: ResourceList\nitems:\n",
                 "failed when tried to get items: incorrect type, was *internal.scalarVariant");
}

Test(resourcelist, item_not_a_mapping)
{
    expect_error("kind: ResourceList\nitems: [{}, hello]\n",
                 "failed to extract objects from items: unhandled node kind 8");
    expect_error("kind: ResourceList\nitems:\n- [a]\n",
                 "failed to extract objects from items: unhandled node kind 2");
    expect_error("kind: ResourceList\nitems:\n- &a {x: 1}\n- *a\n",
                 "failed to extract objects from items: unhandled node kind 16");
    expect_error("kind: ResourceList\nitems:\n-\n",
                 "failed to extract objects from items: unhandled node kind 8");
}

Test(resourcelist, function_config_not_a_mapping)
{
    expect_error("kind: ResourceList\nfunctionConfig: [a]\n",
                 "failed when tried to get functionConfig: wrong type, got: *internal.SliceVariant");
    expect_error("kind: ResourceList\nfunctionConfig: x\n",
                 "failed when tried to get functionConfig: wrong type, got: *internal.scalarVariant");
}

Test(resourcelist, checks_run_in_the_sdk_order)
{
    /* kind, then functionConfig, then items, then results, whatever the key order */
    expect_error("items: 5\nfunctionConfig: []\nkind: X\n",
                 "input was of unexpected kind \"X\"; expected ResourceList");
    expect_error("items: 5\nresults: [oops]\nfunctionConfig: []\nkind: ResourceList\n",
                 "failed when tried to get functionConfig: wrong type, got: *internal.SliceVariant");
    expect_error("results: [oops]\nitems: 5\nkind: ResourceList\n",
                 "failed when tried to get items: incorrect type, was *internal.scalarVariant");
}

Test(resourcelist, legacy_results_with_bad_items)
{
    expect_error("kind: ResourceList\nresults: {items: 5}\n",
                 "incorrect type, was *internal.scalarVariant\nfailed when trying to get results");
    expect_error("kind: ResourceList\nresults:\n  items: {message: x}\n",
                 "incorrect type, was *internal.MapVariant\nfailed when trying to get results");
}

Test(resourcelist, results_of_the_wrong_shape)
{
    expect_error("kind: ResourceList\nresults:\n- message: {a: 1}\n  severity: error\n",
                 DECODE_ERR("line 3: cannot unmarshal !!map into string"));
    expect_error("kind: ResourceList\nresults:\n- oops\n- 12345678901\n- [1]\n- true\n",
                 DECODE_ERR("line 3: cannot unmarshal !!str `oops` into fn.Result\n"
                            "  line 4: cannot unmarshal !!int `1234567...` into fn.Result\n"
                            "  line 5: cannot unmarshal !!seq into fn.Result\n"
                            "  line 6: cannot unmarshal !!bool `true` into fn.Result"));
    expect_error("kind: ResourceList\nresults:\n- severity: [error]\n  resourceRef: web\n"
                 "  field: [a]\n  file: {path: f, index: abc}\n",
                 DECODE_ERR("line 3: cannot unmarshal !!seq into fn.Severity\n"
                            "  line 4: cannot unmarshal !!str `web` into fn.ResourceRef\n"
                            "  line 5: cannot unmarshal !!seq into fn.Field\n"
                            "  line 6: cannot unmarshal !!str `abc` into int"));
    expect_error("kind: ResourceList\nresults:\n- file: {index: true}\n  tags: x\n",
                 DECODE_ERR("line 3: cannot unmarshal !!bool `true` into int\n"
                            "  line 4: cannot unmarshal !!str `x` into map[string]string"));
    expect_error("kind: ResourceList\nresults:\n- tags: {a: [1], b: ok}\n",
                 DECODE_ERR("line 3: cannot unmarshal !!seq into string"));
    expect_error("kind: ResourceList\nresults:\n- resourceRef: {name: {x: y}}\n",
                 DECODE_ERR("line 3: cannot unmarshal !!map into string"));
}

Test(resourcelist, duplicate_keys_in_results)
{
    expect_error("kind: ResourceList\nresults:\n- message: a\n  message: b\n",
                 DECODE_ERR("line 4: mapping key \"message\" already defined at line 3"));
    /* every pair, in yaml.v3's order (each key against every later one) */
    expect_error("kind: ResourceList\nresults:\n- tags:\n    a: 1\n    b: 2\n    a: 3\n    b: 4\n    a: 5\n",
                 DECODE_ERR("line 6: mapping key \"a\" already defined at line 4\n"
                            "  line 8: mapping key \"a\" already defined at line 4\n"
                            "  line 7: mapping key \"b\" already defined at line 5\n"
                            "  line 8: mapping key \"a\" already defined at line 6"));
    expect_error("kind: ResourceList\nresults:\n- resourceRef: {name: a, name: b}\n  message: ok\n",
                 DECODE_ERR("line 3: mapping key \"name\" already defined at line 3"));
}

Test(resourcelist, duplicate_keys_hide_the_mappings_value_errors)
{
    /* yaml.v3 checks keys first and then does not decode that mapping */
    expect_error("kind: ResourceList\nresults:\n- message: [x]\n  x: 1\n  x: 2\n- severity: [y]\n",
                 DECODE_ERR("line 5: mapping key \"x\" already defined at line 4\n"
                            "  line 6: cannot unmarshal !!seq into fn.Severity"));
}

Test(resourcelist, type_errors_are_bounded)
{
    buf in = {0};
    buf_append_str(&in, "kind: ResourceList\nresults:\n");
    for (int i = 0; i < 500; i++)
        buf_append_str(&in, "- x\n");
    rl_list rl;
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), -1);
    size_t lines = 0;
    for (const char *s = err.data; (s = strstr(s, "cannot unmarshal")); s++)
        lines++;
    cr_assert_eq(lines, 100);
    cr_assert(strstr(err.data, "\nfailed to decode results") != NULL);
    buf_free(&in);
}

/* ------------------------------------------------------------------------ */
/* Results of every shape                                                    */

Test(resourcelist, full_result)
{
    rl_list rl = parse_ok(RL
        "results:\n"
        "- message: replicas must be positive\n"
        "  severity: error\n"
        "  resourceRef: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: prod}\n"
        "  field: {path: spec.replicas, currentValue: 0, proposedValue: 1}\n"
        "  file: {path: deploy.yaml, index: 2}\n"
        "  tags: {owner: team-a, tier: '1'}\n"
        "  unknownKey: {nested: [1, 2, {deep: true}]}\n");
    cr_assert_eq(rl.n_results, 1);
    const rl_result *r = &rl.results[0];
    cr_assert_str_eq(r->message, "replicas must be positive");
    cr_assert_str_eq(r->severity, "error");
    cr_assert_str_eq(r->ref_api_version, "apps/v1");
    cr_assert_str_eq(r->ref_kind, "Deployment");
    cr_assert_str_eq(r->ref_name, "web");
    cr_assert_str_eq(r->ref_namespace, "prod");
    cr_assert_str_eq(r->field_path, "spec.replicas");
    cr_assert_str_eq(r->field_current_value, "0");
    cr_assert_eq(r->field_current_type, RL_VALUE_INT);
    cr_assert_str_eq(r->field_proposed_value, "1");
    cr_assert_str_eq(r->file_path, "deploy.yaml");
    cr_assert_eq(r->file_index, 2);
    cr_assert_eq(r->n_tags, 2);
    cr_assert_str_eq(r->tags[0].key, "owner");
    cr_assert_str_eq(r->tags[0].value, "team-a");
    cr_assert_str_eq(r->tags[1].key, "tier");
    cr_assert_str_eq(r->tags[1].value, "1");
    cr_assert(r->has_resource_ref && r->has_field && r->has_file);
    rl_free(&rl);
}

Test(resourcelist, legacy_results_mapping_with_items)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults:\n  exitCode: 1\n  items:\n"
                          "  - message: old style\n    severity: warning\n");
    cr_assert_eq(rl.n_results, 1);
    cr_assert_str_eq(rl.results[0].message, "old style");
    cr_assert_str_eq(rl.results[0].severity, "warning");
    rl_free(&rl);
    rl = parse_ok("kind: ResourceList\nresults: {exitCode: 0}\n");
    cr_assert_eq(rl.n_results, 0);
    rl_free(&rl);
}

Test(resourcelist, results_that_are_not_a_list_mean_none)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults: null\n");
    cr_assert_eq(rl.n_results, 0);
    rl_free(&rl);
    rl = parse_ok("kind: ResourceList\nresults: []\n");
    cr_assert_eq(rl.n_results, 0);
    rl_free(&rl);
}

Test(resourcelist, null_result_entries_are_skipped)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults: [null, {message: a}, ~]\n");
    cr_assert_eq(rl.n_results, 1);
    cr_assert_str_eq(rl.results[0].message, "a");
    rl_free(&rl);
}

Test(resourcelist, scalar_fields_take_any_scalar_and_null_means_absent)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults:\n"
                          "- message: 42\n  severity: ~\n  resourceRef: null\n  field: null\n  file: ~\n"
                          "- message: |\n    two\n    lines\n  severity: 'error'\n");
    cr_assert_str_eq(rl.results[0].message, "42");
    cr_assert_null(rl.results[0].severity);
    cr_assert_eq(rl.results[0].has_resource_ref, 0);
    cr_assert_eq(rl.results[0].has_field, 0);
    cr_assert_eq(rl.results[0].has_file, 0);
    cr_assert_str_eq(rl.results[1].message, "two\nlines\n");
    cr_assert_eq(rl_error_count(&rl), 1);
    rl_free(&rl);
}

Test(resourcelist, legacy_resource_ref_metadata)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults:\n"
                          "- resourceRef: {kind: K, metadata: {name: legacy, namespace: ns, labels: {a: b}}}\n"
                          "- resourceRef: {name: direct, metadata: {name: legacy}}\n");
    cr_assert_str_eq(rl.results[0].ref_name, "legacy");
    cr_assert_str_eq(rl.results[0].ref_namespace, "ns");
    cr_assert_str_eq(rl.results[1].ref_name, "direct");
    rl_free(&rl);
}

Test(resourcelist, non_scalar_field_values_are_skipped)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults:\n"
                          "- field: {path: p, currentValue: {a: [1]}, proposedValue: [x, y]}\n  message: m\n");
    cr_assert_str_eq(rl.results[0].field_path, "p");
    cr_assert_null(rl.results[0].field_current_value);
    cr_assert_null(rl.results[0].field_proposed_value);
    cr_assert_str_eq(rl.results[0].message, "m");
    rl_free(&rl);
}

Test(resourcelist, file_index_accepts_go_int_forms)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults:\n"
                          "- file: {index: 0x10}\n- file: {index: 2.9}\n- file: {index: -3}\n- file: {index: 1_000}\n");
    cr_assert_eq(rl.results[0].file_index, 16);
    cr_assert_eq(rl.results[1].file_index, 2);
    cr_assert_eq(rl.results[2].file_index, -3);
    cr_assert_eq(rl.results[3].file_index, 1000);
    rl_free(&rl);
}

Test(resourcelist, tags_null_keys_dropped_null_values_empty)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults:\n- tags: {a: null, ~: x, b: 2}\n");
    const rl_result *r = &rl.results[0];
    cr_assert_eq(r->n_tags, 2);
    cr_assert_str_eq(r->tags[0].key, "a");
    cr_assert_str_eq(r->tags[0].value, "");
    cr_assert_str_eq(r->tags[1].key, "b");
    cr_assert_str_eq(r->tags[1].value, "2");
    rl_free(&rl);
}

Test(resourcelist, aliases_in_results_are_not_followed)
{
    rl_list rl = parse_ok("kind: ResourceList\nitems:\n- a: &m hello\n  r: &r {message: x}\nresults:\n"
                          "- message: *m\n  severity: error\n- *r\n");
    cr_assert_eq(rl.n_results, 1);
    cr_assert_null(rl.results[0].message);
    cr_assert_str_eq(rl.results[0].severity, "error");
    rl_free(&rl);
}

Test(resourcelist, error_count_counts_exact_error_severity)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults:\n"
                          "- severity: error\n- severity: Error\n- severity: warning\n- {}\n- severity: error\n");
    cr_assert_eq(rl.n_results, 5);
    cr_assert_eq(rl_error_count(&rl), 2);
    rl_free(&rl);
}

/* ------------------------------------------------------------------------ */
/* Text rendering                                                            */

Test(resourcelist, text_matches_the_sdk)
{
    expect_text(RL "items:\n- kind: Deployment\nresults:\n"
        "- message: replicas must be greater than zero\n  severity: error\n"
        "  resourceRef: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: prod}\n"
        "  field: {path: spec.replicas}\n"
        "- message: key \"color\" is deprecated\n  severity: warning\n"
        "  resourceRef: {apiVersion: v1, kind: ConfigMap, name: settings}\n"
        "- message: name is too long\n  severity: error\n  field: {path: metadata.name}\n"
        "- message: checked 1 object\n",
        "[error] apps/v1/Deployment/prod/web spec.replicas: replicas must be greater than zero\n\n"
        "[warning] v1/ConfigMap/settings: key \"color\" is deprecated\n\n"
        "[error] metadata.name: name is too long\n\n"
        "[info]: checked 1 object");
}

Test(resourcelist, text_leaves_out_absent_parts)
{
    expect_text("kind: ResourceList\nresults:\n- {message: m, severity: error, resourceRef: {name: web}}\n",
                "[error] web: m");
    expect_text("kind: ResourceList\nresults:\n- {message: m, resourceRef: {kind: K, namespace: ns}}\n",
                "[info] K/ns: m");
    expect_text("kind: ResourceList\nresults:\n- {message: m, resourceRef: {}}\n", "[info]: m");
    expect_text("kind: ResourceList\nresults:\n- {severity: fatal}\n", "[fatal]: ");
    expect_text("kind: ResourceList\nresults:\n- {message: m, severity: \"\"}\n", "[info]: m");
    expect_text("kind: ResourceList\nresults:\n- {message: m, file: {path: f.yaml}, tags: {a: b}}\n",
                "[info]: m");
}

Test(resourcelist, text_keeps_the_path_slot_for_a_present_field)
{
    /* Field is a pointer in the SDK: present-but-empty still adds " %s" */
    expect_text("kind: ResourceList\nresults:\n- {message: m, field: {}}\n", "[info] : m");
    expect_text("kind: ResourceList\nresults:\n- {message: m, resourceRef: {name: n}, field: {currentValue: 1}}\n",
                "[info] n : m");
}

Test(resourcelist, text_of_no_results_is_empty)
{
    expect_text("kind: ResourceList\n", "");
    expect_text("kind: ResourceList\nresults: []\n", "");
}

Test(resourcelist, text_appends)
{
    rl_list rl = parse_ok("kind: ResourceList\nresults: [{message: a}, {message: b}]\n");
    buf out = {0};
    buf_append_str(&out, "prefix: ");
    cr_assert_eq(rl_results_text(&rl, &out), 0);
    cr_assert_str_eq(out.data, "prefix: [info]: a\n\n[info]: b");
    buf_free(&out);
    rl_free(&rl);
}

/* ------------------------------------------------------------------------ */
/* JSON rendering                                                            */

Test(resourcelist, json_full_result)
{
    expect_json(RL "results:\n"
        "- message: bad\n  severity: error\n"
        "  resourceRef: {apiVersion: v1, kind: ConfigMap, name: cm, namespace: ns}\n"
        "  field: {path: data.x, currentValue: old, proposedValue: 3}\n"
        "  file: {path: cm.yaml, index: 1}\n"
        "  tags: {z: last, a: first}\n"
        "- message: second\n",
        "[{\"message\":\"bad\",\"severity\":\"error\","
        "\"resourceRef\":{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"cm\",\"namespace\":\"ns\"},"
        "\"field\":{\"path\":\"data.x\",\"currentValue\":\"old\",\"proposedValue\":3},"
        "\"file\":{\"path\":\"cm.yaml\",\"index\":1},"
        "\"tags\":{\"a\":\"first\",\"z\":\"last\"}},"
        "{\"message\":\"second\"}]");
}

Test(resourcelist, json_escapes_strings_like_encoding_json)
{
    expect_json("kind: ResourceList\nresults:\n"
                "- message: \"q\\\"b\\\\n\\nt\\tc\\x01d\\x1f <a&b> \\u2028 \\u00e9 \\b\\f\\r\"\n",
                "[{\"message\":\"q\\\"b\\\\n\\nt\\tc\\u0001d\\u001f \\u003ca\\u0026b\\u003e \\u2028 \xc3\xa9 \\b\\f\\r\"}]");
}

Test(resourcelist, json_keeps_value_types)
{
    expect_json("kind: ResourceList\nresults:\n"
                "- field: {currentValue: 1.5, proposedValue: 1e21}\n"
                "- field: {currentValue: 1e-7, proposedValue: 0.000001}\n"
                "- field: {currentValue: 100.0, proposedValue: 0x1F}\n"
                "- field: {currentValue: True, proposedValue: \"5\"}\n"
                "- field: {currentValue: \"\", proposedValue: null}\n"
                "- field: {currentValue: 2001-12-14, proposedValue: 18446744073709551615}\n"
                "- field: {currentValue: !!float 5, proposedValue: -0.0}\n",
                "[{\"field\":{\"currentValue\":1.5,\"proposedValue\":1e+21}},"
                "{\"field\":{\"currentValue\":1e-7,\"proposedValue\":0.000001}},"
                "{\"field\":{\"currentValue\":100,\"proposedValue\":31}},"
                "{\"field\":{\"currentValue\":true,\"proposedValue\":\"5\"}},"
                "{\"field\":{\"currentValue\":\"\"}},"
                "{\"field\":{\"currentValue\":\"2001-12-14\",\"proposedValue\":18446744073709551615}},"
                "{\"field\":{\"currentValue\":5,\"proposedValue\":-0}}]");
}

Test(resourcelist, json_empty_pointers_are_empty_objects)
{
    expect_json("kind: ResourceList\nresults:\n- {resourceRef: {}, field: {}, file: {index: 0}}\n- {}\n",
                "[{\"resourceRef\":{},\"field\":{},\"file\":{}},{}]");
}

Test(resourcelist, json_refuses_non_finite_numbers_like_go)
{
    /* json.Marshal fails on ±Inf/NaN and Porch logs an empty string */
    rl_list rl = parse_ok("kind: ResourceList\nresults:\n- {severity: error, field: {currentValue: .inf}}\n");
    buf out = {0};
    buf_append_str(&out, "x");
    cr_assert_eq(rl_results_json(&rl, &out), 0);
    cr_assert_str_eq(out.data, "x");
    buf_free(&out);
    rl_free(&rl);
}

Test(resourcelist, json_of_no_results)
{
    expect_json("kind: ResourceList\n", "[]");
}

/* ------------------------------------------------------------------------ */
/* Hostile and large input                                                   */

/* A ResourceList of about 6 MiB: 20,000 ConfigMaps of ~310 bytes each. */
static void build_big_list(buf *out, size_t n_items)
{
    buf_append_str(out, RL "items:\n");
    for (size_t i = 0; i < n_items; i++) {
        buf_printf(out,
                   "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n"
                   "    name: cm-%zu\n    namespace: ns-%zu\n"
                   "    annotations: {config.kubernetes.io/index: '0', internal.config.kubernetes.io/path: 'cm/%zu.yaml'}\n"
                   "  data:\n    key: \"%0150zu\"\n    other: |\n      line %zu\n      more\n",
                   i, i % 7, i, i, i);
    }
    buf_append_str(out, "functionConfig: {kind: ConfigMap, data: {a: b}}\n"
                        "results:\n- {message: done, severity: info}\n");
}

Test(resourcelist, six_mib_list_with_20000_items)
{
    buf in = {0};
    build_big_list(&in, 20000);
    cr_assert_geq(in.len, 6u * 1024 * 1024);
    rl_list rl;
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), 0, "%s", err.data);
    cr_assert_eq(rl.n_items, 20000);
    cr_assert_eq(rl.has_function_config, 1);
    cr_assert_eq(rl.n_results, 1);
    rl_free(&rl);
    buf_free(&in);
}

#define FLOW_DEPTH_ERR YAML_ERR "line %d: flow collections ([...] or {...}) nested more than 128 deep"

static void expect_flow_depth_error(const buf *in, int line)
{
    char want[256];
    snprintf(want, sizeof want, FLOW_DEPTH_ERR, line);
    expect_error_bytes(in->data, in->len, want);
}

/* libyaml's scanner spends time in proportion to the flow depth on every
 * token (lib/krm/yaml_depth.h), so flow nesting stops at 128 levels; the
 * refusal comes early, however much deeper the input goes. */
Test(resourcelist, deep_flow_nesting_is_refused_without_recursion)
{
    size_t n = 100000;
    buf in = {0};
    for (size_t i = 0; i < n; i++)
        buf_append(&in, "[", 1);
    expect_flow_depth_error(&in, 1);
    buf_reset(&in);
    buf_append_str(&in, "kind: ResourceList\nitems:\n- a: ");
    for (size_t i = 0; i < n; i++)
        buf_append(&in, "{a: ", 4);
    expect_flow_depth_error(&in, 3);
    buf_free(&in);
}

static void nested_flow_item(buf *in, int depth)
{
    buf_reset(in);
    buf_append_str(in, "kind: ResourceList\nitems:\n- a: ");
    for (int i = 0; i < depth; i++)
        buf_append(in, "[", 1);
    for (int i = 0; i < depth; i++)
        buf_append(in, "]", 1);
    buf_append_str(in, "\n");
}

Test(resourcelist, flow_nesting_up_to_the_limit_is_fine)
{
    buf in = {0};
    nested_flow_item(&in, 128);
    rl_list rl;
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), 0, "%s", err.data);
    cr_assert_eq(rl.n_items, 1);
    rl_free(&rl);
    nested_flow_item(&in, 129);
    expect_flow_depth_error(&in, 3);
    buf_free(&in);
}

/* A whole document in JSON is all flow: the limit counts from its first
 * brace, so 128 levels of JSON is the deepest a JSON output may be. */
Test(resourcelist, json_output_counts_every_level)
{
    buf in = {0};
    buf_append_str(&in, "{\"kind\":\"ResourceList\",\"items\":[{\"a\":");
    for (int i = 0; i < 125; i++)
        buf_append(&in, "[", 1);
    for (int i = 0; i < 125; i++)
        buf_append(&in, "]", 1);
    buf_append_str(&in, "}]}");
    rl_list rl = parse_ok(in.data);
    cr_assert_eq(rl.n_items, 1);
    rl_free(&rl);
    buf_reset(&in);
    buf_append_str(&in, "{\"kind\":\"ResourceList\",\"items\":[{\"a\":");
    for (int i = 0; i < 126; i++)
        buf_append(&in, "[", 1);
    expect_flow_depth_error(&in, 1);
    buf_free(&in);
}

/* Block nesting costs libyaml nothing extra per level: only the general
 * limit (yaml.v3's idea, lower) applies. */
static void nested_block_item(buf *in, int depth)
{
    buf_reset(in);
    buf_append_str(in, "kind: ResourceList\nitems:\n- a:\n  ");
    for (int i = 0; i < depth; i++)
        buf_append(in, "- ", 2);
    buf_append_str(in, "x\n");
}

Test(resourcelist, block_nesting_has_the_general_limit)
{
    buf in = {0};
    nested_block_item(&in, 990);
    rl_list rl;
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), 0, "%s", err.data);
    cr_assert_eq(rl.n_items, 1);
    rl_free(&rl);
    nested_block_item(&in, 1000);
    expect_error_bytes(in.data, in.len, YAML_ERR "line 4: exceeded max depth of 1000");
    buf_free(&in);
}

/* "Billion laughs": nine levels of nine-fold aliases. Expanded it would be
 * 9^9 strings; events never expand aliases, so this stays small. */
static void build_alias_bomb(buf *out, const char *where)
{
    buf_append_str(out, "kind: ResourceList\nitems:\n- a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for (char c = 'b'; c <= 'i'; c++)
        buf_printf(out, "  %c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n",
                   c, c, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1, c - 1);
    buf_append_str(out, where);
}

Test(resourcelist, alias_bomb_is_not_expanded)
{
    buf in = {0};
    build_alias_bomb(&in, "results:\n- message: *i\n  tags: *i\n- *i\nfunctionConfig: *i\n");
    rl_list rl;
    SCOPED_BUF err = {0};
    /* functionConfig given as an alias is refused (Go would panic here) */
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), -1);
    cr_assert_str_eq(err.data, "failed when tried to get functionConfig: wrong type, got: "
                          "an alias (aliases are not followed)");
    buf_reset(&in);
    build_alias_bomb(&in, "results:\n- message: *i\n  tags: *i\n  severity: error\n- *i\n");
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), 0, "%s", err.data);
    cr_assert_eq(rl.n_items, 1);
    cr_assert_eq(rl.n_results, 1);
    cr_assert_null(rl.results[0].message);
    cr_assert_eq(rl.results[0].n_tags, 0);
    rl_free(&rl);
    buf_free(&in);
}

Test(resourcelist, aliases_where_a_value_is_needed)
{
    expect_error("kind: &k ResourceList\nx: *k\n---\nkind: *k\n",
                 "failed to parse input bytes: expected exactly one object, got 2");
    expect_error("a: &k ResourceList\nkind: *k\n", "input was of unexpected kind \"\"; expected ResourceList");
    expect_error("kind: ResourceList\nx: &r []\nresults: *r\n",
                 "incorrect type, was an alias (aliases are not followed)\nfailed when trying to get results");
    expect_error("kind: ResourceList\nitems: *nowhere\n", YAML_ERR "unknown anchor 'nowhere' referenced");
}

Test(resourcelist, invalid_utf8_and_nul_bytes)
{
    expect_error("kind: \xff\n", YAML_ERR "invalid leading UTF-8 octet");
    expect_error("kind: \xe2\x82\n", YAML_ERR "invalid trailing UTF-8 octet");
    expect_error("kind: \xc3", YAML_ERR "incomplete UTF-8 octet sequence");
    expect_error("kind: \xc0\xaf\n", YAML_ERR "invalid length of a UTF-8 sequence");
    static const char nul[] = "kind: Resource\0List\n";
    expect_error_bytes(nul, sizeof nul - 1, YAML_ERR "control characters are not allowed");
}

Test(resourcelist, huge_scalars)
{
    size_t big = 4u * 1024 * 1024;
    buf in = {0};
    buf_append_str(&in, "kind: ResourceList\nitems:\n- data: \"");
    for (size_t i = 0; i < big; i += 64)
        buf_append_str(&in, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
    buf_append_str(&in, "\"\nresults:\n- message: '");
    for (size_t i = 0; i < big / 4; i += 8)
        buf_append_str(&in, "message ");
    buf_append_str(&in, "'\n");
    rl_list rl;
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), 0, "%s", err.data);
    cr_assert_eq(rl.n_items, 1);
    cr_assert_eq(strlen(rl.results[0].message), big / 4);
    rl_free(&rl);
    buf_free(&in);
}

/* The reason is whole however long: it was cut to the caller's fixed
 * array before errors went to a buf. */
Test(resourcelist, huge_kind_error_is_whole)
{
    buf in = {0}, want = {0};
    buf_append_str(&in, "kind: ");
    buf_append_str(&want, "input was of unexpected kind \"");
    for (int i = 0; i < 100000; i++) {
        buf_append_str(&in, "\xc3\xa9");   /* é */
        buf_append_str(&want, "\xc3\xa9");
    }
    buf_append_str(&in, "\n");
    buf_append_str(&want, "\"; expected ResourceList");
    rl_list rl;
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), -1);
    cr_assert_eq(err.len, want.len);
    cr_assert_str_eq(err.data, want.data);
    buf_free(&in);
    buf_free(&want);
}

Test(resourcelist, results_beyond_the_cap_are_counted_not_kept)
{
    buf in = {0};
    buf_append_str(&in, "kind: ResourceList\nresults:\n");
    for (int i = 0; i < 100002; i++)
        buf_append_str(&in, "- {message: x, severity: error}\n");
    rl_list rl;
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_parse(in.data, in.len, &rl, &err), 0, "%s", err.data);
    cr_assert_eq(rl.n_results, 100000);
    cr_assert_eq(rl.n_results_omitted, 2);
    buf text = {0};
    cr_assert_eq(rl_results_text(&rl, &text), 0);
    const char *tail = "[error]: x\n\n(2 more results not shown)";
    cr_assert_str_eq(text.data + text.len - strlen(tail), tail);
    buf_free(&text);
    rl_free(&rl);
    buf_free(&in);
}

Test(resourcelist, free_is_safe_on_empty_and_twice)
{
    rl_list rl = {0};
    rl_free(&rl);
    rl = parse_ok("kind: ResourceList\nresults: [{message: a, tags: {b: c}}]\n");
    rl_free(&rl);
    rl_free(&rl);
    rl_free(NULL);
    cr_assert_null(rl.results);
}
