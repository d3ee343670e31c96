/* sandbox: the functions' isolation, detected at start and applied in their
 * child; see sandbox.h. */
#include "runtime/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/json_write.h"
#include "core/log.h"
#include "runtime/sandbox_landlock.h"
#include "runtime/sandbox_seccomp.h"

/* The namespaces each call gets: its own user namespace (it holds no
 * capability over what the calls share), mount (a private /tmp), PID (the
 * function PID 1 of its tree, killed whole) and IPC (no System V or POSIX
 * queue, semaphore or shared memory between functions). The network
 * namespace, empty, is made once at start and shared (shared_net): a new
 * one per call cost 0.5-1.5 ms with the server's loop stopped (the kernel
 * sets up each one's loopback, sysctls and tables, and tears them down
 * later), and an empty one holds nothing a function could leave for
 * another: no interface but a loopback that is down and that no function
 * may bring up (no capability in its owner), its abstract sockets out of
 * other functions' reach with Landlock ABI 6 (each function is its own
 * Landlock domain; below ABI 6 each call gets its own namespace still) and
 * no other socket allowed by seccomp. */
#define NAMESPACES (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC)
#define PID_MAX_MIN 301   /* the kernel's least pid_max */

/* The system's roots a function reads (and runs) from. */
static const char *const system_roots[] = {
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/proc",
    "/sys",
};

static const struct {
    unsigned layer;
    const char *name;
    const char *needs;   /* what would allow it, for strict's refusal */
} layer_info[] = {
    {SANDBOX_NAMESPACES, "namespaces",
     "unprivileged user namespaces (sysctl user.max_user_namespaces > 0, "
     "kernel.unprivileged_userns_clone=1 where it exists, no AppArmor restriction; in a pod "
     "a seccomp profile that allows clone with CLONE_NEWUSER)"},
    {SANDBOX_PROC, "proc",
     "mounting /proc in the function's namespaces (Linux 6.14 or later for a per-namespace "
     "pid_max; in a pod, securityContext.procMount: Unmasked)"},
    {SANDBOX_RLIMITS, "rlimits", "setrlimit"},
    {SANDBOX_NO_NEW_PRIVS, "no_new_privs", "prctl(PR_SET_NO_NEW_PRIVS)"},
    {SANDBOX_LANDLOCK, "landlock",
     "Landlock (Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK and landlock in the "
     "lsm= boot parameter)"},
    {SANDBOX_SECCOMP, "seccomp", "seccomp filters (CONFIG_SECCOMP_FILTER)"},
};
#define N_LAYERS (sizeof layer_info / sizeof *layer_info)

struct sandbox {
    sandbox_config cfg;
    unsigned layers;
    spawn_child_setup setup;
    char uid_map[48], gid_map[48];   /* a call's user namespace's */
    char top_uid_map[48], top_gid_map[48];   /* the shared one's: our ids as root */
    int shared_ns[2];           /* the user namespace owning the network one, and it */
    char pid_max[24];
    char tmpfs_opts[64];
    char tmp_dir[PATH_MAX];     /* writable, made here when there is no private /tmp */
    char tmp_env[PATH_MAX + 8]; /* TMPDIR=... */
    char home_env[PATH_MAX + 8];   /* HOME=..., the same directory */
    char **envp;
    char *read_copy;            /* cfg.read_paths split in place */
    char *write_copy;           /* cfg.write_paths split in place */
    char functions_dir[PATH_MAX];
    sandbox_landlock ll;
    struct sock_fprog bpf;
    /* A function's own settings (sandbox_setup_for): variants of this one,
     * which share its memory and descriptors and own only their filter. */
    const sandbox *variant_of;
    unsigned annotated;         /* bits 1 << SB_*: limits a variant set */
    int own_bpf;                /* bpf.filter is this variant's */
    sandbox **variants;
    size_t n_variants;
    char *unavailable;          /* what start found missing and why, for the view */
};

/* The limits, as offsets in sandbox_limits: bit i of `annotated` is
 * limit_at[i]'s. */
static const size_t limit_at[] = {
    offsetof(sandbox_limits, memory_mib), offsetof(sandbox_limits, cpu_seconds),
    offsetof(sandbox_limits, processes), offsetof(sandbox_limits, file_size_mib),
    offsetof(sandbox_limits, open_files),
};
#define N_LIMITS (sizeof limit_at / sizeof *limit_at)

static uint64_t *limit_ref(sandbox_limits *lim, size_t i)
{
    return (uint64_t *)((char *)lim + limit_at[i]);
}

/* ---- in the child: system calls only ------------------------------------ */

static int write_proc(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    size_t len = strlen(text);
    int err = write(fd, text, len) == (ssize_t)len ? 0 : errno ? errno : EIO;
    close(fd);
    return err;
}

/* Makes dir (absolute, beneath the fresh /tmp) and binds the directory
 * held open as fd over it, read-only unless the function may write there
 * (Landlock lets it write anywhere in its private /tmp). */
/* mount_setattr(2), MOUNT_ATTR_RDONLY on dir and every mount beneath it.
 * Through syscall(2): musl (the static runner-client) has no wrapper, and
 * <linux/mount.h>, which declares struct mount_attr, clashes with glibc's
 * <sys/mount.h>; the struct is the kernel's first version (32 bytes). */
static int make_tree_read_only(const char *dir)
{
    struct { uint64_t attr_set, attr_clr, propagation, userns_fd; } ro = {.attr_set = 0x1};
    return (int)syscall(SYS_mount_setattr, AT_FDCWD, dir, AT_RECURSIVE, &ro, sizeof ro);
}

static int bind_back(const char *dir, int fd, int read_only, const char **step)
{
    char path[PATH_MAX], from[32];
    size_t len = strlen(dir);
    if (len >= sizeof path)
        return ENAMETOOLONG;
    memcpy(path, dir, len + 1);
    *step = "namespaces: mkdir a directory the function may use in the private /tmp";
    for (char *p = path + 5;; p++)   /* each component after "/tmp/" */
        if (*p == '/' || !*p) {
            char was = *p;
            *p = '\0';
            if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return errno;
            if (!(*p = was))
                break;
        }
    /* "/proc/self/fd/N" without stdio */
    char digits[12];
    int n = 0;
    for (int v = fd; n == 0 || v; v /= 10)
        digits[n++] = (char)('0' + v % 10);
    memcpy(from, "/proc/self/fd/", 14);
    for (int i = 0; i < n; i++)
        from[14 + i] = digits[n - 1 - i];
    from[14 + n] = '\0';
    /* Recursive: in a user namespace the mounts beneath a directory are
     * locked to it, and binding it alone fails with EINVAL. Read-only then
     * covers them too (mount_setattr's AT_RECURSIVE, Linux 5.12); on an
     * older kernel the bind is the directory alone, read-only, as before. */
    *step = "namespaces: bind a directory the function may use (and the mounts beneath it) into "
            "the private /tmp";
    int err = mount(from, dir, "none", MS_BIND | MS_REC, NULL) < 0 ? errno : 0;
    if (!err && read_only) {
        *step = "namespaces: make a directory the function may read, and the mounts beneath it, "
                "read-only";
        err = make_tree_read_only(dir) < 0 ? errno : 0;
        if (err == ENOSYS && umount2(dir, MNT_DETACH) == 0) {
            *step = "namespaces: bind a directory the function may read into the private /tmp";
            err = mount(from, dir, "none", MS_BIND, NULL) < 0 ? errno : 0;
            if (!err) {
                *step = "namespaces: make a directory the function may read read-only";
                err = mount("none", dir, "none", MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0
                          ? errno : 0;
            }
        }
    }
    close(fd);
    return err;
}

#define FAIL_IF(cond, name) do { if (cond) { *step = name; return errno; } } while (0)

/* Maps root of our new user namespace to our ids in the one above. */
static int map_ids(const char *uid_map, const char *gid_map, const char **step)
{
    int err;
    *step = "namespaces: write /proc/self/setgroups";
    if ((err = write_proc("/proc/self/setgroups", "deny")))
        return err;
    *step = "namespaces: write /proc/self/uid_map";
    if ((err = write_proc("/proc/self/uid_map", uid_map)))
        return err;
    *step = "namespaces: write /proc/self/gid_map";
    return write_proc("/proc/self/gid_map", gid_map);
}

static int child_namespaces(const sandbox *sb, const char **step)
{
    int err;
    if ((err = map_ids(sb->uid_map, sb->gid_map, step)))
        return err;
    FAIL_IF(mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0,
            "namespaces: mount --make-rprivate /");
    /* The directories the function may use beneath /tmp (--functions,
     * --sandbox-read, --sandbox-write: a checkout or a test's files may
     * live there) are bound back over the private one, parents first:
     * held open before it hides them. */
    const char *back[2 * SANDBOX_LANDLOCK_MAX_PATHS];
    int read_only[2 * SANDBOX_LANDLOCK_MAX_PATHS], held[2 * SANDBOX_LANDLOCK_MAX_PATHS];
    size_t n_back = 0;
    const char *const *lists[2] = { sb->ll.read, sb->ll.write };
    size_t counts[2] = { sb->ll.n_read, sb->ll.n_write };
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; i < counts[l]; i++) {
            const char *dir = lists[l][i];
            if (strncmp(dir, "/tmp/", 5) != 0)
                continue;
            size_t same = 0;
            while (same < n_back && strcmp(back[same], dir) != 0)
                same++;
            if (same < n_back) {        /* named to read and to write: writable */
                read_only[same] = 0;
                continue;
            }
            size_t at = n_back;
            while (at > 0 && strlen(back[at - 1]) > strlen(dir)) {
                back[at] = back[at - 1];
                read_only[at] = read_only[at - 1];
                at--;
            }
            back[at] = dir;
            read_only[at] = l == 0;
            n_back++;
        }
    for (size_t i = 0; i < n_back; i++) {
        held[i] = open(back[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
        FAIL_IF(held[i] < 0, "namespaces: open a directory beneath /tmp the function may use");
    }
    FAIL_IF(sandbox_tmpfs_mount("/tmp", sb->tmpfs_opts) < 0, "namespaces: mount tmpfs on /tmp");
    for (size_t i = 0; i < n_back; i++)
        if ((err = bind_back(back[i], held[i], read_only[i], step)))
            return err;
    if (sb->layers & SANDBOX_PROC) {
        /* hidepid: a function sees in it only the processes it may ptrace,
         * its call's (Landlock: its own domain), not a kept host, PID 1,
         * whose counters (CPU time, context switches) a call could set
         * for the next one to read */
        FAIL_IF(mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
                      "hidepid=ptraceable") < 0,
                "proc: mount proc on /proc");
        *step = "proc: write /proc/sys/kernel/pid_max";
        if ((err = write_proc("/proc/sys/kernel/pid_max", sb->pid_max)))
            return err;
    }
    return 0;
}

static int set_limit(int resource, rlim_t soft, rlim_t hard)
{
    struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};
    return setrlimit(resource, &rl) < 0 ? errno : 0;
}

static int child_rlimits(const sandbox_limits *lim, const char **step)
{
    const rlim_t mib = 1024 * 1024;
    int err;
    *step = "rlimits: setrlimit";
    if ((err = set_limit(RLIMIT_DATA, lim->memory_mib * mib, lim->memory_mib * mib)) ||
        (err = set_limit(RLIMIT_CPU, lim->cpu_seconds, lim->cpu_seconds + 1)) ||
        (err = set_limit(RLIMIT_FSIZE, lim->file_size_mib * mib, lim->file_size_mib * mib)) ||
        (err = set_limit(RLIMIT_NOFILE, lim->open_files, lim->open_files)) ||
        (err = set_limit(RLIMIT_CORE, 0, 0)))
        return err;
    return 0;
}

/* In the spawning process: Landlock's roots opened, once. */
static int prepare_child(const void *ctx, const char **step)
{
    const sandbox *sb = ctx;
    return sb->layers & SANDBOX_LANDLOCK ? sandbox_landlock_prepare(&sb->ll, step) : 0;
}

/* The layers after the namespaces: Landlock's from the ruleset given (a
 * kept sandbox's, made once), or made here from path (ruleset -1). */
static int child_confine(const sandbox *sb, const char *path, int ruleset, const char **step)
{
    int err;
    if (sb->layers & (SANDBOX_NO_NEW_PRIVS | SANDBOX_LANDLOCK | SANDBOX_SECCOMP))
        FAIL_IF(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0, "no_new_privs: prctl");
    if ((sb->layers & SANDBOX_LANDLOCK) &&
        (err = ruleset >= 0 ? sandbox_landlock_restrict(ruleset, step)
                            : sandbox_landlock_apply(&sb->ll, path, step)))
        return err;
    /* after Landlock's opens: until exec the child holds a copy of all our
     * descriptors, which can be more than the function may open */
    if ((sb->layers & SANDBOX_RLIMITS) && (err = child_rlimits(&sb->cfg.limits, step)))
        return err;
    if ((sb->layers & SANDBOX_SECCOMP) && (err = sandbox_seccomp_apply(&sb->bpf))) {
        *step = "seccomp: load the filter";
        return err;
    }
    return 0;
}

static int child_setup(const void *ctx, const char *path, const char **step)
{
    const sandbox *sb = ctx;
    int err;
    if ((sb->layers & SANDBOX_NAMESPACES) && (err = child_namespaces(sb, step)))
        return err;
    return child_confine(sb, path, -1, step);
}

int sandbox_host_mounts(const sandbox *sb, const char **step)
{
    return child_namespaces(sb, step);
}

int sandbox_confine_call(const sandbox *sb, int ruleset, const char **step)
{
    return child_confine(sb, NULL, ruleset, step);
}

const char *sandbox_tmpfs_options(const sandbox *sb)
{
    return sb->tmpfs_opts;
}

int sandbox_tmpfs_mount(const char *at, const char *options)
{
    return mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV, options);
}

int sandbox_host_ruleset(const sandbox *sb, const char *binary, int tmp_fd, int proc_fd,
                         const char **step)
{
    if (!(sb->layers & SANDBOX_LANDLOCK))
        return -1;
    int err = sandbox_landlock_prepare(&sb->ll, step);
    if (err)
        return -err;
    return sandbox_landlock_ruleset_fds(&sb->ll, binary, tmp_fd, proc_fd, step);
}

/* ---- at start ------------------------------------------------------------ */

/* In a child sharing our descriptors, made in a new user and network
 * namespace: keeps both open (close-on-exec) in shared_ns. */
static int hold_shared_ns(void *ctx)
{
    sandbox *sb = ctx;
    const char *step;
    int err = map_ids(sb->top_uid_map, sb->top_gid_map, &step);
    if (err)
        return err;
    if ((sb->shared_ns[0] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC)) < 0 ||
        (sb->shared_ns[1] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) < 0)
        return errno;
    return 0;
}

static void close_shared_ns(sandbox *sb)
{
    for (int i = 0; i < 2; i++) {
        if (sb->shared_ns[i] >= 0)
            close(sb->shared_ns[i]);
        sb->shared_ns[i] = -1;
    }
}

/* The network namespace calls share (see NAMESPACES), with the user
 * namespace that owns it, made once. -1 with why when it cannot be. */
static int make_shared_net(sandbox *sb, buf *why)
{
    int err = spawn_run_in_namespaces(CLONE_NEWUSER | CLONE_NEWNET, hold_shared_ns, sb);
    if (err || sb->shared_ns[1] < 0) {
        close_shared_ns(sb);
        buf_printf(why, "%snamespaces (make the shared network namespace: %s)",
                   why->len ? "; " : "", strerror(err ? err : EIO));
        return -1;
    }
    return 0;
}

/* The child's namespaces as the layers now wanted have them. */
static void set_clone(sandbox *sb)
{
    int ns = (sb->layers & SANDBOX_NAMESPACES) != 0;
    int join = ns && !sb->cfg.allow_network && sb->shared_ns[1] >= 0 &&
               (sb->layers & SANDBOX_LANDLOCK);   /* see NAMESPACES */
    sb->setup.clone_flags = !ns ? 0 : NAMESPACES | (join || sb->cfg.allow_network ? 0 : CLONE_NEWNET);
    sb->setup.n_join_ns = join ? 2 : 0;
    sb->setup.join_ns[0] = sb->shared_ns[0];
    sb->setup.join_ns[1] = sb->shared_ns[1];
    /* root of the shared namespace is us: a call's maps its root to it */
    snprintf(sb->uid_map, sizeof sb->uid_map, "%s", join ? "0 0 1\n" : sb->top_uid_map);
    snprintf(sb->gid_map, sizeof sb->gid_map, "%s", join ? "0 0 1\n" : sb->top_gid_map);
}

static const char *layer_name(unsigned layer)
{
    for (size_t i = 0; i < N_LAYERS; i++)
        if (layer_info[i].layer == layer)
            return layer_info[i].name;
    return "?";
}

/* The layer a failed step belongs to ("landlock: ..." is landlock's). */
static unsigned layer_of_step(const char *step)
{
    if (!strcmp(step, "clone") || !strcmp(step, "setns"))
        return SANDBOX_NAMESPACES;
    for (size_t i = 0; i < N_LAYERS; i++) {
        size_t n = strlen(layer_info[i].name);
        if (!strncmp(step, layer_info[i].name, n) && step[n] == ':')
            return layer_info[i].layer;
    }
    return 0;
}

unsigned sandbox_layer_at(size_t i, const char **name)
{
    *name = i < N_LAYERS ? layer_info[i].name : NULL;
    return i < N_LAYERS ? layer_info[i].layer : 0;
}

int sandbox_view(const sandbox *sb, buf *out)
{
    static const char *const modes[] = {"off", "auto", "strict"};
    json_obj o, layers, limits;
    json_obj_begin(&o, out);
    json_obj_string(&o, "mode", modes[sb->cfg.mode]);
    json_obj_key(&o, "layers");
    json_obj_begin(&layers, out);
    for (size_t i = 0; i < N_LAYERS; i++) {
        json_obj_key(&layers, layer_info[i].name);
        layers.rc |= buf_append_str(out, sb->layers & layer_info[i].layer ? "true" : "false");
    }
    o.rc |= json_obj_end(&layers);
    json_obj_string(&o, "unavailable", sb->unavailable);
    json_obj_string(&o, "network", !(sb->layers & SANDBOX_NAMESPACES) || sb->cfg.allow_network
                                       ? "the runner's"
                                   : sb->setup.n_join_ns ? "shared" : "per call");
    json_obj_key(&o, "limits");
    json_obj_begin(&limits, out);
    static const char *const names[N_LIMITS] = {"memory_mib", "cpu_seconds", "processes",
                                                "file_size_mib", "open_files"};
    for (size_t i = 0; i < N_LIMITS; i++) {
        json_obj_key(&limits, names[i]);
        limits.rc |= buf_printf(out, "%llu",
                                (unsigned long long)*limit_ref((sandbox_limits *)&sb->cfg.limits, i));
    }
    o.rc |= json_obj_end(&limits);
    json_obj_key(&o, "distinct_own_settings");
    o.rc |= buf_printf(out, "%zu", sb->n_variants);
    return json_obj_end(&o) < 0 || buf_append_str(out, "\n") < 0 ? -1 : 0;
}

void sandbox_describe(unsigned layers, buf *out)
{
    const char *sep = "";
    for (size_t i = 0; i < N_LAYERS; i++)
        if (layers & layer_info[i].layer) {
            buf_printf(out, "%s%s", sep, layer_info[i].name);
            sep = ", ";
        }
    if (!*sep)
        buf_append_str(out, "none");
}

/* What a function's environment keeps of ours (with LC_* and the names of
 * --sandbox-env): like a pod's, it holds no credential of the runner's. */
static const char *const env_kept[] = {"PATH", "LANG", "LANGUAGE", "TZ", "TERM"};

/* Whether the NAME=value entry is kept: a name in env_kept, LC_*, or in
 * the comma-separated list extra. */
static int env_is_kept(const char *entry, const char *extra)
{
    size_t len = strcspn(entry, "=");
    if (!entry[len])
        return 0;   /* not NAME=value */
    if (!strncmp(entry, "LC_", 3))
        return 1;
    for (size_t i = 0; i < sizeof env_kept / sizeof *env_kept; i++)
        if (strlen(env_kept[i]) == len && !strncmp(entry, env_kept[i], len))
            return 1;
    for (const char *p = extra; p && *p; p += *p == ',') {
        size_t n = strcspn(p, ",");
        if (n == len && !strncmp(p, entry, len))
            return 1;
        p += n;
    }
    return 0;
}

/* The environment functions get: the entries kept of ours, TMPDIR and HOME
 * the writable directory. */
static int make_env(sandbox *sb, const char *tmp)
{
    extern char **environ;
    size_t n = 0;
    while (environ[n])
        n++;
    sb->envp = calloc(n + 3, sizeof *sb->envp);
    if (!sb->envp)
        return -1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (env_is_kept(environ[i], sb->cfg.env_names))
            sb->envp[k++] = environ[i];
    snprintf(sb->tmp_env, sizeof sb->tmp_env, "TMPDIR=%s", tmp);
    snprintf(sb->home_env, sizeof sb->home_env, "HOME=%s", tmp);
    sb->envp[k++] = sb->tmp_env;
    sb->envp[k] = sb->home_env;
    return 0;
}

/* The read-only roots every function gets besides --sandbox-read: the
 * system's, and --functions. */
#define FIXED_READ_ROOTS (sizeof system_roots / sizeof *system_roots + 1)

/* One entry of a path list, the n-th (0-based) to go in: absolute, and
 * within the room. 0, or -1 with why. */
static int path_entry_check(const char *flag, const char *p, size_t n, buf *why)
{
    if (p[0] != '/')
        return buf_fail(why, "%s: not an absolute path: %s", flag, p);
    if (n >= SANDBOX_LANDLOCK_MAX_PATHS)
        return buf_fail(why, "%s: more than %d paths", flag, SANDBOX_LANDLOCK_MAX_PATHS);
    return 0;
}

/* Checks the entries of a comma-separated list, the first to go in as the
 * `n`-th path. */
static int path_list_check(const char *flag, const char *list, size_t n, buf *why)
{
    if (!list || !*list)
        return 0;
    char *copy = strdup(list);
    if (!copy)
        return buf_fail(why, "%s", "out of memory");
    int rc = 0;
    for (char *save = NULL, *p = strtok_r(copy, ",", &save); p && rc == 0;
         p = strtok_r(NULL, ",", &save))
        rc = path_entry_check(flag, p, n++, why);
    free(copy);
    return rc;
}

int sandbox_config_check(const sandbox_config *cfg, buf *why)
{
    size_t fixed = FIXED_READ_ROOTS - (cfg->functions_dir ? 0 : 1);
    if (path_list_check("--sandbox-read", cfg->read_paths, fixed, why) < 0 ||
        path_list_check("--sandbox-write", cfg->write_paths, 0, why) < 0)
        return -1;
    return 0;
}

/* Appends the comma-separated absolute paths of list to paths[*n]; each
 * must be there (a directory when directories is set). */
static int split_paths(const char *flag, const char *list, int directories, char **copy,
                       const char **paths, size_t *n, buf *why)
{
    if (!list || !*list)
        return 0;
    if (!(*copy = strdup(list))) {
        buf_append_str(why, "out of memory");
        return -1;
    }
    for (char *save = NULL, *p = strtok_r(*copy, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        if (path_entry_check(flag, p, *n, why) < 0)
            return -1;
        /* checked now: one that cannot be opened would fail every child's
         * Landlock rules, and auto would run without Landlock */
        int fd = open(p, O_PATH | O_CLOEXEC | (directories ? O_DIRECTORY : 0));
        if (fd < 0) {
            buf_printf(why, "%s: %s: %s", flag, p, strerror(errno));
            return -1;
        }
        close(fd);
        paths[(*n)++] = p;
    }
    return 0;
}

/* Without a private /tmp the writable directory is one of ours, the same
 * for every call (each call's would need removing after it). */
static int make_tmp_dir(sandbox *sb, buf *why)
{
    const char *base = getenv("TMPDIR");
    snprintf(sb->tmp_dir, sizeof sb->tmp_dir, "%s/krm-sandbox-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(sb->tmp_dir)) {
        buf_printf(why, "sandbox: cannot make its temporary directory %s: %s", sb->tmp_dir,
                   strerror(errno));
        sb->tmp_dir[0] = '\0';
        return -1;
    }
    sb->ll.writable = sb->tmp_dir;
    return 0;
}

/* The texts the child writes for the limits. */
static void limits_text(sandbox *sb)
{
    const sandbox_limits *lim = &sb->cfg.limits;
    snprintf(sb->pid_max, sizeof sb->pid_max, "%llu",
             lim->processes + 1 < PID_MAX_MIN ? PID_MAX_MIN : (unsigned long long)lim->processes + 1);
    snprintf(sb->tmpfs_opts, sizeof sb->tmpfs_opts, "size=%llum,mode=1777",
             (unsigned long long)lim->memory_mib);
}

static int prepare(sandbox *sb, buf *why)
{
    snprintf(sb->top_uid_map, sizeof sb->top_uid_map, "0 %u 1\n", (unsigned)geteuid());
    snprintf(sb->top_gid_map, sizeof sb->top_gid_map, "0 %u 1\n", (unsigned)getegid());
    limits_text(sb);
    sb->ll.allow_network = sb->cfg.allow_network;
    for (size_t i = 0; i < sizeof system_roots / sizeof *system_roots; i++)
        sb->ll.read[sb->ll.n_read++] = system_roots[i];
    if (sb->cfg.functions_dir && realpath(sb->cfg.functions_dir, sb->functions_dir))
        sb->ll.read[sb->ll.n_read++] = sb->functions_dir;
    if (split_paths("--sandbox-read", sb->cfg.read_paths, 0, &sb->read_copy, sb->ll.read,
                    &sb->ll.n_read, why) < 0 ||
        split_paths("--sandbox-write", sb->cfg.write_paths, 1, &sb->write_copy, sb->ll.write,
                    &sb->ll.n_write, why) < 0)
        return -1;
    return 0;
}

/* Uses the layers now wanted to run ourselves (`runner-client --version`,
 * output dropped) as a function would be run; a step that fails drops its
 * layer and the rest are tried again. Returns 0, or -1 with why when a
 * spawn failed for no layer's reason. */
static int probe(sandbox *sb, unsigned *missing, buf *notes)
{
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null_fd < 0) {
        buf_printf(notes, "sandbox: cannot open /dev/null: %s", strerror(errno));
        return -1;
    }
    char *argv[] = {"runner-client", "--version", NULL};
    for (;;) {
        if (!(sb->layers & SANDBOX_NAMESPACES))
            close_shared_ns(sb);
        set_clone(sb);
        sb->ll.writable = sb->layers & SANDBOX_NAMESPACES ? "/tmp" : NULL;   /* made after */
        if (!(sb->layers & SANDBOX_NAMESPACES) && (sb->layers & SANDBOX_PROC)) {
            sb->layers &= ~(unsigned)SANDBOX_PROC;   /* its /proc is the namespaces' */
            *missing |= SANDBOX_PROC;
        }
        sb->ll.own_proc = (sb->layers & SANDBOX_PROC) != 0;
        sandbox_landlock_paths_forget(sb->ll.held);   /* which roots are held may change */
        pid_t pid;
        const char *step;
        int err = spawn_in_group_setup("/proc/self/exe", argv, NULL,
                                       (int[3]){null_fd, null_fd, null_fd}, &sb->setup, &pid,
                                       &step);
        if (!err) {
            int status;
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            break;
        }
        unsigned layer = step ? layer_of_step(step) : 0;
        if (!layer || !(sb->layers & layer)) {
            buf_printf(notes, "sandbox: cannot start a process%s%s: %s", step ? " at " : "",
                       step ? step : "", strerror(err));
            close(null_fd);
            return -1;
        }
        log_v(3, "sandbox: %s unavailable: %s: %s", layer_name(layer), step, strerror(err));
        if (notes->len)
            buf_append_str(notes, "; ");
        buf_printf(notes, "%s (%s: %s)", layer_name(layer), step, strerror(err));
        *missing |= layer;
        sb->layers &= ~layer;
    }
    close(null_fd);
    return 0;
}

sandbox *sandbox_start(const sandbox_config *cfg, buf *why)
{
    sandbox *sb = calloc(1, sizeof *sb);
    if (!sb)
        return NULL;
    sb->cfg = *cfg;
    sb->shared_ns[0] = sb->shared_ns[1] = -1;
    if (cfg->mode == SANDBOX_OFF) {
        log_warn("sandbox: off (--sandbox off): functions run as plain children of the runner, "
                 "with its files, network and credentials");
        return sb;
    }
    unsigned missing = 0;
    sb->layers = SANDBOX_ALL;
    int abi = sandbox_landlock_abi();
    int abi_errno = errno;
    if (abi < 1) {
        sb->layers &= ~(unsigned)SANDBOX_LANDLOCK;
        missing |= SANDBOX_LANDLOCK;
    }
    sb->ll.abi = abi;
    sb->setup = (spawn_child_setup){.prepare = prepare_child, .run = child_setup, .ctx = sb};
    buf notes = {0};
    if (!(sb->ll.held = sandbox_landlock_paths_new())) {
        buf_append_str(why, "out of memory");
        goto fail;
    }
    if (prepare(sb, why) < 0)
        goto fail;
    if (sandbox_seccomp_build(sb->cfg.allow_network, &sb->bpf, &notes) < 0) {
        sb->layers &= ~(unsigned)SANDBOX_SECCOMP;
        missing |= SANDBOX_SECCOMP;
    }
    if (abi < 1)
        buf_printf(&notes, "%slandlock (%s)", notes.len ? "; " : "", strerror(abi_errno));
    /* shared only where Landlock keeps each function's abstract sockets
     * (which live in the network namespace) from the others */
    if (!sb->cfg.allow_network && abi >= 6 && make_shared_net(sb, &notes) < 0) {
        sb->layers &= ~(unsigned)SANDBOX_NAMESPACES;
        missing |= SANDBOX_NAMESPACES;
    }
    if (probe(sb, &missing, &notes) < 0) {
        buf_append_str(why, notes.data ? notes.data : "out of memory");
        goto fail;
    }
    if (!(sb->layers & SANDBOX_NAMESPACES) && (sb->layers & SANDBOX_LANDLOCK) &&
        make_tmp_dir(sb, why) < 0) {
        if (cfg->mode == SANDBOX_STRICT)
            goto fail;
        /* e.g. a read-only root: functions then have nothing to write */
        log_warn("%s; functions get no writable directory", why->data);
        buf_reset(why);
    }
    if (make_env(sb, sb->tmp_dir[0] ? sb->tmp_dir : "/tmp") < 0) {
        buf_append_str(why, "out of memory");
        goto fail;
    }
    sb->setup.envp = sb->envp;
    if (cfg->mode == SANDBOX_STRICT && missing) {
        buf_append_str(why, "--sandbox strict: unavailable here:");
        for (size_t i = 0; i < N_LAYERS; i++)
            if (missing & layer_info[i].layer)
                buf_printf(why, " %s, which needs %s;", layer_info[i].name, layer_info[i].needs);
        if (notes.len)
            buf_printf(why, " (%s)", notes.data);
        goto fail;
    }
    if (missing && notes.data)
        sb->unavailable = strdup(notes.data);   /* the view goes without on ENOMEM */
    buf used = {0};
    sandbox_describe(sb->layers, &used);
    log_info("sandbox: %s: functions run with %s%s%s", cfg->mode == SANDBOX_STRICT ? "strict" : "auto",
             used.data ? used.data : "?", missing ? "; unavailable: " : "",
             missing ? (notes.data ? notes.data : layer_name(missing & -missing)) : "");
    buf_free(&used);
    buf_free(&notes);
    return sb;
fail:
    buf_free(&notes);
    sandbox_free(sb);
    return NULL;
}

const spawn_child_setup *sandbox_child_setup(const sandbox *sb)
{
    return sb && sb->layers ? &sb->setup : NULL;
}

/* ---- a function's own settings -------------------------------------------- */

/* A variant of sb with o's settings. NULL with why. */
static sandbox *make_variant(sandbox *sb, int network, const sandbox_limits *lim,
                             unsigned annotated, buf *why)
{
    sandbox *v = malloc(sizeof *v);
    if (!v) {
        buf_append_str(why, "out of memory");
        return NULL;
    }
    *v = *sb;
    v->variant_of = sb;
    v->variants = NULL;
    v->n_variants = 0;
    v->own_bpf = 0;
    v->annotated = annotated;
    v->cfg.limits = *lim;
    v->cfg.allow_network = network;
    v->ll.allow_network = network;
    v->setup.ctx = v;
    limits_text(v);
    set_clone(v);
    if ((v->layers & SANDBOX_SECCOMP) && network != sb->cfg.allow_network) {
        buf notes = {0};
        if (sandbox_seccomp_build(network, &v->bpf, &notes) < 0) {
            buf_printf(why, "sandbox: cannot build the system call filter: %s",
                       notes.data ? notes.data : "out of memory");
            buf_free(&notes);
            free(v);
            return NULL;
        }
        v->own_bpf = 1;
    }
    return v;
}

const spawn_child_setup *sandbox_setup_for(sandbox *sb, const sandbox_override *o, buf *why)
{
    if (!sb || !sb->layers)
        return NULL;
    int network = o->allow_network < 0 ? sb->cfg.allow_network : o->allow_network;
    sandbox_limits lim = sb->cfg.limits;
    unsigned annotated = 0;
    for (size_t i = 0; i < N_LIMITS; i++) {
        uint64_t want = *limit_ref((sandbox_limits *)&o->limits, i);
        if (want) {
            *limit_ref(&lim, i) = want;
            annotated |= 1u << i;
        }
    }
    if (network == sb->cfg.allow_network && !annotated)
        return &sb->setup;
    for (size_t i = 0; i < sb->n_variants; i++) {
        sandbox *v = sb->variants[i];
        if (v->cfg.allow_network == network && v->annotated == annotated &&
            !memcmp(&v->cfg.limits, &lim, sizeof lim))
            return &v->setup;
    }
    if (sb->n_variants == SANDBOX_MAX_VARIANTS) {
        buf_printf(why, "sandbox: more than %d distinct per-function settings "
                   "(fn.kpt.dev/sandbox-* annotations); restart the runner", SANDBOX_MAX_VARIANTS);
        return NULL;
    }
    sandbox **grown = realloc(sb->variants, (sb->n_variants + 1) * sizeof *grown);
    if (!grown) {
        buf_append_str(why, "out of memory");
        return NULL;
    }
    sb->variants = grown;
    sandbox *v = make_variant(sb, network, &lim, annotated, why);
    if (!v)
        return NULL;
    sb->variants[sb->n_variants++] = v;
    return &v->setup;
}

const sandbox *sandbox_of_setup(const sandbox *sb, const spawn_child_setup *setup)
{
    if (!sb || !setup)
        return NULL;
    if (setup == &sb->setup)
        return sb;
    for (size_t i = 0; i < sb->n_variants; i++)
        if (setup == &sb->variants[i]->setup)
            return sb->variants[i];
    return NULL;
}

int sandbox_override_of(const sandbox *sb, const spawn_child_setup *setup, sandbox_override *o)
{
    const sandbox *v = sandbox_of_setup(sb, setup);
    if (!v)
        return -1;
    *o = (sandbox_override){.allow_network = v == sb ? -1 : v->cfg.allow_network};
    for (size_t i = 0; i < N_LIMITS; i++)
        if (v->annotated >> i & 1)
            *limit_ref(&o->limits, i) = *limit_ref((sandbox_limits *)&v->cfg.limits, i);
    return 0;
}

unsigned sandbox_layers(const sandbox *sb)
{
    return sb ? sb->layers : 0;
}

/* Whether resolved path `p` is `root` or beneath it. */
static int is_beneath(const char *p, const char *root)
{
    char real[PATH_MAX];
    if (!realpath(root, real))
        return 0;
    size_t n = strlen(real);
    if (n == 1)
        return 1;
    return !strncmp(p, real, n) && (p[n] == '/' || !p[n]);
}

int sandbox_check_hidden(const sandbox *sb, const char *path, const char *what, buf *why)
{
    char real[PATH_MAX];
    if (!sb || !(sb->layers & SANDBOX_LANDLOCK) || !path || !realpath(path, real))
        return 0;
    const char *root = NULL;
    for (size_t i = 0; i < sb->ll.n_read && !root; i++)
        if (is_beneath(real, sb->ll.read[i]))
            root = sb->ll.read[i];
    for (size_t i = 0; i < sb->ll.n_write && !root; i++)
        if (is_beneath(real, sb->ll.write[i]))
            root = sb->ll.write[i];
    if (!root && is_beneath(real, "/dev"))
        root = "/dev";
    if (!root && !(sb->layers & SANDBOX_NAMESPACES) && is_beneath(real, sb->tmp_dir))
        root = sb->tmp_dir;
    if (!root)
        return 0;
    buf_printf(why, "sandbox: %s %s can be read by functions: it is beneath %s, which they may "
               "read (the system's roots, --functions, --sandbox-read and --sandbox-write); keep "
               "it elsewhere", what, path, root);
    return -1;
}

/* How each limit shows when it ends a function: the signal the kernel
 * sends at it, or (a failed allocation, open or write is the function's to
 * report) the words runtimes use for the error, on its stderr. */
static const struct {
    int signal;
    const char *words[6];
    const char *limit, *flag, *unit;
    size_t offset;   /* of the figure in sandbox_limits */
} limit_signs[] = {
    {SIGXCPU, {"SIGXCPU", "CPU time limit exceeded"}, "CPU", "--sandbox-cpu", "s",
     offsetof(sandbox_limits, cpu_seconds)},
    {SIGXFSZ, {"SIGXFSZ", "File too large", "file too large"}, "file size",
     "--sandbox-file-size", "MiB", offsetof(sandbox_limits, file_size_mib)},
    {0, {"out of memory", "Cannot allocate memory", "cannot allocate memory", "MemoryError"},
     "memory", "--sandbox-memory", "MiB", offsetof(sandbox_limits, memory_mib)},
    {0, {"Too many open files", "too many open files"}, "open files", "--sandbox-open-files", "",
     offsetof(sandbox_limits, open_files)},
    /* a fork past its PID namespace's pid_max fails EAGAIN: the shells' and
     * runtimes' words for a failed fork, not EAGAIN's alone (a non-blocking
     * read says it too) */
    {0, {"Cannot fork", "can't fork", "fork: Resource temporarily unavailable", "fork: retry",
         "os.fork()"},
     "processes", "--sandbox-processes", "", offsetof(sandbox_limits, processes)},
};

/* Whether text (len bytes, not NUL-terminated perhaps) holds word. */
static int mentions(const char *text, size_t len, const char *word)
{
    return text && memmem(text, len, word, strlen(word)) != NULL;
}

int sandbox_explain_exit(const sandbox *sb, int wait_status, int64_t cpu_ns, const char *err,
                         size_t err_len, buf *out)
{
    if (!sb || !(sb->layers & SANDBOX_RLIMITS))
        return 0;
    int failed = !WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0;
    int killed = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
    if (killed == SIGKILL && cpu_ns / 1000000000 >= (int64_t)sb->cfg.limits.cpu_seconds)
        killed = SIGXCPU;   /* the hard limit's */
    for (size_t i = 0; failed && i < sizeof limit_signs / sizeof *limit_signs; i++) {
        if (limit_signs[i].offset == offsetof(sandbox_limits, processes) &&
            !(sb->layers & SANDBOX_PROC))
            continue;   /* not bounded without its own /proc's pid_max */
        int hit = limit_signs[i].signal && killed == limit_signs[i].signal;
        for (size_t w = 0; !hit && w < 6 && limit_signs[i].words[w]; w++)
            hit = mentions(err, err_len, limit_signs[i].words[w]);
        if (!hit)
            continue;
        const uint64_t *figure =
            (const uint64_t *)((const char *)&sb->cfg.limits + limit_signs[i].offset);
        int annotated = 0;   /* the function's own setting: named as its annotation */
        for (size_t l = 0; l < N_LIMITS; l++)
            annotated |= limit_at[l] == limit_signs[i].offset && (sb->annotated & (1u << l));
        buf_printf(out, "function exceeded its %s limit of %llu%s%s (%s%s)", limit_signs[i].limit,
                   (unsigned long long)*figure, *limit_signs[i].unit ? " " : "",
                   limit_signs[i].unit, annotated ? "fn.kpt.dev/" : "",
                   limit_signs[i].flag + (annotated ? 2 : 0));
        return 1;
    }
    return 0;
}

void sandbox_free(sandbox *sb)
{
    if (!sb)
        return;
    if (sb->variant_of) {   /* the rest is its base's */
        if (sb->own_bpf)
            free(sb->bpf.filter);
        free(sb);
        return;
    }
    for (size_t i = 0; i < sb->n_variants; i++)
        sandbox_free(sb->variants[i]);
    free(sb->variants);
    free(sb->unavailable);
    if (sb->tmp_dir[0])
        rmdir(sb->tmp_dir);   /* what functions left there stays, and so does it */
    close_shared_ns(sb);
    sandbox_landlock_paths_free(sb->ll.held);
    free(sb->bpf.filter);
    free(sb->envp);
    free(sb->read_copy);
    free(sb->write_copy);
    free(sb);
}
