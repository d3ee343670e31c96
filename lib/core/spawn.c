/* spawn: a program in its own process group; see spawn.h. */
#include "core/spawn.h"

#include <signal.h>
#include <spawn.h>

extern char **environ;

int spawn_in_group(const char *path, int search_path, char *const *argv, char *const *envp,
                   const int stdio[3], pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc)
        return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    sigemptyset(&none);
    sigfillset(&defaults);
    for (int i = 0; i < 3 && !rc; i++)
        rc = posix_spawn_file_actions_adddup2(&fa, stdio[i], i);
    if (rc ||
        (rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                  POSIX_SPAWN_SETSIGDEF)) ||
        (rc = posix_spawnattr_setpgroup(&attr, 0)) ||
        (rc = posix_spawnattr_setsigmask(&attr, &none)) ||
        (rc = posix_spawnattr_setsigdefault(&attr, &defaults)))
        goto out;
    rc = (search_path ? posix_spawnp : posix_spawn)(pid, path, &fa, &attr, argv, envp ? envp : environ);
out:
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}
