/* Unit tests for lib/krm/fnconfig: loading Porch FunctionConfig objects from
 * files and directories (schema checks and their messages, duplicates,
 * YAML errors), and the binary-executor / pod-parameter lookups.
 *
 * Fixtures are in tests/fixtures/fnconfig (paths relative to the repository
 * root, where `make unit` runs the tests); validation cases are inline YAML
 * given to fnconfig_parse under a made-up file name. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "krm/fnconfig.h"

#define FIX "tests/fixtures/fnconfig"
#define DEFAULT_PREFIX "ghcr.io/kptdev/krm-functions-catalog/"
#define HEAD "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"

/* ------------------------------------------------------------------------ */
/* Helpers                                                                   */

static fnconfig parse_ok(const char *yaml)
{
    fnconfig c = {0};
    buf err = {0};
    int rc = fnconfig_parse("fc.yaml", yaml, strlen(yaml), "/fns", &c, &err);
    cr_assert_eq(rc, 0, "fnconfig_parse failed: %s\ninput:\n%s", err.data, yaml);
    buf_free(&err);
    return c;
}

/* Parses inline YAML that must be rejected with exactly `want`. */
static void expect_error(const char *yaml, const char *want)
{
    fnconfig c = {0};
    buf err = {0};
    int rc = fnconfig_parse("fc.yaml", yaml, strlen(yaml), "/fns", &c, &err);
    cr_assert_eq(rc, -1, "accepted input that should fail with: %s", want);
    cr_assert_str_eq(err.data, want);
    cr_assert_eq(c.n, 0);
    buf_free(&err);
    fnconfig_free(&c);
}

static fnconfig load_ok(const char *path, const char *functions_dir)
{
    fnconfig c;
    buf err = {0};
    int rc = fnconfig_load(path, functions_dir, &c, &err);
    cr_assert_eq(rc, 0, "fnconfig_load(%s) failed: %s", path, err.data);
    buf_free(&err);
    return c;
}

static void expect_load_error(const char *const *paths, size_t n, const char *want)
{
    fnconfig c = {(fnconfig_entry *)1, 99};   /* must be emptied */
    buf err = {0};
    cr_assert_eq(fnconfig_load_many(paths, n, "/fns", &c, &err), -1);
    cr_assert_str_eq(err.data, want);
    cr_assert_eq(c.n, 0);
    cr_assert_null(c.entries);
    buf_free(&err);
}

/* A FunctionConfig named "fn" with the given spec body (indented 2). */
#define FC(spec) HEAD "metadata:\n  name: fn\nspec:\n" spec
#define E(path_and_msg) "fc.yaml: document 1 (FunctionConfig \"fn\"): " path_and_msg

/* ------------------------------------------------------------------------ */
/* Loading valid files and directories                                       */

Test(fnconfig, load_file_multi_document)
{
    fnconfig c = load_ok(FIX "/multi.yaml", "/opt/functions/");
    cr_assert_eq(c.n, 2);
    const fnconfig_entry *e = &c.entries[0];
    cr_assert_str_eq(e->file, FIX "/multi.yaml");
    cr_assert_eq(e->doc, 1);
    cr_assert_str_eq(e->name, "set-labels");
    cr_assert_null(e->namespace);
    cr_assert_str_eq(e->image, "set-labels");
    cr_assert_eq(e->n_prefixes, 0);
    cr_assert(e->binary.present);
    cr_assert_eq(e->binary.n_tags, 1);
    cr_assert_str_eq(e->binary.tags[0], "v0.2.0");
    /* joined to --functions and cleaned, as filepath.Abs(filepath.Join()) */
    cr_assert_str_eq(e->binary.path, "/opt/bin/set-labels");
    cr_assert_not(e->pod.present);
    cr_assert_not(e->go.present);

    e = &c.entries[1];
    cr_assert_eq(e->doc, 2);
    cr_assert_str_eq(e->name, "set-annotations");
    cr_assert_eq(e->n_prefixes, 1);
    cr_assert_str_eq(e->prefixes[0], "docker.io/myorg/");
    cr_assert_str_eq(e->binary.path, "/opt/functions/set-annotations");
    fnconfig_free(&c);
    cr_assert_null(c.entries);
    cr_assert_eq(c.n, 0);
}

Test(fnconfig, load_directory)
{
    fnconfig c = load_ok(FIX "/dir", "/home/nonroot/functions");
    /* sorted by name; .hidden.yaml, README.txt and nested/ are not read;
     * the ConfigMap and the v1alpha2 object are skipped */
    cr_assert_eq(c.n, 4);
    cr_assert_str_eq(c.entries[0].name, "set-namespace");
    cr_assert_str_eq(c.entries[0].file, FIX "/dir/10-set-namespace.yaml");
    cr_assert_str_eq(c.entries[1].name, "apply-setters");
    cr_assert_str_eq(c.entries[1].file, FIX "/dir/20-mixed.yml");
    cr_assert_eq(c.entries[1].doc, 2);
    cr_assert_str_eq(c.entries[2].name, "starlark");
    cr_assert_eq(c.entries[2].doc, 4);
    cr_assert_str_eq(c.entries[3].name, "search-replace");

    const fnconfig_entry *ns = &c.entries[0];
    cr_assert_str_eq(ns->namespace, "porch-fn-system");
    cr_assert_eq(ns->n_prefixes, 2);
    cr_assert_str_eq(ns->prefixes[0], "");
    cr_assert_str_eq(ns->prefixes[1], "registry.example.com/mirror/");
    cr_assert_eq(ns->binary.n_tags, 2);
    cr_assert_str_eq(ns->binary.tags[1], "v0.4");
    cr_assert_str_eq(ns->binary.path, "/home/nonroot/functions/set-namespace");
    cr_assert(ns->pod.present);
    cr_assert_eq(ns->pod.n_tags, 1);
    cr_assert_eq(ns->pod.ttl_ns, 600 * INT64_C(1000000000));
    cr_assert_eq(ns->pod.max_parallel, 0);
    cr_assert_eq(ns->pod.queue_len, 0);
    cr_assert_not(ns->pod.has_template_overrides);

    const fnconfig_entry *as = &c.entries[1];
    cr_assert_not(as->binary.present);
    cr_assert(as->pod.present);
    cr_assert_eq(as->pod.n_tags, 0);
    cr_assert_eq(as->pod.ttl_ns, 5400 * INT64_C(1000000000));
    cr_assert_eq(as->pod.max_parallel, 3);
    cr_assert_eq(as->pod.queue_len, 5);
    cr_assert(as->pod.has_template_overrides);
    cr_assert_str_eq(as->pod.service_account, "fn-runner");

    const fnconfig_entry *st = &c.entries[2];
    cr_assert(st->go.present);
    cr_assert_str_eq(st->go.tags[0], "v0.4.3");
    cr_assert_str_eq(st->go.id, "starlark-id");

    cr_assert_str_eq(c.entries[3].binary.path, "/usr/local/bin/search-replace");
    fnconfig_free(&c);
}

Test(fnconfig, load_directory_with_trailing_slash)
{
    fnconfig c = load_ok(FIX "/dir/", "/f");
    cr_assert_eq(c.n, 4);
    cr_assert_str_eq(c.entries[0].file, FIX "/dir/10-set-namespace.yaml");
    fnconfig_free(&c);
}

Test(fnconfig, load_many_in_order)
{
    const char *paths[] = {FIX "/multi.yaml", FIX "/dir"};
    fnconfig c;
    buf err = {0};
    cr_assert_eq(fnconfig_load_many(paths, 2, "/f", &c, &err), 0, "%s", err.data);
    cr_assert_eq(c.n, 6);
    cr_assert_str_eq(c.entries[0].name, "set-labels");
    cr_assert_str_eq(c.entries[2].name, "set-namespace");
    fnconfig_free(&c);
}

Test(fnconfig, relative_functions_dir_is_made_absolute)
{
    char cwd[PATH_MAX], want[PATH_MAX + 64];
    cr_assert_not_null(getcwd(cwd, sizeof cwd));
    fnconfig c = load_ok(FIX "/multi.yaml", "./functions");
    snprintf(want, sizeof want, "%s/functions/set-annotations", strcmp(cwd, "/") ? cwd : "");
    cr_assert_str_eq(c.entries[1].binary.path, want);
    snprintf(want, sizeof want, "%s/bin/set-labels", strcmp(cwd, "/") ? cwd : "");
    cr_assert_str_eq(c.entries[0].binary.path, want);
    fnconfig_free(&c);

    c = load_ok(FIX "/multi.yaml", NULL);   /* no --functions: the current directory */
    snprintf(want, sizeof want, "%s/set-annotations", strcmp(cwd, "/") ? cwd : "");
    cr_assert_str_eq(c.entries[1].binary.path, want);
    fnconfig_free(&c);
}

Test(fnconfig, dotdot_stops_at_root)
{
    fnconfig c = parse_ok(FC("  image: x\n  binaryExecutor: {tags: [v1], path: ../../../../x//y/.}\n"));
    cr_assert_str_eq(c.entries[0].binary.path, "/x/y");
    fnconfig_free(&c);
}

Test(fnconfig, other_documents_are_ignored)
{
    fnconfig c = parse_ok(
        "---\n"                                   /* empty document */
        "---\n- a list\n"
        "---\njust a scalar\n"
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\nspec: {bogus: 1}\n"
        "---\napiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nspec: {}\n"
        "---\nkind: FunctionConfig\nspec: {nothing: here}\n"      /* no apiVersion */
        "---\napiVersion: [config.porch.kpt.dev/v1alpha1]\nkind: FunctionConfig\n"
        "---\n" HEAD "metadata: {name: real}\nspec: {image: real, podExecutor: {}}\n"
        "...\n");
    cr_assert_eq(c.n, 1);
    cr_assert_str_eq(c.entries[0].name, "real");
    cr_assert_eq(c.entries[0].doc, 8);
    fnconfig_free(&c);
}

Test(fnconfig, empty_input_and_empty_directory)
{
    fnconfig c = parse_ok("");
    cr_assert_eq(c.n, 0);
    fnconfig_free(&c);
    c = parse_ok("# only a comment\n");
    cr_assert_eq(c.n, 0);
    fnconfig_free(&c);

    char dir[] = "/tmp/fnconfig-empty-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    c = load_ok(dir, NULL);
    cr_assert_eq(c.n, 0);
    fnconfig_free(&c);
    rmdir(dir);
}

/* A FIFO in a FunctionConfig directory is refused by name, never opened in
 * a way that could wait for a writer, nor skipped unseen. */
Test(fnconfig, fifo_in_directory_is_refused)
{
    char dir[] = "/tmp/fnconfig-fifo-XXXXXX", fifo[64];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(fifo, sizeof fifo, "%s/functions.yaml", dir);
    cr_assert_eq(mkfifo(fifo, 0644), 0);
    fnconfig c = {0};
    buf err = {0};
    cr_assert_eq(fnconfig_load(dir, "/fns", &c, &err), -1);
    char want[256];
    snprintf(want, sizeof want, "%s: is a FIFO (named pipe), not a regular file: only regular "
             "files are read (a read could wait forever or never end)", fifo);
    cr_assert_str_eq(err.data, want);
    buf_free(&err);
    unlink(fifo);
    rmdir(dir);
}

Test(fnconfig, null_fields_count_as_absent)
{
    fnconfig c = parse_ok(HEAD "metadata:\n  name: fn\n  namespace: ~\n"
                          "spec:\n  image: fn\n  prefixes: null\n  binaryExecutor:\n"
                          "  goExecutor: {tags: [v1], id: null}\n"
                          "  podExecutor: {timeToLive: null, maxParallelExecutions: ~, "
                          "templateOverrides: null}\n");
    const fnconfig_entry *e = &c.entries[0];
    cr_assert_null(e->namespace);
    cr_assert_eq(e->n_prefixes, 0);
    cr_assert_not(e->binary.present);
    cr_assert(e->go.present);
    cr_assert_null(e->go.id);
    cr_assert(e->pod.present);
    cr_assert_eq(e->pod.ttl_ns, 0);
    cr_assert_not(e->pod.has_template_overrides);
    fnconfig_free(&c);
}

Test(fnconfig, durations)
{
    static const struct { const char *text; int64_t ns; } cases[] = {
        {"30m", 1800 * INT64_C(1000000000)},
        {"\"1h30m\"", 5400 * INT64_C(1000000000)},
        {"90s", 90 * INT64_C(1000000000)},
        {"1.5s", 1500 * INT64_C(1000000)},
        {"'0'", 0},
        {"-5m", 0},   /* accepted; Porch uses the default when not > 0 */
        {"+2m", 120 * INT64_C(1000000000)},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char yaml[256];
        snprintf(yaml, sizeof yaml, FC("  image: fn\n  podExecutor: {timeToLive: %s}\n"), cases[i].text);
        fnconfig c = parse_ok(yaml);
        cr_assert_eq(c.entries[0].pod.ttl_ns, cases[i].ns, "%s", cases[i].text);
        fnconfig_free(&c);
    }
}

Test(fnconfig, integers_in_yaml_forms)
{
    fnconfig c = parse_ok(FC("  image: fn\n  podExecutor: {maxParallelExecutions: 0x10, "
                             "preferredMaxQueueLength: 1_000}\n"));
    cr_assert_eq(c.entries[0].pod.max_parallel, 16);
    cr_assert_eq(c.entries[0].pod.queue_len, 1000);
    fnconfig_free(&c);
}

Test(fnconfig, opaque_metadata_and_status_are_accepted)
{
    fnconfig c = parse_ok(HEAD "metadata:\n  name: fn\n  labels: {a: b}\n  annotations: {x: y}\n"
                          "  finalizers: [f]\n  42: numeric key\n"
                          "spec: {image: fn, podExecutor: {templateOverrides: {securityContext: "
                          "{runAsUser: 1}, initContainer: {env: []}}}}\n"
                          "status: {error: old, functionRunnerObservedGeneration: 3}\n");
    cr_assert(c.entries[0].pod.has_template_overrides);
    cr_assert_null(c.entries[0].pod.service_account);
    fnconfig_free(&c);
}

Test(fnconfig, min_ready_pods_annotation)
{
    fnconfig c = parse_ok(HEAD "metadata:\n  name: fn\n  annotations: {fn.kpt.dev/min-ready-pods: \"3\", "
                          "x: y}\nspec: {image: fn, podExecutor: {tags: [v1]}}\n"
                          "---\n" HEAD "metadata: {name: other}\nspec: {image: other, podExecutor: {}}\n");
    cr_assert_eq(c.entries[0].pod.min_ready, 3);
    cr_assert_eq(c.entries[1].pod.min_ready, -1);   /* absent: the runner's flag */
    fnconfig_free(&c);
    const char *bad[] = {"\"-1\"", "\"65\"", "\"two\"", "\"\"", "\" 2\""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char yaml[512], want[512];
        snprintf(yaml, sizeof yaml, HEAD "metadata:\n  name: fn\n  annotations: "
                 "{fn.kpt.dev/min-ready-pods: %s}\nspec: {image: fn, podExecutor: {}}\n", bad[i]);
        char shown[16];
        snprintf(shown, sizeof shown, "%.*s", (int)strlen(bad[i]) - 2, bad[i] + 1);
        snprintf(want, sizeof want, "fc.yaml: document 1 (FunctionConfig \"fn\"): metadata.annotations."
                 "fn.kpt.dev/min-ready-pods: want a whole number 0-64 in a string, not \"%s\"", shown);
        expect_error(yaml, want);
    }
    expect_error(HEAD "metadata:\n  name: fn\n  annotations: {fn.kpt.dev/min-ready-pods: 2}\n"
                 "spec: {image: fn, podExecutor: {}}\n",
                 "fc.yaml: document 1 (FunctionConfig \"fn\"): metadata.annotations.fn.kpt.dev/"
                 "min-ready-pods: must be a string (annotations are strings: \"2\"), not a number");
}

/* fnconfig_annotation alone, as a FunctionConfig from the API would call it. */
Test(fnconfig, sandbox_annotations)
{
    fnconfig_entry e = {.pod.min_ready = -1, .sandbox = FNCONFIG_SANDBOX_UNSET};
    buf why = {0};
    cr_assert_eq(fnconfig_annotation(&e, "fn.kpt.dev/sandbox-network", "true", &why), 1);
    cr_assert_eq(fnconfig_annotation(&e, "fn.kpt.dev/sandbox-memory", "2Gi", &why), 1);
    cr_assert_eq(fnconfig_annotation(&e, "fn.kpt.dev/sandbox-file-size", "300Mi", &why), 1);
    cr_assert_eq(fnconfig_annotation(&e, "fn.kpt.dev/sandbox-cpu", "600", &why), 1);
    cr_assert_eq(fnconfig_annotation(&e, "fn.kpt.dev/sandbox-processes", "4096", &why), 1);
    cr_assert_eq(fnconfig_annotation(&e, "fn.kpt.dev/sandbox-open-files", "65536", &why), 1);
    cr_assert_eq(fnconfig_annotation(&e, "fn.kpt.dev/min-ready-pods", "2", &why), 1);
    cr_assert_eq(fnconfig_annotation(&e, "example.com/other", "anything", &why), 0);
    cr_assert_eq(why.len, 0);
    cr_assert_eq(e.sandbox.network, 1);
    cr_assert_eq(e.sandbox.memory_mib, 2048);
    cr_assert_eq(e.sandbox.file_size_mib, 300);
    cr_assert_eq(e.sandbox.cpu_seconds, 600);
    cr_assert_eq(e.sandbox.processes, 4096);
    cr_assert_eq(e.sandbox.open_files, 65536);
    cr_assert_eq(e.pod.min_ready, 2);
    const char *bad[][2] = {
        {"fn.kpt.dev/sandbox-memory", "1024"}, {"fn.kpt.dev/sandbox-memory", "1Ki"},
        {"fn.kpt.dev/sandbox-memory", "Gi"}, {"fn.kpt.dev/sandbox-memory", "2048Ti"},
        {"fn.kpt.dev/sandbox-memory", "99999999999999999999999Mi"},
        {"fn.kpt.dev/sandbox-network", "True"}, {"fn.kpt.dev/sandbox-cpu", "0"},
        {"fn.kpt.dev/sandbox-processes", "299"}, {"fn.kpt.dev/sandbox-open-files", "15"},
        {"fn.kpt.dev/sandbox-", "1"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        buf_reset(&why);
        cr_assert_eq(fnconfig_annotation(&e, bad[i][0], bad[i][1], &why), -1, "%s: %s", bad[i][0],
                     bad[i][1]);
        cr_assert(why.len > 0);
    }
    cr_assert_eq(e.sandbox.memory_mib, 2048);   /* a refused value changes nothing */
    buf_free(&why);
}

/* ------------------------------------------------------------------------ */
/* Validation errors                                                         */

Test(fnconfig, missing_name)
{
    expect_error(HEAD "metadata: {namespace: x}\nspec: {image: fn, podExecutor: {}}\n",
                 "fc.yaml: document 1 (FunctionConfig): metadata.name: required");
    expect_error(HEAD "spec: {image: fn, podExecutor: {}}\n",
                 "fc.yaml: document 1 (FunctionConfig): metadata.name: required");
    expect_error(HEAD "metadata: {name: \"\"}\nspec: {image: fn, podExecutor: {}}\n",
                 "fc.yaml: document 1 (FunctionConfig): metadata.name: must not be empty");
    expect_error(HEAD "metadata: {name: 12}\nspec: {image: fn, podExecutor: {}}\n",
                 "fc.yaml: document 1 (FunctionConfig): metadata.name: must be a string, not a number");
    expect_error(HEAD "metadata: [a]\n",
                 "fc.yaml: document 1 (FunctionConfig): metadata: must be a mapping, not a list");
}

Test(fnconfig, missing_image)
{
    expect_error(FC("  podExecutor: {}\n"), E("spec.image: required"));
    expect_error(FC("  image: ''\n  podExecutor: {}\n"), E("spec.image: must not be empty"));
    expect_error(HEAD "metadata:\n  name: fn\n", E("spec.image: required"));
    expect_error(HEAD "metadata:\n  name: fn\nspec: null\n", E("spec.image: required"));
    expect_error(FC("  image: ghcr.io/kptdev/krm-functions-catalog/set-namespace\n  podExecutor: {}\n"),
                 E("spec.image: must be the short image name without '/', ':' or '@' (e.g. "
                   "\"set-namespace\"), not \"ghcr.io/kptdev/krm-functions-catalog/set-namespace\""));
    expect_error(FC("  image: set-namespace:v1\n  podExecutor: {}\n"),
                 E("spec.image: must be the short image name without '/', ':' or '@' (e.g. "
                   "\"set-namespace\"), not \"set-namespace:v1\""));
}

Test(fnconfig, binary_tags_and_path)
{
    expect_error(FC("  image: fn\n  binaryExecutor: {tags: [], path: x}\n"),
                 E("spec.binaryExecutor.tags: must list at least one tag"));
    expect_error(FC("  image: fn\n  binaryExecutor: {path: x}\n"),
                 E("spec.binaryExecutor.tags: must list at least one tag"));
    expect_error(FC("  image: fn\n  binaryExecutor: {tags: [v1, ''], path: x}\n"),
                 E("spec.binaryExecutor.tags[1]: must not be empty"));
    expect_error(FC("  image: fn\n  binaryExecutor: {tags: [v1]}\n"),
                 E("spec.binaryExecutor.path: required"));
    expect_error(FC("  image: fn\n  binaryExecutor: {tags: [v1], path: ''}\n"),
                 E("spec.binaryExecutor.path: must not be empty"));
    expect_error(FC("  image: fn\n  binaryExecutor: {}\n"),
                 E("spec.binaryExecutor.tags: must list at least one tag"));
    expect_error(FC("  image: fn\n  goExecutor: {id: x}\n"),
                 E("spec.goExecutor.tags: must list at least one tag"));
    expect_error(FC("  image: fn\n  podExecutor: {tags: ['']}\n"),
                 E("spec.podExecutor.tags[0]: must not be empty"));
}

Test(fnconfig, bad_tags_in_file_names_the_document)
{
    const char *paths[] = {FIX "/bad-tags.yaml"};
    expect_load_error(paths, 1, FIX "/bad-tags.yaml: document 2 (FunctionConfig \"set-namespace\"): "
                      "spec.binaryExecutor.tags: must list at least one tag");
}

Test(fnconfig, unknown_fields)
{
    expect_error(FC("  image: fn\n  podExecutor: {}\n  binaryExecuter: {}\n"),
                 E("spec.binaryExecuter: unknown field"));
    expect_error(FC("  image: fn\n  podExecutor: {ttl: 5m}\n"),
                 E("spec.podExecutor.ttl: unknown field"));
    expect_error(FC("  image: fn\n  binaryExecutor: {tags: [v1], path: x, args: [a]}\n"),
                 E("spec.binaryExecutor.args: unknown field"));
    expect_error(FC("  image: fn\n  goExecutor: {tags: [v1], name: x}\n"),
                 E("spec.goExecutor.name: unknown field"));
    expect_error(FC("  image: fn\n  podExecutor: {templateOverrides: {nodeSelector: {}}}\n"),
                 E("spec.podExecutor.templateOverrides.nodeSelector: unknown field"));
    expect_error(FC("  image: fn\n  podExecutor: {}\n") "extra: 1\n", E("extra: unknown field"));
    expect_error(FC("  image: fn\n  podExecutor: {}\n  7: x\n"),
                 E("spec: field names must be strings, not a number"));
}

Test(fnconfig, duplicate_fields)
{
    expect_error(FC("  image: fn\n  image: other\n  podExecutor: {}\n"), E("spec.image: duplicate field"));
    expect_error(HEAD "metadata: {name: fn, name: fn2}\n", E("metadata.name: duplicate field"));
}

Test(fnconfig, wrong_types)
{
    expect_error(FC("  image: 42\n  podExecutor: {}\n"), E("spec.image: must be a string, not a number"));
    expect_error(FC("  image: yes\n  podExecutor: {}\n"), E("spec.image: must be a string, not a boolean"));
    expect_error(FC("  image: [a]\n  podExecutor: {}\n"), E("spec.image: must be a string, not a list"));
    expect_error(FC("  image: fn\n  prefixes: ghcr.io/\n  podExecutor: {}\n"),
                 E("spec.prefixes: must be a list of strings, not a string"));
    expect_error(FC("  image: fn\n  prefixes: [ok/, {a: b}]\n  podExecutor: {}\n"),
                 E("spec.prefixes[1]: must be a string, not a mapping"));
    expect_error(FC("  image: fn\n  prefixes: [~]\n  podExecutor: {}\n"),
                 E("spec.prefixes[0]: must be a string, not null"));
    expect_error(FC("  image: fn\n  binaryExecutor: {tags: [1.0], path: x}\n"),
                 E("spec.binaryExecutor.tags[0]: must be a string, not a number"));
    expect_error(FC("  image: fn\n  binaryExecutor: {tags: v1, path: x}\n"),
                 E("spec.binaryExecutor.tags: must be a list of strings, not a string"));
    expect_error(FC("  image: fn\n  binaryExecutor: [tags]\n"),
                 E("spec.binaryExecutor: must be a mapping, not a list"));
    expect_error(FC("  image: fn\n  podExecutor: true\n"),
                 E("spec.podExecutor: must be a mapping, not a boolean"));
    expect_error(FC("  image: fn\n  podExecutor: {maxParallelExecutions: \"2\"}\n"),
                 E("spec.podExecutor.maxParallelExecutions: must be an integer, not a string"));
    expect_error(FC("  image: fn\n  podExecutor: {preferredMaxQueueLength: 1.5}\n"),
                 E("spec.podExecutor.preferredMaxQueueLength: must be an integer, not 1.5"));
    expect_error(FC("  image: fn\n  podExecutor: {maxParallelExecutions: -1}\n"),
                 E("spec.podExecutor.maxParallelExecutions: must be between 0 and 2147483647, not -1"));
    expect_error(FC("  image: fn\n  podExecutor: {maxParallelExecutions: 99999999999999999999}\n"),
                 E("spec.podExecutor.maxParallelExecutions: must be an integer, not 99999999999999999999"));
    expect_error(FC("  image: fn\n  podExecutor: {templateOverrides: {serviceAccountName: [a]}}\n"),
                 E("spec.podExecutor.templateOverrides.serviceAccountName: must be a string, not a list"));
    expect_error(FC("  image: fn\n  podExecutor: {templateOverrides: {container: x}}\n"),
                 E("spec.podExecutor.templateOverrides.container: must be a mapping, not a string"));
    expect_error(FC("  image: fn\n  goExecutor: {tags: [v1], id: 3}\n"),
                 E("spec.goExecutor.id: must be a string, not a number"));
    expect_error(HEAD "metadata: {name: fn}\nspec: [image]\n", E("spec: must be a mapping, not a list"));
    expect_error(FC("  image: \"f\\0n\"\n  podExecutor: {}\n"),
                 E("spec.image: must not contain NUL characters"));
}

Test(fnconfig, no_executor)
{
    static const char want[] = E("spec: At least one configuration must be specified "
                                 "(podExecutor, binaryExecutor or goExecutor)");
    expect_error(FC("  image: fn\n"), want);
    expect_error(FC("  image: fn\n  prefixes: ['']\n  binaryExecutor: null\n  podExecutor: ~\n"), want);
}

Test(fnconfig, bad_durations)
{
    static const char *const bad[] = {"abc", "5x", "1h30", "''", "1..5s"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char yaml[256], want[512];
        snprintf(yaml, sizeof yaml, FC("  image: fn\n  podExecutor: {timeToLive: %s}\n"), bad[i]);
        const char *shown = strcmp(bad[i], "''") == 0 ? "" : bad[i];
        snprintf(want, sizeof want, E("spec.podExecutor.timeToLive: invalid duration \"%s\" "
                                      "(want e.g. \"30m\", \"1h30m\", \"90s\")"), shown);
        expect_error(yaml, want);
    }
    /* a bare number is an int to YAML, and Go's ParseDuration wants a unit */
    expect_error(FC("  image: fn\n  podExecutor: {timeToLive: 30}\n"),
                 E("spec.podExecutor.timeToLive: must be a duration string such as \"30m\", not a number"));
    expect_error(FC("  image: fn\n  podExecutor: {timeToLive: \"30\"}\n"),
                 E("spec.podExecutor.timeToLive: invalid duration \"30\" "
                   "(want e.g. \"30m\", \"1h30m\", \"90s\")"));
}

/* A message quotes a long value whole (it was cut at 1 KiB). */
Test(fnconfig, a_long_bad_value_is_quoted_whole)
{
    buf value = {0}, yaml = {0}, want = {0};
    for (int i = 0; i < 2000; i++)
        buf_append_str(&value, "x");
    buf_printf(&yaml, FC("  image: fn\n  podExecutor: {timeToLive: %s}\n"), value.data);
    buf_printf(&want, E("spec.podExecutor.timeToLive: invalid duration \"%s\" "
                        "(want e.g. \"30m\", \"1h30m\", \"90s\")"), value.data);
    expect_error(yaml.data, want.data);
    buf_free(&value);
    buf_free(&yaml);
    buf_free(&want);
}

Test(fnconfig, error_names_document_number)
{
    expect_error("apiVersion: v1\nkind: ConfigMap\n---\n---\n" HEAD
                 "metadata: {name: third}\nspec: {image: x}\n",
                 "fc.yaml: document 3 (FunctionConfig \"third\"): spec: At least one configuration "
                 "must be specified (podExecutor, binaryExecutor or goExecutor)");
}

/* ------------------------------------------------------------------------ */
/* YAML syntax and file errors                                               */

Test(fnconfig, yaml_syntax_error_has_line_and_column)
{
    const char *paths[] = {FIX "/bad-syntax.yaml"};
    expect_load_error(paths, 1, FIX "/bad-syntax.yaml: document 2: line 13, column 2: "
                      "did not find expected key (while parsing a block mapping at line 9, column 1)");
    expect_error("a: [1, 2\n", "fc.yaml: document 1: line 2, column 1: did not find expected ',' or ']' "
                 "(while parsing a flow sequence at line 1, column 4)");
    expect_error("a: *nowhere\n", "fc.yaml: document 1: line 1, column 4: found undefined alias");
}

Test(fnconfig, entries_of_a_failed_parse_are_dropped)
{
    fnconfig c = parse_ok(HEAD "metadata: {name: kept}\nspec: {image: kept, podExecutor: {}}\n");
    buf err = {0};
    const char *more = HEAD "metadata: {name: a}\nspec: {image: a, podExecutor: {}}\n---\n"
                       HEAD "metadata: {name: b}\nspec: {image: b}\n";
    cr_assert_eq(fnconfig_parse("more.yaml", more, strlen(more), NULL, &c, &err), -1);
    cr_assert_eq(c.n, 1);
    cr_assert_str_eq(c.entries[0].name, "kept");
    /* "a" was dropped: it is no duplicate now (the duplicate check's sets
     * still hold its name), and "kept" still is one */
    buf_reset(&err);
    const char *again = HEAD "metadata: {name: a}\nspec: {image: a, podExecutor: {}}\n";
    cr_assert_eq(fnconfig_parse("again.yaml", again, strlen(again), NULL, &c, &err), 0, "%s",
                 err.data);
    cr_assert_eq(c.n, 2);
    const char *dup = HEAD "metadata: {name: kept}\nspec: {image: other, podExecutor: {}}\n";
    cr_assert_eq(fnconfig_parse("dup.yaml", dup, strlen(dup), NULL, &c, &err), -1);
    cr_assert(strstr(err.data, "duplicate: FunctionConfig \"kept\" is already defined"), "%s",
              err.data);
    buf_free(&err);
    fnconfig_free(&c);
}

Test(fnconfig, missing_path)
{
    const char *paths[] = {FIX "/no-such-file.yaml"};
    expect_load_error(paths, 1, FIX "/no-such-file.yaml: No such file or directory");
    /* an error in the second path also empties what the first loaded */
    const char *two[] = {FIX "/multi.yaml", FIX "/no-such-dir"};
    expect_load_error(two, 2, FIX "/no-such-dir: No such file or directory");
}

Test(fnconfig, file_too_large)
{
    char path[] = "/tmp/fnconfig-big-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 5 * 1024; i++)
        fprintf(f, "# %1020d\n", i);   /* 1 KiB lines, 5 MiB */
    fclose(f);
    char want[128];
    snprintf(want, sizeof want, "%s: is larger than 4194304 bytes (it has 5237760)", path);
    const char *paths[] = {path};
    expect_load_error(paths, 1, want);
    unlink(path);
}

/* ------------------------------------------------------------------------ */
/* Duplicates                                                                */

Test(fnconfig, duplicate_name_across_files)
{
    const char *paths[] = {FIX "/dir", FIX "/dup-name.yaml"};
    expect_load_error(paths, 2, FIX "/dup-name.yaml: document 2 (FunctionConfig \"set-namespace\"): "
                      "metadata.name: duplicate: FunctionConfig \"set-namespace\" is already defined in "
                      FIX "/dir/10-set-namespace.yaml document 1");
}

Test(fnconfig, duplicate_image_across_files)
{
    const char *paths[] = {FIX "/multi.yaml", FIX "/dup-image.yaml"};
    expect_load_error(paths, 2, FIX "/dup-image.yaml: document 1 (FunctionConfig \"annotations\"): "
                      "spec.image: duplicate: image \"set-annotations\" is already configured by "
                      FIX "/multi.yaml document 2 (FunctionConfig \"set-annotations\")");
}

Test(fnconfig, duplicate_in_one_file)
{
    expect_error(HEAD "metadata: {name: a, namespace: one}\nspec: {image: a, podExecutor: {}}\n---\n"
                 HEAD "metadata: {name: a, namespace: two}\nspec: {image: b, podExecutor: {}}\n",
                 "fc.yaml: document 2 (FunctionConfig \"a\"): metadata.name: duplicate: "
                 "FunctionConfig \"a\" is already defined in fc.yaml document 1");
}

/* ------------------------------------------------------------------------ */
/* Matching                                                                  */

static fnconfig match_config(void)
{
    return parse_ok(
        HEAD "metadata: {name: set-namespace}\n"
        "spec: {image: set-namespace, prefixes: [''], binaryExecutor: {tags: [v0.4.1, v0.4], path: /b/sn}}\n"
        "---\n" HEAD "metadata: {name: set-labels}\n"
        "spec: {image: set-labels, prefixes: [docker.io/myorg/, 'quay.io/team'],"
        " binaryExecutor: {tags: [v1], path: /b/sl}}\n"
        "---\n" HEAD "metadata: {name: anywhere}\n"
        "spec: {image: anywhere, binaryExecutor: {tags: [latest, v2], path: /b/any}}\n"
        "---\n" HEAD "metadata: {name: pod-only}\n"
        "spec: {image: pod-only, podExecutor: {}}\n");
}

static const char *match(const fnconfig *c, const char *image)
{
    const fnconfig_entry *e = fnconfig_match_binary(c, image, DEFAULT_PREFIX, NULL);
    return e ? e->name : NULL;
}

Test(fnconfig, match_default_prefix)
{
    fnconfig c = match_config();
    const char *tag = NULL;
    const fnconfig_entry *e = fnconfig_match_binary(
        &c, "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1", DEFAULT_PREFIX, &tag);
    cr_assert_not_null(e);
    cr_assert_str_eq(e->binary.path, "/b/sn");
    cr_assert_str_eq(tag, "v0.4.1");
    cr_assert_str_eq(match(&c, "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4"), "set-namespace");
    /* deeper under the prefix: Porch's regex is a prefix match too */
    cr_assert_str_eq(match(&c, "ghcr.io/kptdev/krm-functions-catalog/sub/set-namespace:v0.4"),
                     "set-namespace");
    cr_assert_null(match(&c, "docker.io/other/set-namespace:v0.4.1"));
    /* path boundary: not a prefix of another repository name */
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog-other/set-namespace:v0.4.1"));
    cr_assert_null(match(&c, "ghcr.io/kptdev/set-namespace:v0.4.1"));
    /* the default prefix given without its trailing '/' works the same */
    cr_assert_not_null(fnconfig_match_binary(
        &c, "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.1",
        "ghcr.io/kptdev/krm-functions-catalog", NULL));
    fnconfig_free(&c);
}

Test(fnconfig, match_explicit_prefixes)
{
    fnconfig c = match_config();
    cr_assert_str_eq(match(&c, "docker.io/myorg/set-labels:v1"), "set-labels");
    cr_assert_str_eq(match(&c, "docker.io/myorg/team/set-labels:v1"), "set-labels");
    cr_assert_null(match(&c, "docker.io/myorganisation/set-labels:v1"));
    cr_assert_null(match(&c, "docker.io/set-labels:v1"));
    /* a prefix without a trailing '/' is a plain string prefix, as in Porch */
    cr_assert_str_eq(match(&c, "quay.io/team/set-labels:v1"), "set-labels");
    cr_assert_str_eq(match(&c, "quay.io/teamwork/set-labels:v1"), "set-labels");
    /* "" is not among this entry's prefixes: the default prefix is not accepted */
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/set-labels:v1"));
    fnconfig_free(&c);
}

Test(fnconfig, match_empty_prefix_list_accepts_all)
{
    fnconfig c = match_config();
    cr_assert_str_eq(match(&c, "anywhere:v2"), "anywhere");
    cr_assert_str_eq(match(&c, "example.com/x/y/anywhere:v2"), "anywhere");
    cr_assert_str_eq(match(&c, "localhost:5000/anywhere:v2"), "anywhere");
    fnconfig_free(&c);
}

Test(fnconfig, match_tags)
{
    fnconfig c = match_config();
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.2"));
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/set-namespace:V0.4.1"));
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/set-namespace:"));
    /* no tag means latest */
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/set-namespace"));
    const char *tag = NULL;
    const fnconfig_entry *e = fnconfig_match_binary(&c, "example.com/anywhere", DEFAULT_PREFIX, &tag);
    cr_assert_not_null(e);
    cr_assert_str_eq(tag, "latest");
    /* a registry port is not a tag */
    cr_assert_str_eq(match(&c, "localhost:5000/anywhere"), "anywhere");
    cr_assert_null(match(&c, "localhost:5000/anywhere:v3"));
    fnconfig_free(&c);
}

Test(fnconfig, match_digest_never)
{
    fnconfig c = match_config();
    cr_assert_null(match(&c, "example.com/anywhere@sha256:0123456789abcdef"));
    cr_assert_null(match(&c, "example.com/anywhere:v2@sha256:0123456789abcdef"));
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/set-namespace@sha256:v0.4.1"));
    fnconfig_free(&c);
}

Test(fnconfig, match_short_names)
{
    fnconfig c = match_config();
    /* no '/': a non-empty prefix never accepts it, until resolved */
    cr_assert_null(match(&c, "set-namespace:v0.4.1"));
    buf img = {0};
    cr_assert_eq(fnconfig_resolve_image(DEFAULT_PREFIX, "set-namespace:v0.4.1", &img), 0);
    cr_assert_str_eq(match(&c, img.data), "set-namespace");
    buf_free(&img);
    /* no such function, or no binary executor */
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/apply-setters:v0.2"));
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/pod-only:latest"));
    cr_assert_null(match(&c, ""));
    cr_assert_null(match(&c, "ghcr.io/kptdev/krm-functions-catalog/"));
    fnconfig_free(&c);
}

Test(fnconfig, match_with_empty_default_prefix)
{
    fnconfig c = match_config();
    /* --default-image-prefix "": "" accepts everything (Porch's empty regex) */
    cr_assert_not_null(fnconfig_match_binary(&c, "set-namespace:v0.4", "", NULL));
    cr_assert_not_null(fnconfig_match_binary(&c, "docker.io/x/set-namespace:v0.4", NULL, NULL));
    fnconfig_free(&c);
}

Test(fnconfig, match_on_empty_config)
{
    fnconfig c = {0};
    cr_assert_null(fnconfig_match_binary(&c, "ghcr.io/a/b:c", DEFAULT_PREFIX, NULL));
    cr_assert_null(fnconfig_pod_params(&c, "ghcr.io/a/b:c"));
}

Test(fnconfig, resolve_image)
{
    static const struct { const char *prefix, *image, *want; } cases[] = {
        {DEFAULT_PREFIX, "set-namespace:v0.4.1", DEFAULT_PREFIX "set-namespace:v0.4.1"},
        {DEFAULT_PREFIX, "set-namespace", DEFAULT_PREFIX "set-namespace"},
        {"ghcr.io/kptdev/krm-functions-catalog", "set-namespace:v1",
         "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v1"},
        {DEFAULT_PREFIX, "docker.io/x/set-namespace:v1", "docker.io/x/set-namespace:v1"},
        {DEFAULT_PREFIX, "x/y", "x/y"},
        {"", "set-namespace:v1", "set-namespace:v1"},
        {NULL, "set-namespace:v1", "set-namespace:v1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        buf out = {0};
        cr_assert_eq(fnconfig_resolve_image(cases[i].prefix, cases[i].image, &out), 0);
        cr_assert_str_eq(out.data, cases[i].want);
        buf_free(&out);
    }
}

/* ------------------------------------------------------------------------ */
/* Pod parameters                                                            */

Test(fnconfig, pod_params_by_metadata_name)
{
    fnconfig c = parse_ok(
        HEAD "metadata: {name: apply-setters}\n"
        "spec: {image: setters-image, podExecutor: {timeToLive: 1h, maxParallelExecutions: 4,"
        " preferredMaxQueueLength: 2}}\n"
        "---\n" HEAD "metadata: {name: set-labels}\n"
        "spec: {image: set-labels, binaryExecutor: {tags: [v1], path: /b}}\n"
        "---\n" HEAD "metadata: {name: defaults}\n"
        "spec: {image: defaults, podExecutor: {tags: [v1]}}\n");
    const fnconfig_entry *e = fnconfig_pod_params(&c, "ghcr.io/kptdev/krm-functions-catalog/apply-setters:v0.2");
    cr_assert_not_null(e);
    cr_assert_eq(e->pod.ttl_ns, 3600 * INT64_C(1000000000));
    cr_assert_eq(e->pod.max_parallel, 4);
    cr_assert_eq(e->pod.queue_len, 2);
    /* any repository, tag or digest: only the short name counts */
    cr_assert_eq(fnconfig_pod_params(&c, "apply-setters"), e);
    cr_assert_eq(fnconfig_pod_params(&c, "docker.io/x/apply-setters@sha256:abc"), e);
    cr_assert_eq(fnconfig_pod_params(&c, "localhost:5000/apply-setters:v1@sha256:abc"), e);
    cr_assert_eq(fnconfig_pod_params(&c, "localhost:5000/apply-setters"), e);
    /* keyed by metadata.name, not spec.image */
    cr_assert_null(fnconfig_pod_params(&c, "ghcr.io/x/setters-image:v1"));
    /* an entry without podExecutor gives the defaults */
    cr_assert_null(fnconfig_pod_params(&c, "ghcr.io/x/set-labels:v1"));
    cr_assert_null(fnconfig_pod_params(&c, "ghcr.io/x/unknown:v1"));
    e = fnconfig_pod_params(&c, "defaults:v1");
    cr_assert_not_null(e);
    cr_assert_eq(e->pod.ttl_ns, 0);
    cr_assert_eq(e->pod.max_parallel, 0);
    cr_assert_eq(e->pod.queue_len, 0);
    fnconfig_free(&c);
}

/* libyaml's loader reads flow nesting in time growing with its depth
 * (lib/krm/yaml_depth.h): a nested config is refused before it is loaded. */
Test(fnconfig, deep_flow_nesting_is_refused_before_loading)
{
    buf in = {0};
    buf_append_str(&in, "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"
                        "metadata:\n  name: x\nspec:\n  templateOverrides: ");
    for (int i = 0; i < 100000; i++)
        buf_append(&in, "[", 1);
    for (int i = 0; i < 100000; i++)
        buf_append(&in, "]", 1);
    buf_append_str(&in, "\n");
    expect_error(in.data, "fc.yaml: document 1: line 6, column 150: flow collections ([...] or {...}) "
                          "nested more than 128 deep");
    buf_free(&in);
}
