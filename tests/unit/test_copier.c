/* Unit tests of the copier's pieces (every copier source but main.c): message
 * escaping, both command lines, cp's destination names, byte copy and
 * compare, and the temporary-name life cycle (create, lock, commit, sweep).
 * The binary as a whole is tested by tests/integration/test_copier.py. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../copier/cli.h"
#include "../../copier/cp.h"
#include "../../copier/fileio.h"
#include "../../copier/install.h"
#include "../../copier/msg.h"
#include "../../copier/tmpname.h"

#define ARGV(...) ((char *[]){__VA_ARGS__, NULL})

static int count(char **argv)
{
    int n = 0;
    while (argv[n])
        n++;
    return n;
}

/* A fresh directory under /tmp, removed by the caller with rm_tree. */
static char *make_dir(void)
{
    char tmpl[] = "/tmp/copier-unit-XXXXXX";
    char *d = mkdtemp(tmpl);
    cr_assert_not_null(d);
    return strdup(d);
}

static void rm_tree(char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    free(dir);
}

static int file_with(const char *dir, const char *name, const char *data)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(cop_pwrite_all(fd, data, strlen(data), 0), 0);
    return fd;
}

static int exists(int dirfd, const char *name)
{
    struct stat st;
    return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

Test(copier_msg, escapes_control_characters)
{
    char out[64];
    cop_escape(out, sizeof out, "a\nb\tc\x01" "d");
    cr_assert_str_eq(out, "a\\nb\\tc\\x01d");
}

Test(copier_msg, cuts_long_text_visibly)
{
    char out[8];
    cop_escape(out, sizeof out, "abcdefghijkl");
    cr_assert_str_eq(out, "abcd...");  /* 7 bytes and the NUL: exactly full */
    cop_escape(out, sizeof out, "abc");
    cr_assert_str_eq(out, "abc");
}

Test(copier_cli, copier_form)
{
    cop_args a;
    char **argv = ARGV("copier", "--verify", "a", "b", "dest");
    cr_assert_eq(cop_parse_copier(count(argv), argv, &a), COP_CLI_RUN);
    cr_assert_eq(a.verify, 1);
    cr_assert_eq(a.n, 3);
    cr_assert_str_eq(a.operands[2], "dest");
    cop_args_free(&a);

    argv = ARGV("copier", "a", "--", "--verify", "dest");
    cr_assert_eq(cop_parse_copier(count(argv), argv, &a), COP_CLI_RUN);
    cr_assert_eq(a.verify, 0);
    cr_assert_eq(a.n, 3);
    cr_assert_str_eq(a.operands[1], "--verify");
    cop_args_free(&a);
}

Test(copier_cli, copier_form_usage_errors, .init = cr_redirect_stderr)
{
    cop_args a;
    char **bad[] = {ARGV("copier"), ARGV("copier", "only-one"), ARGV("copier", "-x", "a", "b"),
                    ARGV("copier", "--verify", "a")};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(cop_parse_copier(count(bad[i]), bad[i], &a), COP_CLI_USAGE, "case %zu", i);
        cop_args_free(&a);
    }
}

Test(copier_cli, cp_options)
{
    cop_args a;
    char **argv = ARGV("cp", "-a", "src/.", "dest");
    cr_assert_eq(cop_parse_cp(count(argv), argv, &a), COP_CLI_RUN);
    cr_assert(a.cp.recursive && a.cp.no_deref && a.cp.preserve);
    cr_assert_eq(a.n, 2);
    cop_args_free(&a);

    argv = ARGV("cp", "x", "-R", "y");                /* -R implies no dereference */
    cr_assert_eq(cop_parse_cp(count(argv), argv, &a), COP_CLI_RUN);
    cr_assert(a.cp.recursive && a.cp.no_deref && !a.cp.preserve);
    cop_args_free(&a);

    argv = ARGV("cp", "x", "y");
    cr_assert_eq(cop_parse_cp(count(argv), argv, &a), COP_CLI_RUN);
    cr_assert(!a.cp.recursive && !a.cp.no_deref && !a.cp.preserve);
    cop_args_free(&a);

    argv = ARGV("cp", "-pfd", "--", "-a", "y");
    cr_assert_eq(cop_parse_cp(count(argv), argv, &a), COP_CLI_RUN);
    cr_assert(!a.cp.recursive && a.cp.no_deref && a.cp.preserve);
    cr_assert_str_eq(a.operands[0], "-a");
    cop_args_free(&a);
}

Test(copier_cli, cp_refuses_what_it_does_not_do, .init = cr_redirect_stderr)
{
    cop_args a;
    char **bad[] = {ARGV("cp", "-L", "a", "b"), ARGV("cp", "-av", "a", "b"),
                    ARGV("cp", "--preserve=all", "a", "b"), ARGV("cp", "a"), ARGV("cp")};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(cop_parse_cp(count(bad[i]), bad[i], &a), COP_CLI_USAGE, "case %zu", i);
        cop_args_free(&a);
    }
}

Test(copier_cp, destination_names)
{
    static const char *cases[][2] = {
        {"src", "src"}, {"a/b/src", "src"}, {"src/", "src"}, {"src//", "src"},
        {"src/.", "."}, {"src/..", "."}, {".", "."}, {"/", "."}, {"/x", "x"}, {"..foo", "..foo"},
    };
    char out[256];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cp_dest_name(cases[i][0], out, sizeof out);
        cr_assert_str_eq(out, cases[i][1], "for '%s'", cases[i][0]);
    }
}

Test(copier_install, basename)
{
    cr_assert_str_eq(cop_basename("/a/b/wrapper-server"), "wrapper-server");
    cr_assert_str_eq(cop_basename("plain"), "plain");
    cr_assert_str_eq(cop_basename("dir/"), "");
}

Test(copier_fileio, copy_and_compare)
{
    char *dir = make_dir();
    int a = file_with(dir, "a", "hello, copier");
    int b = file_with(dir, "b", "");
    int failed = -1;
    cr_assert_eq(cop_same_bytes(a, b), 0);
    cr_assert_eq(cop_copy_data(a, b, &failed), 0);
    cr_assert_eq(cop_same_bytes(a, b), 1);
    cr_assert_eq(cop_pwrite_all(b, "H", 1, 0), 0);   /* same size, one byte differs */
    cr_assert_eq(cop_same_bytes(a, b), 0);
    close(a);
    close(b);
    rm_tree(dir);
}

Test(copier_fileio, reports_the_failing_side)
{
    char *dir = make_dir();
    int a = file_with(dir, "a", "data");
    int ro = open("/dev/null", O_RDONLY);
    int failed = -1;
    lseek(a, 0, SEEK_SET);
    cr_assert_eq(cop_copy_data(a, ro, &failed), -1);
    cr_assert_eq(failed, 1);
    int wo = open("/dev/null", O_WRONLY);
    cr_assert_eq(cop_copy_data(wo, a, &failed), -1);
    cr_assert_eq(failed, 0);
    close(a), close(ro), close(wo);
    rm_tree(dir);
}

Test(copier_tmp, names)
{
    cr_assert(cop_tmp_is_name(".copier-tmp-1-0"));
    cr_assert(!cop_tmp_is_name("copier-tmp-1-0"));
    cr_assert(!cop_tmp_is_name(".copier"));
}

Test(copier_tmp, file_commit_and_discard)
{
    char *dir = make_dir();
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    cop_tmp t;
    int fd = cop_tmp_file(dfd, &t);
    cr_assert_geq(fd, 0);
    cr_assert(cop_tmp_is_name(t.name));
    cr_assert(exists(dfd, t.name));
    cr_assert_eq(cop_tmp_commit(dfd, &t, "final"), 0);
    cr_assert(exists(dfd, "final") && !exists(dfd, t.name));
    close(fd);

    fd = cop_tmp_file(dfd, &t);
    cr_assert_geq(fd, 0);
    cop_tmp_discard(dfd, &t);
    cr_assert(!exists(dfd, t.name));
    close(fd);

    cr_assert_eq(cop_tmp_symlink(dfd, "final", &t), 0);
    cr_assert_eq(cop_tmp_commit(dfd, &t, "link"), 0);
    char target[16] = {0};
    cr_assert_eq(readlinkat(dfd, "link", target, sizeof target - 1), 5);
    cr_assert_str_eq(target, "final");
    close(dfd);
    rm_tree(dir);
}

Test(copier_tmp, sweep_spares_locked_files)
{
    char *dir = make_dir();
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    cop_tmp live;
    int fd = cop_tmp_file(dfd, &live);               /* held locked by us */
    cr_assert_geq(fd, 0);
    close(file_with(dir, ".copier-tmp-stale", "x"));
    cr_assert_eq(symlinkat("x", dfd, ".copier-tmp-link"), 0);
    close(file_with(dir, "other", "x"));
    /* flock locks belong to the open file description: a second open of the
     * live file (what a sweep does) conflicts with our lock */
    cr_assert_eq(cop_tmp_sweep(dfd, dir), 2);
    cr_assert(exists(dfd, live.name) && exists(dfd, "other"));
    cr_assert(!exists(dfd, ".copier-tmp-stale") && !exists(dfd, ".copier-tmp-link"));
    close(fd);
    cr_assert_eq(cop_tmp_sweep(dfd, dir), 1);
    cr_assert(!exists(dfd, live.name));
    close(dfd);
    rm_tree(dir);
}
