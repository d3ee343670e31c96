/* results_text: results as YAML text, bounded; see results_text.h. */
#include "pkg/results_text.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pkg/rl_writer.h"

/* key: "value" (skipped when value is NULL or empty, omitempty). */
static int pair(rl_writer *w, const char *key, const char *value)
{
    if (!value || !*value)
        return 0;
    return rl_writer_emit_plain(w, key) < 0 ? -1 : rl_writer_emit_string(w, value);
}

/* A field value with the type it was written with. */
static int typed_pair(rl_writer *w, const char *key, const char *value, rl_value_type type)
{
    if (!value)
        return 0;
    if (type == RL_VALUE_STRING)
        return rl_writer_emit_plain(w, key) < 0 ? -1 : rl_writer_emit_string(w, value);
    return rl_writer_emit_plain(w, key) < 0 ? -1 : rl_writer_emit_plain(w, value);
}

static int open_map(rl_writer *w, const char *key)
{
    return rl_writer_emit_plain(w, key) < 0 ? -1
                                            : rl_writer_emit_new(w, YAML_MAPPING_START_EVENT);
}

static int close_map(rl_writer *w)
{
    return rl_writer_emit_new(w, YAML_MAPPING_END_EVENT);
}

static const char *tag_value(const rl_kv *tags, size_t n_tags, const char *key)
{
    for (size_t i = 0; i < n_tags; i++)
        if (strcmp(tags[i].key, key) == 0)
            return tags[i].value;
    return NULL;
}

static int has_tag(const rl_result *r, const char *key)
{
    for (size_t i = 0; i < r->n_tags; i++)
        if (strcmp(r->tags[i].key, key) == 0)
            return 1;
    return 0;
}

static int emit_tags(rl_writer *w, const rl_result *r, const rl_kv *tags, size_t n_tags)
{
    if (!r->n_tags && !n_tags)
        return 0;
    int rc = open_map(w, "tags");
    for (size_t i = 0; rc == 0 && i < r->n_tags; i++) {
        const char *over = tag_value(tags, n_tags, r->tags[i].key);
        rc = pair(w, r->tags[i].key, over ? over : r->tags[i].value);
    }
    for (size_t i = 0; rc == 0 && i < n_tags; i++)
        if (!has_tag(r, tags[i].key))
            rc = pair(w, tags[i].key, tags[i].value);
    return rc ? -1 : close_map(w);
}

static int emit_result(rl_writer *w, const rl_result *r, const rl_kv *tags, size_t n_tags)
{
    int rc = rl_writer_emit_new(w, YAML_MAPPING_START_EVENT);
    rc |= pair(w, "message", r->message);
    rc |= pair(w, "severity", r->severity);
    if (rc == 0 && r->has_resource_ref) {
        rc |= open_map(w, "resourceRef");
        rc |= pair(w, "apiVersion", r->ref_api_version);
        rc |= pair(w, "kind", r->ref_kind);
        rc |= pair(w, "name", r->ref_name);
        rc |= pair(w, "namespace", r->ref_namespace);
        rc |= close_map(w);
    }
    if (rc == 0 && r->has_field) {
        rc |= open_map(w, "field");
        rc |= pair(w, "path", r->field_path);
        rc |= typed_pair(w, "currentValue", r->field_current_value, r->field_current_type);
        rc |= typed_pair(w, "proposedValue", r->field_proposed_value, r->field_proposed_type);
        rc |= close_map(w);
    }
    if (rc == 0 && r->has_file) {
        char index[24];
        snprintf(index, sizeof index, "%ld", r->file_index);
        rc |= open_map(w, "file");
        rc |= pair(w, "path", r->file_path);
        if (r->file_index)
            rc |= rl_writer_emit_plain(w, "index") < 0 || rl_writer_emit_plain(w, index) < 0;
        rc |= close_map(w);
    }
    if (rc == 0)
        rc = emit_tags(w, r, tags, n_tags);
    return rc ? -1 : close_map(w);
}

/* One result as a one-entry YAML sequence, appended to out. */
static int entry_text(const rl_result *r, const rl_kv *tags, size_t n_tags, buf *out)
{
    buf why = { 0 };   /* not shown: a failure here is out of memory */
    rl_writer w;
    rl_writer_init(&w, out, &why, "results");
    int rc = rl_writer_open_stream(&w);
    if (rc == 0)
        rc = rl_writer_emit_new(&w, YAML_DOCUMENT_START_EVENT) |
             rl_writer_emit_new(&w, YAML_SEQUENCE_START_EVENT);
    if (rc == 0)
        rc = emit_result(&w, r, tags, n_tags);
    if (rc == 0)
        rc = rl_writer_emit_new(&w, YAML_SEQUENCE_END_EVENT) |
             rl_writer_emit_new(&w, YAML_DOCUMENT_END_EVENT);
    rc = rl_writer_close(&w, rc);
    buf_free(&why);
    return rc;
}

size_t results_text_bound(size_t max_message)
{
    return max_message > SIZE_MAX / EVAL_RESULTS_PER_MESSAGE
               ? SIZE_MAX
               : max_message * EVAL_RESULTS_PER_MESSAGE;
}

/* Appends one entry unless out would pass `room`; 1 appended, 0 did not fit. */
static int append_fitting(buf *out, size_t room, const rl_result *r, const rl_kv *tags,
                          size_t n_tags, buf *scratch)
{
    buf_reset(scratch);
    if (entry_text(r, tags, n_tags, scratch) < 0)
        return -1;
    if (out->len > room || scratch->len > room - out->len)
        return 0;
    return buf_append(out, scratch->data, scratch->len) < 0 ? -1 : 1;
}

/* The warning's text: why `dropped` of `total` results are not kept. */
static int cut_note(buf *note, size_t dropped, size_t total, int by_bound, size_t bound,
                    size_t stored)
{
    if (by_bound)
        return buf_printf(note,
                          "runner-client dropped %zu of this function's %zu results: the results "
                          "kept for this report reached their limit of %zu bytes (%d x "
                          "--max-message)",
                          dropped, total, bound, EVAL_RESULTS_PER_MESSAGE);
    return buf_printf(note,
                      "runner-client dropped %zu of this function's %zu results: it keeps at most "
                      "%zu results of one answer",
                      dropped, total, stored);
}

int results_text_append(buf *out, size_t room, size_t bound, const rl_list *results,
                        const char *error, const rl_kv *tags, size_t n_tags, size_t *dropped)
{
    size_t stored = results ? results->n_results : 0;
    size_t total = stored + (results ? results->n_results_omitted : 0) + !!error;
    size_t kept = 0;
    buf scratch = { 0 };
    int rc = 1;
    for (size_t i = 0; rc > 0 && i < stored; i++)
        if ((rc = append_fitting(out, room, &results->results[i], tags, n_tags, &scratch)) > 0)
            kept++;
    if (rc > 0 && error) {
        rl_result failure = { .message = (char *)error, .severity = "error" };
        if ((rc = append_fitting(out, room, &failure, tags, n_tags, &scratch)) > 0)
            kept++;
    }
    *dropped = total - kept;
    if (rc >= 0 && *dropped) {
        buf note = { 0 };
        rl_result cut = { .severity = "warning" };
        rc = cut_note(&note, *dropped, total, rc == 0, bound, stored);
        cut.message = note.data;
        if (rc == 0)
            rc = entry_text(&cut, tags, n_tags, out);
        buf_free(&note);
    }
    buf_free(&scratch);
    return rc < 0 ? -1 : 0;
}
