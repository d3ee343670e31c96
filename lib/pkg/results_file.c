/* results_file: kpt's results.yaml; see results_file.h. */
#include "pkg/results_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/beneath_write.h"
#include "pkg/results_text.h"
#include "pkg/rl_writer.h"

#define RESULTS_NAME "results.yaml"

static const char HEADER[] = "apiVersion: kpt.dev/v1\n"
                             "kind: FunctionResultList\n"
                             "metadata:\n"
                             "  name: fnresults\n";

/* key: "value" (skipped when value is NULL or empty, omitempty). */
static int pair(rl_writer *w, const char *key, const char *value)
{
    if (!value || !*value)
        return 0;
    return rl_writer_emit_plain(w, key) < 0 ? -1 : rl_writer_emit_string(w, value);
}

/* The entry up to its results: "- image: ...\n  exitCode: 0\n". */
static int emit_entry_head(rl_writer *w, const char *image, int failed, const char *log,
                           size_t log_len)
{
    int rc = rl_writer_emit_new(w, YAML_DOCUMENT_START_EVENT);
    rc |= rl_writer_emit_new(w, YAML_SEQUENCE_START_EVENT);
    rc |= rl_writer_emit_new(w, YAML_MAPPING_START_EVENT);
    rc |= pair(w, "image", image);
    if (rc == 0 && failed && log_len) {
        buf text = { 0 };
        rc = buf_append(&text, log, log_len) < 0 ? -1 : pair(w, "stderr", text.data);
        buf_free(&text);
    }
    rc |= rl_writer_emit_plain(w, "exitCode");
    rc |= rl_writer_emit_plain(w, failed ? "1" : "0");
    rc |= rl_writer_emit_new(w, YAML_MAPPING_END_EVENT);
    rc |= rl_writer_emit_new(w, YAML_SEQUENCE_END_EVENT);
    return rc ? -1 : rl_writer_emit_new(w, YAML_DOCUMENT_END_EVENT);
}

/* Appends `entries` (sequence entries at indent 0) as the value of the
 * entry's last key, `results`: every line indented by two. */
static int append_results(buf *out, const buf *entries)
{
    if (buf_append_str(out, "  results:\n") < 0)
        return -1;
    for (size_t at = 0; at < entries->len;) {
        const char *nl = memchr(entries->data + at, '\n', entries->len - at);
        size_t end = nl ? (size_t)(nl - entries->data) + 1 : entries->len;
        if (buf_append(out, "  ", 2) < 0 || buf_append(out, entries->data + at, end - at) < 0)
            return -1;
        at = end;
    }
    return 0;
}

int results_file_add(results_file *rf, const char *image, int failed, const rl_list *results,
                     const char *error, const char *log, size_t log_len, size_t *dropped)
{
    buf why = { 0 };   /* not passed on: the caller goes by -1 (as before) */
    size_t start = rf->items.len;
    rl_writer w;
    rl_writer_init(&w, &rf->items, &why, "results");
    int rc = rl_writer_open_stream(&w);
    if (rc == 0)
        rc = emit_entry_head(&w, image, failed, log, log_len);
    rc = rl_writer_close(&w, rc);
    buf_free(&why);
    if (rc < 0)
        return -1;
    buf entries = { 0 };
    size_t room = rf->bound > rf->items.len ? rf->bound - rf->items.len : 0;
    rc = results_text_append(&entries, room, rf->bound, results, error, NULL, 0, dropped);
    if (rc == 0 && entries.len)
        rc = append_results(&rf->items, &entries);
    buf_free(&entries);
    if (rc < 0) {
        rf->items.len = start;
        return -1;
    }
    rf->n++;
    return 0;
}

/* The results directory, opened as the user named it (--results-dir is
 * theirs: links on its way are theirs too); results.yaml itself is never
 * followed. A descriptor, or -1 with err set. */
static int open_results_dir(const char *dir, buf *err)
{
    int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        buf_fail_line(err, "%s: %s", dir, strerror(errno));
    return fd;
}

static void refusal(const char *dir, int why, buf *err)
{
    if (why == ELOOP)
        buf_fail_line(err, "%s/" RESULTS_NAME " is a symbolic link: results are written "
                      "only as a file of the results directory, never through a link", dir);
    else
        buf_fail_line(err, "%s/" RESULTS_NAME ": %s", dir, strerror(why));
}

int results_file_check(const char *dir, buf *err)
{
    int fd = open_results_dir(dir, err);
    if (fd < 0)
        return -1;
    int kind = beneath_kind(fd, RESULTS_NAME, NULL), why = errno;
    close(fd);
    if (kind == S_IFLNK || kind == S_IFDIR || kind < 0) {
        refusal(dir, kind == S_IFLNK ? ELOOP : kind == S_IFDIR ? EISDIR : why, err);
        return -1;
    }
    return 0;
}

int results_file_write(const results_file *rf, const char *dir, int exit_code, buf *path,
                       buf *err)
{
    buf text = { 0 };
    int rc = -1, fd = -1;
    if (buf_printf(path, "%s/" RESULTS_NAME, dir) < 0 ||
        buf_printf(&text, "%sexitCode: %d\n%s", HEADER, exit_code, rf->n ? "items:\n" : "") < 0 ||
        buf_append(&text, rf->items.data, rf->items.len) < 0)
        buf_fail_line(err, "%s/" RESULTS_NAME ": out of memory", dir);
    else if ((fd = open_results_dir(dir, err)) < 0)
        ;
    else if (beneath_replace(fd, RESULTS_NAME, text.data, text.len, 0666) < 0)
        refusal(dir, errno, err);
    else
        rc = 0;
    if (fd >= 0)
        close(fd);
    buf_free(&text);
    return rc;
}

void results_file_free(results_file *rf)
{
    buf_free(&rf->items);
    rf->n = 0;
}
