/* sandbox_landlock: the functions' view of the files; see sandbox_landlock.h. */
#include "runtime/sandbox_landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
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

static int add_path(int ruleset, const char *path, uint64_t access, int file_only)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : errno;   /* a root this system lacks */
    struct landlock_path_beneath_attr rule = {.allowed_access = access, .parent_fd = fd};
    if (file_only)   /* a file takes file rights only */
        rule.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE;
    int err = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0
                  ? errno : 0;
    close(fd);
    return err;
}

int sandbox_landlock_apply(const sandbox_landlock *ll, const char *binary, const char **step)
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
        return errno;
    uint64_t dev = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                   LANDLOCK_ACCESS_FS_READ_DIR | (fs & (LL_FS_TRUNCATE | LL_FS_IOCTL_DEV));
    int err = 0;
    *step = "landlock: landlock_add_rule";
    for (size_t i = 0; i < ll->n_read && !err; i++)
        err = add_path(ruleset, ll->read[i], LL_READ, 0);
    if (!err)
        err = add_path(ruleset, "/dev", dev, 0);
    if (!err && ll->writable)
        err = add_path(ruleset, ll->writable, fs, 0);
    for (size_t i = 0; i < ll->n_write && !err; i++)
        err = add_path(ruleset, ll->write[i], fs, 0);
    if (!err)   /* the binary, wherever it is */
        err = add_path(ruleset, binary, LL_READ, 1);
    if (!err) {
        *step = "landlock: landlock_restrict_self";
        if (syscall(SYS_landlock_restrict_self, ruleset, 0) < 0)
            err = errno;
    }
    close(ruleset);
    return err;
}
