/* rl_input: builds the ResourceList that `runner-client eval` sends to a KRM
 * function, the way `kpt fn source` would; see rl_input.h.
 *
 * Why it matters: a function sees only the ResourceList on its stdin, and
 * kpt/Porch map the function's output back to files through the reader
 * annotations. Building the same shape as kpt lets a function be exercised
 * here exactly as it will be run there.
 *
 * This file holds the reading rules, as kyaml's kio.ByteReader /
 * kio.LocalPackageReader and kpt's `fn source` apply them:
 *  - A file or stdin holding exactly one document whose top-level `kind` is
 *    ResourceList and that has `items` or `functionConfig` is already the
 *    function's input: it passes through byte for byte. Kind `List` with
 *    those keys is unwrapped: its items (and functionConfig) go into a new
 *    ResourceList untouched, as kyaml adds no annotations to them.
 *  - Otherwise every non-empty document must be a mapping; each becomes an
 *    entry of `items`, with kpt's path and index annotations
 *    (kpt_annotations.h). Empty and null documents are skipped and do not
 *    use up an index; stdin gets no path.
 *  - A directory contributes the files pkg_files.h lists, in its order,
 *    never unwraps lists, and annotates paths relative to the directory.
 *    One with no object at all (empty, no matching file, only empty or
 *    comment documents) is an error, kpt's "no resources found": pointing
 *    eval at the wrong directory must not run a function on nothing. Its
 *    Kptfile counts: kpt gives functions the Kptfile too. stdin and a file
 *    may hold no object (a generator's input).
 *
 * The pieces: each input is parsed into libyaml events (event_list.h) and
 * the objects are re-emitted into the new list (rl_writer.h), so scalars
 * keep their style and tags ("1" stays a string, block literals stay
 * literal) and collections their block or flow style; the output is never
 * much larger than the input; comments are lost. */
#include "pkg/rl_input.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "core/fdio.h"
#include "krm/yaml_limits.h"
#include "pkg/event_list.h"
#include "pkg/kpt_annotations.h"
#include "pkg/pkg_files.h"
#include "pkg/rl_writer.h"

/* ---- the objects of one input ------------------------------------------------ */

/* An object goes two levels down into the ResourceList (its root mapping,
 * then items), where every reader's nesting limit applies, the server's
 * judge of the function's answer too: refused here, it never runs. */
#define OBJECT_MAX_DEPTH (YAML_MAX_DEPTH - 2)

/* Fails when the object of events [root, end) nests past OBJECT_MAX_DEPTH. */
static int check_object_depth(rl_writer *w, const event_list *list, size_t root, size_t end)
{
    size_t depth = 0;
    for (size_t i = root; i < end; i++) {
        yaml_event_type_t type = list->events[i].type;
        if (type == YAML_SEQUENCE_END_EVENT || type == YAML_MAPPING_END_EVENT)
            depth--;
        else if ((type == YAML_SEQUENCE_START_EVENT || type == YAML_MAPPING_START_EVENT) &&
                 ++depth > OBJECT_MAX_DEPTH) {
            const yaml_mark_t *at = &list->events[i].start_mark;
            return rl_writer_fail(w,
                                  "%s: YAML error at line %zu, column %zu: " YAML_DEPTH_PROBLEM
                                  " once the object is in a ResourceList's items (%d levels are "
                                  "left to an object)",
                                  w->name, at->line + 1, at->column + 1, OBJECT_MAX_DEPTH);
        }
    }
    return 0;
}

/* Appends every object of one parsed input to the open `items` sequence.
 * `index` counts only the objects, as kyaml's does. */
static int wrap_documents(rl_writer *w, event_list *list, const char *rel_path)
{
    size_t index = 0;
    size_t at = 1; /* past STREAM_START */
    for (size_t position = 0; list->events[at].type == YAML_DOCUMENT_START_EVENT; position++) {
        size_t root = at + 1, end = event_list_node_end(list, root);
        const yaml_event_t *top = &list->events[root];
        w->doc_position = position;
        w->doc_line = top->start_mark.line + 1;
        if (!event_is_null(top)) {
            if (top->type != YAML_MAPPING_START_EVENT)
                return rl_writer_fail_doc(w, "expected a mapping (a KRM object), found %s",
                                          event_node_kind(top));
            if (check_object_depth(w, list, root, end) < 0 ||
                kpt_annotations_emit_object(w, list, root, end, rel_path, index++) < 0)
                return -1;
            w->objects++;
        }
        at = end + 1; /* past DOCUMENT_END */
    }
    return 0;
}

/* ---- single inputs (file, stdin, bytes) ------------------------------------- */

typedef enum { SHAPE_OBJECTS, SHAPE_RESOURCE_LIST, SHAPE_LIST } input_shape;

/* kyaml's unwrapping rule: exactly one document, kind ResourceList or List
 * (apiVersion is not checked), with `items` or `functionConfig`. */
static input_shape classify(const event_list *list)
{
    const size_t root = 2; /* STREAM_START, DOCUMENT_START, root */
    if (list->count < 4 || list->events[1].type != YAML_DOCUMENT_START_EVENT ||
        list->events[root].type != YAML_MAPPING_START_EVENT)
        return SHAPE_OBJECTS;
    size_t doc_end = event_list_node_end(list, root);
    if (doc_end + 1 >= list->count || list->events[doc_end + 1].type != YAML_STREAM_END_EVENT)
        return SHAPE_OBJECTS; /* more than one document */
    if (event_list_find_key(list, root, "items") == EVENT_NONE &&
        event_list_find_key(list, root, "functionConfig") == EVENT_NONE)
        return SHAPE_OBJECTS;
    size_t kind = event_list_find_key(list, root, "kind");
    if (kind != EVENT_NONE && event_scalar_is(&list->events[kind], "ResourceList"))
        return SHAPE_RESOURCE_LIST;
    if (kind != EVENT_NONE && event_scalar_is(&list->events[kind], "List"))
        return SHAPE_LIST;
    return SHAPE_OBJECTS;
}

/* A `kind: List` document: its items and functionConfig, as they are, in a
 * new ResourceList. */
static int unwrap_list(rl_writer *w, event_list *list)
{
    const size_t root = 2;
    size_t items = event_list_find_key(list, root, "items");
    size_t config = event_list_find_key(list, root, "functionConfig");
    w->doc_line = list->events[root].start_mark.line + 1;
    if (rl_writer_open(w) < 0)
        return rl_writer_close(w, -1);
    int rc;
    if (items == EVENT_NONE || event_is_null(&list->events[items]))
        rc = rl_writer_emit_new(w, YAML_SEQUENCE_START_EVENT) < 0
                 ? -1
                 : rl_writer_emit_new(w, YAML_SEQUENCE_END_EVENT);
    else if (list->events[items].type != YAML_SEQUENCE_START_EVENT)
        rc = rl_writer_fail_doc(w, "items of the List is %s, not a sequence",
                                event_node_kind(&list->events[items]));
    else
        rc = rl_writer_copy(w, list, items, event_list_node_end(list, items));
    if (rc == 0 && config != EVENT_NONE && !event_is_null(&list->events[config]))
        rc = rl_writer_emit_plain(w, "functionConfig") < 0
                 ? -1
                 : rl_writer_copy(w, list, config, event_list_node_end(list, config));
    return rl_writer_close(w, rc);
}

static int wrap_single_input(rl_writer *w, event_list *list, const char *rel_path)
{
    int rc = rl_writer_open(w);
    if (rc == 0)
        rc = rl_writer_emit_new(w, YAML_SEQUENCE_START_EVENT);
    if (rc == 0)
        rc = wrap_documents(w, list, rel_path);
    if (rc == 0)
        rc = rl_writer_emit_new(w, YAML_SEQUENCE_END_EVENT);
    return rl_writer_close(w, rc);
}

/* `display` names the input in messages; `rel_path` is the path annotation
 * (NULL: none, for stdin). */
static int build_from_bytes(const char *data, size_t len, const char *display,
                            const char *rel_path, buf *out, buf *err)
{
    event_list list = { 0 };
    if (event_list_parse(data, len, display, &list, err) < 0)
        return -1;
    rl_writer w;
    rl_writer_init(&w, out, err, display);
    int rc;
    switch (classify(&list)) {
    case SHAPE_RESOURCE_LIST:
        rc = buf_append(out, data, len) < 0 ? rl_writer_fail(&w, "%s: out of memory", display)
                                            : 0;
        break;
    case SHAPE_LIST:
        rc = unwrap_list(&w, &list);
        break;
    default:
        rc = wrap_single_input(&w, &list, rel_path);
        break;
    }
    event_list_free(&list);
    return rc;
}

/* " (--max-message)" after a size refusal: the flag that raises the limit. */
static const char *limit_hint(int err)
{
    return err == EFBIG ? ": more than a request may carry (--max-message)" : "";
}

static int build_from_stdin(size_t max, buf *out, buf *err)
{
    buf data = { 0 };
    int rc;
    if (fd_read_all(STDIN_FILENO, &data, max) < 0) {
        if (errno == EFBIG)
            buf_fail_line(err, "stdin: is larger than %zu bytes%s", max, limit_hint(EFBIG));
        else
            buf_fail_line(err, "stdin: %s", strerror(errno));
        rc = -1;
    } else {
        rc = build_from_bytes(data.data, data.len, "stdin", NULL, out, err);
    }
    buf_free(&data);
    return rc;
}

/* A file the user named: a link to it is followed (their choice), a FIFO
 * is refused like any file that is not regular (stdin takes a pipe). */
static int build_from_file(const char *path, size_t max, buf *out, buf *err)
{
    buf data = { 0 };
    char why[FDIO_WHY_MAX];
    int rc;
    if (file_read_at(AT_FDCWD, path, 0, max, &data, why) < 0) {
        rc = buf_fail_line(err, "%s: %s%s", path, why, limit_hint(errno));
    } else {
        const char *slash = strrchr(path, '/');
        rc = build_from_bytes(data.data, data.len, path, slash ? slash + 1 : path, out, err);
    }
    buf_free(&data);
    return rc;
}

/* ---- directories ----------------------------------------------------------- */

/* What the walk fills: the list, and the bytes read so far against the
 * limit (each file, and all of them together). */
typedef struct dir_input {
    rl_writer w;
    size_t max, read;
} dir_input;

/* pkg_files_fn: appends the objects of one file of a directory; lists are
 * not unwrapped. */
static int add_package_file(void *ctx, int pkg_fd, const char *path, const char *rel_path)
{
    dir_input *in = ctx;
    rl_writer *w = &in->w;
    buf data = { 0 };
    event_list list = { 0 };
    char why[FDIO_WHY_MAX];
    const char *dir_name = w->name;
    w->name = path;
    int rc;
    if (file_read_at(pkg_fd, rel_path, FDIO_BENEATH, in->max, &data, why) < 0)
        rc = rl_writer_fail(w, "%s: %s%s", path, why, limit_hint(errno));
    else if ((in->read += data.len) > in->max)
        rc = rl_writer_fail(w, "%s: its files are larger than %zu bytes together%s", dir_name,
                            in->max, limit_hint(EFBIG));
    else
        rc = event_list_parse(data.data, data.len, path, &list, w->err);
    if (rc == 0)
        rc = wrap_documents(w, &list, rel_path);
    event_list_free(&list);
    buf_free(&data);
    w->name = dir_name; /* path is the caller's and about to be freed */
    return rc;
}

static int build_from_directory(const char *path, size_t max, buf *out, buf *err)
{
    dir_input in = { .max = max };
    rl_writer *w = &in.w;
    rl_writer_init(w, out, err, path);
    int rc = rl_writer_open(w);
    if (rc == 0)
        rc = rl_writer_emit_new(w, YAML_SEQUENCE_START_EVENT);
    if (rc == 0)
        rc = pkg_files_walk(path, add_package_file, &in, err);
    if (rc == 0 && w->objects == 0)
        rc = rl_writer_fail(w, "%s: " RL_INPUT_NO_RESOURCES, path);
    if (rc == 0)
        rc = rl_writer_emit_new(w, YAML_SEQUENCE_END_EVENT);
    return rl_writer_close(w, rc);
}

/* ---- public entry points ---------------------------------------------------- */

/* rl_input_build_bytes treats a NULL name, "-" and "stdin" as standard input:
 * messages say "stdin" and no path annotations are set. */
static int names_stdin(const char *name)
{
    return !name || strcmp(name, "-") == 0 || strcmp(name, "stdin") == 0;
}

int rl_input_build(const char *path, size_t max, buf *out, buf *err)
{
    if (!path || strcmp(path, "-") == 0)
        return build_from_stdin(max, out, err);
    struct stat st;
    if (stat(path, &st) < 0)
        return buf_fail_line(err, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return build_from_directory(path, max, out, err);
    return build_from_file(path, max, out, err);
}

int rl_input_build_bytes(const char *data, size_t len, const char *name, buf *out, buf *err)
{
    if (names_stdin(name))
        return build_from_bytes(data, len, "stdin", NULL, out, err);
    return build_from_bytes(data, len, name, name, out, err);
}
