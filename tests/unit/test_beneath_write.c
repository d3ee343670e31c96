/* Tests for core/beneath: directories entered and files replaced beneath a
 * descriptor, a symbolic link or a file on the way refused with the part
 * that failed, temporary names that fit whatever the target's length. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/beneath_write.h"
#include "core/fdio.h"

static char root_path[64];
static int root;

static void make_tree(void)
{
    snprintf(root_path, sizeof root_path, "/tmp/beneath-XXXXXX");
    cr_assert_not_null(mkdtemp(root_path));
    root = open(root_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(root, 0);
    cr_assert_eq(mkdirat(root, "a", 0755), 0);
    cr_assert_eq(mkdirat(root, "a/b", 0755), 0);
    cr_assert_eq(symlinkat("/tmp", root, "a/link"), 0);
    int fd = openat(root, "a/file", O_WRONLY | O_CREAT, 0644);
    cr_assert_geq(fd, 0);
    close(fd);
}

static void remove_tree(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root_path);
    cr_assert_eq(system(cmd), 0);
    close(root);
}

TestSuite(beneath, .init = make_tree, .fini = remove_tree);

static void refused(const char *rel, int want_errno, size_t want_bad)
{
    size_t bad = 0;
    errno = 0;
    cr_assert_eq(beneath_open_dir(root, rel, strlen(rel), &bad), -1, "%s", rel);
    cr_assert_eq(errno, want_errno, "%s: %s", rel, strerror(errno));
    cr_assert_eq(bad, want_bad, "%s: %zu", rel, bad);
}

Test(beneath, directories_are_entered_and_links_and_files_refused)
{
    int fd = beneath_open_dir(root, "a//b", 4, NULL);
    cr_assert_geq(fd, 0);
    close(fd);
    fd = beneath_open_dir(root, "a/b/rest", 3, NULL); /* only the first 3 bytes */
    cr_assert_geq(fd, 0);
    close(fd);
    refused("a/link/x", ELOOP, 6);
    refused("a/link", ELOOP, 6);
    refused("a/file/x", ENOTDIR, 6);
    refused("a/missing/x", ENOENT, 9);
    char long_name[NAME_MAX + 8];
    memset(long_name, 'n', sizeof long_name - 1);
    long_name[sizeof long_name - 1] = '\0';
    refused(long_name, ENAMETOOLONG, strlen(long_name));
}

Test(beneath, replace_refuses_a_link_and_a_directory_and_replaces_a_file)
{
    errno = 0;
    cr_assert_eq(beneath_replace(root, "a/../a/link", "x", 1, 0644), -1); /* not a name here */
    int a = beneath_open_dir(root, "a", 1, NULL);
    cr_assert_geq(a, 0);
    cr_assert_eq(beneath_replace(a, "link", "x", 1, 0644), -1);
    cr_assert_eq(errno, ELOOP);
    cr_assert_eq(beneath_replace(a, "b", "x", 1, 0644), -1);
    cr_assert_eq(errno, EISDIR);
    cr_assert_eq(beneath_replace(a, "file", "new\n", 4, 0600), 0);
    buf text = { 0 };
    char path[128];
    snprintf(path, sizeof path, "%s/a/file", root_path);
    cr_assert_eq(file_read_all(path, &text, 0), 0);
    cr_assert_str_eq(text.data, "new\n");
    buf_free(&text);
    cr_assert_eq(beneath_kind(a, "link", NULL), S_IFLNK); /* still the link it was */
    close(a);
}

Test(beneath, fresh_names_and_backups_fit_and_are_recognisable)
{
    char name[BENEATH_TMP_MAX], backup[BENEATH_TMP_MAX];
    int fd = beneath_create_fresh(root, BENEATH_STAGED, "f.yaml", 0, 0600, name);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(strncmp(name, BENEATH_STAGED, strlen(BENEATH_STAGED)), 0, "%s", name);
    cr_assert_eq(beneath_link_backup(root, name, backup), 0);
    cr_assert_eq(strncmp(backup, BENEATH_BACKUP, strlen(BENEATH_BACKUP)), 0, "%s", backup);
    /* the target's name at the end when it fits, left out when it does not */
    const char *dot = strchr(name + 1, '.');
    cr_assert(dot && !strcmp(dot, ".f.yaml"), "%s", name);
    cr_assert(strstr(backup, name) != NULL, "%s", backup);
    char long_name[NAME_MAX + 1];
    memset(long_name, 'n', NAME_MAX - 10);
    long_name[NAME_MAX - 10] = '\0';
    int lfd = beneath_create_fresh(root, BENEATH_STAGED, long_name, 0, 0600, name);
    cr_assert_geq(lfd, 0, "%s", strerror(errno));
    close(lfd);
    cr_assert_null(strchr(name + 1, '.'), "%s", name);
    cr_assert_eq(beneath_kind(root, backup, NULL), S_IFREG);
    cr_assert_eq(beneath_rename_noreplace(root, name, backup), -1);
    cr_assert_eq(errno, EEXIST);
    cr_assert_eq(beneath_create_fresh(root, BENEATH_STAGED, NULL, 1, 0700, name), 0);
    cr_assert_eq(beneath_kind(root, name, NULL), S_IFDIR);
}
