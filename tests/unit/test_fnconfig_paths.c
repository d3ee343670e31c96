/* Unit tests for lib/krm/fnconfig's binary checks: a binaryExecutor.path must
 * resolve beneath --functions (no absolute path, no ".." above it, no
 * symlink leading out, checked by openat2 RESOLVE_BENEATH on a real tree
 * made in a temporary directory), and must be a regular executable file.
 *
 * Tree made by setup():
 *   ROOT/outside            executable, outside --functions
 *   ROOT/fns/               --functions
 *     real                  executable
 *     plain                 mode 0644
 *     subdir/               a directory
 *     subdir/deep           executable
 *     in-link   -> real             relative, stays inside: allowed
 *     sub-link  -> subdir/deep      relative, stays inside: allowed
 *     up-link   -> subdir/../real   relative with "..", stays inside: allowed
 *     out-link  -> ../outside       relative, leads out: refused
 *     abs-link  -> ROOT/outside     absolute: refused
 *     abs-in    -> ROOT/fns/real    absolute, even though it points inside: refused
 *     out-dir   -> ..               a directory component leading out: refused
 *     bin       -> /bin             an absolute directory link: refused */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "krm/fnconfig.h"

#define HEAD "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: FunctionConfig\n"

static char root[64];
static char fns[96];

static void make_file(const char *rel, mode_t mode)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f, "%s: %s", p, strerror(errno));
    fputs("#!/bin/sh\ncat\n", f);
    fclose(f);
    cr_assert_eq(chmod(p, mode), 0);
}

static void make_link(const char *target, const char *rel)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, rel);
    cr_assert_eq(symlink(target, p), 0, "symlink %s: %s", p, strerror(errno));
}

static void setup(void)
{
    char abs_target[PATH_MAX];
    snprintf(root, sizeof root, "/tmp/fnconfig-paths-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    snprintf(fns, sizeof fns, "%s/fns", root);
    cr_assert_eq(mkdir(fns, 0755), 0);
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/subdir", fns);
    cr_assert_eq(mkdir(sub, 0755), 0);
    make_file("outside", 0755);
    make_file("fns/real", 0755);
    make_file("fns/plain", 0644);
    make_file("fns/subdir/deep", 0755);
    make_link("real", "fns/in-link");
    make_link("subdir/deep", "fns/sub-link");
    make_link("subdir/../real", "fns/up-link");
    make_link("../outside", "fns/out-link");
    snprintf(abs_target, sizeof abs_target, "%s/outside", root);
    make_link(abs_target, "fns/abs-link");
    snprintf(abs_target, sizeof abs_target, "%s/real", fns);
    make_link(abs_target, "fns/abs-in");
    make_link("..", "fns/out-dir");
    make_link("/bin", "fns/bin");
}

static void teardown(void)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(fnconfig_paths, .init = setup, .fini = teardown);

/* One FunctionConfig "fn" whose binaryExecutor.path is `path`. */
static fnconfig parse_path(const char *path)
{
    char yaml[512];
    snprintf(yaml, sizeof yaml, HEAD "metadata: {name: fn}\nspec:\n  image: fn\n"
             "  binaryExecutor: {tags: [v1], path: '%s'}\n", path);
    fnconfig c = {0};
    buf err = {0};
    cr_assert_eq(fnconfig_parse("fc.yaml", yaml, strlen(yaml), fns, &c, &err), 0, "%s", err.data);
    buf_free(&err);
    return c;
}

/* fnconfig_check_binaries on path: "" when accepted, else the message. */
static char *check(const char *path)
{
    static char msg[1024];
    fnconfig c = parse_path(path);
    buf err = {0};
    int fd = fnconfig_open_functions_dir(fns, &err);
    cr_assert_geq(fd, 0, "%s", err.data);
    int rc = fnconfig_check_binaries(&c, fd, fns, &err);
    close(fd);
    cr_assert_eq(rc, err.len ? -1 : 0, "rc %d with message \"%s\"", rc, err.data ? err.data : "");
    snprintf(msg, sizeof msg, "%s", err.data ? err.data : "");
    buf_free(&err);
    fnconfig_free(&c);
    return msg;
}

#define PREFIX "fc.yaml: document 1 (FunctionConfig \"fn\"): spec.binaryExecutor.path: "

static void expect_refused(const char *path, const char *want_after_prefix)
{
    char want[1024];
    snprintf(want, sizeof want, PREFIX "%s", want_after_prefix);
    cr_assert_str_eq(check(path), want, "path \"%s\"", path);
}

static void expect_outside(const char *path)
{
    char want[512];
    snprintf(want, sizeof want, "\"%s\" resolves outside --functions %s", path, fns);
    cr_assert(strstr(check(path), want), "path \"%s\": %s", path, check(path));
}

/* ------------------------------------------------------------------------ */

Test(fnconfig_paths, cleaned_forms)
{
    static const struct { const char *written, *beneath; } cases[] = {
        {"real", "real"},
        {"./a//b/./c", "a/b/c"},
        {"a/../b", "b"},
        {"a/..", "."},
        {"a/b/../../c", "c"},
        {"../x", NULL},
        {"a/../../x", NULL},
        {"..", NULL},
        {"/bin/sh", NULL},
        {"//x", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fnconfig c = parse_path(cases[i].written);
        const fnconfig_entry *e = &c.entries[0];
        cr_assert_str_eq(e->binary.written, cases[i].written);
        if (cases[i].beneath)
            cr_assert_str_eq(e->binary.beneath, cases[i].beneath, "%s", cases[i].written);
        else
            cr_assert_null(e->binary.beneath, "%s gave %s", cases[i].written, e->binary.beneath);
        fnconfig_free(&c);
    }
}

Test(fnconfig_paths, inside_paths_and_links_are_accepted)
{
    const char *ok[] = {"real", "./real", "subdir/deep", "subdir/../real", "in-link", "sub-link",
                        "up-link"};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        cr_assert_str_eq(check(ok[i]), "", "%s refused", ok[i]);
}

Test(fnconfig_paths, absolute_path_is_refused)
{
    char want[512];
    snprintf(want, sizeof want, "\"/bin/sh\" resolves outside --functions %s (absolute paths are "
             "refused: give it relative to that directory)", fns);
    expect_refused("/bin/sh", want);
    char inside[PATH_MAX];   /* even one that names a file inside */
    snprintf(inside, sizeof inside, "%s/real", fns);
    expect_outside(inside);
}

Test(fnconfig_paths, dotdot_escapes_are_refused)
{
    char want[512];
    snprintf(want, sizeof want, "\"../../bin/sh\" resolves outside --functions %s", fns);
    expect_refused("../../bin/sh", want);
    expect_outside("../outside");
    expect_outside("a/../../x");
    expect_outside("subdir/../../outside");
    expect_outside("../fns/real");   /* back inside, but only by way of the parent */
}

Test(fnconfig_paths, symlinks_leading_out_are_refused)
{
    char want[512];
    snprintf(want, sizeof want, "\"out-link\" resolves outside --functions %s: a symlink on the way "
             "leads out of it or is absolute (only relative links that stay inside are followed)", fns);
    expect_refused("out-link", want);
    expect_outside("abs-link");
    expect_outside("abs-in");
    expect_outside("out-dir/outside");   /* a directory component leads out */
    expect_outside("out-dir/fns/real");  /* ... even when the path comes back in */
    expect_outside("bin/sh");
}

Test(fnconfig_paths, missing_plain_and_directory_are_refused)
{
    char want[1024];
    snprintf(want, sizeof want, "\"nope\" (%s/nope): No such file or directory", fns);
    expect_refused("nope", want);
    snprintf(want, sizeof want, "\"plain\" (%s/plain) is not executable (mode 0644)", fns);
    expect_refused("plain", want);
    snprintf(want, sizeof want, "\"subdir\" (%s/subdir) is not a regular file", fns);
    expect_refused("subdir", want);
    snprintf(want, sizeof want, "\"a/..\" (%s) is not a regular file", fns);
    expect_refused("a/..", want);
}

Test(fnconfig_paths, missing_functions_dir_is_an_error)
{
    buf err = {0};
    char missing[160];
    snprintf(missing, sizeof missing, "%s/none", root);
    cr_assert_eq(fnconfig_open_functions_dir(missing, &err), -1);
    char want[256];
    snprintf(want, sizeof want, "--functions %s: No such file or directory", missing);
    cr_assert_str_eq(err.data, want);
    buf_free(&err);
}

/* What the exec runtime does per call: the descriptor is the file itself,
 * close-on-exec unless asked to be inheritable, and a link swapped after the
 * load to lead out is refused at the next open. */
Test(fnconfig_paths, open_at_call_time)
{
    fnconfig c = parse_path("in-link");
    buf err = {0};
    int dir_fd = fnconfig_open_functions_dir(fns, &err);
    cr_assert_geq(dir_fd, 0, "%s", err.data);
    cr_assert_eq(fnconfig_check_binaries(&c, dir_fd, fns, &err), 0, "%s", err.data);

    int fd = fnconfig_open_binary(dir_fd, fns, &c.entries[0], 0, &err);
    cr_assert_geq(fd, 0, "%s", err.data);
    struct stat by_fd, by_name;
    char real[PATH_MAX];
    snprintf(real, sizeof real, "%s/real", fns);
    cr_assert_eq(fstat(fd, &by_fd), 0);
    cr_assert_eq(stat(real, &by_name), 0);
    cr_assert_eq(by_fd.st_ino, by_name.st_ino);
    cr_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    fd = fnconfig_open_binary(dir_fd, fns, &c.entries[0], 1, &err);
    cr_assert_geq(fd, 0, "%s", err.data);
    cr_assert_not(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);

    char link[PATH_MAX];
    snprintf(link, sizeof link, "%s/in-link", fns);
    cr_assert_eq(unlink(link), 0);
    cr_assert_eq(symlink("../outside", link), 0);
    cr_assert_eq(fnconfig_open_binary(dir_fd, fns, &c.entries[0], 1, &err), -1);
    cr_assert(strstr(err.data, "\"in-link\" resolves outside --functions"), "%s", err.data);

    close(dir_fd);
    buf_free(&err);
    fnconfig_free(&c);
}

/* Entries without a binaryExecutor are not looked at; the first bad one
 * stops the check and is the one named. */
Test(fnconfig_paths, only_binary_entries_are_checked)
{
    const char *yaml =
        HEAD "metadata: {name: pod}\nspec: {image: pod, podExecutor: {}}\n---\n"
        HEAD "metadata: {name: good}\nspec: {image: good, binaryExecutor: {tags: [v1], path: real}}\n---\n"
        HEAD "metadata: {name: bad}\nspec: {image: bad, binaryExecutor: {tags: [v1], path: ../x}}\n";
    fnconfig c = {0};
    buf err = {0};
    cr_assert_eq(fnconfig_parse("many.yaml", yaml, strlen(yaml), fns, &c, &err), 0, "%s", err.data);
    int fd = fnconfig_open_functions_dir(fns, &err);
    cr_assert_eq(fnconfig_check_binaries(&c, fd, fns, &err), -1);
    char want[512];
    snprintf(want, sizeof want, "many.yaml: document 3 (FunctionConfig \"bad\"): "
             "spec.binaryExecutor.path: \"../x\" resolves outside --functions %s", fns);
    cr_assert_str_eq(err.data, want);
    close(fd);
    buf_free(&err);
    fnconfig_free(&c);
}
