/* Tests for pkg_write and pkg_item: a function's output laid out as package
 * files (paths, indexes, kpt's default names, the bookkeeping annotations
 * left out) and the one-line errors for outputs that cannot be written. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <string.h>

#include "pkg/pkg_write.h"
#include "scoped_buf.h"

#define RL "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n"

static void layout_fails(const char *rl, const char *want)
{
    pkg_layout l;
    SCOPED_BUF err = {0};
    cr_assert_eq(pkg_layout_build(rl, strlen(rl), "the output", &l, &err), -1);
    cr_assert_str_eq(err.data, want);
    cr_assert_eq(l.n, 0);
}

static const char *item(const char *kind, const char *name, const char *path, const char *index)
{
    static char text[8][512];
    static int next;
    char *t = text[next++ % 8];
    snprintf(t, 512,
             "- kind: %s\n  metadata:\n    name: %s\n    annotations:\n"
             "      internal.config.kubernetes.io/path: '%s'\n"
             "      internal.config.kubernetes.io/index: '%s'\n",
             kind, name, path, index);
    return t;
}

Test(pkg_write, paths_that_leave_the_package_are_refused)
{
    char rl[2048];
    snprintf(rl, sizeof rl, RL "%s", item("ConfigMap", "x", "../evil.yaml", "0"));
    layout_fails(rl, "the output: items[0] (ConfigMap/x): path \"../evil.yaml\" leaves the package");
    snprintf(rl, sizeof rl, RL "%s", item("ConfigMap", "x", "/etc/passwd", "0"));
    layout_fails(rl, "the output: items[0] (ConfigMap/x): path \"/etc/passwd\" is absolute");
    snprintf(rl, sizeof rl, RL "%s", item("ConfigMap", "x", "a/../..", "0"));
    layout_fails(rl, "the output: items[0] (ConfigMap/x): path \"a/../..\" leaves the package");
    snprintf(rl, sizeof rl, RL "%s", item("ConfigMap", "x", "./.", "0"));
    layout_fails(rl, "the output: items[0] (ConfigMap/x): path \"./.\" names no file");
}

Test(pkg_write, two_items_at_one_place_and_bad_indexes_are_refused)
{
    char rl[2048];
    snprintf(rl, sizeof rl, RL "%s%s", item("A", "a", "f.yaml", "1"), item("B", "b", "./f.yaml", "1"));
    layout_fails(rl, "the output: resource at path \"f.yaml\" and index \"1\" already exists");
    snprintf(rl, sizeof rl, RL "%s", item("A", "a", "f.yaml", "one"));
    layout_fails(rl, "the output: items[0] (A/a): index \"one\" is not a number");
    layout_fails(RL "- just a string\n", "the output: items[0] is a scalar, not a KRM object");
    layout_fails("kind: ResourceList\nitems: {a: b}\n",
                 "the output: items is a mapping, not a sequence");
}

Test(pkg_write, files_by_index_default_names_and_no_bookkeeping)
{
    char rl[4096];
    snprintf(rl, sizeof rl,
             RL "%s%s- kind: Deployment\n  metadata:\n    name: Web\n    namespace: shop\n"
                "    annotations:\n      config.k8s.io/id: '3'\n      keep: me\n"
                "- kind: Service\n  metadata:\n    name: s\n",
             item("B", "second", "./d/f.yaml", "1"), item("A", "first", "d/x/../f.yaml", "0"));
    pkg_layout l;
    SCOPED_BUF err = {0};
    cr_assert_eq(pkg_layout_build(rl, strlen(rl), "out", &l, &err), 0, "%s", err.data);
    cr_assert_eq(l.n, 3);
    cr_assert_str_eq(l.files[0].path, "d/f.yaml");
    cr_assert_str_eq(l.files[0].text.data, "kind: A\nmetadata:\n  name: first\n---\n"
                                           "kind: B\nmetadata:\n  name: second\n");
    cr_assert_str_eq(l.files[1].path, "service_s.yaml");
    cr_assert_str_eq(l.files[1].text.data, "kind: Service\nmetadata:\n  name: s\n");
    cr_assert_str_eq(l.files[2].path, "shop/deployment_Web.yaml");
    cr_assert_str_eq(l.files[2].text.data, "kind: Deployment\nmetadata:\n  name: Web\n"
                                           "  namespace: shop\n  annotations:\n    keep: me\n");
    pkg_layout_free(&l);
}

Test(pkg_write, a_nul_byte_in_what_makes_a_path_is_refused)
{
    const char *rl = RL "- kind: ConfigMap\n  metadata:\n    name: x\n    annotations:\n"
                        "      internal.config.kubernetes.io/path: \"x.yaml\\0/../..\"\n";
    layout_fails(rl, "the output: items[0] (ConfigMap/x): internal.config.kubernetes.io/path "
                     "\"x.yaml\\x00/../..\" holds a NUL byte (\\x00) at offset 6: refused, the "
                     "value would be cut there");
    layout_fails(RL "- kind: ConfigMap\n  metadata:\n    name: \"a\\0b\"\n",
                 "the output: items[0] (ConfigMap/a): metadata.name \"a\\x00b\" holds a NUL byte "
                 "(\\x00) at offset 1: refused, the value would be cut there");
    layout_fails(RL "- kind: ConfigMap\n  metadata:\n    name: x\n    annotations:\n"
                    "      config.kubernetes.io/index: \"1\\0\"\n",
                 "the output: items[0] (ConfigMap/x): config.kubernetes.io/index \"1\\x00\" holds "
                 "a NUL byte (\\x00) at offset 1: refused, the value would be cut there");
}
