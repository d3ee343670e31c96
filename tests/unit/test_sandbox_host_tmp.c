/* Tests for a kept sandbox's /tmp (runtime/sandbox_host_tmp): in a user
 * and mount namespace of a child's own (the test's process has threads,
 * which unshare refuses), a tmpfs on a directory standing for /tmp with a
 * skeleton (a/b) and a directory bound beneath it (a/b/c), recorded; then
 * what a call could do to it, then the new /tmp. The child exits with the
 * line of the first check that failed. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runtime/sandbox_host_tmp.h"

#define CHECK(cond)                                                                       \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "line %d: %s (%s)\n", __LINE__, #cond, strerror(errno));      \
            _exit(__LINE__ & 0xff ? __LINE__ & 0xff : 1);                                 \
        }                                                                                 \
    } while (0)

static char root[64], bound[64];

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    return ok;
}

static int touch(const char *rel, mode_t mode)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, mode);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

static ino_t ino_of(const char *rel)
{
    char path[128];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", root, rel);
    return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* In the child: the namespaces, the tmpfs, the skeleton and the bind. */
static void make_tmp(uid_t uid, gid_t gid)
{
    char map[32], path[128];
    CHECK(unshare(CLONE_NEWUSER | CLONE_NEWNS) == 0);
    CHECK(write_file("/proc/self/setgroups", "deny"));
    snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
    CHECK(write_file("/proc/self/uid_map", map));
    snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
    CHECK(write_file("/proc/self/gid_map", map));
    CHECK(mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0);
    CHECK(mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=1777") == 0);
    snprintf(path, sizeof path, "%s/a", root);
    CHECK(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/a/b", root);
    CHECK(mkdir(path, 0750) == 0);
    snprintf(path, sizeof path, "%s/a/b/c", root);
    CHECK(mkdir(path, 0700) == 0);
    CHECK(mount(bound, path, NULL, MS_BIND | MS_REC, NULL) == 0);
}

static void a_call_then_two_resets(void)
{
    host_tmp tmp;
    const char *step = NULL;
    CHECK(host_tmp_record(&tmp, root, "size=1m,mode=1777", &step) == 0);
    CHECK(tmp.n_dirs == 2 && tmp.n_binds == 1);
    /* the call */
    char path[128], renamed[128], cmd[512];
    CHECK(touch(".hidden", 0) && touch("a/planted", 0644));
    for (int i = 0; i < 20; i++) {
        snprintf(path, sizeof path, "file-%d", i);
        CHECK(touch(path, 0644));
    }
    ino_t first_file = ino_of("file-0");
    snprintf(path, sizeof path, "%s/a/b", root);
    CHECK(chmod(path, 0777) == 0);
    snprintf(path, sizeof path, "%s/a", root);
    snprintf(renamed, sizeof renamed, "%s/renamed", root);
    CHECK(rename(path, renamed) == 0);   /* the bind moves with it */
    /* the resets: only the skeleton, as made, and the bind */
    snprintf(cmd, sizeof cmd, "test \"$(ls -A %s)\" = a && test \"$(ls -A %s/a)\" = b && "
             "test \"$(ls -A %s/a/b/c)\" = kept && test \"$(stat -c %%a %s/a/b)\" = 750",
             root, root, root, root);
    for (int i = 0; i < 2; i++) {
        CHECK(host_tmp_remake(&tmp, root, &step) == 0);
        CHECK(system(cmd) == 0);
        CHECK(touch("new", 0644));
        CHECK(ino_of("new") <= first_file);   /* numbered from the start again */
    }
    host_tmp_free(&tmp);
    _exit(0);
}

Test(sandbox_host_tmp, a_new_tmp_has_the_skeleton_and_the_binds_and_nothing_else)
{
    snprintf(bound, sizeof bound, "/tmp/krm-host-bound-XXXXXX");
    snprintf(root, sizeof root, "/tmp/krm-host-tmp-XXXXXX");
    cr_assert_not_null(mkdtemp(bound));
    cr_assert_not_null(mkdtemp(root));
    char kept[128];
    snprintf(kept, sizeof kept, "%s/kept", bound);
    close(open(kept, O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
    uid_t uid = getuid();
    gid_t gid = getgid();
    pid_t child = fork();
    if (child == 0) {
        make_tmp(uid, gid);
        a_call_then_two_resets();
    }
    int status = 0;
    cr_assert_eq(waitpid(child, &status, 0), child);
    unlink(kept);
    rmdir(bound);
    rmdir(root);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
              "the child failed at a line ending in %d (its stderr says which)",
              WEXITSTATUS(status));
}
