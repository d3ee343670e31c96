/* Tests for the bounded reader (fdio: file_read_at) and for opening beneath
 * a directory (beneath): special files refused before any read, sizes
 * capped (also for a file whose size says less than it holds), links and
 * ".." never leading out, with and without openat2. Real files, FIFOs and
 * devices in a temporary directory. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "core/beneath.h"
#include "core/fdio.h"

static char dir[64];
static int dir_fd = -1;

static void make_dir(void)
{
    strcpy(dir, "/tmp/fdio-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(dir_fd, 0);
    beneath_use_openat2(1);
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
    close(dir_fd);
    beneath_use_openat2(1);
}

static void write_at(const char *name, const char *text)
{
    int fd = openat(dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    cr_assert_geq(fd, 0, "%s: %s", name, strerror(errno));
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Reads name beneath the test directory; returns errno (0 read), why in why. */
static int read_in(const char *name, int flags, size_t max, buf *out, char *why)
{
    why[0] = '\0';
    int rc = file_read_at(dir_fd, name, flags, max, out, why);
    return rc == 0 ? 0 : errno;
}

TestSuite(fdio, .init = make_dir, .fini = remove_dir);

Test(fdio, regular_file_read_whole)
{
    write_at("a.yaml", "kind: A\n");
    buf out = { 0 };
    char why[FDIO_WHY_MAX];
    cr_assert_eq(read_in("a.yaml", FDIO_BENEATH, 100, &out, why), 0, "%s", why);
    cr_assert_str_eq(out.data, "kind: A\n");
    buf_free(&out);
}

Test(fdio, fifo_without_writer_is_refused_at_once)
{
    cr_assert_eq(mkfifoat(dir_fd, "p.yaml", 0644), 0);
    buf out = { 0 };
    char why[FDIO_WHY_MAX];
    double t0 = now_s();
    cr_assert_eq(read_in("p.yaml", FDIO_BENEATH, 100, &out, why), EINVAL);
    cr_assert_lt(now_s() - t0, 1.0);
    cr_assert_str_eq(why, "is a FIFO (named pipe), not a regular file: only regular files are "
                          "read (a read could wait forever or never end)");
    cr_assert_eq(out.len, 0);
    buf_free(&out);
}

Test(fdio, devices_sockets_and_directories_are_named)
{
    buf out = { 0 };
    char why[FDIO_WHY_MAX];
    cr_assert_eq(file_read_at(AT_FDCWD, "/dev/zero", 0, 1 << 20, &out, why), -1);
    cr_assert(strstr(why, "is a character device, not a regular file"), "%s", why);
    cr_assert_eq(out.len, 0);

    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = { .sun_family = AF_UNIX };
    snprintf(a.sun_path, sizeof a.sun_path, "%s/s.yaml", dir);
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(read_in("s.yaml", FDIO_BENEATH, 100, &out, why), EINVAL, "%s", why);
    cr_assert(strstr(why, "is a socket, not a regular file"), "%s", why);
    close(s);

    cr_assert_eq(mkdirat(dir_fd, "d.yaml", 0755), 0);
    cr_assert_eq(read_in("d.yaml", 0, 100, &out, why), EISDIR);
    cr_assert_str_eq(why, "is a directory, not a regular file");
    buf_free(&out);
}

Test(fdio, a_file_over_the_limit_is_refused_by_its_size_without_reading)
{
    int fd = openat(dir_fd, "big.yaml", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    cr_assert_eq(ftruncate(fd, 1LL << 40), 0);   /* 1 TiB, sparse */
    close(fd);
    buf out = { 0 };
    char why[FDIO_WHY_MAX];
    cr_assert_eq(read_in("big.yaml", FDIO_BENEATH, 6291456, &out, why), EFBIG);
    cr_assert_str_eq(why, "is larger than 6291456 bytes (it has 1099511627776)");
    cr_assert_eq(out.len, 0);
    write_at("edge.yaml", "12345");
    cr_assert_eq(read_in("edge.yaml", 0, 5, &out, why), 0, "%s", why);
    cr_assert_eq(out.len, 5);
    buf_reset(&out);
    cr_assert_eq(read_in("edge.yaml", 0, 4, &out, why), EFBIG);
    buf_free(&out);
}

/* /proc files say size 0 and hold more: the limit holds while reading, as
 * for a file that grows after fstat. */
Test(fdio, a_file_larger_than_its_size_says_stops_at_the_limit)
{
    buf out = { 0 };
    char why[FDIO_WHY_MAX];
    cr_assert_eq(file_read_at(AT_FDCWD, "/proc/self/maps", 0, 64, &out, why), -1);
    cr_assert_eq(errno, EFBIG);
    cr_assert_str_eq(why, "is larger than 64 bytes (it grew while read)");
    cr_assert_eq(out.len, 0);
    cr_assert_eq(file_read_at(AT_FDCWD, "/proc/self/maps", 0, 1 << 24, &out, why), 0, "%s", why);
    cr_assert_gt(out.len, 64);
    buf_free(&out);
}

Test(fdio, nofollow_refuses_a_final_link_and_follow_takes_it)
{
    write_at("real.yaml", "x: 1\n");
    cr_assert_eq(symlinkat("real.yaml", dir_fd, "link.yaml"), 0);
    buf out = { 0 };
    char why[FDIO_WHY_MAX];
    cr_assert_eq(read_in("link.yaml", FDIO_NOFOLLOW, 100, &out, why), ELOOP);
    cr_assert_str_eq(why, "is a symbolic link, not followed here");
    cr_assert_eq(read_in("link.yaml", 0, 100, &out, why), 0, "%s", why);
    cr_assert_str_eq(out.data, "x: 1\n");
    buf_free(&out);
}

/* The same refusals with openat2 and with the component walk. */
static void beneath_refusals(void)
{
    cr_assert_eq(mkdirat(dir_fd, "sub", 0755), 0);
    write_at("sub/in.yaml", "in: 1\n");
    cr_assert_eq(symlinkat("sub", dir_fd, "sublink"), 0);
    cr_assert_eq(symlinkat("/etc", dir_fd, "etc"), 0);
    cr_assert_eq(symlinkat("in.yaml", dir_fd, "sub/inlink.yaml"), 0);
    buf out = { 0 };
    char why[FDIO_WHY_MAX];
    cr_assert_eq(read_in("sub/in.yaml", FDIO_BENEATH, 100, &out, why), 0, "%s", why);
    cr_assert_str_eq(out.data, "in: 1\n");
    cr_assert_eq(read_in("sublink/in.yaml", FDIO_BENEATH, 100, &out, why), ELOOP);
    cr_assert_str_eq(why, "is or passes through a symbolic link, not followed inside a package");
    cr_assert_eq(read_in("etc/passwd", FDIO_BENEATH, 1 << 20, &out, why), ELOOP);
    cr_assert_eq(read_in("sub/inlink.yaml", FDIO_BENEATH, 100, &out, why), ELOOP);
    cr_assert_eq(read_in("../x", FDIO_BENEATH, 100, &out, why), EXDEV);
    cr_assert_eq(read_in("/etc/passwd", FDIO_BENEATH, 1 << 20, &out, why), EXDEV);
    cr_assert_str_eq(why, "leads outside its directory");
    cr_assert_eq(read_in("sub/in.yaml/x", FDIO_BENEATH, 100, &out, why), ENOTDIR);
    cr_assert_eq(out.len, 6);   /* only the one good read */
    int fd = beneath_open(dir_fd, "sub", O_RDONLY | O_DIRECTORY);
    cr_assert_geq(fd, 0);
    close(fd);
    buf_free(&out);
}

Test(fdio, beneath_with_openat2)
{
    if (!beneath_has_openat2())
        cr_skip_test("the kernel has no openat2");
    beneath_refusals();
}

Test(fdio, beneath_walking_component_by_component)
{
    beneath_use_openat2(0);
    cr_assert_eq(beneath_has_openat2(), 0);
    beneath_refusals();
}

static void clean_is(const char *path, const char *want)
{
    buf out = { 0 };
    const char *why = NULL;
    cr_assert_eq(beneath_clean(path, &out, &why), 0, "%s: %s", path, why);
    cr_assert_str_eq(out.data, want, "%s", path);
    buf_free(&out);
}

static void clean_fails(const char *path, const char *want)
{
    buf out = { 0 };
    const char *why = NULL;
    cr_assert_eq(beneath_clean(path, &out, &why), -1, "%s accepted: %s", path, out.data);
    cr_assert_str_eq(why, want, "%s", path);
    buf_free(&out);
}

Test(beneath, clean_as_go_and_refusals_as_kpt)
{
    clean_is("fn-config.yaml", "fn-config.yaml");
    clean_is("./a//b/./c.yaml", "a/b/c.yaml");
    clean_is("x/../y.yaml", "y.yaml");
    clean_is("a/b/../../c", "c");
    clean_is("a..b.yaml", "a..b.yaml");
    clean_is("a/", "a");
    clean_is(".", ".");
    clean_fails("", BENEATH_EMPTY);
    clean_fails("  \t", BENEATH_EMPTY);
    clean_fails("/etc/passwd", BENEATH_ABSOLUTE);
    clean_fails("..", BENEATH_OUTSIDE);
    clean_fails("../x.yaml", BENEATH_OUTSIDE);
    clean_fails("a/../../x.yaml", BENEATH_OUTSIDE);
    clean_fails("./a/./../..", BENEATH_OUTSIDE);
}
