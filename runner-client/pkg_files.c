/* pkg_files: the files of a package directory, in kpt's order; see
 * pkg_files.h. */
#include "pkg_files.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/buf.h"
#include "err_line.h"

typedef struct walk {
    pkg_files_fn on_file;
    void *ctx;
    char *err;
    size_t errlen;
} walk;

static int visible_entry(const struct dirent *entry)
{
    return entry->d_name[0] != '.';
}

static int by_name_bytes(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
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

static int walk_directory(walk *w, const char *dir_path, const char *rel_dir);

/* One directory entry: a subdirectory is walked, a matching regular file
 * or symlink is handed to the callback, anything else is ignored. */
static int walk_entry(walk *w, const char *dir_path, const char *rel_dir, const char *entry)
{
    buf path = { 0 }, rel = { 0 };
    struct stat st;
    int rc;
    if (join_path(&path, dir_path, entry) < 0 || join_path(&rel, rel_dir, entry) < 0) {
        err_line_set(w->err, w->errlen, "%s: out of memory", dir_path);
        rc = -1;
    } else if (lstat(path.data, &st) < 0) {
        err_line_set(w->err, w->errlen, "%s: %s", path.data, strerror(errno));
        rc = -1;
    } else if (S_ISDIR(st.st_mode)) {
        rc = walk_directory(w, path.data, rel.data);
    } else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && is_resource_file(entry)) {
        rc = w->on_file(w->ctx, path.data, rel.data);
    } else {
        rc = 0;
    }
    buf_free(&path);
    buf_free(&rel);
    return rc;
}

/* rel_dir is NULL for the top directory. */
static int walk_directory(walk *w, const char *dir_path, const char *rel_dir)
{
    struct dirent **entries = NULL;
    int n = scandir(dir_path, &entries, visible_entry, by_name_bytes);
    if (n < 0) {
        err_line_set(w->err, w->errlen, "%s: %s", dir_path, strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (rc == 0)
            rc = walk_entry(w, dir_path, rel_dir, entries[i]->d_name);
        free(entries[i]);
    }
    free(entries);
    return rc;
}

int pkg_files_walk(const char *dir, pkg_files_fn on_file, void *ctx, char *err, size_t errlen)
{
    walk w = { .on_file = on_file, .ctx = ctx, .err = err, .errlen = errlen };
    return walk_directory(&w, dir, NULL);
}
