/* cp: operand resolution for the `cp` form; see cp.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "cp.h"
#include "msg.h"
#include "tmpname.h"

void cp_dest_name(const char *src, char *out, size_t n)
{
    size_t end = strlen(src);
    while (end > 1 && src[end - 1] == '/')
        end--;
    size_t start = end;
    while (start > 0 && src[start - 1] != '/')
        start--;
    size_t len = end - start;
    const char *name = src + start;
    if (len == 0 || (len == 1 && name[0] == '.') || (len == 2 && !memcmp(name, "..", 2)) ||
        (len == 1 && name[0] == '/'))
        name = ".", len = 1;
    if (len >= n)             /* longer than NAME_MAX: the source cannot exist */
        len = n - 1;
    memcpy(out, name, len);
    out[len] = '\0';
}

/* Every SRC into the existing directory dest. */
static int copy_into(const cp_opts *o, char **srcs, int n, const char *dest)
{
    int dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        cop_msg(errno, "cannot open directory '%s'", dest);
        return 1;
    }
    cop_tmp_sweep(dfd, dest);
    int rc = 0;
    buf path = {0};
    char name[256];
    for (int i = 0; i < n; i++) {
        cp_dest_name(srcs[i], name, sizeof name);
        buf_reset(&path);
        int dot = !strcmp(name, ".");
        size_t len = strlen(dest);
        if (buf_append_str(&path, dest) < 0 ||
            (!dot && len && dest[len - 1] != '/' && buf_append(&path, "/", 1) < 0) ||
            (!dot && buf_append_str(&path, name) < 0)) {
            cop_msg(ENOMEM, "cannot copy '%s'", srcs[i]);
            rc = 1;
            continue;
        }
        if (cp_copy(o, srcs[i], dfd, name, path.data) < 0)
            rc = 1;
    }
    buf_free(&path);
    close(dfd);
    return rc;
}

/* The single SRC to the new (or replaced non-directory) name dest. */
static int copy_to(const cp_opts *o, const char *src, const char *dest)
{
    char *parent = strdup(dest);
    if (!parent) {
        cop_msg(errno, "cannot copy '%s'", src);
        return 1;
    }
    size_t len = strlen(parent);
    while (len > 1 && parent[len - 1] == '/')
        parent[--len] = '\0';
    char *slash = strrchr(parent, '/');
    const char *name = slash ? slash + 1 : parent;
    const char *dir = slash == parent ? "/" : slash ? parent : ".";
    if (slash)
        *slash = '\0';
    int rc = 1;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        cop_msg(errno, "cannot create '%s'", dest);
    } else {
        cop_tmp_sweep(dfd, dir);
        rc = cp_copy(o, src, dfd, name, dest) < 0;
        close(dfd);
    }
    free(parent);
    return rc;
}

int cp_run(cop_args *a)
{
    mode_t mask = umask(0);
    umask(mask);
    a->cp.umask = mask;
    const char *dest = a->operands[a->n - 1];
    struct stat st;
    int found = stat(dest, &st) == 0;
    if (found && S_ISDIR(st.st_mode))
        return copy_into(&a->cp, a->operands, a->n - 1, dest);
    if (a->n > 2) {
        if (found)
            cop_msg(0, "target '%s' is not a directory", dest);
        else
            cop_msg(errno, "target '%s'", dest);
        return 1;
    }
    return copy_to(&a->cp, a->operands[0], dest);
}
