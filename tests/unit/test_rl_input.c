/* Tests for rl_input: the ResourceList runner-client builds from files,
 * directories and stdin must match what kpt's readers produce (items,
 * reader annotations, pass-through of ResourceLists) and fail with one-line
 * messages naming the input. Outputs are parsed back with libyaml's
 * document loader and inspected by path. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "pkg/rl_input.h"
#include "log_capture.h"
#include "scoped_buf.h"

#define PATH_KEY "internal.config.kubernetes.io/path"
#define INDEX_KEY "internal.config.kubernetes.io/index"
#define LEGACY_PATH_KEY "config.kubernetes.io/path"
#define LEGACY_INDEX_KEY "config.kubernetes.io/index"

/* ---- temp directories ---- */

static char test_dir[64];

static void make_test_dir(void)
{
    strcpy(test_dir, "/tmp/rl_input_test.XXXXXX");
    cr_assert_not_null(mkdtemp(test_dir));
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_test_dir(void)
{
    if (test_dir[0])
        nftw(test_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(rl_input, .init = make_test_dir, .fini = remove_test_dir);

/* Full path of `rel` inside the test directory (static storage, rotated so
 * a few can be alive at once). */
static const char *in_dir(const char *rel)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", test_dir, rel);
    return p;
}

static void write_file(const char *rel, const char *content)
{
    FILE *f = fopen(in_dir(rel), "w");
    cr_assert_not_null(f, "cannot create %s", rel);
    fputs(content, f);
    fclose(f);
}

static void make_dir(const char *rel)
{
    cr_assert_eq(mkdir(in_dir(rel), 0755), 0, "cannot create %s", rel);
}

/* ---- reading the output back ---- */

typedef struct parsed {
    buf out;
    yaml_document_t doc;
} parsed;

static void load(parsed *p)
{
    yaml_parser_t parser;
    cr_assert(yaml_parser_initialize(&parser));
    yaml_parser_set_input_string(&parser, (const unsigned char *)p->out.data, p->out.len);
    int ok = yaml_parser_load(&parser, &p->doc);
    yaml_parser_delete(&parser);
    cr_assert(ok, "output is not YAML:\n%s", p->out.data);
    cr_assert_not_null(yaml_document_get_root_node(&p->doc), "empty output");
}

/* Builds from `path` (relative to the test dir, or "-"), expects success and
 * loads the output. */
static void build_ok(const char *path, parsed *p)
{
    SCOPED_BUF err = {0};
    memset(p, 0, sizeof *p);
    const char *full = strcmp(path, "-") == 0 ? path : in_dir(path);
    cr_assert_eq(rl_input_build(full, 6291456, &p->out, &err), 0, "failed: %s", err.data);
    load(p);
}

static void build_bytes_ok(const char *yaml, const char *name, parsed *p)
{
    SCOPED_BUF err = {0};
    memset(p, 0, sizeof *p);
    cr_assert_eq(rl_input_build_bytes(yaml, strlen(yaml), name, &p->out, &err), 0,
                 "failed: %s", err.data);
    load(p);
}

static void parsed_free(parsed *p)
{
    yaml_document_delete(&p->doc);
    buf_free(&p->out);
}

/* Node at a path of mapping keys / sequence indexes, NULL-terminated. */
static yaml_node_t *vnode_at(yaml_document_t *doc, va_list ap)
{
    yaml_node_t *node = yaml_document_get_root_node(doc);
    for (const char *step; node && (step = va_arg(ap, const char *));) {
        yaml_node_t *next = NULL;
        if (node->type == YAML_SEQUENCE_NODE) {
            long i = strtol(step, NULL, 10);
            yaml_node_item_t *items = node->data.sequence.items.start;
            if (i >= 0 && i < node->data.sequence.items.top - items)
                next = yaml_document_get_node(doc, items[i]);
        } else if (node->type == YAML_MAPPING_NODE) {
            for (yaml_node_pair_t *pair = node->data.mapping.pairs.start;
                 pair < node->data.mapping.pairs.top; pair++) {
                yaml_node_t *key = yaml_document_get_node(doc, pair->key);
                if (key->type == YAML_SCALAR_NODE &&
                    strcmp((char *)key->data.scalar.value, step) == 0)
                    next = yaml_document_get_node(doc, pair->value);
            }
        }
        node = next;
    }
    return node;
}

static yaml_node_t *node_at(parsed *p, ...)
{
    va_list ap;
    va_start(ap, p);
    yaml_node_t *node = vnode_at(&p->doc, ap);
    va_end(ap);
    return node;
}

/* Scalar value at a path, or NULL when absent or not a scalar. */
static const char *scalar_at(parsed *p, ...)
{
    va_list ap;
    va_start(ap, p);
    yaml_node_t *node = vnode_at(&p->doc, ap);
    va_end(ap);
    return node && node->type == YAML_SCALAR_NODE ? (const char *)node->data.scalar.value : NULL;
}

static long item_count(parsed *p)
{
    yaml_node_t *items = node_at(p, "items", NULL);
    cr_assert_not_null(items, "no items in:\n%s", p->out.data);
    cr_assert_eq(items->type, YAML_SEQUENCE_NODE);
    return items->data.sequence.items.top - items->data.sequence.items.start;
}

static long pair_count(yaml_node_t *map)
{
    cr_assert_not_null(map);
    cr_assert_eq(map->type, YAML_MAPPING_NODE);
    return map->data.mapping.pairs.top - map->data.mapping.pairs.start;
}

static void assert_wrapper(parsed *p)
{
    cr_assert_str_eq(scalar_at(p, "apiVersion", NULL), "config.kubernetes.io/v1");
    cr_assert_str_eq(scalar_at(p, "kind", NULL), "ResourceList");
}

/* Item `item` carries all four reader annotations with these values. */
static void assert_reader_annotations(parsed *p, const char *item, const char *path,
                                      const char *index)
{
    cr_assert_str_eq(scalar_at(p, "items", item, "metadata", "annotations", PATH_KEY, NULL), path);
    cr_assert_str_eq(scalar_at(p, "items", item, "metadata", "annotations", LEGACY_PATH_KEY, NULL),
                     path);
    cr_assert_str_eq(scalar_at(p, "items", item, "metadata", "annotations", INDEX_KEY, NULL),
                     index);
    cr_assert_str_eq(scalar_at(p, "items", item, "metadata", "annotations", LEGACY_INDEX_KEY, NULL),
                     index);
}

/* err is reset first: it holds this failure's reason alone */
static void build_fails(const char *path, buf *err)
{
    buf out = { 0 };
    buf_reset(err);
    cr_assert_eq(rl_input_build(in_dir(path), 6291456, &out, err), -1, "unexpected success:\n%s",
                 out.data);
    cr_assert_eq(out.len, 0, "output left behind on failure");
    cr_assert_null(strchr(err->data, '\n'), "error is not one line: %s", err->data);
    buf_free(&out);
}

/* ---- files ---- */

Test(rl_input, file_with_three_documents_becomes_three_annotated_items)
{
    write_file("cm.yaml", "apiVersion: v1\n"
                          "kind: ConfigMap\n"
                          "metadata:\n"
                          "  name: first\n"
                          "  annotations:\n"
                          "    owner: team-a\n"
                          "---\n"
                          "apiVersion: v1\n"
                          "kind: ConfigMap\n"
                          "metadata:\n"
                          "  name: second\n"
                          "---\n"
                          "apiVersion: v1\n"
                          "kind: Namespace\n");
    parsed p;
    build_ok("cm.yaml", &p);
    assert_wrapper(&p);
    cr_assert_eq(item_count(&p), 3);
    cr_assert_str_eq(scalar_at(&p, "items", "0", "metadata", "name", NULL), "first");
    cr_assert_str_eq(scalar_at(&p, "items", "0", "metadata", "annotations", "owner", NULL),
                     "team-a");
    cr_assert_eq(pair_count(node_at(&p, "items", "0", "metadata", "annotations", NULL)), 5);
    cr_assert_str_eq(scalar_at(&p, "items", "1", "metadata", "name", NULL), "second");
    cr_assert_str_eq(scalar_at(&p, "items", "2", "kind", NULL), "Namespace");
    assert_reader_annotations(&p, "0", "cm.yaml", "0");
    assert_reader_annotations(&p, "1", "cm.yaml", "1");
    assert_reader_annotations(&p, "2", "cm.yaml", "2");
    /* kyaml's order: existing keys first, then the new ones sorted. */
    cr_assert_not_null(strstr(p.out.data, "    annotations:\n"
                                          "      owner: team-a\n"
                                          "      config.kubernetes.io/index: '0'\n"
                                          "      config.kubernetes.io/path: 'cm.yaml'\n"
                                          "      internal.config.kubernetes.io/index: '0'\n"
                                          "      internal.config.kubernetes.io/path: 'cm.yaml'\n"),
                       "%s", p.out.data);
    parsed_free(&p);
}

Test(rl_input, empty_documents_are_skipped_without_using_an_index)
{
    write_file("gaps.yaml", "---\n# only a comment\n---\nkind: A\n---\n---\nnull\n---\nkind: B\n");
    parsed p;
    build_ok("gaps.yaml", &p);
    cr_assert_eq(item_count(&p), 2);
    assert_reader_annotations(&p, "0", "gaps.yaml", "0");
    assert_reader_annotations(&p, "1", "gaps.yaml", "1");
    cr_assert_str_eq(scalar_at(&p, "items", "1", "kind", NULL), "B");
    parsed_free(&p);
}

Test(rl_input, resource_list_passes_through_byte_for_byte)
{
    const char *list = "# keep this comment\n"
                       "apiVersion: config.kubernetes.io/v1\n"
                       "kind: ResourceList\n"
                       "items:\n"
                       "    - {apiVersion: v1, kind: ConfigMap}   # odd indent\n"
                       "functionConfig: {data: {a: 1}}\n";
    write_file("rl.yaml", list);
    buf out = { 0 };
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_input_build(in_dir("rl.yaml"), 6291456, &out, &err), 0, "%s", err.data);
    cr_assert_eq(out.len, strlen(list));
    cr_assert_eq(memcmp(out.data, list, out.len), 0);
    buf_reset(&out);
    cr_assert_eq(rl_input_build_bytes(list, strlen(list), NULL, &out, &err), 0, "%s",
                 err.data);
    cr_assert_str_eq(out.data, list);
    buf_free(&out);
}

Test(rl_input, resource_list_with_only_function_config_passes_through)
{
    const char *list = "kind: ResourceList\nfunctionConfig:\n  kind: ConfigMap\n";
    buf out = { 0 };
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_input_build_bytes(list, strlen(list), "rl.yaml", &out, &err), 0);
    cr_assert_str_eq(out.data, list);
    buf_free(&out);
}

Test(rl_input, resource_list_that_is_not_alone_is_wrapped_like_any_object)
{
    /* kyaml unwraps only when the input holds a single document. */
    parsed p;
    build_bytes_ok("kind: ResourceList\nitems: []\n---\n", "two.yaml", &p);
    cr_assert_eq(item_count(&p), 1);
    cr_assert_str_eq(scalar_at(&p, "items", "0", "kind", NULL), "ResourceList");
    assert_reader_annotations(&p, "0", "two.yaml", "0");
    parsed_free(&p);
}

Test(rl_input, list_is_unwrapped_into_a_resource_list)
{
    parsed p;
    build_bytes_ok("apiVersion: v1\n"
                   "kind: List\n"
                   "metadata: {}\n"
                   "items:\n"
                   "- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n"
                   "- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n",
                   "list.yaml", &p);
    assert_wrapper(&p);
    cr_assert_eq(item_count(&p), 2);
    cr_assert_str_eq(scalar_at(&p, "items", "1", "metadata", "name", NULL), "b");
    /* kyaml adds no reader annotations to unwrapped items. */
    cr_assert_null(node_at(&p, "items", "0", "metadata", "annotations", NULL));
    cr_assert_null(node_at(&p, "metadata", NULL));
    parsed_free(&p);
}

Test(rl_input, json_input_is_wrapped)
{
    write_file("cm.json", "{\n\t\"apiVersion\": \"v1\",\n\t\"kind\": \"ConfigMap\",\n"
                          "\t\"metadata\": {\"name\": \"j\"},\n\t\"data\": {\"n\": \"1\"}\n}\n");
    parsed p;
    build_ok("cm.json", &p);
    assert_wrapper(&p);
    cr_assert_eq(item_count(&p), 1);
    cr_assert_str_eq(scalar_at(&p, "items", "0", "metadata", "name", NULL), "j");
    assert_reader_annotations(&p, "0", "cm.json", "0");
    yaml_node_t *n = node_at(&p, "items", "0", "data", "n", NULL);
    cr_assert_str_eq((char *)n->data.scalar.value, "1");
    cr_assert_eq(n->data.scalar.style, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    parsed_free(&p);
}

Test(rl_input, quoted_scalars_stay_strings)
{
    parsed p;
    build_bytes_ok("kind: ConfigMap\n"
                   "data:\n  a: \"1\"\n  b: '2'\n  c: 3\n  d: !!str 4\n  e: \"true\"\n",
                   "cm.yaml", &p);
    yaml_node_t *a = node_at(&p, "items", "0", "data", "a", NULL);
    yaml_node_t *b = node_at(&p, "items", "0", "data", "b", NULL);
    yaml_node_t *c = node_at(&p, "items", "0", "data", "c", NULL);
    yaml_node_t *d = node_at(&p, "items", "0", "data", "d", NULL);
    yaml_node_t *e = node_at(&p, "items", "0", "data", "e", NULL);
    cr_assert_eq(a->data.scalar.style, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    cr_assert_eq(b->data.scalar.style, YAML_SINGLE_QUOTED_SCALAR_STYLE);
    cr_assert_eq(c->data.scalar.style, YAML_PLAIN_SCALAR_STYLE);
    cr_assert_str_eq((char *)d->tag, YAML_STR_TAG);
    cr_assert_str_eq((char *)d->data.scalar.value, "4");
    cr_assert_eq(e->data.scalar.style, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    cr_assert_not_null(strstr(p.out.data, "a: \"1\"\n"), "%s", p.out.data);
    cr_assert_not_null(strstr(p.out.data, "d: !!str 4\n"), "%s", p.out.data);
    parsed_free(&p);
}

Test(rl_input, block_scalars_are_preserved)
{
    parsed p;
    build_bytes_ok("kind: ConfigMap\n"
                   "data:\n"
                   "  script: |\n"
                   "    echo one\n"
                   "      indented\n"
                   "    echo two\n"
                   "  folded: >\n"
                   "    a\n"
                   "    b\n",
                   "cm.yaml", &p);
    yaml_node_t *script = node_at(&p, "items", "0", "data", "script", NULL);
    cr_assert_eq(script->data.scalar.style, YAML_LITERAL_SCALAR_STYLE);
    cr_assert_str_eq((char *)script->data.scalar.value, "echo one\n  indented\necho two\n");
    yaml_node_t *folded = node_at(&p, "items", "0", "data", "folded", NULL);
    cr_assert_eq(folded->data.scalar.style, YAML_FOLDED_SCALAR_STYLE);
    cr_assert_str_eq((char *)folded->data.scalar.value, "a b\n");
    cr_assert_not_null(strstr(p.out.data, "script: |\n"), "%s", p.out.data);
    parsed_free(&p);
}

Test(rl_input, anchors_and_aliases_survive)
{
    parsed p;
    build_bytes_ok("kind: ConfigMap\ndata:\n  a: &shared hello\n  b: *shared\n", "cm.yaml", &p);
    cr_assert_str_eq(scalar_at(&p, "items", "0", "data", "b", NULL), "hello");
    parsed_free(&p);
}

Test(rl_input, empty_file_gives_empty_items)
{
    write_file("empty.yaml", "");
    write_file("comments.yaml", "# nothing here\n---\n");
    const char *names[] = { "empty.yaml", "comments.yaml" };
    for (size_t i = 0; i < 2; i++) {
        parsed p;
        build_ok(names[i], &p);
        assert_wrapper(&p);
        cr_assert_eq(item_count(&p), 0);
        cr_assert_eq(p.out.data[p.out.len - 1], '\n');
        parsed_free(&p);
    }
}

Test(rl_input, missing_metadata_or_annotations_are_created)
{
    parsed p;
    build_bytes_ok("kind: A\n"
                   "---\n"
                   "kind: B\nmetadata:\n"
                   "---\n"
                   "kind: C\nmetadata:\n  name: c\n  annotations: ~\n"
                   "---\n"
                   "kind: D\nmetadata: {name: d, annotations: {}}\n",
                   "x.yaml", &p);
    cr_assert_eq(item_count(&p), 4);
    assert_reader_annotations(&p, "0", "x.yaml", "0");
    assert_reader_annotations(&p, "1", "x.yaml", "1");
    assert_reader_annotations(&p, "2", "x.yaml", "2");
    assert_reader_annotations(&p, "3", "x.yaml", "3");
    cr_assert_str_eq(scalar_at(&p, "items", "2", "metadata", "name", NULL), "c");
    cr_assert_str_eq(scalar_at(&p, "items", "3", "metadata", "name", NULL), "d");
    parsed_free(&p);
}

Test(rl_input, existing_reader_annotations_are_replaced_not_duplicated)
{
    parsed p;
    build_bytes_ok("kind: A\n"
                   "metadata:\n"
                   "  annotations:\n"
                   "    config.kubernetes.io/path: old/place.yaml\n"
                   "    internal.config.kubernetes.io/index: '7'\n"
                   "    keep: me\n",
                   "new.yaml", &p);
    assert_reader_annotations(&p, "0", "new.yaml", "0");
    cr_assert_str_eq(scalar_at(&p, "items", "0", "metadata", "annotations", "keep", NULL), "me");
    cr_assert_eq(pair_count(node_at(&p, "items", "0", "metadata", "annotations", NULL)), 5);
    parsed_free(&p);
}

/* ---- stdin ---- */

Test(rl_input, stdin_gets_index_but_no_path)
{
    write_file("in.yaml", "kind: A\n---\nkind: B\n");
    int fd = open(in_dir("in.yaml"), O_RDONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(dup2(fd, STDIN_FILENO), STDIN_FILENO);
    close(fd);
    parsed p;
    build_ok("-", &p);
    cr_assert_eq(item_count(&p), 2);
    cr_assert_str_eq(scalar_at(&p, "items", "1", "metadata", "annotations", INDEX_KEY, NULL), "1");
    cr_assert_str_eq(scalar_at(&p, "items", "1", "metadata", "annotations", LEGACY_INDEX_KEY, NULL),
                     "1");
    cr_assert_null(node_at(&p, "items", "0", "metadata", "annotations", PATH_KEY, NULL));
    cr_assert_null(node_at(&p, "items", "0", "metadata", "annotations", LEGACY_PATH_KEY, NULL));
    parsed_free(&p);
}

Test(rl_input, stdin_copies_a_lone_legacy_path_or_id_to_its_twin)
{
    parsed p;
    build_bytes_ok("kind: A\n"
                   "metadata:\n"
                   "  annotations:\n"
                   "    config.kubernetes.io/path: a/b.yaml\n"
                   "    internal.config.kubernetes.io/id: '3'\n",
                   NULL, &p);
    cr_assert_str_eq(scalar_at(&p, "items", "0", "metadata", "annotations", PATH_KEY, NULL),
                     "a/b.yaml");
    cr_assert_str_eq(
        scalar_at(&p, "items", "0", "metadata", "annotations", "config.k8s.io/id", NULL), "3");
    cr_assert_str_eq(scalar_at(&p, "items", "0", "metadata", "annotations", INDEX_KEY, NULL), "0");
    parsed_free(&p);
}

/* ---- directories ---- */

Test(rl_input, directory_is_walked_in_order_with_relative_paths)
{
    make_dir("pkg");
    make_dir("pkg/sub");
    make_dir("pkg/sub/deeper");
    make_dir("pkg/.git");
    write_file("pkg/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: Kptfile}\n");
    write_file("pkg/b.yaml", "kind: A\nmetadata: {name: b0}\n---\nkind: A\nmetadata: {name: b1}\n");
    write_file("pkg/a.yml", "kind: A\nmetadata: {name: a}\n");
    write_file("pkg/sub/c.yaml", "kind: A\nmetadata: {name: c}\n");
    write_file("pkg/sub/deeper/d.yaml", "kind: A\nmetadata: {name: d}\n");
    write_file("pkg/sub.yaml", "kind: A\nmetadata: {name: sub}\n");
    write_file("pkg/z.json", "{\"kind\": \"A\", \"metadata\": {\"name\": \"z\"}}\n");
    write_file("pkg/.hidden.yaml", "kind: Hidden\n");
    write_file("pkg/.git/e.yaml", "kind: Hidden\n");
    write_file("pkg/README.md", "- not: yaml we read\n");
    write_file("pkg/notes.txt", "[broken\n");
    write_file("pkg/sub/kustomization.yaml.bak", "[broken\n");

    static const char *const want[][2] = {
        { "Kptfile", "Kptfile" },     { "b0", "b.yaml" },
        { "b1", "b.yaml" },           { "a", "a.yml" },
        { "c", "sub/c.yaml" },        { "d", "sub/deeper/d.yaml" },
        { "sub", "sub.yaml" },        { "z", "z.json" },
    };
    /* Byte-wise name order: Kptfile < a.yml < b.yaml < sub < sub.yaml < z.json. */
    static const int order[] = { 0, 3, 1, 2, 4, 5, 6, 7 };
    parsed p;
    build_ok("pkg", &p);
    assert_wrapper(&p);
    cr_assert_eq(item_count(&p), 8, "%s", p.out.data);
    for (int i = 0; i < 8; i++) {
        char item[16];
        snprintf(item, sizeof item, "%d", i);
        const char *const *w = want[order[i]];
        cr_assert_str_eq(scalar_at(&p, "items", item, "metadata", "name", NULL), w[0]);
        assert_reader_annotations(&p, item, w[1], strcmp(w[0], "b1") == 0 ? "1" : "0");
    }
    cr_assert_null(strstr(p.out.data, "Hidden"));
    parsed_free(&p);
}

Test(rl_input, directory_does_not_unwrap_resource_lists)
{
    make_dir("pkg");
    write_file("pkg/rl.yaml", "kind: ResourceList\nitems: [{kind: A}]\n");
    parsed p;
    build_ok("pkg/", &p);
    cr_assert_eq(item_count(&p), 1);
    cr_assert_str_eq(scalar_at(&p, "items", "0", "kind", NULL), "ResourceList");
    assert_reader_annotations(&p, "0", "rl.yaml", "0");
    parsed_free(&p);
}

/* Issue 17: a directory without objects is kpt's "no resources found", not
 * an empty list (it used to give `items: []`); a file may be empty. */
Test(rl_input, directory_without_objects_is_no_resources_found)
{
    make_dir("nothing");
    make_dir("no-yaml");
    write_file("no-yaml/README.md", "kind: NotRead\n");
    make_dir("blank");
    write_file("blank/empty.yaml", "");
    write_file("blank/comments.yml", "# nothing here\n---\n");
    const char *dirs[] = { "nothing", "no-yaml", "blank" };
    for (size_t i = 0; i < 3; i++) {
        SCOPED_BUF err = {0};
    char want[600];
        build_fails(dirs[i], &err);
        snprintf(want, sizeof want, "%s: " RL_INPUT_NO_RESOURCES, in_dir(dirs[i]));
        cr_assert_str_eq(err.data, want);
    }
}

Test(rl_input, directory_with_only_a_kptfile_gives_the_kptfile)
{
    make_dir("kptonly");
    write_file("kptonly/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\n");
    parsed p;
    build_ok("kptonly", &p);
    cr_assert_eq(item_count(&p), 1);
    cr_assert_str_eq(scalar_at(&p, "items", "0", "kind", NULL), "Kptfile");
    parsed_free(&p);
}

/* ---- errors ---- */

Test(rl_input, non_mapping_document_is_an_error_naming_file_and_document)
{
    make_dir("pkg");
    write_file("pkg/ok.yaml", "kind: A\n");
    write_file("pkg/bad.yaml", "kind: A\n---\n- just\n- a list\n");
    SCOPED_BUF err = {0};
    build_fails("pkg", &err);
    char want[600];
    snprintf(want, sizeof want,
             "%s/pkg/bad.yaml: document 1 (line 3): expected a mapping (a KRM object), found a "
             "sequence",
             test_dir);
    cr_assert_str_eq(err.data, want);

    write_file("scalar.yaml", "just text\n");
    build_fails("scalar.yaml", &err);
    cr_assert(strstr(err.data, "scalar.yaml: document 0 (line 1):") && strstr(err.data, "found a scalar"),
              "%s", err.data);
}

Test(rl_input, metadata_that_is_not_a_mapping_is_an_error)
{
    write_file("m.yaml", "kind: A\nmetadata: [x]\n");
    SCOPED_BUF err = {0};
    build_fails("m.yaml", &err);
    cr_assert(strstr(err.data, "m.yaml: document 0 (line 1): metadata is a sequence, not a mapping"),
              "%s", err.data);
    write_file("a.yaml", "kind: A\nmetadata:\n  annotations: text\n");
    build_fails("a.yaml", &err);
    cr_assert(strstr(err.data, "metadata.annotations is a scalar, not a mapping"), "%s", err.data);
}

Test(rl_input, yaml_syntax_error_names_file_line_and_column)
{
    make_dir("pkg");
    write_file("pkg/cm.yaml", "kind: A\nmetadata:\n  name: x\n bad: indent\n");
    SCOPED_BUF err = {0};
    build_fails("pkg", &err);
    char want[600];
    snprintf(want, sizeof want, "%s/pkg/cm.yaml: YAML error at line 4, column 2: ", test_dir);
    cr_assert_eq(strncmp(err.data, want, strlen(want)), 0, "%s", err.data);
    cr_assert(strstr(err.data, "did not find expected key"), "%s", err.data);
}

Test(rl_input, missing_file_reports_strerror)
{
    SCOPED_BUF err = {0};
    build_fails("no-such.yaml", &err);
    char want[600];
    snprintf(want, sizeof want, "%s/no-such.yaml: No such file or directory", test_dir);
    cr_assert_str_eq(err.data, want);
}

/* kpt ignores links inside a package: a dangling one, one to a file
 * outside and one to a file inside are all skipped (with a warning). */
Test(rl_input, links_in_a_directory_are_skipped)
{
    make_dir("pkg");
    write_file("pkg/a.yaml", "kind: A\n");
    write_file("outside.yaml", "kind: Outside\n");
    cr_assert_eq(symlink("/nonexistent/target.yaml", in_dir("pkg/dangling.yaml")), 0);
    cr_assert_eq(symlink("../outside.yaml", in_dir("pkg/out.yaml")), 0);
    cr_assert_eq(symlink("a.yaml", in_dir("pkg/twice.yaml")), 0);
    buf out = { 0 };
    SCOPED_BUF err = {0};
    SCOPED_BUF warned = {0};
    log_capture_start();   /* the warnings go to stderr: checked here, not shown */
    cr_assert_eq(rl_input_build(in_dir("pkg"), 6291456, &out, &err), 0, "%s", err.data);
    cr_assert(strstr(out.data, "kind: A"), "%s", out.data);
    cr_assert_null(strstr(out.data, "Outside"), "%s", out.data);
    cr_assert_null(strstr(out.data, "twice"), "%s", out.data);
    log_capture_text(&warned);
    static const char *const links[] = {"dangling.yaml", "out.yaml", "twice.yaml"};
    for (size_t i = 0; i < 3; i++) {
        char want[600];
        snprintf(want, sizeof want, "runner-client eval: warning: %s/pkg/%s: skipped: a symbolic "
                 "link (links inside a package are not followed, as kpt ignores them)\n", test_dir,
                 links[i]);
        cr_assert(strstr(warned.data ? warned.data : "", want), "no \"%s\" in:\n%s", want,
                  warned.data);
    }
    log_capture_end();
    buf_free(&out);
}

Test(rl_input, special_file_in_directory_is_refused)
{
    make_dir("pkg");
    write_file("pkg/a.yaml", "kind: A\n");
    cr_assert_eq(mkfifo(in_dir("pkg/b.yaml"), 0644), 0);
    SCOPED_BUF err = {0};
    build_fails("pkg", &err);
    char want[600];
    snprintf(want, sizeof want, "%s/pkg/b.yaml: is a FIFO (named pipe), not a regular file: only "
             "regular files are read (a read could wait forever or never end)", test_dir);
    cr_assert_str_eq(err.data, want);
}

Test(rl_input, files_over_the_limit_alone_or_together_are_refused)
{
    make_dir("pkg");
    write_file("pkg/a.yaml", "kind: A\n");   /* 8 bytes */
    write_file("pkg/b.yaml", "kind: B\n");
    buf out = { 0 };
    SCOPED_BUF err = {0};
    char want[600];
    cr_assert_eq(rl_input_build(in_dir("pkg"), 7, &out, &err), -1);
    snprintf(want, sizeof want, "%s/pkg/a.yaml: is larger than 7 bytes (it has 8): more than a "
             "request may carry (--max-message)", test_dir);
    cr_assert_str_eq(err.data, want);
    buf_reset(&err);
    cr_assert_eq(rl_input_build(in_dir("pkg"), 12, &out, &err), -1);
    snprintf(want, sizeof want, "%s/pkg: its files are larger than 12 bytes together: more than a "
             "request may carry (--max-message)", test_dir);
    cr_assert_str_eq(err.data, want);
    cr_assert_eq(out.len, 0);
    cr_assert_eq(rl_input_build(in_dir("pkg"), 16, &out, &err), 0, "%s", err.data);
    buf_free(&out);
}

Test(rl_input, unreadable_directory_reports_strerror)
{
    if (geteuid() == 0) {
        remove_test_dir(); /* .fini does not run for skipped tests */
        cr_skip_test("permissions do not apply to root");
    }
    make_dir("pkg");
    make_dir("pkg/locked");
    chmod(in_dir("pkg/locked"), 0);
    SCOPED_BUF err = {0};
    build_fails("pkg", &err);
    chmod(in_dir("pkg/locked"), 0755);
    cr_assert(strstr(err.data, "pkg/locked: Permission denied"), "%s", err.data);
}

Test(rl_input, failure_leaves_existing_output_untouched)
{
    buf out = { 0 };
    buf_append_str(&out, "keep");
    SCOPED_BUF err = {0};
    /* A first object big enough that the emitter has flushed part of the
     * ResourceList into out before the bad document is reached. */
    buf bad = { 0 };
    buf_append_str(&bad, "kind: A\ndata:\n  big: ");
    for (int i = 0; i < 100000; i++)
        buf_append(&bad, "x", 1);
    buf_append_str(&bad, "\n---\n- x\n");
    cr_assert_eq(rl_input_build_bytes(bad.data, bad.len, "bad.yaml", &out, &err), -1);
    cr_assert_str_eq(out.data, "keep");
    cr_assert_eq(out.len, 4);
    buf_free(&bad);
    buf_free(&out);
}

Test(rl_input, deep_nesting_is_refused_while_parsing)
{
    /* 500000 nested block sequences on one line ("- - - ... x"): refused
     * at the 1001st level (lib/krm/yaml_limits.h), never sent on. */
    size_t depth = 500000;
    buf in = { 0 };
    buf_append_str(&in, "kind: Deep\nspec:\n");
    for (size_t i = 0; i < depth; i++)
        buf_append(&in, "- ", 2);
    buf_append_str(&in, "x\n");
    buf out = { 0 };
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_input_build_bytes(in.data, in.len, "deep.yaml", &out, &err), -1);
    cr_assert_str_eq(err.data, "deep.yaml: YAML error at line 3, column 1999: collections nested "
                          "more than 1000 deep");
    cr_assert_eq(out.len, 0);
    buf_free(&in);
    buf_free(&out);
}

/* In the ResourceList an object sits under its root and items: 998 levels
 * are left to it, which is what passes; the server would refuse more in
 * the function's answer, after the function ran. */
Test(rl_input, an_object_may_nest_998_levels)
{
    for (size_t depth = 998; depth <= 999; depth++) {
        buf in = { 0 };
        buf_append_str(&in, "kind: Deep\nspec:\n");   /* the root mapping: level 1 */
        for (size_t i = 0; i < depth - 1; i++)
            buf_append(&in, "- ", 2);
        buf_append_str(&in, "x\n");
        buf out = { 0 };
        SCOPED_BUF err = {0};
        int rc = rl_input_build_bytes(in.data, in.len, "deep.yaml", &out, &err);
        if (depth == 998) {
            cr_assert_eq(rc, 0, "%s", err.data);
        } else {
            cr_assert_eq(rc, -1);
            cr_assert_str_eq(err.data, "deep.yaml: YAML error at line 3, column 1995: collections "
                                  "nested more than 1000 deep once the object is in a "
                                  "ResourceList's items (998 levels are left to an object)");
        }
        buf_free(&in);
        buf_free(&out);
    }
}

/* Flow nesting costs libyaml time growing with its depth on every token
 * (lib/krm/yaml_depth.h): past 128 levels the input is refused, early. */
Test(rl_input, deep_flow_nesting_is_refused)
{
    buf in = { 0 };
    buf_append_str(&in, "kind: Deep\nspec: ");
    for (size_t i = 0; i < 100000; i++)
        buf_append(&in, "{a: ", 4);
    buf out = { 0 };
    SCOPED_BUF err = {0};
    cr_assert_eq(rl_input_build_bytes(in.data, in.len, "deep.yaml", &out, &err), -1);
    cr_assert_str_eq(err.data, "deep.yaml: YAML error at line 2, column 519: flow collections "
                          "([...] or {...}) nested more than 128 deep");
    cr_assert_eq(out.len, 0);
    buf_reset(&in);
    buf_append_str(&in, "kind: Deep\nspec: ");
    for (size_t i = 0; i < 127; i++)
        buf_append(&in, "[", 1);
    for (size_t i = 0; i < 127; i++)
        buf_append(&in, "]", 1);
    buf_append_str(&in, "\n");
    cr_assert_eq(rl_input_build_bytes(in.data, in.len, "deep.yaml", &out, &err), 0,
                 "%s", err.data);
    buf_free(&in);
    buf_free(&out);
}
