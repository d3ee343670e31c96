/* Unit tests for lib/pkg/rl_rewrite: a pipeline's list rewritten
 * event by event (keys dropped, items made a list, a functionConfig put
 * in), styles and anchors as written, limits and dangling aliases refused. */
#include <criterion/criterion.h>
#include <string.h>

#include "pkg/rl_rewrite.h"
#include "scoped_buf.h"

static const char *const DROP[] = { "functionConfig", "results", NULL };

/* err is reset first: it holds this rewrite's reason alone */
static const char *rewrite(const char *in, const char *config, buf *err)
{
    static buf out;
    buf_free(&out);
    buf_reset(err);
    rl_rewrite_opts o = { .drop = DROP, .config = config, .config_len = config ? strlen(config) : 0 };
    return rl_rewrite(in, strlen(in), &o, &out, err) == 0 ? out.data : NULL;
}

Test(rl_rewrite, keys_are_dropped_and_the_config_put_in_last)
{
    SCOPED_BUF err = {0};
    const char *out = rewrite("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
                              "functionConfig: {kind: Old}\n"
                              "items:\n- &a {kind: A, metadata: {name: 'a'}}\n- *a\n"
                              "results:\n- {message: x, tags: &t {k: v}}\nextra: \"007\"\n",
                              "apiVersion: v1\nkind: ConfigMap\ndata:\n  k: v\n", &err);
    cr_assert_not_null(out, "%s", err.data);
    cr_assert_str_eq(out, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n"
                          "items:\n- &a {kind: A, metadata: {name: 'a'}}\n- *a\n"
                          "extra: \"007\"\n"
                          "functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data:\n"
                          "    k: v\n");
}

Test(rl_rewrite, items_absent_or_null_become_an_empty_list)
{
    SCOPED_BUF err = {0};
    cr_assert_str_eq(rewrite("kind: ResourceList\nitems: null\n", NULL, &err),
                     "kind: ResourceList\nitems: []\n");
    cr_assert_str_eq(rewrite("kind: ResourceList\nresults: []\n", NULL, &err),
                     "kind: ResourceList\nitems: []\n");
    /* a key that is a collection, and values that are collections, keep
     * the keys and values in step */
    cr_assert_str_eq(rewrite("kind: ResourceList\n? [a, b]\n: {c: d}\nitems: [x]\n"
                             "results: {items: [r]}\nz: 1\n", NULL, &err),
                     "kind: ResourceList\n? [a, b]\n: {c: d}\nitems: [x]\nz: 1\n");
}

/* Functions may answer JSON: a flow root takes the new keys in flow style. */
Test(rl_rewrite, a_json_list_stays_flow)
{
    SCOPED_BUF err = {0};
    const char *out = rewrite("{\"kind\": \"ResourceList\", \"results\": [{\"message\": \"m\"}], "
                              "\"functionConfig\": {\"a\": 1}}",
                              "kind: ConfigMap\ndata: {k: v}\n", &err);
    cr_assert_not_null(out, "%s", err.data);
    cr_assert_str_eq(out, "{\"kind\": \"ResourceList\", items: [], functionConfig: {kind: ConfigMap, "
                          "data: {k: v}}}\n");
}

Test(rl_rewrite, an_alias_into_a_dropped_key_is_refused)
{
    SCOPED_BUF err = {0};
    cr_assert_null(rewrite("kind: ResourceList\nresults: [&r {m: 1}]\nitems: [*r]\n", NULL, &err));
    cr_assert_str_eq(err.data, "line 3: an alias to an anchor in a key left out");
    /* redefined where it is kept: fine */
    cr_assert_not_null(rewrite("kind: ResourceList\nresults: [&r 1]\nx: &r 2\nitems: [*r]\n", NULL,
                               &err), "%s", err.data);
}

Test(rl_rewrite, limits_and_bad_yaml_are_refused_with_the_line)
{
    SCOPED_BUF err = {0};
    buf deep = { 0 };
    buf_append_str(&deep, "kind: ResourceList\nitems:\n");
    for (int i = 0; i < 100000; i++)
        buf_append_str(&deep, "- ");
    buf_append_str(&deep, "x\n");
    cr_assert_null(rewrite(deep.data, NULL, &err));
    cr_assert_str_eq(err.data, "line 3: collections nested more than 1000 deep");
    buf_free(&deep);
    cr_assert_null(rewrite("kind: ResourceList\nitems: [\n", NULL, &err));
    cr_assert(strncmp(err.data, "line 3: ", 8) == 0, "%s", err.data);
    cr_assert_null(rewrite("- a\n", NULL, &err));
    cr_assert_str_eq(err.data, "line 1: not a mapping");
    cr_assert_null(rewrite("a: 1\n---\nb: 2\n", NULL, &err));
    cr_assert_str_eq(err.data, "line 2: expected one YAML document, found more");
}
