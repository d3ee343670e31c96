/* spawn_pipes: a child started with pipes to its stdio; see spawn_pipes.h. */
#include "core/spawn_pipes.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int spawn_with_pipes(const char *path, int search_path, char *const *argv, char *const *envp,
                     const spawn_child_setup *setup, int with_stdin, int ours[3], pid_t *pid,
                     const char **step)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};   /* [0] read, [1] write */
    int e = 0;
    *step = NULL;
    if (with_stdin ? pipe2(in, O_CLOEXEC) < 0 : (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        *step = with_stdin ? "pipe" : "/dev/null";
    else if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
        *step = "pipe";
    if (*step)
        e = errno;
    else
        e = setup ? spawn_in_group_setup(path, argv, envp, (int[3]){in[0], out[1], err[1]}, setup,
                                         pid, step)
                  : spawn_in_group(path, search_path, argv, envp, (int[3]){in[0], out[1], err[1]},
                                   pid);
    /* the child's ends are its own now, or nobody's */
    close_fd(&in[0]);
    close_fd(&out[1]);
    close_fd(&err[1]);
    if (e) {
        close_fd(&in[1]);
        close_fd(&out[0]);
        close_fd(&err[0]);
    }
    ours[0] = in[1];
    ours[1] = out[0];
    ours[2] = err[0];
    return e;
}
