/* Unit tests for lib/core/spawn_pipes: a real child (/bin/sh) talks over the
 * pipes handed back, stdin is /dev/null when asked, and a failed start
 * leaves no descriptor open. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/spawn_pipes.h"
#include "fd_count.h"

static size_t read_all(int fd, char *out, size_t cap)
{
    size_t n = 0;
    ssize_t got;
    while (n < cap - 1 && (got = read(fd, out + n, cap - 1 - n)) > 0)
        n += (size_t)got;
    out[n] = '\0';
    return n;
}

static void run(int with_stdin, const char *script, const char *input, char *out, char *err)
{
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    int ours[3];
    pid_t pid;
    const char *step;
    cr_assert_eq(spawn_with_pipes("sh", 1, argv, NULL, NULL, with_stdin, ours, &pid, &step), 0);
    cr_assert_eq(ours[0] >= 0, with_stdin);
    if (with_stdin) {
        cr_assert_eq(write(ours[0], input, strlen(input)), (ssize_t)strlen(input));
        close(ours[0]);
    }
    read_all(ours[1], out, 256);
    read_all(ours[2], err, 256);
    close(ours[1]);
    close(ours[2]);
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

Test(spawn_pipes, the_child_talks_over_the_pipes)
{
    char out[256], err[256];
    run(1, "tr a-z A-Z; echo oops >&2", "hello", out, err);
    cr_assert_str_eq(out, "HELLO");
    cr_assert_str_eq(err, "oops\n");
}

Test(spawn_pipes, stdin_is_dev_null_without_a_pipe)
{
    char out[256], err[256];
    run(0, "wc -c; readlink /proc/self/fd/0 >&2", NULL, out, err);
    cr_assert_eq(atoi(out), 0);
    cr_assert_str_eq(err, "/dev/null\n");
}

Test(spawn_pipes, a_failed_start_leaves_nothing_open)
{
    char *argv[] = {"no-such-program-here", NULL};
    int ours[3];
    pid_t pid;
    const char *step = "unset";
    int before = fd_count_open();
    int e = spawn_with_pipes("no-such-program-here", 1, argv, NULL, NULL, 1, ours, &pid, &step);
    cr_assert_eq(e, ENOENT);
    cr_assert_null(step);   /* the spawn failed, not a pipe */
    cr_assert(ours[0] == -1 && ours[1] == -1 && ours[2] == -1);
    cr_assert_eq(fd_count_open(), before);
}
