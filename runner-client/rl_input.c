/* rl_input: builds the ResourceList that `runner-client eval` sends to a KRM
 * function, the way `kpt fn source` would; see rl_input.h.
 *
 * Why it matters: a function sees only the ResourceList on its stdin, and
 * kpt/Porch map the function's output back to files through the reader
 * annotations (internal.config.kubernetes.io/path and /index, plus their
 * legacy config.kubernetes.io/ twins). Building the same shape as kpt lets a
 * function be exercised here exactly as it will be run there.
 *
 * Rules, as kyaml's kio.ByteReader / kio.LocalPackageReader and kpt's
 * `fn source` apply them:
 *  - A file or stdin holding exactly one document whose top-level `kind` is
 *    ResourceList and that has `items` or `functionConfig` is already the
 *    function's input: it passes through byte for byte. Kind `List` with
 *    those keys is unwrapped: its items (and functionConfig) go into a new
 *    ResourceList untouched, as kyaml adds no annotations to them.
 *  - Otherwise every non-empty document must be a mapping; each becomes an
 *    entry of `items`. Empty and null documents are skipped and do not use
 *    up an index. The reader annotations are set on each object (existing
 *    values of those keys are replaced in place, new keys are appended in
 *    sorted order, other annotations are kept); stdin gets no path.
 *    Like kyaml's CopyLegacyAnnotations, a path or id annotation present in
 *    only one of its two forms is copied to the other.
 *  - A directory is walked depth first in byte-wise name order (Go's
 *    filepath.Walk order); it reads `Kptfile`, *.yaml, *.yml and *.json
 *    (kpt's MatchAllKRM), never unwraps lists, skips names starting with
 *    '.', and annotates paths relative to the directory with '/'.
 *
 * How: each input is parsed into a list of libyaml events and the objects
 * are re-emitted with yaml_emitter, splicing the annotation events in.
 * Scalars keep their style and tags (so "1" stays a string and block
 * literals stay literal) and collections keep their block or flow style, so
 * the output is never much larger than the input; comments are lost. All
 * walking over nesting is iterative, so input depth costs heap, not stack;
 * flow collections nested more than YAML_MAX_FLOW_DEPTH deep are refused
 * as soon as libyaml reaches them (lib/krm/yaml_depth.h). */
#include "rl_input.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "core/fdio.h"
#include "krm/yaml_depth.h"

#define NONE SIZE_MAX /* "no such event" for event indexes */

static const char RL_API_VERSION[] = "config.kubernetes.io/v1";
static const char RL_KIND[] = "ResourceList";
static const char PATH_KEY[] = "internal.config.kubernetes.io/path";
static const char INDEX_KEY[] = "internal.config.kubernetes.io/index";
static const char LEGACY_PATH_KEY[] = "config.kubernetes.io/path";
static const char LEGACY_INDEX_KEY[] = "config.kubernetes.io/index";

/* Annotation pairs kyaml keeps in sync between the two forms. Index is not
 * listed: the reader always sets both of its forms. */
static const struct {
    const char *legacy;
    const char *internal;
} MIRRORED[] = {
    { "config.kubernetes.io/path", "internal.config.kubernetes.io/path" },
    { "config.k8s.io/id", "internal.config.kubernetes.io/id" },
};
#define N_MIRRORED (sizeof MIRRORED / sizeof MIRRORED[0])

/* ---- error messages ------------------------------------------------------ */

/* Writes one line into err: any line break (e.g. inside a file name) is
 * turned into a space. */
static void vset_err(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (!err || errlen == 0)
        return;
    vsnprintf(err, errlen, fmt, ap);
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

static void __attribute__((format(printf, 3, 4)))
set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset_err(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- the event list of one input ------------------------------------------ */

/* Every event of one parsed input, in order. An event that has been handed
 * to the emitter or deleted is zeroed (YAML_NO_EVENT), so freeing the list
 * afterwards is always safe. */
typedef struct event_list {
    yaml_event_t *events;
    size_t count;
    size_t cap;
} event_list;

static void events_free(event_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        yaml_event_delete(&list->events[i]);
    free(list->events);
    *list = (event_list){ 0 };
}

/* Takes ownership of *ev (deleting it on failure). */
static int events_push(event_list *list, yaml_event_t *ev)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 64;
        yaml_event_t *grown = cap > SIZE_MAX / sizeof *grown
                                  ? NULL
                                  : realloc(list->events, cap * sizeof *grown);
        if (!grown) {
            yaml_event_delete(ev);
            return -1;
        }
        list->events = grown;
        list->cap = cap;
    }
    list->events[list->count++] = *ev;
    return 0;
}

/* Index just past the node that starts at `at` (a scalar, an alias, or a
 * whole collection). The list comes from a successful parse, so it is well
 * nested. */
static size_t node_end(const event_list *list, size_t at)
{
    size_t depth = 0;
    for (size_t i = at; i < list->count; i++) {
        switch (list->events[i].type) {
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            depth++;
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            depth--;
            break;
        default:
            break;
        }
        if (depth == 0)
            return i + 1;
    }
    return list->count;
}

static int scalar_is(const yaml_event_t *ev, const char *text)
{
    size_t len = strlen(text);
    return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == len &&
           memcmp(ev->data.scalar.value, text, len) == 0;
}

/* A null node: an untagged plain "", "~" or "null" (YAML 1.1/1.2 core
 * spellings), or anything tagged !!null. */
static int is_null_scalar(const yaml_event_t *ev)
{
    if (ev->type != YAML_SCALAR_EVENT)
        return 0;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (tag)
        return strcmp(tag, YAML_NULL_TAG) == 0;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    static const char *const spellings[] = { "", "~", "null", "Null", "NULL" };
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
        if (scalar_is(ev, spellings[i]))
            return 1;
    return 0;
}

/* Index of the value stored under scalar key `key` in the mapping that
 * starts at `map`, or NONE. The first occurrence wins. */
static size_t find_key(const event_list *list, size_t map, const char *key)
{
    size_t at = map + 1;
    while (at < list->count && list->events[at].type != YAML_MAPPING_END_EVENT) {
        size_t value = node_end(list, at);
        if (scalar_is(&list->events[at], key))
            return value;
        at = node_end(list, value);
    }
    return NONE;
}

static const char *node_kind_name(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SEQUENCE_START_EVENT:
        return "a sequence";
    case YAML_ALIAS_EVENT:
        return "an alias";
    default:
        return "a scalar";
    }
}

/* ---- the builder: one emitter writing one ResourceList into out ---------- */

typedef struct builder {
    yaml_emitter_t emitter;
    int emitter_open;
    buf *out;
    size_t out_start;    /* out->len before we began; restored on failure */
    char *err;
    size_t errlen;
    const char *name;    /* input being read, for messages */
    size_t doc_position; /* its document being wrapped, counting empty ones */
    size_t doc_line;     /* 1-based line where that document's object starts */
} builder;

static int __attribute__((format(printf, 2, 3))) fail(builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset_err(b->err, b->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* A failure located at the document being wrapped. */
static int __attribute__((format(printf, 2, 3))) fail_doc(builder *b, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return fail(b, "%s: document %zu (line %zu): %s", b->name, b->doc_position, b->doc_line,
                what);
}

static int fail_parse(builder *b, const yaml_parser_t *parser)
{
    const char *problem = parser->problem ? parser->problem : "invalid input";
    if (parser->error == YAML_MEMORY_ERROR)
        return fail(b, "%s: out of memory while parsing YAML", b->name);
    if (parser->error == YAML_READER_ERROR)
        return fail(b, "%s: YAML error at byte %zu: %s", b->name, parser->problem_offset,
                    problem);
    if (parser->context)
        return fail(b, "%s: YAML error at line %zu, column %zu: %s (%s)", b->name,
                    parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem,
                    parser->context);
    return fail(b, "%s: YAML error at line %zu, column %zu: %s", b->name,
                parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem);
}

static int fail_emit(builder *b)
{
    const char *problem = b->emitter.problem ? b->emitter.problem : "out of memory";
    return fail(b, "%s: cannot write YAML: %s", b->name, problem);
}

static int parse_events(builder *b, const char *data, size_t len, event_list *list)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return fail(b, "%s: out of memory while parsing YAML", b->name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    yaml_flow_depth flow = { 0 };
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = fail_parse(b, &parser);
            break;
        }
        if (yaml_flow_depth_note(&flow, &ev) < 0) {
            /* libyaml's time per token grows with flow depth: yaml_depth.h */
            rc = fail(b, "%s: YAML error at line %zu, column %zu: " YAML_FLOW_DEPTH_PROBLEM,
                      b->name, ev.start_mark.line + 1, ev.start_mark.column + 1);
            yaml_event_delete(&ev);
            break;
        }
        yaml_event_type_t type = ev.type;
        if (events_push(list, &ev) < 0) {
            rc = fail(b, "%s: out of memory while parsing YAML", b->name);
            break;
        }
        if (type == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&parser);
    if (rc < 0)
        events_free(list);
    return rc;
}

/* Hands *ev to the emitter; the emitter owns it from then on, even when it
 * fails, so our copy is cleared either way. */
static int emit_event(builder *b, yaml_event_t *ev)
{
    int ok = yaml_emitter_emit(&b->emitter, ev);
    memset(ev, 0, sizeof *ev);
    return ok ? 0 : fail_emit(b);
}

/* Emits a new event of a kind that carries no data (collections in block
 * style, documents implicit). */
static int emit_new(builder *b, yaml_event_type_t type)
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
    return ok ? emit_event(b, &ev) : fail(b, "%s: out of memory", b->name);
}

/* A plain scalar (keys, and the wrapper's apiVersion/kind). */
static int emit_plain(builder *b, const char *text)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)text,
                                      (int)strlen(text), 1, 1, YAML_PLAIN_SCALAR_STYLE))
        return fail(b, "%s: out of memory", b->name);
    return emit_event(b, &ev);
}

/* A string value, single-quoted as kyaml writes annotation values ('0'),
 * so it can never be read back as a number or boolean. */
static int emit_quoted(builder *b, const char *text)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (const yaml_char_t *)text,
                                      (int)strlen(text), 0, 1, YAML_SINGLE_QUOTED_SCALAR_STYLE))
        return fail(b, "%s: out of memory", b->name);
    return emit_event(b, &ev);
}

static int copy_range(builder *b, event_list *list, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        if (emit_event(b, &list->events[i]) < 0)
            return -1;
    return 0;
}

static void drop_range(event_list *list, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        yaml_event_delete(&list->events[i]);
}

static int write_to_buf(void *data, unsigned char *bytes, size_t size)
{
    return buf_append(data, bytes, size) == 0;
}

static void builder_init(builder *b, buf *out, char *err, size_t errlen, const char *name)
{
    *b = (builder){ .out = out, .out_start = out->len, .err = err, .errlen = errlen,
                    .name = name };
}

/* Starts the ResourceList and emits everything up to the `items` key. */
static int builder_open(builder *b)
{
    if (!yaml_emitter_initialize(&b->emitter))
        return fail(b, "%s: out of memory", b->name);
    b->emitter_open = 1;
    yaml_emitter_set_output(&b->emitter, write_to_buf, b->out);
    yaml_emitter_set_unicode(&b->emitter, 1);
    yaml_emitter_set_width(&b->emitter, -1); /* never fold long scalars */
    yaml_emitter_set_indent(&b->emitter, 2);
    if (emit_new(b, YAML_STREAM_START_EVENT) < 0 || emit_new(b, YAML_DOCUMENT_START_EVENT) < 0 ||
        emit_new(b, YAML_MAPPING_START_EVENT) < 0 || emit_plain(b, "apiVersion") < 0 ||
        emit_plain(b, RL_API_VERSION) < 0 || emit_plain(b, "kind") < 0 ||
        emit_plain(b, RL_KIND) < 0 || emit_plain(b, "items") < 0)
        return -1;
    return 0;
}

/* Ends the ResourceList when rc is 0, releases the emitter, and on failure
 * takes back whatever was appended to out. Returns rc, or -1 if closing
 * failed. */
static int builder_close(builder *b, int rc)
{
    if (rc == 0 && (emit_new(b, YAML_MAPPING_END_EVENT) < 0 ||
                    emit_new(b, YAML_DOCUMENT_END_EVENT) < 0 ||
                    emit_new(b, YAML_STREAM_END_EVENT) < 0))
        rc = -1;
    if (rc == 0 && !yaml_emitter_flush(&b->emitter))
        rc = fail_emit(b);
    /* libyaml ends a document that closes with a flow collection ("items:
     * []") without a line break. */
    if (rc == 0 && b->out->len > b->out_start && b->out->data[b->out->len - 1] != '\n' &&
        buf_append(b->out, "\n", 1) < 0)
        rc = fail(b, "%s: out of memory", b->name);
    if (b->emitter_open)
        yaml_emitter_delete(&b->emitter);
    b->emitter_open = 0;
    if (rc < 0) {
        b->out->len = b->out_start;
        if (b->out->data)
            b->out->data[b->out_start] = '\0';
    }
    return rc;
}

/* ---- annotating one object -------------------------------------------------- */

typedef struct annotation {
    const char *key;
    const char *value;
} annotation;

/* Where an object's annotations go and what they become. */
typedef struct doc_plan {
    size_t meta;              /* index of metadata's value, or NONE */
    size_t annos;             /* index of metadata.annotations' value, or NONE */
    annotation wanted[4];     /* reader annotations, sorted by key */
    size_t n_wanted;
    annotation extra[N_MIRRORED + 4]; /* pairs to append to the annotations */
    size_t n_extra;
    char *copies[N_MIRRORED]; /* owned values among extra (mirrored ones) */
    size_t n_copies;
} doc_plan;

static void plan_free(doc_plan *plan)
{
    for (size_t i = 0; i < plan->n_copies; i++)
        free(plan->copies[i]);
    plan->n_copies = 0;
}

static void plan_wanted(doc_plan *plan, const char *rel_path, const char *index_text)
{
    size_t n = 0;
    plan->wanted[n++] = (annotation){ LEGACY_INDEX_KEY, index_text };
    if (rel_path)
        plan->wanted[n++] = (annotation){ LEGACY_PATH_KEY, rel_path };
    plan->wanted[n++] = (annotation){ INDEX_KEY, index_text };
    if (rel_path)
        plan->wanted[n++] = (annotation){ PATH_KEY, rel_path };
    plan->n_wanted = n;
}

/* The value the reader sets for annotation key event `key`, or NULL when
 * the key is not one of the reader's. */
static const char *wanted_value(const doc_plan *plan, const yaml_event_t *key)
{
    for (size_t i = 0; i < plan->n_wanted; i++)
        if (scalar_is(key, plan->wanted[i].key))
            return plan->wanted[i].value;
    return NULL;
}

static int is_wanted_key(const doc_plan *plan, const char *key)
{
    for (size_t i = 0; i < plan->n_wanted; i++)
        if (strcmp(plan->wanted[i].key, key) == 0)
            return 1;
    return 0;
}

/* Value event of annotation `key` in the existing annotations, or NONE. */
static size_t annotation_value(const event_list *list, const doc_plan *plan, const char *key)
{
    return plan->annos == NONE || list->events[plan->annos].type != YAML_MAPPING_START_EVENT
               ? NONE
               : find_key(list, plan->annos, key);
}

/* Queues `key: <copy of source>` when source is a non-empty string and key
 * is absent (kyaml treats an empty value as absent; a present empty key is
 * left alone here). */
static int plan_mirror(builder *b, const event_list *list, doc_plan *plan, const char *key,
                       size_t source)
{
    if (source == NONE || annotation_value(list, plan, key) != NONE)
        return 0;
    const yaml_event_t *ev = &list->events[source];
    if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.length == 0)
        return 0;
    char *copy = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
    if (!copy)
        return fail(b, "%s: out of memory", b->name);
    plan->copies[plan->n_copies++] = copy;
    plan->extra[plan->n_extra++] = (annotation){ key, copy };
    return 0;
}

/* Fills plan->extra: mirrored legacy/internal pairs first, then the reader
 * annotations the object does not have yet, the order kyaml adds them in. */
static int plan_extra(builder *b, const event_list *list, doc_plan *plan)
{
    for (size_t i = 0; i < N_MIRRORED; i++) {
        const char *legacy = MIRRORED[i].legacy, *internal = MIRRORED[i].internal;
        if (is_wanted_key(plan, legacy) || is_wanted_key(plan, internal))
            continue;
        size_t legacy_value = annotation_value(list, plan, legacy);
        size_t internal_value = annotation_value(list, plan, internal);
        if (plan_mirror(b, list, plan, internal, legacy_value) < 0 ||
            plan_mirror(b, list, plan, legacy, internal_value) < 0)
            return -1;
    }
    for (size_t i = 0; i < plan->n_wanted; i++)
        if (annotation_value(list, plan, plan->wanted[i].key) == NONE)
            plan->extra[plan->n_extra++] = plan->wanted[i];
    return 0;
}

static int plan_object(builder *b, const event_list *list, size_t root, const char *rel_path,
                       const char *index_text, doc_plan *plan)
{
    *plan = (doc_plan){ .meta = find_key(list, root, "metadata"), .annos = NONE };
    plan_wanted(plan, rel_path, index_text);
    if (plan->meta != NONE && !is_null_scalar(&list->events[plan->meta])) {
        if (list->events[plan->meta].type != YAML_MAPPING_START_EVENT)
            return fail_doc(b, "metadata is %s, not a mapping",
                            node_kind_name(&list->events[plan->meta]));
        plan->annos = find_key(list, plan->meta, "annotations");
        const yaml_event_t *annos = plan->annos == NONE ? NULL : &list->events[plan->annos];
        if (annos && !is_null_scalar(annos) && annos->type != YAML_MAPPING_START_EVENT)
            return fail_doc(b, "metadata.annotations is %s, not a mapping",
                            node_kind_name(annos));
    }
    return plan_extra(b, list, plan);
}

typedef int (*plan_emitter)(builder *b, const doc_plan *plan);

static int emit_annotations_map(builder *b, const doc_plan *plan)
{
    if (emit_new(b, YAML_MAPPING_START_EVENT) < 0)
        return -1;
    for (size_t i = 0; i < plan->n_extra; i++)
        if (emit_plain(b, plan->extra[i].key) < 0 || emit_quoted(b, plan->extra[i].value) < 0)
            return -1;
    return emit_new(b, YAML_MAPPING_END_EVENT);
}

static int emit_annotations_entry(builder *b, const doc_plan *plan)
{
    return emit_plain(b, "annotations") < 0 ? -1 : emit_annotations_map(b, plan);
}

static int emit_metadata_map(builder *b, const doc_plan *plan)
{
    if (emit_new(b, YAML_MAPPING_START_EVENT) < 0 || emit_annotations_entry(b, plan) < 0)
        return -1;
    return emit_new(b, YAML_MAPPING_END_EVENT);
}

static int emit_metadata_entry(builder *b, const doc_plan *plan)
{
    return emit_plain(b, "metadata") < 0 ? -1 : emit_metadata_map(b, plan);
}

/* Copies events [from, to), emitting `what` just before event `at`. */
static int insert_before(builder *b, event_list *list, size_t from, size_t at, size_t to,
                         plan_emitter what, const doc_plan *plan)
{
    if (copy_range(b, list, from, at) < 0 || what(b, plan) < 0)
        return -1;
    return copy_range(b, list, at, to);
}

/* Copies events [from, to), emitting `what` instead of the scalar at `at`. */
static int replace_scalar(builder *b, event_list *list, size_t from, size_t at, size_t to,
                          plan_emitter what, const doc_plan *plan)
{
    if (copy_range(b, list, from, at) < 0)
        return -1;
    drop_range(list, at, at + 1);
    if (what(b, plan) < 0)
        return -1;
    return copy_range(b, list, at + 1, to);
}

/* Copies the pairs of the existing annotations mapping, events [at, close),
 * giving the reader's keys their new values. */
static int copy_annotation_pairs(builder *b, event_list *list, size_t at, size_t close,
                                 const doc_plan *plan)
{
    while (at < close) {
        size_t value = node_end(list, at);
        size_t next = node_end(list, value);
        const char *replacement = wanted_value(plan, &list->events[at]);
        if (copy_range(b, list, at, value) < 0)
            return -1;
        if (replacement) {
            drop_range(list, value, next);
            if (emit_quoted(b, replacement) < 0)
                return -1;
        } else if (copy_range(b, list, value, next) < 0) {
            return -1;
        }
        at = next;
    }
    return 0;
}

/* Emits the object whose events are [root, end) with its annotations set. */
static int emit_object(builder *b, event_list *list, size_t root, size_t end,
                       const doc_plan *plan)
{
    if (plan->meta == NONE)
        return insert_before(b, list, root, end - 1, end, emit_metadata_entry, plan);
    if (is_null_scalar(&list->events[plan->meta]))
        return replace_scalar(b, list, root, plan->meta, end, emit_metadata_map, plan);
    if (plan->annos == NONE)
        return insert_before(b, list, root, node_end(list, plan->meta) - 1, end,
                             emit_annotations_entry, plan);
    if (is_null_scalar(&list->events[plan->annos]))
        return replace_scalar(b, list, root, plan->annos, end, emit_annotations_map, plan);
    size_t close = node_end(list, plan->annos) - 1;
    if (copy_range(b, list, root, plan->annos + 1) < 0 ||
        copy_annotation_pairs(b, list, plan->annos + 1, close, plan) < 0)
        return -1;
    for (size_t i = 0; i < plan->n_extra; i++)
        if (emit_plain(b, plan->extra[i].key) < 0 || emit_quoted(b, plan->extra[i].value) < 0)
            return -1;
    return copy_range(b, list, close, end);
}

static int wrap_object(builder *b, event_list *list, size_t root, size_t end,
                       const char *rel_path, size_t index)
{
    char index_text[24];
    snprintf(index_text, sizeof index_text, "%zu", index);
    doc_plan plan;
    int rc = plan_object(b, list, root, rel_path, index_text, &plan);
    if (rc == 0)
        rc = emit_object(b, list, root, end, &plan);
    plan_free(&plan);
    return rc;
}

/* Appends every object of one parsed input to the open `items` sequence.
 * `index` counts only the objects, as kyaml's does. */
static int wrap_documents(builder *b, event_list *list, const char *rel_path)
{
    size_t index = 0;
    size_t at = 1; /* past STREAM_START */
    for (size_t position = 0; list->events[at].type == YAML_DOCUMENT_START_EVENT; position++) {
        size_t root = at + 1, end = node_end(list, root);
        const yaml_event_t *top = &list->events[root];
        b->doc_position = position;
        b->doc_line = top->start_mark.line + 1;
        if (!is_null_scalar(top)) {
            if (top->type != YAML_MAPPING_START_EVENT)
                return fail_doc(b, "expected a mapping (a KRM object), found %s",
                                node_kind_name(top));
            if (wrap_object(b, list, root, end, rel_path, index++) < 0)
                return -1;
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
    size_t doc_end = node_end(list, root);
    if (doc_end + 1 >= list->count || list->events[doc_end + 1].type != YAML_STREAM_END_EVENT)
        return SHAPE_OBJECTS; /* more than one document */
    if (find_key(list, root, "items") == NONE && find_key(list, root, "functionConfig") == NONE)
        return SHAPE_OBJECTS;
    size_t kind = find_key(list, root, "kind");
    if (kind != NONE && scalar_is(&list->events[kind], RL_KIND))
        return SHAPE_RESOURCE_LIST;
    if (kind != NONE && scalar_is(&list->events[kind], "List"))
        return SHAPE_LIST;
    return SHAPE_OBJECTS;
}

/* A `kind: List` document: its items and functionConfig, as they are, in a
 * new ResourceList. */
static int unwrap_list(builder *b, event_list *list)
{
    const size_t root = 2;
    size_t items = find_key(list, root, "items");
    size_t config = find_key(list, root, "functionConfig");
    b->doc_line = list->events[root].start_mark.line + 1;
    if (builder_open(b) < 0)
        return builder_close(b, -1);
    int rc;
    if (items == NONE || is_null_scalar(&list->events[items]))
        rc = emit_new(b, YAML_SEQUENCE_START_EVENT) < 0 ? -1
                                                        : emit_new(b, YAML_SEQUENCE_END_EVENT);
    else if (list->events[items].type != YAML_SEQUENCE_START_EVENT)
        rc = fail_doc(b, "items of the List is %s, not a sequence",
                      node_kind_name(&list->events[items]));
    else
        rc = copy_range(b, list, items, node_end(list, items));
    if (rc == 0 && config != NONE && !is_null_scalar(&list->events[config]))
        rc = emit_plain(b, "functionConfig") < 0
                 ? -1
                 : copy_range(b, list, config, node_end(list, config));
    return builder_close(b, rc);
}

static int wrap_single_input(builder *b, event_list *list, const char *rel_path)
{
    int rc = builder_open(b);
    if (rc == 0)
        rc = emit_new(b, YAML_SEQUENCE_START_EVENT);
    if (rc == 0)
        rc = wrap_documents(b, list, rel_path);
    if (rc == 0)
        rc = emit_new(b, YAML_SEQUENCE_END_EVENT);
    return builder_close(b, rc);
}

/* `display` names the input in messages; `rel_path` is the path annotation
 * (NULL: none, for stdin). */
static int build_from_bytes(const char *data, size_t len, const char *display,
                            const char *rel_path, buf *out, char *err, size_t errlen)
{
    builder b;
    builder_init(&b, out, err, errlen, display);
    event_list list = { 0 };
    if (parse_events(&b, data, len, &list) < 0)
        return -1;
    int rc;
    switch (classify(&list)) {
    case SHAPE_RESOURCE_LIST:
        rc = buf_append(out, data, len) < 0 ? fail(&b, "%s: out of memory", display) : 0;
        break;
    case SHAPE_LIST:
        rc = unwrap_list(&b, &list);
        break;
    default:
        rc = wrap_single_input(&b, &list, rel_path);
        break;
    }
    events_free(&list);
    return rc;
}

static int build_from_stdin(buf *out, char *err, size_t errlen)
{
    buf data = { 0 };
    int rc;
    if (fd_read_all(STDIN_FILENO, &data, 0) < 0) {
        set_err(err, errlen, "stdin: %s", strerror(errno));
        rc = -1;
    } else {
        rc = build_from_bytes(data.data, data.len, "stdin", NULL, out, err, errlen);
    }
    buf_free(&data);
    return rc;
}

static int build_from_file(const char *path, buf *out, char *err, size_t errlen)
{
    buf data = { 0 };
    int rc;
    if (file_read_all(path, &data, 0) < 0) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        rc = -1;
    } else {
        const char *slash = strrchr(path, '/');
        rc = build_from_bytes(data.data, data.len, path, slash ? slash + 1 : path, out, err,
                              errlen);
    }
    buf_free(&data);
    return rc;
}

/* ---- directories ----------------------------------------------------------- */

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

/* Appends the objects of one file of a directory; lists are not unwrapped. */
static int add_package_file(builder *b, const char *path, const char *rel_path)
{
    buf data = { 0 };
    event_list list = { 0 };
    const char *dir_name = b->name;
    b->name = path;
    int rc = file_read_all(path, &data, 0) < 0 ? fail(b, "%s: %s", path, strerror(errno))
                                        : parse_events(b, data.data, data.len, &list);
    if (rc == 0)
        rc = wrap_documents(b, &list, rel_path);
    events_free(&list);
    buf_free(&data);
    b->name = dir_name; /* path is the caller's and about to be freed */
    return rc;
}

static int add_directory(builder *b, const char *dir_path, const char *rel_dir);

/* One directory entry: a subdirectory is walked (symlinks to directories
 * are not, like filepath.Walk), a matching regular file or symlink is read,
 * anything else is ignored. Path length limits bound the walk's depth. */
static int add_directory_entry(builder *b, const char *dir_path, const char *rel_dir,
                               const char *entry)
{
    buf path = { 0 }, rel = { 0 };
    struct stat st;
    int rc;
    if (join_path(&path, dir_path, entry) < 0 || join_path(&rel, rel_dir, entry) < 0)
        rc = fail(b, "%s: out of memory", dir_path);
    else if (lstat(path.data, &st) < 0)
        rc = fail(b, "%s: %s", path.data, strerror(errno));
    else if (S_ISDIR(st.st_mode))
        rc = add_directory(b, path.data, rel.data);
    else if ((S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && is_resource_file(entry))
        rc = add_package_file(b, path.data, rel.data);
    else
        rc = 0;
    buf_free(&path);
    buf_free(&rel);
    return rc;
}

static int add_directory(builder *b, const char *dir_path, const char *rel_dir)
{
    struct dirent **entries = NULL;
    int n = scandir(dir_path, &entries, visible_entry, by_name_bytes);
    if (n < 0)
        return fail(b, "%s: %s", dir_path, strerror(errno));
    int rc = 0;
    for (int i = 0; i < n; i++) {
        if (rc == 0)
            rc = add_directory_entry(b, dir_path, rel_dir, entries[i]->d_name);
        free(entries[i]);
    }
    free(entries);
    return rc;
}

static int build_from_directory(const char *path, buf *out, char *err, size_t errlen)
{
    builder b;
    builder_init(&b, out, err, errlen, path);
    int rc = builder_open(&b);
    if (rc == 0)
        rc = emit_new(&b, YAML_SEQUENCE_START_EVENT);
    if (rc == 0)
        rc = add_directory(&b, path, NULL);
    if (rc == 0)
        rc = emit_new(&b, YAML_SEQUENCE_END_EVENT);
    return builder_close(&b, rc);
}

/* ---- public entry points ---------------------------------------------------- */

/* rl_input_build_bytes treats a NULL name, "-" and "stdin" as standard input:
 * messages say "stdin" and no path annotations are set. */
static int names_stdin(const char *name)
{
    return !name || strcmp(name, "-") == 0 || strcmp(name, "stdin") == 0;
}

int rl_input_build(const char *path, buf *out, char *err, size_t errlen)
{
    if (!path || strcmp(path, "-") == 0)
        return build_from_stdin(out, err, errlen);
    struct stat st;
    if (stat(path, &st) < 0) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (S_ISDIR(st.st_mode))
        return build_from_directory(path, out, err, errlen);
    return build_from_file(path, out, err, errlen);
}

int rl_input_build_bytes(const char *data, size_t len, const char *name, buf *out, char *err,
                         size_t errlen)
{
    if (names_stdin(name))
        return build_from_bytes(data, len, "stdin", NULL, out, err, errlen);
    return build_from_bytes(data, len, name, name, out, err, errlen);
}
