/* Tests for pipeline: the steps runner-client builds from --fn flags and
 * Kptfiles (images, names, functionConfig, mutator/validator order) and
 * the one-line errors for what it cannot use. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pkg/pipeline.h"
#include "scoped_buf.h"

static char dir[64];

static void make_dir(void)
{
    strcpy(dir, "/tmp/pipeline_test.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(pipeline, .init = make_dir, .fini = remove_dir);

static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

static const char *config_text(const pl_step *s)
{
    static buf out;
    buf_free(&out);
    SCOPED_BUF err = {0};
    cr_assert_not_null(s->config);
    cr_assert_eq(rl_doc_emit(s->config, NULL, &out, &err), 0, "%s", err.data);
    return out.data;
}

Test(pipeline, fn_flags)
{
    pipeline p = { 0 };
    buf err = { 0 };
    cr_assert_eq(pipeline_add_fn(&p, "gcr.io/kpt-fn/set-labels:v0.1", &err), 0);
    cr_assert_eq(pipeline_add_fn(&p, "img=k=v,k2=a=b", &err), 0, "%s", err.data);
    cr_assert_eq(p.n_steps, 2);
    cr_assert_str_eq(p.steps[0].image, "gcr.io/kpt-fn/set-labels:v0.1");
    cr_assert_null(p.steps[0].config);
    cr_assert_str_eq(p.steps[1].image, "img");
    cr_assert_str_eq(config_text(&p.steps[1]),
                     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\n"
                     "data:\n  k: v\n  k2: \"a=b\"\n");
    cr_assert_eq(p.steps[1].validator, 0);
    pipeline_free(&p);
    buf_free(&err);
}

static void assert_fn_error(const char *spec, const char *want)
{
    pipeline p = { 0 };
    buf err = { 0 };
    cr_assert_eq(pipeline_add_fn(&p, spec, &err), -1, "%s accepted", spec);
    cr_assert(err.data && strstr(err.data, want), "\"%s\" lacks \"%s\"", err.data, want);
    pipeline_free(&p);
    buf_free(&err);
}

Test(pipeline, bad_fn_flags)
{
    assert_fn_error("", "no image");
    assert_fn_error("=k=v", "no image");
    assert_fn_error("img=", "want KEY=VALUE");
    assert_fn_error("img=k", "\"k\" is not KEY=VALUE");
    assert_fn_error("img=k=v,=v", "is not KEY=VALUE");
    /* images are checked as everywhere else (image_ref_check) */
    assert_fn_error("Bad Image!=k=v", "invalid image reference \"Bad Image!\": repository name \"Bad Image!\" "
                                      "must be lowercase in --fn \"Bad Image!=k=v\"");
}

Test(pipeline, kptfile_steps_in_order)
{
    write_file("cfg.yaml", "apiVersion: fn.example.com/v1\nkind: Custom\nspec: {x: 1}\n");
    const char *kptfile = write_file("Kptfile",
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: app}\npipeline:\n"
        "  validators:\n  - image: v1\n"
        "  mutators:\n  - image: m1\n    name: first\n    configMap: {a: b, x: 1}\n"
        "  - image: m2\n    configPath: cfg.yaml\n");
    (void)kptfile;
    pipeline p = { 0 };
    buf err = { 0 };
    cr_assert_eq(pipeline_load_kptfile(&p, dir, 6291456, &err), 0, "%s", err.data);
    cr_assert_eq(p.n_steps, 3);
    cr_assert_str_eq(p.steps[0].image, "m1");
    cr_assert_str_eq(p.steps[0].name, "first");
    cr_assert(strstr(config_text(&p.steps[0]), "data:\n  a: b\n  x: \"1\"\n"));
    cr_assert_str_eq(p.steps[1].image, "m2");
    cr_assert_null(p.steps[1].name);
    cr_assert_str_eq(config_text(&p.steps[1]),
                     "apiVersion: fn.example.com/v1\nkind: Custom\nspec: {x: 1}\n");
    cr_assert_str_eq(p.steps[2].image, "v1");
    cr_assert_eq(p.steps[2].validator, 1);
    cr_assert_null(p.steps[2].config);
    pipeline_free(&p);
    buf_free(&err);
}

static void assert_kptfile_error(const char *body, const char *want)
{
    char text[1024];
    snprintf(text, sizeof text, "apiVersion: kpt.dev/v1\nkind: Kptfile\n%s", body);
    const char *path = write_file("Kptfile", text);
    pipeline p = { 0 };
    buf err = { 0 };
    cr_assert_eq(pipeline_load_kptfile(&p, path, 6291456, &err), -1, "accepted:\n%s", text);
    cr_assert(err.data && strstr(err.data, want), "\"%s\" lacks \"%s\"", err.data, want);
    cr_assert(strstr(err.data, path), "\"%s\" does not name the file", err.data);
    pipeline_free(&p);
    buf_free(&err);
}

Test(pipeline, bad_kptfiles)
{
    assert_kptfile_error("", "no mutators or validators");
    assert_kptfile_error("pipeline: []\n", "pipeline is not a mapping");
    assert_kptfile_error("pipeline:\n  mutators: [a]\n", "pipeline.mutators[0]: not a mapping");
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: [a]\n", "image is required");
    assert_kptfile_error("pipeline:\n  validators:\n  - image: a:b:c\n",
                         "pipeline.validators[0]: invalid image reference \"a:b:c\"");
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: a\n    configMap: {a: [b]}\n",
                         "configMap entry 1 is not a string");
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: a\n    configPath: nope.yaml\n",
                         "nope.yaml: No such file");
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: a\n    configPath: Kptfile\n"
                         "    configMap: {a: b}\n",
                         "cannot both be set");
    assert_kptfile_error("pipeline:\n  validators:\n  - image: a\n  - exec: ./x\n",
                         "pipeline.validators[1]: exec functions are not supported");
    assert_kptfile_error("pipeline: {mutators: [{image: a}]}\n: bad\n  - x", "line ");
}

/* kpt's rules for configPath, and no link on its way. */
Test(pipeline, config_paths_stay_in_the_package)
{
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: a\n    configPath: ../x.yaml\n",
                         "pipeline.mutators[0]: configPath \"../x.yaml\": path must not be "
                         "outside the package");
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: a\n    configPath: a/../../x\n",
                         "path must not be outside the package");
    assert_kptfile_error("pipeline:\n  validators:\n  - image: a\n    configPath: /etc/hosts\n",
                         "pipeline.validators[0]: configPath \"/etc/hosts\": path must be "
                         "relative");
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: a\n    configPath: ' '\n",
                         "path must not be empty");
    write_file("real.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
    char link[512];
    snprintf(link, sizeof link, "%s/link.yaml", dir);
    cr_assert_eq(symlink("real.yaml", link), 0);
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: a\n    configPath: link.yaml\n",
                         "link.yaml: is or passes through a symbolic link, not followed inside "
                         "a package");
    /* a path that only passes through "..", staying inside, is kpt's too */
    assert_kptfile_error("pipeline:\n  mutators:\n  - image: a\n    configPath: x/../nope\n",
                         "nope: No such file");
}

Test(pipeline, not_a_kptfile)
{
    const char *path = write_file("cm.yaml", "apiVersion: v1\nkind: ConfigMap\n");
    pipeline p = { 0 };
    buf err = { 0 };
    cr_assert_eq(pipeline_load_kptfile(&p, path, 6291456, &err), -1);
    cr_assert(strstr(err.data, "not a Kptfile"), "%s", err.data);
    pipeline_free(&p);
    buf_free(&err);
}
