/* Tests for rl_edit: the ResourceList editing runner-client's pipelines
 * rely on. Outputs are emitted, loaded back and inspected, so what is
 * checked is what the next function would read. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "krm/rl_edit.h"
#include "scoped_buf.h"

static const char INPUT[] =
    "apiVersion: config.kubernetes.io/v1\n"
    "kind: ResourceList\n"
    "items:\n"
    "- apiVersion: v1\n"
    "  kind: ConfigMap\n"
    "  metadata:\n"
    "    name: cm\n"
    "    annotations:\n"
    "      internal.config.kubernetes.io/path: 'cm.yaml'\n"
    "      internal.config.kubernetes.io/index: '0'\n"
    "  data:\n"
    "    count: \"1\"\n"
    "    text: |\n"
    "      line one\n"
    "      line two\n"
    "functionConfig:\n"
    "  apiVersion: v1\n"
    "  kind: ConfigMap\n"
    "  metadata: {name: old}\n";

static rl_doc *load_rl(const char *text)
{
    SCOPED_BUF err = {0};
    rl_doc *d = rl_doc_load_object(text, strlen(text), &err);
    cr_assert_not_null(d, "load failed: %s\n%s", err.data, text);
    return d;
}

/* Emits d and returns the text (static storage, rotated). */
static const char *emit(const rl_doc *d, const char *omit)
{
    static buf out[4];
    static int next;
    buf *b = &out[next++ % 4];
    buf_free(b);
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_doc_emit(d, omit, b, &err), 0, "emit failed: %s", err.data);
    return b->data;
}

/* The scalar at a path of keys and sequence indexes separated by '|'
 * ("items|0|kind"; keys themselves hold dots). */
static const char *at(const rl_doc *d, const char *path)
{
    const yaml_document_t *y = rl_doc_yaml(d);
    char copy[256];
    snprintf(copy, sizeof copy, "%s", path);
    int id = 1;
    for (char *save = NULL, *part = strtok_r(copy, "|", &save); part && id;
         part = strtok_r(NULL, "|", &save)) {
        yaml_node_t *n = yaml_document_get_node((yaml_document_t *)y, id);
        if (n->type == YAML_SEQUENCE_NODE) {
            long i = strtol(part, NULL, 10);
            id = i < n->data.sequence.items.top - n->data.sequence.items.start
                     ? n->data.sequence.items.start[i]
                     : 0;
        } else {
            id = rl_yaml_get(y, id, part);
        }
    }
    return id ? rl_yaml_text(y, id) : NULL;
}

static void assert_at(const rl_doc *d, const char *path, const char *want)
{
    const char *got = at(d, path);
    cr_assert_not_null(got, "%s is missing", path);
    cr_assert_str_eq(got, want, "%s", path);
}

Test(rl_edit, emission_round_trip_keeps_styles_and_annotations)
{
    rl_doc *d = load_rl(INPUT);
    const char *once = emit(d, NULL);
    rl_doc *again = load_rl(once);
    cr_assert_str_eq(emit(again, NULL), once);
    cr_assert(strstr(once, "count: \"1\"\n"), "%s", once);          /* stays a string */
    cr_assert(strstr(once, "text: |\n"), "%s", once);               /* literal block kept */
    cr_assert(strstr(once, "internal.config.kubernetes.io/path: 'cm.yaml'\n"), "%s", once);
    cr_assert(strstr(once, "metadata: {name: old}"), "%s", once);   /* flow style kept */
    cr_assert_eq(strncmp(once, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n", 54), 0);
    rl_doc_free(d);
    rl_doc_free(again);
}

Test(rl_edit, emit_omits_a_key)
{
    rl_doc *d = load_rl(INPUT);
    const char *text = emit(d, "functionConfig");
    cr_assert_null(strstr(text, "functionConfig"), "%s", text);
    cr_assert_not_null(strstr(emit(d, NULL), "functionConfig"));  /* d unchanged */
    rl_doc_free(d);
}

Test(rl_edit, a_config_map_keeps_its_values_strings)
{
    rl_kv data[] = { { "op", "set" }, { "n", "007" }, { "flag", "true" }, { "op", "last" },
                     { "odd", "a: b" } };
    rl_doc *cm = rl_doc_config_map("function-input", data, 5);
    cr_assert_not_null(cm);
    rl_doc *out = load_rl(emit(cm, NULL));
    assert_at(out, "apiVersion", "v1");
    assert_at(out, "kind", "ConfigMap");
    assert_at(out, "metadata|name", "function-input");
    assert_at(out, "data|op", "last");
    assert_at(out, "data|n", "007");
    const char *text = emit(cm, NULL);
    cr_assert(strstr(text, "\"n\": \"007\"\n") && strstr(text, "flag: \"true\"\n") &&
                  strstr(text, "odd: \"a: b\"\n") && strstr(text, "op: last\n"),
              "values must stay strings:\n%s", text);
    rl_doc_free(out);
    rl_doc_free(cm);
}

static void assert_load_error(const char *text, const char *want)
{
    SCOPED_BUF err = {0};
    rl_doc *d = rl_doc_load_object(text, strlen(text), &err);
    cr_assert_null(d, "loaded: %s", text);
    cr_assert(strstr(err.data, want), "error \"%s\" does not mention \"%s\"", err.data, want);
    cr_assert_null(strchr(err.data, '\n'));
}

Test(rl_edit, malformed_yaml_is_a_clear_error)
{
    assert_load_error("kind: ResourceList\nitems: [\n", "line ");
    assert_load_error("kind: ResourceList\n  bad: indent\n", "line 2");
    assert_load_error("", "no YAML document");
    assert_load_error("kind: ResourceList\n---\nkind: ResourceList\n", "found more");
    assert_load_error("- a\n", "expected a mapping");
}

Test(rl_edit, too_deep_nesting_is_refused)
{
    buf text = { 0 };
    /* block nesting is refused while loading, before the tree grows */
    buf_append_str(&text, "kind: ResourceList\nitems:\n- a:\n  ");
    for (int i = 0; i < 2000000; i++)
        buf_append_str(&text, "- ");
    buf_append_str(&text, "x\n");
    SCOPED_BUF err = {0};
    cr_assert_null(rl_doc_load_object(text.data, text.len, &err));
    cr_assert_str_eq(err.data, "line 4: collections nested more than 1000 deep");
    buf_free(&text);
}

/* libyaml's loader built a cycle for it; yaml.v3 refuses it too. */
Test(rl_edit, self_referencing_alias_is_refused)
{
    SCOPED_BUF err = {0};
    const char *text = "kind: ResourceList\nitems:\n- &a {self: *a}\n";
    cr_assert_null(rl_doc_load_object(text, strlen(text), &err));
    cr_assert_str_eq(err.data, "line 3: alias inside the node its anchor names");
}

Test(rl_edit, load_object_reads_a_kptfile)
{
    const char text[] = "apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n"
                        "  - image: a\n";
    SCOPED_BUF err = {0};
    rl_doc *d = rl_doc_load_object(text, sizeof text - 1, &err);
    cr_assert_not_null(d, "%s", err.data);
    const yaml_document_t *y = rl_doc_yaml(d);
    cr_assert_str_eq(rl_yaml_text(y, rl_yaml_get(y, 0, "kind")), "Kptfile");
    int pl = rl_yaml_get(y, 0, "pipeline");
    cr_assert(pl > 0);
    cr_assert(rl_yaml_is_null(y, rl_yaml_get(y, pl, "validators")));
    cr_assert_null(rl_yaml_text(y, pl));
    rl_doc_free(d);
}

/* Loading (yaml_parser_load) cannot stop half way, so flow nesting past
 * the limit every YAML reader applies is refused before it starts. */
Test(rl_edit, deep_flow_nesting_is_refused_when_loaded)
{
    buf text = { 0 };
    buf_append_str(&text, "kind: ResourceList\nitems:\n- a: ");
    for (int i = 0; i < 100000; i++)
        buf_append_str(&text, "[");
    SCOPED_BUF err = {0};
    cr_assert_null(rl_doc_load_object(text.data, text.len, &err));
    cr_assert_str_eq(err.data, "line 3: flow collections ([...] or {...}) nested more than 128 deep");
    buf_free(&text);
}

Test(rl_edit, config_map_keeps_first_places_and_last_values)
{
    /* keys in the order they first appear, each with its last value, as
     * replacing in place gave (now found by sorting: no quadratic cost) */
    rl_kv data[] = { { "b", "1" }, { "a", "2" }, { "b", "3" }, { "c", "4" }, { "a", "5" },
                     { "b", "6" } };
    rl_doc *cm = rl_doc_config_map("function-input", data, 6);
    cr_assert_not_null(cm);
    const char *text = emit(cm, NULL);
    cr_assert_not_null(strstr(text, "data:\n  b: \"6\"\n  a: \"5\"\n  c: \"4\"\n"), "%s", text);
    rl_doc_free(cm);
    cm = rl_doc_config_map("empty", NULL, 0);
    cr_assert_not_null(cm);
    rl_doc_free(cm);
}
