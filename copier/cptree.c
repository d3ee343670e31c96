/* cptree: recursive copy with cp -a semantics; see cptree.h.
 *
 * Everything works relative to open directory descriptors (fstatat,
 * openat, mkdirat, ...), so a directory renamed or replaced by a symlink
 * during the copy cannot redirect writes elsewhere. Directory metadata is
 * applied after the contents are copied (writing the contents would change
 * the mtime, and a 0555 directory could not be filled). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "cptree.h"
#include "fileio.h"
#include "msg.h"
#include "tmpname.h"

/* One entry being copied: the source and destination as (directory
 * descriptor, name) pairs, and their paths for messages. */
typedef struct node {
    int sdir;
    const char *sname, *spath;
    int ddir;
    const char *dname, *dpath;
    struct stat st;               /* the source's */
} node;

/* The destination directories being filled, innermost first: a source
 * directory found among them would be copied into itself forever. */
typedef struct ancestor {
    dev_t dev;
    ino_t ino;
    const struct ancestor *up;
} ancestor;

/* Where metadata goes: an open descriptor, or a name in a directory. */
typedef struct target {
    int fd;                       /* -1: use dir and name */
    int dir;
    const char *name;
    int is_link;
    const char *path;             /* for messages */
} target;

static int copy_entry(const cp_opts *o, node *n, const ancestor *up);

static int t_chown(const target *t, uid_t uid, gid_t gid)
{
    if (t->fd >= 0)
        return fchown(t->fd, uid, gid);
    return fchownat(t->dir, t->name, uid, gid, AT_SYMLINK_NOFOLLOW);
}

static int t_chmod(const target *t, mode_t mode)
{
    if (t->fd >= 0)
        return fchmod(t->fd, mode);
    return fchmodat(t->dir, t->name, mode, 0);
}

static int t_utimes(const target *t, const struct stat *st)
{
    const struct timespec ts[2] = {st->st_atim, st->st_mtim};
    if (t->fd >= 0)
        return futimens(t->fd, ts);
    return utimensat(t->dir, t->name, ts, AT_SYMLINK_NOFOLLOW);
}

/* A metadata call failed: EPERM (and EINVAL for an unmapped owner) only
 * warns, as busybox does; anything else fails the entry. */
static int meta_failed(const char *what, const char *path, int tolerate_einval)
{
    int err = errno;
    cop_msg(err, "can't preserve %s of '%s'", what, path);
    return err == EPERM || (tolerate_einval && err == EINVAL) ? 0 : -1;
}

/* Applies ownership, mode and times from st to t. Without preserve only the
 * mode of a new entry is set: the source's permission bits minus the umask. */
static int apply_meta(const cp_opts *o, const struct stat *st, const target *t, int created)
{
    mode_t mode = st->st_mode & 07777;
    if (!o->preserve)
        mode &= 0777 & ~o->umask;
    if (o->preserve && t_chown(t, st->st_uid, st->st_gid) < 0) {
        if (meta_failed("ownership", t->path, 1) < 0)
            return -1;
        mode &= ~(mode_t)(S_ISUID | S_ISGID);   /* not for the wrong owner */
    }
    if (!t->is_link && (o->preserve || created) && t_chmod(t, mode) < 0 &&
        meta_failed("permissions", t->path, 0) < 0)
        return -1;
    if (o->preserve && t_utimes(t, st) < 0 && meta_failed("times", t->path, 0) < 0)
        return -1;
    return 0;
}

/* Looks at the destination before replacing it. Returns 1 if it exists
 * (*dst filled), 0 if not, -1 (reported) if it must not be replaced. */
static int check_dest(const node *n, struct stat *dst)
{
    if (fstatat(n->ddir, n->dname, dst, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno == ENOENT)
            return 0;
        cop_msg(errno, "cannot stat '%s'", n->dpath);
        return -1;
    }
    int src_dir = S_ISDIR(n->st.st_mode), dst_dir = S_ISDIR(dst->st_mode);
    if (dst->st_dev == n->st.st_dev && dst->st_ino == n->st.st_ino)
        cop_msg(0, "'%s' and '%s' are the same file", n->spath, n->dpath);
    else if (dst_dir && !src_dir)
        cop_msg(0, "cannot overwrite directory '%s' with non-directory", n->dpath);
    else if (!dst_dir && src_dir)
        cop_msg(0, "cannot overwrite non-directory '%s' with directory '%s'", n->dpath, n->spath);
    else
        return 1;
    return -1;
}

/* Renames a finished temporary entry into place, or removes it when rc
 * says the entry failed. Returns rc, or -1 if the rename fails. */
static int finish_tmp(const node *n, const cop_tmp *t, int rc)
{
    if (rc == 0 && cop_tmp_commit(n->ddir, t, n->dname) < 0) {
        cop_msg(errno, "cannot create '%s' (rename)", n->dpath);
        rc = -1;
    }
    if (rc < 0)
        cop_tmp_discard(n->ddir, t);
    return rc;
}

/* Contents, metadata and fsync of a new regular file. */
static int fill_file(const cp_opts *o, const node *n, int sfd, int fd)
{
    int write_failed = 0;
    if (cop_copy_data(sfd, fd, &write_failed) < 0) {
        cop_msg(errno, write_failed ? "error writing '%s'" : "error reading '%s'",
                write_failed ? n->dpath : n->spath);
        return -1;
    }
    const target t = {.fd = fd, .path = n->dpath};
    if (apply_meta(o, &n->st, &t, 1) < 0)
        return -1;
    if (fsync(fd) < 0) {
        cop_msg(errno, "error writing '%s' (fsync)", n->dpath);
        return -1;
    }
    return 0;
}

static int copy_reg(const cp_opts *o, const node *n)
{
    struct stat dst;
    if (check_dest(n, &dst) < 0)
        return -1;
    int sfd = openat(n->sdir, n->sname, O_RDONLY | O_CLOEXEC | (o->no_deref ? O_NOFOLLOW : 0));
    if (sfd < 0) {
        cop_msg(errno, "cannot open '%s' for reading", n->spath);
        return -1;
    }
    cop_tmp t;
    int fd = cop_tmp_file(n->ddir, &t);
    if (fd < 0) {
        cop_msg(errno, "cannot create regular file '%s'", n->dpath);
        close(sfd);
        return -1;
    }
    int rc = finish_tmp(n, &t, fill_file(o, n, sfd, fd));
    close(fd);          /* after the rename: the lock covers the file's whole life */
    close(sfd);
    return rc;
}

static int copy_symlink(const cp_opts *o, const node *n)
{
    char link[PATH_MAX];
    ssize_t len = readlinkat(n->sdir, n->sname, link, sizeof link);
    if (len < 0 || len == (ssize_t)sizeof link) {
        cop_msg(len < 0 ? errno : ENAMETOOLONG, "cannot read symbolic link '%s'", n->spath);
        return -1;
    }
    link[len] = '\0';
    struct stat dst;
    if (check_dest(n, &dst) < 0)
        return -1;
    cop_tmp t;
    if (cop_tmp_symlink(n->ddir, link, &t) < 0) {
        cop_msg(errno, "cannot create symbolic link '%s'", n->dpath);
        return -1;
    }
    const target tg = {.fd = -1, .dir = n->ddir, .name = t.name, .is_link = 1, .path = n->dpath};
    return finish_tmp(n, &t, apply_meta(o, &n->st, &tg, 1));
}

/* FIFOs, sockets and device nodes (with -R; without it they are read). */
static int copy_special(const cp_opts *o, const node *n)
{
    struct stat dst;
    if (check_dest(n, &dst) < 0)
        return -1;
    cop_tmp t;
    if (cop_tmp_mknod(n->ddir, n->st.st_mode & (S_IFMT | 0700), n->st.st_rdev, &t) < 0) {
        cop_msg(errno, "cannot create special file '%s'", n->dpath);
        return -1;
    }
    const target tg = {.fd = -1, .dir = n->ddir, .name = t.name, .path = n->dpath};
    return finish_tmp(n, &t, apply_meta(o, &n->st, &tg, 1));
}

static int in_chain(const ancestor *a, const struct stat *st)
{
    for (; a; a = a->up)
        if (a->dev == st->st_dev && a->ino == st->st_ino)
            return 1;
    return 0;
}

/* path + "/" + name into b (no doubled slash). Returns 0 or -1 (reported). */
static int join(buf *b, const char *path, const char *name)
{
    size_t len = strlen(path);
    buf_reset(b);
    if (buf_append(b, path, len) < 0 ||
        (len > 0 && path[len - 1] != '/' && buf_append(b, "/", 1) < 0) ||
        buf_append_str(b, name) < 0) {
        cop_msg(ENOMEM, "cannot build the path of '%s/%s'", path, name);
        return -1;
    }
    return 0;
}

/* Copies every entry of the open source directory sfd (consumed) into dfd. */
static int copy_children(const cp_opts *o, int sfd, const node *n, int dfd, const ancestor *up)
{
    DIR *d = fdopendir(sfd);
    if (!d) {
        cop_msg(errno, "cannot read directory '%s'", n->spath);
        close(sfd);
        return -1;
    }
    buf sp = {0}, dp = {0};
    int rc = 0;
    struct dirent *e;
    for (errno = 0; (e = readdir(d)) != NULL; errno = 0) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (join(&sp, n->spath, e->d_name) < 0 || join(&dp, n->dpath, e->d_name) < 0) {
            rc = -1;
            continue;
        }
        node c = {.sdir = sfd, .sname = e->d_name, .spath = sp.data,
                  .ddir = dfd, .dname = e->d_name, .dpath = dp.data};
        if (copy_entry(o, &c, up) < 0)
            rc = -1;
    }
    if (errno) {
        cop_msg(errno, "cannot read directory '%s'", n->spath);
        rc = -1;
    }
    buf_free(&sp);
    buf_free(&dp);
    closedir(d);
    return rc;
}

/* An existing destination directory we own but cannot write (0555 from an
 * earlier run) gets u+wx while it is filled; returns 1 if changed. */
static int make_writable(int dfd, const struct stat *dst, const char *dpath)
{
    if (geteuid() == 0 || dst->st_uid != geteuid() || (dst->st_mode & 0300) == 0300)
        return 0;
    if (fchmod(dfd, (dst->st_mode & 07777) | 0300) < 0) {
        cop_msg(errno, "cannot make directory '%s' writable", dpath);
        return 0;
    }
    return 1;
}

/* Creates (mkdirat) or opens the destination directory. Returns its
 * descriptor, or -1 (reported). */
static int open_dest_dir(const node *n, int exists)
{
    if (!exists && mkdirat(n->ddir, n->dname, 0700) < 0) {
        cop_msg(errno, "cannot create directory '%s'", n->dpath);
        return -1;
    }
    int dfd = openat(n->ddir, n->dname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0)
        cop_msg(errno, "cannot open directory '%s'", n->dpath);
    return dfd;
}

/* Metadata of a filled directory, then fsync so the renames inside last. */
static int finish_dir(const cp_opts *o, const node *n, int dfd, int created,
                      const struct stat *dst, int chmodded)
{
    int rc = 0;
    const target t = {.fd = dfd, .path = n->dpath};
    if (o->preserve || created)
        rc = apply_meta(o, &n->st, &t, created);
    else if (chmodded && fchmod(dfd, dst->st_mode & 07777) < 0)
        rc = meta_failed("permissions", n->dpath, 0);
    if (fsync(dfd) < 0 && errno != EINVAL) {
        cop_msg(errno, "cannot sync directory '%s'", n->dpath);
        rc = -1;
    }
    return rc;
}

static int copy_dir(const cp_opts *o, const node *n, const ancestor *up)
{
    struct stat dst;
    int exists = check_dest(n, &dst);
    if (exists < 0)
        return -1;
    if (in_chain(up, &n->st)) {
        cop_msg(0, "cannot copy a directory, '%s', into itself, '%s'", n->spath, n->dpath);
        return -1;
    }
    int sfd = openat(n->sdir, n->sname, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
                                            (o->no_deref ? O_NOFOLLOW : 0));
    if (sfd < 0) {
        cop_msg(errno, "cannot open directory '%s'", n->spath);
        return -1;
    }
    int dfd = open_dest_dir(n, exists);
    if (dfd < 0) {
        close(sfd);
        return -1;
    }
    struct stat me_st;
    if (fstat(dfd, &me_st) < 0) {
        cop_msg(errno, "cannot stat '%s'", n->dpath);
        close(dfd);
        close(sfd);
        return -1;
    }
    int chmodded = exists && make_writable(dfd, &dst, n->dpath);
    if (exists)
        cop_tmp_sweep(dfd, n->dpath);
    const ancestor me = {.dev = me_st.st_dev, .ino = me_st.st_ino, .up = up};
    int rc = copy_children(o, sfd, n, dfd, &me);
    if (finish_dir(o, n, dfd, !exists, &dst, chmodded) < 0)
        rc = -1;
    close(dfd);
    return rc;
}

static int copy_entry(const cp_opts *o, node *n, const ancestor *up)
{
    if (fstatat(n->sdir, n->sname, &n->st, o->no_deref ? AT_SYMLINK_NOFOLLOW : 0) < 0) {
        cop_msg(errno, "cannot stat '%s'", n->spath);
        return -1;
    }
    if (S_ISDIR(n->st.st_mode)) {
        if (!o->recursive) {
            cop_msg(0, "-r not specified; omitting directory '%s'", n->spath);
            return -1;
        }
        return copy_dir(o, n, up);
    }
    if (S_ISLNK(n->st.st_mode))
        return copy_symlink(o, n);
    if (S_ISREG(n->st.st_mode) || !o->recursive)
        return copy_reg(o, n);
    return copy_special(o, n);
}

int cp_copy(const cp_opts *o, const char *src, int dstdir, const char *dstname, const char *dstpath)
{
    node n = {.sdir = AT_FDCWD, .sname = src, .spath = src,
              .ddir = dstdir, .dname = dstname, .dpath = dstpath};
    return copy_entry(o, &n, NULL);
}
