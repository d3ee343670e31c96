/* rl_writer: emits one ResourceList into a buf; see rl_writer.h. */
#include "pkg/rl_writer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "krm/yaml_v3.h"

static const char RL_API_VERSION[] = "config.kubernetes.io/v1";
static const char RL_KIND[] = "ResourceList";

int rl_writer_fail(rl_writer *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vfail_line(w->err, fmt, ap);
    va_end(ap);
    return -1;
}

int rl_writer_fail_doc(rl_writer *w, const char *fmt, ...)
{
    rl_writer_fail(w, "%s: document %zu (line %zu): ", w->name, w->doc_position, w->doc_line);
    va_list ap;
    va_start(ap, fmt);
    buf_vfail_line(w->err, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_emit(rl_writer *w)
{
    const char *problem = w->emitter.problem ? w->emitter.problem : "out of memory";
    return rl_writer_fail(w, "%s: cannot write YAML: %s", w->name, problem);
}

/* Hands *ev to the emitter; the emitter owns it from then on, even when it
 * fails, so our copy is cleared either way. */
static int emit_event(rl_writer *w, yaml_event_t *ev)
{
    int ok = yaml_emitter_emit(&w->emitter, ev);
    memset(ev, 0, sizeof *ev);
    return ok ? 0 : fail_emit(w);
}

int rl_writer_emit(rl_writer *w, yaml_event_t *ev)
{
    return emit_event(w, ev);
}

int rl_writer_emit_new(rl_writer *w, yaml_event_type_t type)
{
    yaml_event_t ev;
    int ok = 0;
    switch (type) {
    case YAML_STREAM_START_EVENT:
        ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
        break;
    case YAML_STREAM_END_EVENT:
        ok = yaml_stream_end_event_initialize(&ev);
        break;
    case YAML_DOCUMENT_START_EVENT:
        ok = yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
        break;
    case YAML_DOCUMENT_END_EVENT:
        ok = yaml_document_end_event_initialize(&ev, 1);
        break;
    case YAML_MAPPING_START_EVENT:
        ok = yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
        break;
    case YAML_MAPPING_END_EVENT:
        ok = yaml_mapping_end_event_initialize(&ev);
        break;
    case YAML_SEQUENCE_START_EVENT:
        ok = yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_SEQUENCE_STYLE);
        break;
    case YAML_SEQUENCE_END_EVENT:
        ok = yaml_sequence_end_event_initialize(&ev);
        break;
    default:
        break;
    }
    return ok ? emit_event(w, &ev) : rl_writer_fail(w, "%s: out of memory", w->name);
}

static int emit_scalar(rl_writer *w, const char *text, int plain_implicit,
                       yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)text,
                                      (int)strlen(text), plain_implicit, 1, style))
        return rl_writer_fail(w, "%s: out of memory", w->name);
    return emit_event(w, &ev);
}

int rl_writer_emit_plain(rl_writer *w, const char *text)
{
    return emit_scalar(w, text, 1, YAML_PLAIN_SCALAR_STYLE);
}

int rl_writer_emit_quoted(rl_writer *w, const char *text)
{
    return emit_scalar(w, text, 0, YAML_SINGLE_QUOTED_SCALAR_STYLE);
}

int rl_writer_emit_string(rl_writer *w, const char *text)
{
    yaml_v3_number num;
    int plain = yaml_v3_resolve_plain(text, strlen(text), &num) == YAML_V3_STR;
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)text,
                                      (int)strlen(text), plain, 1, YAML_ANY_SCALAR_STYLE))
        return rl_writer_fail(w, "%s: out of memory", w->name);
    return emit_event(w, &ev);
}

int rl_writer_copy(rl_writer *w, event_list *list, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (emit_event(w, &list->events[i]) < 0)
            return -1;
    return 0;
}

static int write_to_buf(void *data, unsigned char *bytes, size_t size)
{
    return buf_append(data, bytes, size) == 0;
}

void rl_writer_init(rl_writer *w, buf *out, buf *err, const char *name)
{
    *w = (rl_writer){ .out = out, .out_start = out->len, .err = err, .name = name };
}

int rl_writer_open_stream(rl_writer *w)
{
    if (!yaml_emitter_initialize(&w->emitter))
        return rl_writer_fail(w, "%s: out of memory", w->name);
    w->emitter_open = 1;
    yaml_emitter_set_output(&w->emitter, write_to_buf, w->out);
    yaml_emitter_set_unicode(&w->emitter, 1);
    yaml_emitter_set_width(&w->emitter, -1); /* never fold long scalars */
    yaml_emitter_set_indent(&w->emitter, 2);
    return rl_writer_emit_new(w, YAML_STREAM_START_EVENT);
}

int rl_writer_open(rl_writer *w)
{
    w->framed = 1;
    if (rl_writer_open_stream(w) < 0 ||
        rl_writer_emit_new(w, YAML_DOCUMENT_START_EVENT) < 0 ||
        rl_writer_emit_new(w, YAML_MAPPING_START_EVENT) < 0 ||
        rl_writer_emit_plain(w, "apiVersion") < 0 || rl_writer_emit_plain(w, RL_API_VERSION) < 0 ||
        rl_writer_emit_plain(w, "kind") < 0 || rl_writer_emit_plain(w, RL_KIND) < 0 ||
        rl_writer_emit_plain(w, "items") < 0)
        return -1;
    return 0;
}

int rl_writer_close(rl_writer *w, int rc)
{
    if (rc == 0 && w->framed && (rl_writer_emit_new(w, YAML_MAPPING_END_EVENT) < 0 ||
                                 rl_writer_emit_new(w, YAML_DOCUMENT_END_EVENT) < 0))
        rc = -1;
    if (rc == 0 && rl_writer_emit_new(w, YAML_STREAM_END_EVENT) < 0)
        rc = -1;
    if (rc == 0 && !yaml_emitter_flush(&w->emitter))
        rc = fail_emit(w);
    /* libyaml ends a document that closes with a flow collection ("items:
     * []") without a line break. */
    if (rc == 0 && w->out->len > w->out_start && w->out->data[w->out->len - 1] != '\n' &&
        buf_append(w->out, "\n", 1) < 0)
        rc = rl_writer_fail(w, "%s: out of memory", w->name);
    if (w->emitter_open)
        yaml_emitter_delete(&w->emitter);
    w->emitter_open = 0;
    if (rc < 0) {
        w->out->len = w->out_start;
        if (w->out->data)
            w->out->data[w->out_start] = '\0';
    }
    return rc;
}
