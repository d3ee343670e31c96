/* sandbox_landlock: the functions' view of the files; see sandbox_landlock.h. */
#include "runtime/sandbox_landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Newer than the C library's headers may know. */
#define LL_FS_TRUNCATE (1ULL << 14)    /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)   /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)    /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)   /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

/* landlock_ruleset_attr as of ABI 6; older kernels are given its prefix */
typedef struct ll_ruleset_attr {
    uint64_t handled_access_fs, handled_access_net, scoped;
} ll_ruleset_attr;

#define LL_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
                 LANDLOCK_ACCESS_FS_READ_DIR)

int sandbox_landlock_abi(void)
{
    return (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
}

static uint64_t fs_handled(int abi)
{
    uint64_t all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;   /* ABI 1: bits 0-12 */
    if (abi >= 2)
        all |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        all |= LL_FS_TRUNCATE;
    if (abi >= 5)
        all |= LL_FS_IOCTL_DEV;
    return all;
}

/* What /dev's files may be: read and written, not made or removed. */
static uint64_t dev_access(int abi)
{
    return LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
           LANDLOCK_ACCESS_FS_READ_DIR | (fs_handled(abi) & (LL_FS_TRUNCATE | LL_FS_IOCTL_DEV));
}

/* One rule: the inode fd holds (O_PATH), access allowed beneath it. */
static int add_rule(int ruleset, int fd, uint64_t access)
{
    struct landlock_path_beneath_attr rule = {.allowed_access = access, .parent_fd = fd};
    return syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0
               ? errno : 0;
}

/* A rule on path, opened now (file_only: a file, which takes file rights
 * only). */
static int add_path(int ruleset, const char *path, uint64_t access, int file_only)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : errno;   /* a root this system lacks */
    if (file_only)
        access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE;
    int err = add_rule(ruleset, fd, access);
    close(fd);
    return err;
}

/* The roots whose inodes are the same for every spawn, held open by the
 * process that spawns (opened at its first spawn: a fork's copy, the
 * spawner's, is closed there), so that a child does not open them again.
 * Not the private /tmp and /proc: mounted in the child, after, and a rule
 * on the directory a mount covers does not cover what is mounted there
 * (Landlock's walk up skips the mount point). */
#define PREPARED_MAX (2 * SANDBOX_LANDLOCK_MAX_PATHS + 1)

struct sandbox_landlock_paths {
    pid_t maker;                 /* 0: none opened */
    size_t n;
    int fd[PREPARED_MAX];        /* -1: not on this system */
    uint64_t access[PREPARED_MAX];
};

sandbox_landlock_paths *sandbox_landlock_paths_new(void)
{
    return calloc(1, sizeof(sandbox_landlock_paths));
}

static void close_paths(sandbox_landlock_paths *p)
{
    if (p->maker == getpid())
        for (size_t i = 0; i < p->n; i++)
            if (p->fd[i] >= 0)
                close(p->fd[i]);
    p->maker = 0;   /* a parent's are closed here (or its to close) */
    p->n = 0;
}

void sandbox_landlock_paths_forget(sandbox_landlock_paths *p)
{
    if (p)
        close_paths(p);
}

void sandbox_landlock_paths_free(sandbox_landlock_paths *p)
{
    sandbox_landlock_paths_forget(p);
    free(p);
}

/* Whether the child mounts path itself (so opens it after). */
static int mounted_in_child(const sandbox_landlock *ll, const char *path)
{
    return ll->own_proc && !strcmp(path, "/proc");
}

static int hold(sandbox_landlock_paths *p, const char *path, uint64_t access)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0 && errno != ENOENT)   /* ENOENT: a root this system lacks */
        return errno;
    p->fd[p->n] = fd;
    p->access[p->n++] = access;
    return 0;
}

int sandbox_landlock_prepare(const sandbox_landlock *ll, const char **step)
{
    sandbox_landlock_paths *p = ll->held;
    if (p->maker == getpid())
        return 0;
    close_paths(p);
    p->maker = getpid();
    *step = "landlock: landlock_add_rule";   /* where the open failed before */
    int err = 0;
    for (size_t i = 0; i < ll->n_read && !err; i++)
        if (!mounted_in_child(ll, ll->read[i]))
            err = hold(p, ll->read[i], LL_READ);
    if (!err)
        err = hold(p, "/dev", dev_access(ll->abi));
    for (size_t i = 0; i < ll->n_write && !err; i++)
        err = hold(p, ll->write[i], fs_handled(ll->abi));
    if (err)
        close_paths(p);   /* opened again at the next spawn */
    return err;
}

int sandbox_landlock_ruleset(const sandbox_landlock *ll, const char *binary, const char **step)
{
    return sandbox_landlock_ruleset_fds(ll, binary, -1, -1, step);
}

int sandbox_landlock_ruleset_fds(const sandbox_landlock *ll, const char *binary, int writable_fd,
                                 int proc_fd, const char **step)
{
    uint64_t fs = fs_handled(ll->abi);
    ll_ruleset_attr attr = {.handled_access_fs = fs};
    size_t attr_size = sizeof attr.handled_access_fs;
    if (ll->abi >= 4) {
        attr.handled_access_net = ll->allow_network ? 0 : LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
        attr_size += sizeof attr.handled_access_net;
    }
    if (ll->abi >= 6) {
        attr.scoped = LL_SCOPE_SIGNAL | (ll->allow_network ? 0 : LL_SCOPE_ABSTRACT_UNIX);
        attr_size += sizeof attr.scoped;
    }
    *step = "landlock: landlock_create_ruleset";
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
    if (ruleset < 0)
        return -errno;
    const sandbox_landlock_paths *held = ll->held;
    int err = 0;
    *step = "landlock: landlock_add_rule";
    for (size_t i = 0; i < held->n && !err; i++)
        if (held->fd[i] >= 0)
            err = add_rule(ruleset, held->fd[i], held->access[i]);
    if (!err && ll->own_proc)
        err = proc_fd >= 0 ? add_rule(ruleset, proc_fd, LL_READ) : add_path(ruleset, "/proc", LL_READ, 0);
    if (!err && ll->writable)
        err = writable_fd >= 0 ? add_rule(ruleset, writable_fd, fs) : add_path(ruleset, ll->writable, fs, 0);
    if (!err && binary)   /* the binary, wherever it is */
        err = add_path(ruleset, binary, LL_READ, 1);
    if (err) {
        close(ruleset);
        return -err;
    }
    return ruleset;
}

int sandbox_landlock_restrict(int ruleset, const char **step)
{
    *step = "landlock: landlock_restrict_self";
    return syscall(SYS_landlock_restrict_self, ruleset, 0) < 0 ? errno : 0;
}

int sandbox_landlock_apply(const sandbox_landlock *ll, const char *binary, const char **step)
{
    int ruleset = sandbox_landlock_ruleset(ll, binary, step);
    if (ruleset < 0)
        return -ruleset;
    int err = sandbox_landlock_restrict(ruleset, step);
    close(ruleset);
    return err;
}
