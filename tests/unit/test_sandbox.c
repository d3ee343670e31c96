/* Tests for spawning with a child setup (core/spawn: spawn_in_group_setup)
 * and for naming the sandbox limit that ended a function
 * (runtime/sandbox: sandbox_explain_exit). Real processes: /bin/sh run
 * with the setup's effect read back through a pipe; also a first child
 * joining a user namespace of ours and a second one that execs. */
#include <criterion/criterion.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/spawn.h"
#include "runtime/sandbox.h"
#include "log_capture.h"

static int lower_open_files(const void *ctx, const char *path, const char **step)
{
    (void)ctx;
    (void)path;
    struct rlimit rl = {.rlim_cur = 37, .rlim_max = 37};
    *step = "test: setrlimit";
    return setrlimit(RLIMIT_NOFILE, &rl) < 0 ? errno : 0;
}

static int refuse(const void *ctx, const char *path, const char **step)
{
    (void)ctx;
    (void)path;
    *step = "test: refused";
    return EACCES;
}

/* Runs `sh -c script` with setup; returns what it wrote on stdout. */
static int run_sh(const spawn_child_setup *setup, const char *script, char *out, size_t len,
                  const char **step)
{
    int p[2];
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    char *argv[] = {"sh", "-c", (char *)script, NULL};
    pid_t pid = -1;
    int err = spawn_in_group_setup("/bin/sh", argv, NULL, (int[3]){0, p[1], 2}, setup, &pid, step);
    close(p[1]);
    size_t got = 0;
    for (ssize_t n = 1; !err && n > 0 && got < len - 1; got += n > 0 ? (size_t)n : 0)
        n = read(p[0], out + got, len - 1 - got);
    out[got] = '\0';
    close(p[0]);
    if (!err) {
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert_eq(getpgid(pid) < 0 ? 0 : 1, 0);   /* reaped: its group is gone */
    }
    return err;
}

Test(spawn, setup_runs_in_the_child_before_exec)
{
    spawn_child_setup setup = {.run = lower_open_files};
    char out[64];
    const char *step = "unset";
    cr_assert_eq(run_sh(&setup, "ulimit -n; cut -d\" \" -f5 /proc/$$/stat; echo $$", out,
                        sizeof out, &step), 0);
    cr_assert_null(step);
    int limit = 0, pgid = 0, pid = 0;
    cr_assert_eq(sscanf(out, "%d %d %d", &limit, &pgid, &pid), 3, "%s", out);
    cr_assert_eq(limit, 37);
    cr_assert_eq(pgid, pid, "the child leads its own process group");
    struct rlimit ours;
    getrlimit(RLIMIT_NOFILE, &ours);
    cr_assert_neq(ours.rlim_cur, 37, "the setup ran in our process");
}

/* setup (whose run is refuse) fails the spawn with its step, and leaves no
 * child behind. */
static void expect_refused(const spawn_child_setup *setup)
{
    char out[16];
    const char *step = NULL;
    cr_assert_eq(run_sh(setup, "echo ran", out, sizeof out, &step), EACCES);
    cr_assert_str_eq(step, "test: refused");
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a child was left unreaped");
    cr_assert_eq(errno, ECHILD);
}

Test(spawn, a_setup_failure_is_returned_with_its_step_and_reaped)
{
    spawn_child_setup setup = {.run = refuse};
    expect_refused(&setup);
}

Test(spawn, an_exec_failure_has_no_step)
{
    spawn_child_setup setup = {.run = lower_open_files};
    char *argv[] = {"nothing", NULL};
    pid_t pid;
    const char *step = "unset";
    int err = spawn_in_group_setup("/nonexistent/fn", argv, NULL, (int[3]){0, 1, 2}, &setup,
                                   &pid, &step);
    cr_assert_eq(err, ENOENT);
    cr_assert_null(step);
}

Test(spawn, the_setup_environment_is_used_when_none_is_given)
{
    char *env[] = {"SANDBOX_TEST=yes", NULL};
    spawn_child_setup setup = {.run = lower_open_files, .envp = env};
    char out[64];
    const char *step;
    cr_assert_eq(run_sh(&setup, "echo \"$SANDBOX_TEST\"", out, sizeof out, &step), 0);
    cr_assert_str_eq(out, "yes\n");
}

/* ---- a first child that joins namespaces, a second one that execs ------ */

typedef struct user_ns {
    char uid_map[32], gid_map[32];   /* "0 OURS 1": a namespace made below needs us mapped */
    int fd;
} user_ns;

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    int err = write(fd, text, strlen(text)) < 0 ? errno : 0;
    close(fd);
    return err;
}

static int hold_user_ns(void *ctx)
{
    user_ns *ns = ctx;
    int err;
    if ((err = write_file("/proc/self/setgroups", "deny")) ||
        (err = write_file("/proc/self/uid_map", ns->uid_map)) ||
        (err = write_file("/proc/self/gid_map", ns->gid_map)))
        return err;
    ns->fd = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
    return ns->fd < 0 ? errno : 0;
}

/* A user namespace of our own to join (held open), or the test skipped
 * where unprivileged user namespaces are not allowed. */
static int user_ns_to_join(void)
{
    user_ns ns = {.fd = -1};
    snprintf(ns.uid_map, sizeof ns.uid_map, "0 %u 1", (unsigned)geteuid());
    snprintf(ns.gid_map, sizeof ns.gid_map, "0 %u 1", (unsigned)getegid());
    int err = spawn_run_in_namespaces(CLONE_NEWUSER, hold_user_ns, &ns);
    if (err || ns.fd < 0)
        cr_skip_test("no user namespace here: %s", strerror(err ? err : EIO));
    return ns.fd;
}

/* The second child (CLONE_PARENT: ours) runs on our memory until it execs:
 * spawn returns once it has, with its pid, and PID 1 of its namespace. */
Test(spawn, a_joined_namespace_spawns_a_second_child_of_ours)
{
    int ns = user_ns_to_join();
    spawn_child_setup setup = {.run = lower_open_files, .join_ns = {ns}, .n_join_ns = 1,
                               .clone_flags = CLONE_NEWUSER | CLONE_NEWPID};
    for (int i = 0; i < 50; i++) {   /* the first child's exit races the second's exec */
        char out[64];
        const char *step = "unset";
        int err = run_sh(&setup, "ulimit -n; echo $$", out, sizeof out, &step);
        cr_assert_eq(err, 0, "%s: %s", step ? step : "exec", strerror(err));
        cr_assert_null(step);
        int limit = 0, pid = 0;
        cr_assert_eq(sscanf(out, "%d %d", &limit, &pid), 2, "%s", out);
        cr_assert_eq(limit, 37);
        cr_assert_eq(pid, 1, "PID 1 of its own namespace");
    }
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a child was left unreaped");
    cr_assert_eq(errno, ECHILD);
    close(ns);
}

Test(spawn, a_second_childs_setup_failure_is_returned_and_both_reaped)
{
    int ns = user_ns_to_join();
    spawn_child_setup setup = {.run = refuse, .join_ns = {ns}, .n_join_ns = 1,
                               .clone_flags = CLONE_NEWUSER | CLONE_NEWPID};
    for (int i = 0; i < 50; i++)
        expect_refused(&setup);
    close(ns);
}

/* The "se.slice" line of /proc/self/sched (a kernel with scheduler
 * debugging and EEVDF), or the test skipped. */
static long long our_slice(void)
{
    char text[8192];
    int fd = open("/proc/self/sched", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof text - 1);
    if (fd >= 0)
        close(fd);
    text[n > 0 ? n : 0] = '\0';
    const char *line = strstr(text, "se.slice");
    long long slice;
    if (!line || sscanf(line, "se.slice : %lld", &slice) != 1)
        cr_skip_test("no se.slice in /proc/self/sched here");
    return slice;
}

/* The first child runs with a short scheduler slice (spawn.c: so that the
 * function's exec wakes it at once); the function must not keep it. */
Test(spawn, a_joined_spawns_function_has_our_scheduler_slice)
{
    long long ours = our_slice();
    int ns = user_ns_to_join();
    spawn_child_setup setup = {.run = lower_open_files, .join_ns = {ns}, .n_join_ns = 1,
                               .clone_flags = CLONE_NEWUSER | CLONE_NEWPID};
    char out[128];
    const char *step = "unset";
    int err = run_sh(&setup, "grep se.slice /proc/self/sched", out, sizeof out, &step);
    cr_assert_eq(err, 0, "%s: %s", step ? step : "exec", strerror(err));
    long long theirs = -1;
    cr_assert_eq(sscanf(out, "se.slice : %lld", &theirs), 1, "%s", out);
    cr_assert_eq(theirs, ours);
    close(ns);
}

/* A process that runs with the short slice itself (spawn_short_slice: the
 * sandbox spawner) spawns its functions with the default one, whether the
 * spawn joins namespaces (two children) or not (one). Criterion runs each
 * test in a process of its own, so ours is changed for this test only. */
Test(spawn, a_short_slice_makers_functions_have_the_default_slice)
{
    long long ours = our_slice();
    spawn_short_slice(1);
    if (our_slice() == ours)
        cr_skip_test("the kernel keeps the default slice (before Linux 6.12)");
    int ns = user_ns_to_join();
    spawn_child_setup joined = {.run = lower_open_files, .join_ns = {ns}, .n_join_ns = 1,
                                .clone_flags = CLONE_NEWUSER | CLONE_NEWPID};
    spawn_child_setup plain = {.run = lower_open_files};
    const spawn_child_setup *setups[] = {&joined, &plain};
    for (size_t i = 0; i < 2; i++) {
        char out[128];
        const char *step = "unset";
        int err = run_sh(setups[i], "grep se.slice /proc/self/sched", out, sizeof out, &step);
        cr_assert_eq(err, 0, "%s: %s", step ? step : "exec", strerror(err));
        long long theirs = -1;
        cr_assert_eq(sscanf(out, "se.slice : %lld", &theirs), 1, "%s", out);
        cr_assert_eq(theirs, ours, "%s spawn: the function's slice %lld, the default %lld",
                     i ? "a plain" : "a joined", theirs, ours);
    }
    spawn_short_slice(0);
    cr_assert_eq(our_slice(), ours);
    close(ns);
}

/* What a process spawning as_sibling tells its parent (us). */
typedef struct sibling_spawn {
    int err;
    pid_t pid, helpers[2];
} sibling_spawn;

/* A middle process (a spawner) spawns `sh -c 'exit 7'` with setup as our
 * sibling, tells us the pids, and exits: the function and the helpers are
 * ours to wait for. */
static sibling_spawn spawn_through_a_middle_process(const spawn_child_setup *setup)
{
    int p[2];
    cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
    pid_t middle = fork();
    cr_assert_geq(middle, 0);
    if (middle == 0) {
        char *argv[] = {"sh", "-c", "exit 7", NULL};
        sibling_spawn s = {0};
        const char *step;
        s.err = spawn_in_group_as_sibling("/bin/sh", argv, NULL, (int[3]){0, 1, 2}, setup,
                                          &s.pid, s.helpers, &step);
        _exit(write(p[1], &s, sizeof s) == (ssize_t)sizeof s ? 0 : 1);
    }
    close(p[1]);
    sibling_spawn s;
    cr_assert_eq(read(p[0], &s, sizeof s), (ssize_t)sizeof s);
    close(p[0]);
    int status;
    cr_assert_eq(waitpid(middle, &status, 0), middle);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return s;
}

Test(spawn, as_sibling_every_process_is_our_parents_child)
{
    spawn_child_setup one = {.run = lower_open_files};
    sibling_spawn s = spawn_through_a_middle_process(&one);
    cr_assert_eq(s.err, 0, "%s", strerror(s.err));
    cr_assert_eq(s.helpers[0], 0, "one child: no helper");
    int status;
    cr_assert_eq(waitpid(s.pid, &status, 0), s.pid, "the function is ours");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 7);

    int ns = user_ns_to_join();
    spawn_child_setup two = {.run = lower_open_files, .join_ns = {ns}, .n_join_ns = 1,
                             .clone_flags = CLONE_NEWUSER | CLONE_NEWPID};
    s = spawn_through_a_middle_process(&two);
    cr_assert_eq(s.err, 0, "%s", strerror(s.err));
    cr_assert_gt(s.helpers[0], 0, "the first child, which joined and cloned");
    cr_assert_eq(waitpid(s.helpers[0], &status, 0), s.helpers[0], "the helper is ours");
    cr_assert_eq(waitpid(s.pid, &status, 0), s.pid, "the function is ours");
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 7);
    cr_assert_eq(waitpid(-1, NULL, WNOHANG), -1, "a child was left unreaped");
    close(ns);
}

/* ---- how the children end ------------------------------------------------ */

/* The test's stderr, captured since log_capture_start, is empty: under
 * AddressSanitizer a child that ended with a noreturn call (_exit) on the
 * stack spawn mapped for it made ASan warn there ("ignoring requested
 * __asan_handle_no_return": not the stack it knows for the thread). ASan
 * says it once a process, so each test below starts capturing before its
 * first spawn. Without a sanitizer nothing is written either way. */
static void assert_stderr_empty(void)
{
    buf text = {0};
    log_capture_text(&text);
    char said[512];   /* freed before the assert: a failed one leaves no leak report */
    snprintf(said, sizeof said, "%s", text.data ? text.data : "");
    size_t len = text.len;
    buf_free(&text);
    cr_assert_eq(len, 0, "on stderr: %s", said);
    log_capture_end();
}

static int do_nothing(void *ctx)
{
    (void)ctx;
    return 0;
}

Test(spawn, a_child_whose_setup_failed_ends_without_a_word)
{
    log_capture_start();
    spawn_child_setup setup = {.run = refuse};
    expect_refused(&setup);
    assert_stderr_empty();
}

Test(spawn, a_child_run_in_namespaces_ends_without_a_word)
{
    log_capture_start();
    cr_assert_eq(spawn_run_in_namespaces(0, do_nothing, NULL), 0);
    assert_stderr_empty();
}

/* The first child of a joined spawn ends once the second has execed. */
Test(spawn, a_joining_child_ends_without_a_word)
{
    log_capture_start();
    int ns = user_ns_to_join();
    spawn_child_setup setup = {.run = lower_open_files, .join_ns = {ns}, .n_join_ns = 1,
                               .clone_flags = CLONE_NEWUSER | CLONE_NEWPID};
    char out[16];
    const char *step;
    cr_assert_eq(run_sh(&setup, "echo ran", out, sizeof out, &step), 0);
    cr_assert_str_eq(out, "ran\n");
    close(ns);
    assert_stderr_empty();
}

/* ---- sandbox_explain_exit ----------------------------------------------- */

static sandbox *started(void)
{
    sandbox_config cfg = {.mode = SANDBOX_AUTO,
                          .limits = {.memory_mib = 512, .cpu_seconds = 3, .processes = 300,
                                     .file_size_mib = 2, .open_files = 64}};
    buf why = {0};
    sandbox *sb = sandbox_start(&cfg, &why);
    cr_assert_not_null(sb, "%s", why.data ? why.data : "");
    cr_assert(sandbox_layers(sb) & SANDBOX_RLIMITS);
    return sb;
}

static const char *explained(const sandbox *sb, int status, long long cpu_s, const char *err)
{
    static buf out;
    buf_free(&out);
    if (!sandbox_explain_exit(sb, status, cpu_s * 1000000000LL, err, strlen(err), &out))
        return NULL;
    return out.data;
}

Test(sandbox, a_limit_is_named_by_its_signal_or_its_error)
{
    log_capture_start();   /* the start's "sandbox: auto: ..." line */
    sandbox *sb = started();
    cr_assert_str_eq(explained(sb, SIGXCPU, 3, ""),
                     "function exceeded its CPU limit of 3 s (--sandbox-cpu)");
    /* PID 1 of its namespace ignores SIGXCPU: the hard limit's SIGKILL */
    cr_assert_str_eq(explained(sb, SIGKILL, 4, ""),
                     "function exceeded its CPU limit of 3 s (--sandbox-cpu)");
    cr_assert_null(explained(sb, SIGKILL, 1, ""), "a kill before the limit is not the limit's");
    cr_assert_str_eq(explained(sb, SIGXFSZ, 0, ""),
                     "function exceeded its file size limit of 2 MiB (--sandbox-file-size)");
    cr_assert_str_eq(explained(sb, 2 << 8, 0, "fatal error: runtime: out of memory\n"),
                     "function exceeded its memory limit of 512 MiB (--sandbox-memory)");
    cr_assert_str_eq(explained(sb, 1 << 8, 0, "OSError: [Errno 24] Too many open files"),
                     "function exceeded its open files limit of 64 (--sandbox-open-files)");
    cr_assert_null(explained(sb, 0, 0, "out of memory"), "a success is never explained");
    cr_assert_null(explained(sb, 1 << 8, 0, "no such file"));
    sandbox_free(sb);
    log_capture_end();
}

Test(sandbox, off_explains_nothing)
{
    sandbox_config cfg = {.mode = SANDBOX_OFF, .limits = SANDBOX_DEFAULT_LIMITS};
    buf why = {0}, log = {0};
    log_capture_start();
    sandbox *sb = sandbox_start(&cfg, &why);
    cr_assert_not_null(sb);
    cr_assert_null(sandbox_child_setup(sb));
    cr_assert_null(explained(sb, SIGXCPU, 500, ""));
    sandbox_free(sb);
    log_capture_text(&log);   /* off is said, with what it leaves open */
    cr_assert(strstr(log.data ? log.data : "", "sandbox: off (--sandbox off): functions run as "
                     "plain children of the runner, with its files, network and credentials"),
              "%s", log.data);
    buf_free(&log);
    log_capture_end();
}
