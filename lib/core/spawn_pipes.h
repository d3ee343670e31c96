/* spawn_pipes: a program started (core/spawn) with pipes to its standard
 * streams, our ends handed back: the one way a child we talk to is started,
 * a function (runtime/fn_job) or an exec credential plugin
 * (kube/exec_credential). What each then does with the pipes differs (the
 * functions' are driven by the loop; the plugin's are read to the end
 * before the kubeconfig is used), so this stops at the spawn. */
#ifndef KRM_SPAWN_PIPES_H
#define KRM_SPAWN_PIPES_H

#include <sys/types.h>

#include "core/spawn.h"

/* Starts path as spawn_in_group_setup does (with setup; NULL: none, and then
 * a bare name is looked up in PATH when search_path is set), its stdout and
 * stderr on pipes, its stdin on a pipe when with_stdin, else on /dev/null.
 * ours[0] is the write end of stdin's pipe (-1 without one), ours[1] and
 * ours[2] the read ends of stdout's and stderr's; all close on exec, and
 * blocking. Returns 0, or an errno with every descriptor closed, ours -1
 * and *step naming what failed: "pipe", "/dev/null", a setup step (see
 * spawn_in_group_setup), or NULL when it was the spawn or the exec. */
int spawn_with_pipes(const char *path, int search_path, char *const *argv, char *const *envp,
                     const spawn_child_setup *setup, int with_stdin, int ours[3], pid_t *pid,
                     const char **step);

/* The pipes alone, for a child started elsewhere (another process, sent
 * them: lib/runtime/sandbox_spawner): theirs[0..2] the child's stdin,
 * stdout and stderr, ours as spawn_with_pipes gives them; all close on
 * exec. 0, or an errno with all closed (-1) and *step "pipe" or
 * "/dev/null". */
int spawn_pipes_make(int with_stdin, int theirs[3], int ours[3], const char **step);

/* Closes the three (each -1 skipped) and sets them -1. */
void spawn_pipes_close(int fds[3]);

#endif
