/* Tests for a kept sandbox's /tmp (runtime/sandbox_host_tmp): a real
 * directory standing for it, its skeleton recorded, then what a call could
 * do to it, then the reset. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "runtime/sandbox_host_tmp.h"

static char root[64];
static int root_fd = -1;
static host_tmp tmp;

/* root/a/b, the skeleton, recorded. */
static void make_skeleton(void)
{
    snprintf(root, sizeof root, "/tmp/krm-host-tmp-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(root_fd, 0);
    cr_assert_eq(mkdirat(root_fd, "a", 0700), 0);
    cr_assert_eq(mkdirat(root_fd, "a/b", 0700), 0);
    const char *step = NULL;
    cr_assert_eq(host_tmp_record(&tmp, root_fd, &step), 0, "%s", step);
    cr_assert_eq(tmp.n_dirs, 3);
}

/* With the shell: a test may leave the tree out of shape. */
static void remove_root(void)
{
    host_tmp_free(&tmp);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_expect_eq(system(cmd), 0);
    close(root_fd);
}

static void touch(const char *path, mode_t mode)
{
    int fd = openat(root_fd, path, O_WRONLY | O_CREAT | O_CLOEXEC, mode);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    close(fd);
}

/* Whether `ls -A` of root shows names, and of root/a the same. */
static int listed(const char *names, const char *in_a)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "test \"$(ls -A %s)\" = '%s' && test \"$(ls -A %s/a)\" = '%s'",
             root, names, root, in_a);
    return system(cmd) == 0;
}

TestSuite(sandbox_host_tmp, .init = make_skeleton, .fini = remove_root);

Test(sandbox_host_tmp, a_reset_removes_what_a_call_left_and_sets_the_skeleton_back)
{
    struct stat before;
    cr_assert_eq(fstatat(root_fd, "a", &before, 0), 0);
    touch(".hidden", 0);
    touch("a/planted", 0644);
    touch("a/b/deeper", 0644);
    cr_assert_eq(mkdirat(root_fd, "d", 0700), 0);
    cr_assert_eq(mkdirat(root_fd, "d/e", 0700), 0);
    touch("d/e/f", 0);
    cr_assert_eq(fchmodat(root_fd, "d/e", 0, 0), 0);
    cr_assert_eq(fchmodat(root_fd, "d", 0, 0), 0);
    cr_assert_eq(symlinkat("/", root_fd, "link"), 0);
    cr_assert_eq(fchmodat(root_fd, "a", 0751, 0), 0);
    struct timespec old[2] = {{.tv_sec = 981173106}, {.tv_sec = 981173106}};
    cr_assert_eq(utimensat(root_fd, "a", old, 0), 0);
    int xattrs = setxattr(root, "user.secret", "42", 2, 0) == 0;   /* where the filesystem has them */

    const char *step = NULL;
    cr_assert_eq(host_tmp_reset(&tmp, &step), 0, "%s", step);
    struct stat after;
    cr_assert_eq(fstatat(root_fd, "a", &after, 0), 0);
    cr_assert_eq(after.st_ino, before.st_ino);
    cr_assert_eq(after.st_mode & 07777, 0700);
    cr_assert_eq(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    cr_assert(listed("a", "b"), "only the skeleton is left");
    cr_assert_eq(fstatat(root_fd, "a/b/deeper", &after, 0), -1);
    if (xattrs)
        cr_assert_eq(getxattr(root, "user.secret", NULL, 0), -1);
}

Test(sandbox_host_tmp, a_skeleton_directory_moved_fails_the_reset)
{
    cr_assert_eq(mkdirat(root_fd, "z", 0700), 0);
    cr_assert_eq(renameat(root_fd, "a", root_fd, "z/a"), 0);
    const char *step = NULL;
    cr_assert_neq(host_tmp_reset(&tmp, &step), 0);
    cr_assert_str_eq(step, "empty /tmp");   /* z holds the skeleton: it cannot go */
}

Test(sandbox_host_tmp, a_skeleton_directory_renamed_fails_the_reset)
{
    cr_assert_eq(renameat(root_fd, "a", root_fd, "secret-name"), 0);
    const char *step = NULL;
    cr_assert_eq(host_tmp_reset(&tmp, &step), ENOENT);
    cr_assert_str_eq(step, "find /tmp's directories where they were");
}
