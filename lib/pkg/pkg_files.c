/* pkg_files: the files of a package directory, in kpt's order; see
 * pkg_files.h. */
#include "pkg/pkg_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/beneath.h"
#include "core/buf.h"
#include "core/vec.h"
#include "core/term_text.h"

typedef struct walk {
    int pkg_fd;
    pkg_files_fn on_file;
    void *ctx;
    buf *err;
} walk;

/* A directory entry as listed: its name and what lstat said it is. */
typedef struct entry {
    char *name;
    mode_t mode;
} entry;

/* A directory's entries: a vec of entry. */
static void listing_free(vec *l)
{
    entry *all = l->items;
    for (size_t i = 0; i < l->len; i++)
        free(all[i].name);
    vec_free(l);
}

static int by_name_bytes(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static int has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), s = strlen(suffix);
    return n >= s && strcmp(name + n - s, suffix) == 0;
}

/* kpt's MatchAllKRM: Kptfile, *.yaml, *.yml, *.json. */
static int is_resource_file(const char *name)
{
    return strcmp(name, "Kptfile") == 0 || has_suffix(name, ".yaml") ||
           has_suffix(name, ".yml") || has_suffix(name, ".json");
}

/* out = dir + "/" + name, or just name when dir is NULL. */
static int join_path(buf *out, const char *dir, const char *name)
{
    if (!dir)
        return buf_append_str(out, name);
    const char *sep = dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
    return buf_printf(out, "%s%s%s", dir, sep, name);
}

static int list_add(vec *l, const char *name, mode_t mode)
{
    entry *e = vec_push(l, sizeof *e, VEC_NO_MAX);
    if (!e)
        return -1;
    e->mode = mode;
    return (e->name = strdup(name)) ? 0 : -1;
}

/* The visible entries of rel_dir (NULL: the package itself), each with its
 * type, sorted; the directory is closed before any is visited, so a deep
 * tree holds one descriptor besides the package's. */
static int list_directory(walk *w, const char *dir_path, const char *rel_dir, vec *l)
{
    int fd = rel_dir ? beneath_open(w->pkg_fd, rel_dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK)
                     : openat(w->pkg_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd < 0 ? NULL : fdopendir(fd);
    if (!d) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return buf_fail_line(w->err, "%s: %s", dir_path,
                             e == ELOOP ? "a symbolic link appeared on the way (links inside a "
                                          "package are not followed)"
                                        : strerror(e));
    }
    int rc = 0;
    struct dirent *de;
    errno = 0;
    while (rc == 0 && (de = readdir(d))) {
        struct stat st;
        if (de->d_name[0] == '.')
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = buf_fail_line(w->err, "%s/%s: %s", dir_path, de->d_name, strerror(errno));
        } else if (list_add(l, de->d_name, st.st_mode) < 0) {
            rc = buf_fail_line(w->err, "%s: out of memory", dir_path);
        }
        errno = 0;
    }
    if (rc == 0 && errno) {
        rc = buf_fail_line(w->err, "%s: %s", dir_path, strerror(errno));
    }
    closedir(d);
    if (rc == 0 && l->len)
        qsort(l->items, l->len, sizeof(entry), by_name_bytes);
    return rc;
}

/* A link is never followed; it is mentioned when it looks like something
 * that would have been read: a resource file's name, or a directory. */
static void skip_link(const walk *w, const char *path, const char *rel, const char *name)
{
    struct stat st;
    int to_dir = fstatat(w->pkg_fd, rel, &st, 0) == 0 && S_ISDIR(st.st_mode);
    if (is_resource_file(name) || to_dir)
        term_line(stderr,
                    "runner-client eval: warning: %s: skipped: a symbolic link%s (links inside a "
                    "package are not followed, as kpt ignores them)\n",
                    path, to_dir ? " to a directory" : "");
}

static int walk_directory(walk *w, const char *dir_path, const char *rel_dir);

/* One directory entry: a subdirectory is walked, a link skipped, anything
 * else with a resource file's name handed to the callback (whose read
 * refuses what is not a regular file), the rest ignored. */
static int walk_entry(walk *w, const char *dir_path, const char *rel_dir, const entry *e)
{
    buf path = { 0 }, rel = { 0 };
    int rc = 0;
    if (join_path(&path, dir_path, e->name) < 0 || join_path(&rel, rel_dir, e->name) < 0) {
        rc = buf_fail_line(w->err, "%s: out of memory", dir_path);
    } else if (rel.len >= PATH_MAX) {
        /* openat2 says so too; without it this bounds the walk's depth */
        rc = buf_fail_line(w->err, "%s: %s", path.data, strerror(ENAMETOOLONG));
    } else if (S_ISDIR(e->mode)) {
        rc = walk_directory(w, path.data, rel.data);
    } else if (S_ISLNK(e->mode)) {
        skip_link(w, path.data, rel.data, e->name);
    } else if (is_resource_file(e->name)) {
        rc = w->on_file(w->ctx, w->pkg_fd, path.data, rel.data);
    }
    buf_free(&path);
    buf_free(&rel);
    return rc;
}

/* rel_dir is NULL for the top directory. */
static int walk_directory(walk *w, const char *dir_path, const char *rel_dir)
{
    vec l = { 0 };
    int rc = list_directory(w, dir_path, rel_dir, &l);
    entry *all = l.items;
    for (size_t i = 0; rc == 0 && i < l.len; i++)
        rc = walk_entry(w, dir_path, rel_dir, &all[i]);
    listing_free(&l);
    return rc;
}

int pkg_files_walk(const char *dir, pkg_files_fn on_file, void *ctx, buf *err)
{
    /* the package itself is the user's choice: a link to it is followed */
    walk w = { .on_file = on_file, .ctx = ctx, .err = err,
               .pkg_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) };
    if (w.pkg_fd < 0)
        return buf_fail_line(err, "%s: %s", dir, strerror(errno));
    int rc = walk_directory(&w, dir, NULL);
    close(w.pkg_fd);
    return rc;
}
