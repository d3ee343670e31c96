/* pkg_stage: a package written back all or nothing; see pkg_stage.h. */
#include "pkg/pkg_stage.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/beneath_write.h"
#include "core/fdio.h"
#include "core/vec.h"
#include "core/term_text.h"

#define WARNING "runner-client eval: warning: "


/* One rename (or removal) of the commit, in an existing directory. */
typedef struct stage_move {
    char *dir;                    /* the directory, relative to the root ("" the root) */
    char *name;                   /* the entry's final name there */
    char *staged;                 /* the new file or directory; NULL for a removal */
    char *backup;                 /* the original's second name; NULL when there is none */
    int by_rename;                /* no hard link was possible: the original is renamed to
                                     backup at commit (between the two renames the name is
                                     missing) */
    int moved_away;               /* by_rename: the original is at backup now */
    int is_dir;                   /* staged is a directory made for the write-back */
    int done;                     /* in place */
} stage_move;

/* An entry made while staging, by its path at that time. */
typedef struct stage_made {
    char *path;
    int is_dir;
} stage_made;

typedef struct stage {
    int root;
    const char *dir;
    vec moves;                /* of stage_move, in the order they are committed */
    vec made;                 /* of stage_made */
    size_t last_new_dir;      /* its index in moves, SIZE_MAX when none; see find_new_dir */
    buf *err;
} stage;

/* ---- messages ------------------------------------------------------------- */

/* err = "DIR/REL: " + why; -1. */
static int fail(stage *s, const char *rel, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(stage *s, const char *rel, const char *fmt, ...)
{
    buf_fail_line(s->err, "%s/%s: ", s->dir, rel);
    va_list ap;
    va_start(ap, fmt);
    buf_vfail_line(s->err, fmt, ap);
    va_end(ap);
    return -1;
}

/* The failure errno (for the part rel[0..bad_len)) as a message. */
static int fail_errno(stage *s, const char *rel, size_t bad_len)
{
    int e = errno;
    if (e == ELOOP)
        return fail(s, rel, "%.*s is a symbolic link: files are written only beneath the package, "
                    "never through a link", (int)bad_len, rel);
    if (e == ENOTDIR)
        return fail(s, rel, "%.*s is not a directory", (int)bad_len, rel);
    return fail(s, rel, "%s", strerror(e));
}

/* ---- bookkeeping ---------------------------------------------------------- */

static char *join(const char *dir, const char *name)
{
    buf b = { 0 };
    if (buf_printf(&b, "%s%s%s", dir, *dir ? "/" : "", name) < 0) {
        buf_free(&b);
        return NULL;
    }
    return b.data;
}

static stage_move *move_at(const stage *s, size_t i)
{
    return (stage_move *)s->moves.items + i;
}

static stage_made *made_at(const stage *s, size_t i)
{
    return (stage_made *)s->made.items + i;
}

static int note_made(stage *s, const char *dir, const char *name, int is_dir)
{
    char *path = join(dir, name);
    stage_made *e = path ? vec_push(&s->made, sizeof *e, VEC_NO_MAX) : NULL;
    if (!e) {
        free(path);
        return -1;
    }
    *e = (stage_made){ .path = path, .is_dir = is_dir };
    return 0;
}

static stage_move *add_move(stage *s, const char *dir, const char *name)
{
    char *dir_copy = strdup(dir), *name_copy = strdup(name);
    stage_move *m = dir_copy && name_copy ? vec_push(&s->moves, sizeof *m, VEC_NO_MAX) : NULL;
    if (!m) {
        free(dir_copy);
        free(name_copy);
        return NULL;
    }
    *m = (stage_move){ .dir = dir_copy, .name = name_copy };
    return m;
}

/* The directory made for the write-back that will be dir/name, if any.
 * Only the last one made is looked at: writes come in path order, so every
 * path below one new directory comes before the next new directory is
 * made, and the cost stays linear in the output. (Were the order
 * different, a second staged directory for the same name would fail its
 * rename at commit, and the write-back would be undone: never wrong.) */
static stage_move *find_new_dir(stage *s, const char *dir, const char *name)
{
    if (s->last_new_dir >= s->moves.len)
        return NULL;
    stage_move *m = move_at(s, s->last_new_dir);
    return !strcmp(m->dir, dir) && !strcmp(m->name, name) ? m : NULL;
}

static int open_dir(stage *s, const char *rel)
{
    return beneath_open_dir(s->root, rel, strlen(rel), NULL);
}

/* ---- staging -------------------------------------------------------------- */

/* Keeps the original of dir/name (kind != 0) under m->backup: a hard link,
 * or, where none can be made, a rename at commit. */
static int keep_original(stage *s, int fd, stage_move *m, const char *rel)
{
    char backup[BENEATH_TMP_MAX];
    int linked = beneath_link_backup(fd, m->name, backup) == 0;
    if (!linked && errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK && errno != ENOSYS)
        return fail(s, rel, "cannot keep the original while writing: %s", strerror(errno));
    m->by_rename = !linked; /* then backup holds a name that was free */
    if (!(m->backup = strdup(backup))) {
        if (linked)
            unlinkat(fd, backup, 0);
        return fail(s, rel, "out of memory");
    }
    return 0;
}

/* Writes text whole into fd (a new file) with mode perm, and closes it. */
static int fill(stage *s, int fd, const buf *text, int keep_mode, mode_t perm, const char *rel)
{
    int ok = fd_write_all(fd, text->data ? text->data : "", text->len) == 0 &&
             (!keep_mode || fchmod(fd, perm) == 0);
    int saved = errno;
    if (close(fd) < 0 && ok)
        ok = 0, saved = errno;
    errno = saved;
    return ok ? 0 : fail(s, rel, "%s", strerror(errno));
}

/* The file `name` in the existing directory fd (at `at`): staged beside
 * it, its original kept. */
static int stage_file(stage *s, int fd, const char *at, const char *name, const buf *text,
                      const char *rel)
{
    mode_t perm = 0;
    int kind = beneath_kind(fd, name, &perm);
    if (kind < 0)
        return fail(s, rel, "%s", strerror(errno));
    if (kind == S_IFDIR)
        return fail(s, rel, "%s", strerror(EISDIR));
    stage_move *m = add_move(s, at, name);
    if (!m)
        return fail(s, rel, "out of memory");
    char staged[BENEATH_TMP_MAX];
    int out = beneath_create_fresh(fd, BENEATH_STAGED, name, 0, 0666, staged);
    if (out < 0)
        return fail(s, rel, "%s", strerror(errno));
    if (note_made(s, at, staged, 0) < 0 || !(m->staged = strdup(staged))) {
        close(out);
        unlinkat(fd, staged, 0);
        return fail(s, rel, "out of memory");
    }
    /* a link is replaced by a file of the package, with the default mode */
    if (fill(s, out, text, kind == S_IFREG, perm, rel) < 0)
        return -1;
    return kind ? keep_original(s, fd, m, rel) : 0;
}

/* Enters dir component `part` of the path being staged: a directory made
 * for this write-back (new ones are made here: the first missing one under
 * a staged name, its subdirectories under their names inside it), or an
 * existing one entered without following a link. *at and *fresh follow. */
static int enter_part(stage *s, int fd, buf *at, int *fresh, const char *part)
{
    stage_move *m = *fresh ? NULL : find_new_dir(s, at->data, part);
    const char *entry = m ? m->staged : part;
    int next = beneath_open_dir(fd, entry, strlen(entry), NULL);
    if (next >= 0 || errno != ENOENT) {
        if (next >= 0 && m)
            *fresh = 1;
        if (next >= 0 && buf_printf(at, "%s%s", at->len ? "/" : "", entry) < 0) {
            close(next);
            errno = ENOMEM;
            return -1;
        }
        return next;
    }
    if (!*fresh) {
        if (!(m = add_move(s, at->data, part))) {
            errno = ENOMEM;
            return -1;
        }
        m->is_dir = 1;
        s->last_new_dir = s->moves.len - 1;
        char staged[BENEATH_TMP_MAX];
        if (beneath_create_fresh(fd, BENEATH_STAGED, part, 1, 0777, staged) < 0)
            return -1;
        if (!(m->staged = strdup(staged))) {
            unlinkat(fd, staged, AT_REMOVEDIR);
            errno = ENOMEM;
            return -1;
        }
        entry = m->staged;
        *fresh = 1;
    } else if (mkdirat(fd, part, 0777) < 0) {
        return -1;
    }
    if (note_made(s, at->data, entry, 1) < 0) {
        errno = ENOMEM;
        return -1;
    }
    next = beneath_open_dir(fd, entry, strlen(entry), NULL);
    if (next >= 0 && buf_printf(at, "%s%s", at->len ? "/" : "", entry) < 0) {
        close(next);
        errno = ENOMEM;
        return -1;
    }
    return next;
}

/* Checks (dry) or stages the write of rel: every name within NAME_MAX,
 * the path within PATH_MAX, each directory on the way a directory (not a
 * link, not a file), the target not a directory. */
static int stage_write(stage *s, const char *rel, const buf *text, int dry)
{
    size_t len = strlen(rel);
    if (len >= PATH_MAX)
        return fail(s, rel, "the path is %zu bytes, longer than PATH_MAX allows (%d)", len,
                    PATH_MAX - 1);
    char part[NAME_MAX + 1];
    buf at = { 0 };
    int fd = fcntl(s->root, F_DUPFD_CLOEXEC, 0), fresh = 0, rc = -1;
    if (fd < 0 || buf_append_str(&at, "") < 0) {
        rc = fail(s, rel, "%s", strerror(fd < 0 ? errno : ENOMEM));
        goto out;
    }
    for (const char *p = rel;;) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n > NAME_MAX) {
            rc = fail(s, rel, "the name \"%.*s\" is %zu bytes, longer than NAME_MAX allows (%d)",
                      (int)n, p, n, NAME_MAX);
            goto out;
        }
        memcpy(part, p, n);
        part[n] = '\0';
        if (!slash)
            break;
        size_t bad_len = (size_t)(slash - rel);
        p = slash + 1;
        if (dry && fresh)
            continue; /* below a directory to be made: only the lengths to check */
        int next = dry ? beneath_open_dir(fd, part, n, NULL) : enter_part(s, fd, &at, &fresh, part);
        if (next < 0 && dry && errno == ENOENT) {
            fresh = 1;
            continue;
        }
        if (next < 0) {
            rc = fail_errno(s, rel, bad_len);
            goto out;
        }
        close(fd);
        fd = next;
    }
    if (dry) {
        int kind = fresh ? 0 : beneath_kind(fd, part, NULL);
        rc = kind < 0 ? fail(s, rel, "%s", strerror(errno))
           : kind == S_IFDIR ? fail(s, rel, "%s", strerror(EISDIR)) : 0;
    } else if (!fresh) {
        rc = stage_file(s, fd, at.data, part, text, rel);
    } else {
        /* inside a directory made for this write-back: the file under its own name */
        int out = openat(fd, part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (out < 0)
            rc = fail_errno(s, rel, strlen(rel));
        else if (note_made(s, at.data, part, 0) < 0)
            rc = (close(out), unlinkat(fd, part, 0), fail(s, rel, "out of memory"));
        else
            rc = fill(s, out, text, 0, 0, rel);
    }
out:
    if (fd >= 0)
        close(fd);
    buf_free(&at);
    return rc;
}

/* Checks (dry) or stages the removal of rel: a second name for it, kept
 * until the write-back is complete. A path that no longer exists is left. */
static int stage_removal(stage *s, const char *rel, int dry)
{
    const char *slash = strrchr(rel, '/');
    const char *name = slash ? slash + 1 : rel;
    size_t dir_len = slash ? (size_t)(slash - rel) : 0, bad_len = 0;
    int fd = beneath_open_dir(s->root, rel, dir_len, &bad_len);
    if (fd < 0)
        return errno == ENOENT ? 0 : fail_errno(s, rel, bad_len);
    int kind = beneath_kind(fd, name, NULL), rc = 0;
    if (kind < 0 || kind == S_IFDIR) {
        rc = fail(s, rel, "%s", strerror(kind < 0 ? errno : EISDIR));
    } else if (kind && !dry) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%.*s", (int)dir_len, rel);
        stage_move *m = add_move(s, dir, name);
        rc = m ? keep_original(s, fd, m, rel) : fail(s, rel, "out of memory");
    }
    close(fd);
    return rc;
}

static int stage_all(stage *s, const pkg_change *changes, size_t n, int dry)
{
    for (size_t i = 0; i < n; i++)
        if (changes[i].text && stage_write(s, changes[i].path, changes[i].text, dry) < 0)
            return -1;
    for (size_t i = 0; i < n; i++)
        if (!changes[i].text && stage_removal(s, changes[i].path, dry) < 0)
            return -1;
    return 0;
}

/* ---- commit and roll back ------------------------------------------------- */

static void move_path(const stage_move *m, char *out, size_t outlen)
{
    snprintf(out, outlen, "%s%s%s", m->dir, *m->dir ? "/" : "", m->name);
}

static int commit_move(stage *s, stage_move *m)
{
    char rel[PATH_MAX];
    move_path(m, rel, sizeof rel);
    int fd = open_dir(s, m->dir), rc = fd < 0 ? -1 : 0;
    if (rc == 0 && m->is_dir) {
        rc = beneath_rename_noreplace(fd, m->staged, m->name);
    } else if (rc == 0) {
        if (m->by_rename && m->backup) {
            rc = beneath_rename_noreplace(fd, m->name, m->backup);
            m->moved_away = rc == 0;
        }
        if (rc == 0 && m->staged)
            rc = renameat(fd, m->staged, fd, m->name);
        else if (rc == 0 && !m->by_rename)
            rc = unlinkat(fd, m->name, 0);
    }
    if (rc == 0)
        m->done = 1;
    else
        fail_errno(s, rel, strlen(rel));
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Puts back what commit_move did; 0, or -1 (errno) when it could not. */
static int undo_move(stage *s, stage_move *m)
{
    if (!m->done && !m->moved_away)
        return 0;
    int fd = open_dir(s, m->dir), rc = fd < 0 ? -1 : 0;
    if (rc == 0 && m->is_dir)
        rc = renameat(fd, m->name, fd, m->staged);
    else if (rc == 0 && m->backup)
        rc = renameat(fd, m->backup, fd, m->name); /* the original over the new file */
    else if (rc == 0)
        rc = unlinkat(fd, m->name, 0); /* a new file: there was none */
    int saved = errno;
    if (rc == 0 && !m->is_dir) {
        free(m->backup);
        m->backup = NULL;
    }
    if (rc == 0)
        m->done = m->moved_away = 0;
    if (fd >= 0)
        close(fd);
    errno = saved;
    return rc;
}

/* Removes dir/name (relative to the root); a missing one is fine. */
static int remove_entry(stage *s, const char *dir, size_t dir_len, const char *name, int is_dir)
{
    int fd = beneath_open_dir(s->root, dir, dir_len, NULL);
    int rc = fd < 0 ? -1 : unlinkat(fd, name, is_dir ? AT_REMOVEDIR : 0);
    int ok = rc == 0 || errno == ENOENT;
    if (fd >= 0)
        close(fd);
    return ok ? 0 : -1;
}

/* After a failure: everything put back and everything staged removed. The
 * first reason stays in err; what could not be undone is added to it. */
static void roll_back(stage *s)
{
    buf trouble = { 0 };   /* the first thing that could not be undone */
    for (size_t i = s->moves.len; i-- > 0;) {
        stage_move *m = move_at(s, i);
        char rel[PATH_MAX];
        move_path(m, rel, sizeof rel);
        if (undo_move(s, m) == 0 || trouble.len)
            continue;
        if (m->backup)
            buf_fail_line(&trouble, "could not put back %s/%s (%s): its original is %s/%s%s%s",
                          s->dir, rel, strerror(errno), s->dir, m->dir, *m->dir ? "/" : "",
                          m->backup);
        else
            buf_fail_line(&trouble, "could not undo %s/%s, new in this write-back (%s)", s->dir,
                          rel, strerror(errno));
    }
    for (size_t i = s->made.len; i-- > 0;) {
        const stage_made *e = made_at(s, i);
        const char *slash = strrchr(e->path, '/');
        size_t dir_len = slash ? (size_t)(slash - e->path) : 0;
        if (remove_entry(s, e->path, dir_len, slash ? slash + 1 : e->path, e->is_dir) < 0 &&
            !trouble.len)
            buf_fail_line(&trouble, "could not remove %s/%s: %s", s->dir, e->path,
                          strerror(errno));
    }
    for (size_t i = 0; i < s->moves.len; i++) {
        const stage_move *m = move_at(s, i);
        if (m->backup && !m->by_rename && !m->done &&
            remove_entry(s, m->dir, strlen(m->dir), m->backup, 0) < 0 && !trouble.len)
            buf_fail_line(&trouble, "could not remove %s/%s/%s: %s", s->dir, m->dir, m->backup,
                          strerror(errno));
    }
    /* the first reason is in err already; what could not be undone follows it */
    if (trouble.len)
        buf_printf(s->err, "; %s", trouble.data);
    else
        buf_append_str(s->err, "; nothing was changed");
    buf_free(&trouble);
}

/* After success: the originals' second names go. */
static void drop_backups(stage *s)
{
    for (size_t i = 0; i < s->moves.len; i++) {
        const stage_move *m = move_at(s, i);
        if (m->backup && remove_entry(s, m->dir, strlen(m->dir), m->backup, 0) < 0)
            term_line(stderr, WARNING "%s/%s%s%s: the original of a replaced file could not "
                        "be removed: %s\n", s->dir, m->dir, *m->dir ? "/" : "", m->backup,
                        strerror(errno));
    }
}

static void stage_free(stage *s)
{
    for (size_t i = 0; i < s->moves.len; i++) {
        stage_move *m = move_at(s, i);
        free(m->dir);
        free(m->name);
        free(m->staged);
        free(m->backup);
    }
    for (size_t i = 0; i < s->made.len; i++)
        free(made_at(s, i)->path);
    vec_free(&s->moves);
    vec_free(&s->made);
}

int pkg_stage_apply(int root_fd, const char *dir, const pkg_change *changes, size_t n,
                    buf *err)
{
    stage s = { .root = root_fd, .dir = dir, .err = err,
                .last_new_dir = SIZE_MAX };
    int rc = stage_all(&s, changes, n, 1); /* check: nothing made yet */
    if (rc == 0 && (rc = stage_all(&s, changes, n, 0)) < 0)
        roll_back(&s);
    for (size_t i = 0; rc == 0 && i < s.moves.len; i++)
        if ((rc = commit_move(&s, move_at(&s, i))) < 0)
            roll_back(&s);
    if (rc == 0)
        drop_backups(&s);
    stage_free(&s);
    return rc;
}

/* ---- leftovers ------------------------------------------------------------- */

/* nftw hands its callback no context: the count lives here (one walk at a
 * time in this single-threaded program). */
static size_t leftovers_seen;
enum { LEFTOVERS_SHOWN = 5 };

static int has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int note_leftover(const char *path, const struct stat *st, int type, struct FTW *at)
{
    (void)st;
    (void)type;
    const char *name = path + at->base;
    int staged = has_prefix(name, BENEATH_STAGED);
    if (!staged && !has_prefix(name, BENEATH_BACKUP))
        return 0;
    if (leftovers_seen++ < LEFTOVERS_SHOWN)
        term_line(stderr, WARNING "%s is left from an interrupted write-back: %s\n", path,
                    staged ? "new content never put in place; remove it"
                           : "the original of a file that was being replaced or removed; "
                             "keep what you need of it, then remove it");
    return 0;
}

size_t pkg_stage_leftovers(const char *dir)
{
    leftovers_seen = 0;
    /* FTW_PHYS: links are not followed; an unreadable directory is the
     * reader's to report */
    (void)nftw(dir, note_leftover, 16, FTW_PHYS);
    if (leftovers_seen > LEFTOVERS_SHOWN)
        term_line(stderr, WARNING "and %zu more such entries under %s\n",
                    leftovers_seen - LEFTOVERS_SHOWN, dir);
    return leftovers_seen;
}
