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

int spawn_pipes_make(int with_stdin, int theirs[3], int ours[3], const char **step)
{
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};   /* [0] read, [1] write */
    *step = NULL;
    if (with_stdin ? pipe2(in, O_CLOEXEC) < 0 : (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)
        *step = with_stdin ? "pipe" : "/dev/null";
    else if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
        *step = "pipe";
    int e = *step ? errno : 0;
    theirs[0] = in[0];
    theirs[1] = out[1];
    theirs[2] = err[1];
    ours[0] = in[1];
    ours[1] = out[0];
    ours[2] = err[0];
    if (e) {
        spawn_pipes_close(theirs);
        spawn_pipes_close(ours);
    }
    return e;
}

void spawn_pipes_close(int fds[3])
{
    for (int i = 0; i < 3; i++)
        close_fd(&fds[i]);
}

int spawn_with_pipes(const char *path, int search_path, char *const *argv, char *const *envp,
                     const spawn_child_setup *setup, int with_stdin, int ours[3], pid_t *pid,
                     const char **step)
{
    int theirs[3];
    int e = spawn_pipes_make(with_stdin, theirs, ours, step);
    if (e)
        return e;
    e = setup ? spawn_in_group_setup(path, argv, envp, theirs, setup, pid, step)
              : spawn_in_group(path, search_path, argv, envp, theirs, pid);
    spawn_pipes_close(theirs);   /* the child's ends are its own now, or nobody's */
    if (e)
        spawn_pipes_close(ours);
    return e;
}
