/* resourcelist: judges a KRM function's stdout the way Porch's Go wrapper
 * server does.
 *
 * Why this exists: the Go wrapper calls krm-functions-sdk fn.ParseResourceList
 * on the function's output. That decides whether the call succeeds, and its
 * error text (or the results' text) ends up in the gRPC status message users
 * read. To be a drop-in replacement we must accept and reject the same bytes
 * and say so in the same words, without paying for a document tree: outputs
 * reach several MiB, and the wrapper never needs the items themselves.
 *
 * How: one pass over libyaml's event stream, each event handed to a small
 * state machine (one frame per collection it reads), so the pass can stop
 * after any event and go on later: a server judges a large output in steps
 * between its other work (rl_judge_step). The bytes are never rewritten.
 *   - `items` and `functionConfig` are skipped by counting nesting depth;
 *     only the item count and each item's node kind are kept (or rl_scan
 *     finds them without libyaml, and libyaml reads the rest).
 *   - `results` is decoded into rl_result the way yaml.v3 decodes it into the
 *     SDK's Result struct, including its "unmarshal errors" for wrong types
 *     and duplicate keys.
 *   - The checks are then applied in the order ParseResourceList applies
 *     them, so the first error Go would report is the one we report.
 *
 * What is not here: how yaml.v3 reads a scalar or names a tag (yaml_v3.c),
 * the wording of its unmarshal errors (yaml_unmarshal.c), the SDK's checks
 * and their words (rl_errors.c), and rendering the results (rl_results.c).
 *
 * Hostile input is bounded: nesting depth is capped (flow nesting at 128,
 * where libyaml's time per token stops growing with it, see yaml_depth.h;
 * all nesting at 1000), aliases are never expanded, stored results/tags/type
 * errors are capped, and no function recurses in proportion to the input's
 * depth. */
#include "krm/resourcelist.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "core/strset.h"
#include "krm/rl_errors.h"
#include "krm/rl_scan.h"
#include "krm/yaml_limits.h"
#include "krm/yaml_unmarshal.h"
#include "krm/yaml_v3.h"

enum {
    RL_MAX_DEPTH = YAML_MAX_DEPTH, /* all nesting, as every reader; yaml.v3 allows 10000. Flow nesting,
                                      which libyaml reads in time growing with its
                                      depth, stops at YAML_MAX_FLOW_DEPTH (128) */
    RL_STEP_BYTES = 32 * 1024,     /* input read per rl_judge_step, at most (plus
                                      libyaml's 16 KiB read-ahead and one token) */
    RL_MAX_RESULTS = 100000,       /* kept results; more are counted only */
    RL_MAX_TAGS = 1000,            /* kept tags per result */
};

/* ------------------------------------------------------------------------ */
/* Parser state                                                              */

enum top_key {
    TOP_OTHER = -1,
    TOP_API_VERSION,
    TOP_KIND,
    TOP_ITEMS,
    TOP_FUNCTION_CONFIG,
    TOP_RESULTS,
};

/* What the decoder is reading; see "The decoder" below. */
typedef enum frame_kind {
    FR_STREAM,       /* the stream: documents */
    FR_TOP,          /* the first document's root mapping */
    FR_ITEMS,        /* its items sequence */
    FR_RESULT_LIST,  /* results, or results.items in the legacy shape */
    FR_LEGACY,       /* results given as a mapping */
    FR_RESULT,       /* one result (a struct; duplicate keys tracked in keys[0]) */
    FR_REF,          /* its resourceRef (keys[1]) */
    FR_FIELD,        /* its field (keys[1]) */
    FR_FILE,         /* its file (keys[1]) */
    FR_META,         /* resourceRef.metadata, the legacy spelling */
    FR_TAGS,         /* its tags (keys[1]) */
} frame_kind;

typedef struct frame {
    frame_kind kind;
    int want_value;   /* mappings: the next node is the value for `key` */
    int key;          /* which field that value is for; -1 none */
    int seen;         /* FR_LEGACY: its first items key has been read */
    yaml_unmarshal_mark mark;   /* type errors recorded before this mapping began */
    char *tag_key;    /* FR_TAGS: the key awaiting its value (owned) */
    char **meta_dst;  /* FR_META: where the value goes, or NULL */
} frame;

enum { RL_MAX_FRAMES = 8 };

/* What libyaml reads: the input, or the input without the cut items, as
 * two pieces (nothing is copied to join them). */
typedef struct rl_source {
    const unsigned char *piece[2];
    size_t left[2];
    size_t given;            /* bytes handed to libyaml so far */
} rl_source;

typedef struct rl_parser {
    yaml_parser_t yaml;
    rl_source src;
    yaml_event_t ev;          /* the current event, owned while have_ev */
    int have_ev;
    size_t depth;             /* open sequences and mappings */
    yaml_flow_depth flow;     /* of which flow collections */
    int skipping;             /* passing over a node until depth == skip_to */
    size_t skip_to;
    frame frames[RL_MAX_FRAMES];
    size_t n_frames;
    int done;                 /* STREAM-END read */
    rl_result cur;            /* the result being decoded */
    char *legacy_name;        /* its resourceRef.metadata.name, until adopted */
    char *legacy_namespace;
    strset anchors;           /* anchor names seen so far, so an alias to an unknown
                                 anchor fails as in yaml.v3 */
    yaml_unmarshal_errors terr;
    yaml_unmarshal_keys keys[2];  /* [0] a result, [1] one of its sub-mappings */
    rl_list list;             /* built here, handed out on success */
    size_t results_cap;
    rl_facts top;             /* what the verdict is drawn from */
    unsigned top_seen;        /* TOP_* bits: first occurrence wins, as in the SDK */
    buf *err;                 /* the caller's, for the reason */
    const rl_items_cut *cut;  /* items cut out by rl_scan, or NULL */
    int cut_mismatch;         /* the cut document was not what rl_scan promised */
} rl_parser;

/* The line of the original input a zero-based line of the parsed document
 * is: with the items cut out, the lines after them moved up. */
static size_t src_line(const rl_parser *p, size_t line)
{
    return p->cut && line >= p->cut->first_line ? line + p->cut->lines : line;
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

static int fail_oom(rl_parser *p)
{
    return rl_errors_oom(p->err);
}

/* Formats libyaml's error the way yaml.v3's parser.fail() does, including
 * its choice of line: the context mark's line when set, else the problem
 * mark's, plus one only for scanner errors (so parser errors show the
 * zero-based line, as Go does). */
static int fail_yaml(rl_parser *p)
{
    const yaml_parser_t *y = &p->yaml;
    if (y->error == YAML_MEMORY_ERROR)
        return fail_oom(p);
    size_t line = 0;
    int scanner = y->error == YAML_SCANNER_ERROR;
    if (y->context_mark.line != 0)
        line = src_line(p, y->context_mark.line) + (size_t)scanner;
    else if (y->problem_mark.line != 0)
        line = src_line(p, y->problem_mark.line) + (size_t)scanner;
    const char *problem = y->problem ? y->problem : "unknown problem parsing YAML content";
    if (line != 0)
        return buf_fail(p->err, DECODE_PREFIX "yaml: line %zu: %s", line, problem);
    return buf_fail(p->err, DECODE_PREFIX "yaml: %s", problem);
}

/* ------------------------------------------------------------------------ */
/* Event stream                                                              */

static const yaml_char_t *event_anchor(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT: return ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT: return ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT: return ev->data.mapping_start.anchor;
    default: return NULL;
    }
}

/* Keeps depth and anchors up to date for the event just read. */
static int note_event(rl_parser *p)
{
    const yaml_event_t *ev = &p->ev;
    const yaml_char_t *anchor = event_anchor(ev);
    if (anchor && strset_add(&p->anchors, (const char *)anchor) < 0)
        return fail_oom(p);
    switch (ev->type) {
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (yaml_flow_depth_note(&p->flow, ev) < 0) {
            /* libyaml's cost per token grows with the flow depth: see yaml_depth.h */
            return buf_fail(p->err, DECODE_PREFIX "yaml: line %zu: " YAML_FLOW_DEPTH_PROBLEM,
                            src_line(p, ev->start_mark.line) + 1);
        }
        if (++p->depth <= RL_MAX_DEPTH)
            return 0;
        if (ev->start_mark.line != 0)
            return buf_fail(p->err, DECODE_PREFIX "yaml: line %zu: exceeded max depth of %d",
                            src_line(p, ev->start_mark.line) + 1, RL_MAX_DEPTH);
        return buf_fail(p->err, DECODE_PREFIX "yaml: exceeded max depth of %d", RL_MAX_DEPTH);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        yaml_flow_depth_note(&p->flow, ev);
        p->depth--;
        return 0;
    case YAML_ALIAS_EVENT:
        if (strset_has(&p->anchors, (const char *)ev->data.alias.anchor))
            return 0;
        return buf_fail(p->err, DECODE_PREFIX "yaml: unknown anchor '%s' referenced",
                        (const char *)ev->data.alias.anchor);
    default:
        return 0;
    }
}

/* Replaces the current event with the next one. */
static int pull(rl_parser *p)
{
    if (p->have_ev) {
        yaml_event_delete(&p->ev);
        p->have_ev = 0;
    }
    if (!yaml_parser_parse(&p->yaml, &p->ev))
        return fail_yaml(p);
    p->have_ev = 1;
    return note_event(p);
}

/* Consumes the rest of the node the current event starts: the events up to
 * its end are passed over as they come (on_event). A deeply nested node
 * costs a counter, not stack. */
static int skip_node(rl_parser *p)
{
    if (p->ev.type == YAML_SEQUENCE_START_EVENT || p->ev.type == YAML_MAPPING_START_EVENT) {
        p->skipping = 1;
        p->skip_to = p->depth - 1;
    }
    return 0;
}

static char *copy_bytes(const void *data, size_t len)
{
    char *s = malloc(len + 1);
    if (!s)
        return NULL;
    memcpy(s, data, len);
    s[len] = '\0';
    return s;
}

static char *copy_scalar(const yaml_event_t *ev)
{
    return copy_bytes(ev->data.scalar.value, ev->data.scalar.length);
}

/* A mapping key the SDK's lookups would match: a string scalar with this text. */
static int key_is(const yaml_event_t *ev, const char *word)
{
    if (ev->type != YAML_SCALAR_EVENT)
        return 0;
    size_t len = strlen(word);
    if (ev->data.scalar.length != len || memcmp(ev->data.scalar.value, word, len) != 0)
        return 0;
    return yaml_v3_is_str(ev);
}

/* ------------------------------------------------------------------------ */
/* yaml.v3 unmarshal errors (worded in yaml_unmarshal.c)                     */

/* Records that the node ev starts cannot be decoded into go_type. */
static int type_error(rl_parser *p, const yaml_event_t *ev, const char *go_type)
{
    size_t line = src_line(p, ev->start_mark.line) + 1;
    return yaml_unmarshal_type_error(&p->terr, ev, line, go_type) < 0 ? fail_oom(p) : 0;
}

/* Records a value that has the wrong shape for its target and skips it. */
static int wrong_type(rl_parser *p, const char *go_type)
{
    if (type_error(p, &p->ev, go_type) < 0)
        return -1;
    return skip_node(p);
}

/* A mapping's keys have all been read: see yaml_unmarshal_duplicates.
 * Returns 1 when duplicates were found, 0 when not, -1 on ENOMEM. */
static int check_duplicates(rl_parser *p, const yaml_unmarshal_keys *t, yaml_unmarshal_mark mark)
{
    int dup = yaml_unmarshal_duplicates(&p->terr, t, mark);
    return dup < 0 ? fail_oom(p) : dup;
}

/* ------------------------------------------------------------------------ */
/* Decoding results                                                          */

static void free_tags(rl_tag *tags, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(tags[i].key);
        free(tags[i].value);
    }
    free(tags);
}

static void result_free(rl_result *r)
{
    char **strings[] = {
        &r->message, &r->severity, &r->ref_api_version, &r->ref_kind, &r->ref_name,
        &r->ref_namespace, &r->field_path, &r->field_current_value,
        &r->field_proposed_value, &r->file_path,
    };
    for (size_t i = 0; i < sizeof strings / sizeof strings[0]; i++)
        free(*strings[i]);
    free_tags(r->tags, r->n_tags);
    *r = (rl_result){0};
}

/* A Go string field: any non-null scalar's text. Aliases are not followed
 * (that would let a small input expand), so they leave the field unset. */
static int read_string(rl_parser *p, char **dst, const char *go_type)
{
    if (p->ev.type == YAML_ALIAS_EVENT)
        return 0;
    if (p->ev.type != YAML_SCALAR_EVENT)
        return wrong_type(p, go_type);
    free(*dst);
    *dst = NULL;
    if (yaml_v3_is_null(&p->ev))
        return 0;
    *dst = copy_scalar(&p->ev);
    return *dst ? 0 : fail_oom(p);
}

/* field.currentValue / proposedValue are interface{} in Go, so any value is
 * fine; scalars are kept with their resolved type, the rest is skipped. */
static int read_value(rl_parser *p, char **dst, rl_value_type *type)
{
    if (p->ev.type != YAML_SCALAR_EVENT)
        return skip_node(p);
    free(*dst);
    *dst = NULL;
    yaml_v3_number num;
    yaml_v3_class cls = yaml_v3_classify(&p->ev, &num);
    if (cls == YAML_V3_NULL)
        return 0;
    *type = cls == YAML_V3_INT ? RL_VALUE_INT : cls == YAML_V3_FLOAT ? RL_VALUE_FLOAT
          : cls == YAML_V3_BOOL ? RL_VALUE_BOOL : RL_VALUE_STRING;
    *dst = copy_scalar(&p->ev);
    return *dst ? 0 : fail_oom(p);
}

_Static_assert(sizeof(long) == sizeof(int64_t), "file_index holds a Go int (64-bit)");

/* file.index is a Go int: integers, and floats truncated, are accepted. */
static int read_index(rl_parser *p, long *dst)
{
    if (p->ev.type == YAML_ALIAS_EVENT)
        return 0;
    if (p->ev.type != YAML_SCALAR_EVENT)
        return wrong_type(p, "int");
    yaml_v3_number num;
    yaml_v3_class cls = yaml_v3_classify(&p->ev, &num);
    if (cls == YAML_V3_NULL)
        return 0;
    if (cls == YAML_V3_INT && !num.is_unsigned) {
        *dst = (long)num.i;
        return 0;
    }
    if (cls == YAML_V3_FLOAT && num.f == num.f && num.f < 9223372036854775807.0) {
        *dst = num.f <= (double)LONG_MIN ? LONG_MIN : (long)num.f;
        return 0;
    }
    return type_error(p, &p->ev, "int");
}

/* Handles a value that should be a mapping decoded into a Go struct or map.
 * Returns 1 when it is one (the caller reads it), 0 when it was consumed
 * otherwise (null, alias, or recorded as a type error), -1 on failure. */
static int expect_mapping(rl_parser *p, const char *go_type)
{
    switch (p->ev.type) {
    case YAML_MAPPING_START_EVENT:
        return 1;
    case YAML_ALIAS_EVENT:
        return 0;
    case YAML_SCALAR_EVENT:
        if (yaml_v3_is_null(&p->ev))
            return 0;
        return type_error(p, &p->ev, go_type);
    default:
        return wrong_type(p, go_type);
    }
}

/* Which of the struct's field names a key is, or -1. A key that is itself a
 * collection cannot be decoded into the Go string the field name is read
 * into, which yaml.v3 reports. */
static int field_index(rl_parser *p, const char *const *names, size_t n_names)
{
    const yaml_event_t *ev = &p->ev;
    if (ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT)
        return type_error(p, ev, "string") < 0 ? -2 : -1;
    if (ev->type != YAML_SCALAR_EVENT)
        return -1;
    for (size_t i = 0; i < n_names; i++) {
        size_t len = strlen(names[i]);
        if (ev->data.scalar.length == len && memcmp(ev->data.scalar.value, names[i], len) == 0)
            return (int)i;
    }
    return -1;
}

/* ------------------------------------------------------------------------ */
/* The decoder: one step per event                                           */

/* Each event is handed to the frame on top of p->frames, the collection
 * being read; what a pull parser would keep on the C stack is kept there,
 * so judging can stop after any event and go on later (rl_judge_step).
 * Nodes nobody reads are passed over by skip_node; frames never nest more
 * than seven deep whatever the input's depth. */

static int push_frame(rl_parser *p, frame_kind kind)
{
    /* the grammar bounds the nesting: stream, top, legacy, list, result,
     * resourceRef, metadata */
    if (p->n_frames == RL_MAX_FRAMES)
        return buf_fail(p->err, PARSE_PREFIX "internal error: decoder nesting");
    p->frames[p->n_frames++] =
        (frame){.kind = kind, .key = -1, .mark = yaml_unmarshal_save(&p->terr)};
    return 0;
}

/* Opens a mapping decoded into a Go struct or map, whose keys are checked
 * for duplicates with tracker `level`. */
static int push_struct(rl_parser *p, frame_kind kind, int level)
{
    yaml_unmarshal_keys_reset(&p->keys[level]);
    return push_frame(p, kind);
}

static int frame_level(frame_kind kind)
{
    return kind == FR_RESULT ? 0 : 1;
}

/* ---- values ---- */

/* The legacy resourceRef.metadata.{name,namespace} are read here and
 * adopted when the struct ends. */
static void adopt_legacy(char **field, char **legacy)
{
    if (!*field) {
        *field = *legacy;
        *legacy = NULL;
    }
    free(*legacy);
    *legacy = NULL;
}

static int read_result_value(rl_parser *p, int field)
{
    rl_result *r = &p->cur;
    int rc;
    switch (field) {
    case 0: return read_string(p, &r->message, "string");
    case 1: return read_string(p, &r->severity, "fn.Severity");
    case 2:
        if ((rc = expect_mapping(p, "fn.ResourceRef")) <= 0)
            return rc;
        r->has_resource_ref = 1;
        return push_struct(p, FR_REF, 1);
    case 3:
        if ((rc = expect_mapping(p, "fn.Field")) <= 0)
            return rc;
        r->has_field = 1;
        return push_struct(p, FR_FIELD, 1);
    case 4:
        if ((rc = expect_mapping(p, "fn.File")) <= 0)
            return rc;
        r->has_file = 1;
        return push_struct(p, FR_FILE, 1);
    default:
        if ((rc = expect_mapping(p, "map[string]string")) <= 0)
            return rc;
        return push_struct(p, FR_TAGS, 1);
    }
}

static int read_ref_value(rl_parser *p, int field)
{
    rl_result *r = &p->cur;
    switch (field) {
    case 0: return read_string(p, &r->ref_api_version, "string");
    case 1: return read_string(p, &r->ref_kind, "string");
    case 2: return read_string(p, &r->ref_name, "string");
    case 3: return read_string(p, &r->ref_namespace, "string");
    default:
        /* the SDK ignores `metadata`, so nothing in it is an error */
        if (p->ev.type != YAML_MAPPING_START_EVENT)
            return skip_node(p);
        return push_frame(p, FR_META);
    }
}

static int read_field_value(rl_parser *p, int field)
{
    rl_result *r = &p->cur;
    switch (field) {
    case 0: return read_string(p, &r->field_path, "string");
    case 1: return read_value(p, &r->field_current_value, &r->field_current_type);
    default: return read_value(p, &r->field_proposed_value, &r->field_proposed_type);
    }
}

static int read_file_value(rl_parser *p, int field)
{
    rl_result *r = &p->cur;
    return field == 0 ? read_string(p, &r->file_path, "string") : read_index(p, &r->file_index);
}

static int add_tag(rl_parser *p, rl_result *r, char *key, char *value)
{
    if (r->n_tags == RL_MAX_TAGS) {
        free(key);
        free(value);
        return 0;
    }
    rl_tag *tags = realloc(r->tags, (r->n_tags + 1) * sizeof *tags);
    if (!tags) {
        free(key);
        free(value);
        return fail_oom(p);
    }
    r->tags = tags;
    r->tags[r->n_tags++] = (rl_tag){key, value};
    return 0;
}

/* A tags key: a string Go can decode it into, or NULL when it cannot be
 * (null, alias, or a collection, which is a type error). */
static int read_tag_key(rl_parser *p, char **key)
{
    *key = NULL;
    if (p->ev.type == YAML_ALIAS_EVENT || yaml_v3_is_null(&p->ev))
        return 0;
    if (p->ev.type != YAML_SCALAR_EVENT)
        return type_error(p, &p->ev, "string");
    *key = copy_scalar(&p->ev);
    return *key ? 0 : fail_oom(p);
}

/* A tags value (the current event); takes ownership of key. A null value
 * is stored as "", as Go does for map entries. */
static int read_tag_value(rl_parser *p, rl_result *r, char *key)
{
    if (p->ev.type != YAML_SCALAR_EVENT) {
        free(key);
        return p->ev.type == YAML_ALIAS_EVENT ? 0 : wrong_type(p, "string");
    }
    char *value = yaml_v3_is_null(&p->ev) ? copy_bytes("", 0) : copy_scalar(&p->ev);
    if (!value) {
        free(key);
        return fail_oom(p);
    }
    return add_tag(p, r, key, value);
}

static int store_result(rl_parser *p, rl_result *r)
{
    rl_list *rl = &p->list;
    if (rl->n_results == RL_MAX_RESULTS) {
        rl->n_results_omitted++;
        result_free(r);
        return 0;
    }
    if (rl->n_results == p->results_cap) {
        size_t cap = p->results_cap ? p->results_cap * 2 : 8;
        rl_result *grown = realloc(rl->results, cap * sizeof *grown);
        if (!grown) {
            result_free(r);
            return fail_oom(p);
        }
        rl->results = grown;
        p->results_cap = cap;
    }
    rl->results[rl->n_results++] = *r;
    *r = (rl_result){0};
    return 0;
}

/* ---- the ResourceList's top level ---- */

/* Counts items without looking inside them; the SDK requires each to be a
 * mapping. */
static int read_items(rl_parser *p)
{
    if (p->cut) {
        /* rl_scan counted them and cut them out: "items:" reads as null */
        const yaml_event_t *ev = &p->ev;
        if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.length != 0 ||
            ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE || ev->data.scalar.tag) {
            /* no reason given: judge_finish reads the list again without
             * the cut, or says it is not in rl_scan's subset (SCAN_ONLY) */
            p->cut_mismatch = 1;
            return -1;
        }
        p->top.items_kind = YAML_V3_KIND_SEQUENCE;
        p->top.n_items = p->cut->n_items;
        return 0;
    }
    p->top.items_kind = yaml_v3_kind_of(&p->ev);
    if (p->ev.type != YAML_SEQUENCE_START_EVENT)
        return skip_node(p);
    return push_frame(p, FR_ITEMS);
}

static int on_item(rl_parser *p)
{
    if (p->ev.type == YAML_MAPPING_START_EVENT)
        p->top.n_items++;
    else if (!p->top.bad_item_kind)
        p->top.bad_item_kind = yaml_v3_kind_of(&p->ev);
    return skip_node(p);
}

/* kind and apiVersion: kept only when they are string scalars, as the SDK's
 * GetNestedString reads them (anything else reads as ""). */
static int read_top_string(rl_parser *p, char **dst, size_t *len)
{
    if (yaml_v3_is_str(&p->ev)) {
        if (!(*dst = copy_scalar(&p->ev)))
            return fail_oom(p);
        if (len)
            *len = p->ev.data.scalar.length;
    }
    return skip_node(p);
}

static int top_key_of(const yaml_event_t *ev)
{
    static const char *const names[] = {"apiVersion", "kind", "items", "functionConfig", "results"};
    for (int i = 0; i < 5; i++)
        if (key_is(ev, names[i]))
            return i;
    return TOP_OTHER;
}

/* Results as a list (fn.Results), or the older `results: {items: [...]}`. */
static int read_results(rl_parser *p)
{
    p->top.results_kind = yaml_v3_kind_of(&p->ev);
    if (p->ev.type == YAML_SEQUENCE_START_EVENT)
        return push_frame(p, FR_RESULT_LIST);
    if (p->ev.type == YAML_MAPPING_START_EVENT)
        return push_frame(p, FR_LEGACY);
    return skip_node(p);
}

static int read_top_value(rl_parser *p, int key)
{
    switch (key) {
    case TOP_API_VERSION: return read_top_string(p, &p->top.api_version, NULL);
    case TOP_KIND: return read_top_string(p, &p->top.kind, &p->top.kind_len);
    case TOP_ITEMS: return read_items(p);
    case TOP_FUNCTION_CONFIG:
        p->top.function_config_kind = yaml_v3_kind_of(&p->ev);
        return skip_node(p);
    case TOP_RESULTS: return read_results(p);
    default: return skip_node(p);
    }
}

/* A key of the first document's mapping. The SDK looks keys up with the
 * first match winning, so later duplicates of a known key are skipped. */
static int top_key(rl_parser *p, frame *f)
{
    int key = top_key_of(&p->ev);
    if (key != TOP_OTHER) {
        unsigned bit = 1u << key;
        key = p->top_seen & bit ? TOP_OTHER : key;
        p->top_seen |= bit;
    }
    f->key = key;
    return 0;
}

/* A document's root node. Every document is parsed (a syntax error
 * anywhere fails the whole input, as in Go), but only the first is read in
 * detail: with more than one, the answer is an error. */
static int on_document_root(rl_parser *p)
{
    p->top.n_docs++;
    int kind = yaml_v3_kind_of(&p->ev);
    if (kind != YAML_V3_KIND_MAPPING && !p->top.first_bad_doc_kind)
        p->top.first_bad_doc_kind = kind;
    if (kind == YAML_V3_KIND_MAPPING && p->top.n_docs == 1)
        return push_frame(p, FR_TOP);
    return skip_node(p);
}

static int on_stream_event(rl_parser *p)
{
    switch (p->ev.type) {
    case YAML_STREAM_END_EVENT:
        p->done = 1;
        return 0;
    case YAML_STREAM_START_EVENT:
    case YAML_DOCUMENT_START_EVENT:
    case YAML_DOCUMENT_END_EVENT:
        return 0;
    default:
        return on_document_root(p);
    }
}

/* ---- mappings: keys, values, ends ---- */

/* Which struct field names a frame's keys are matched against. */
static const char *const result_fields[] = {
    "message", "severity", "resourceRef", "field", "file", "tags",
};
static const char *const ref_fields[] = {"apiVersion", "kind", "name", "namespace", "metadata"};
static const char *const field_fields[] = {"path", "currentValue", "proposedValue"};
static const char *const file_fields[] = {"path", "index"};

/* Notes the current key for the duplicate check of tracker `level`. */
static int track_key(rl_parser *p, int level)
{
    size_t line = src_line(p, p->ev.start_mark.line) + 1;
    return yaml_unmarshal_keys_add(&p->keys[level], &p->ev, line) < 0 ? fail_oom(p) : 0;
}

static int struct_key(rl_parser *p, frame *f, const char *const *names, size_t n_names)
{
    if (track_key(p, frame_level(f->kind)) < 0)
        return -1;
    f->key = field_index(p, names, n_names);
    return f->key == -2 ? -1 : 0;
}

/* The current event is a key of frame f's mapping: note what its value is
 * for. A collection key is then skipped, and the next node is the value. */
static int on_key(rl_parser *p, frame *f)
{
    int rc = 0;
    switch (f->kind) {
    case FR_TOP: rc = top_key(p, f); break;
    case FR_LEGACY:
        f->key = !f->seen && key_is(&p->ev, "items");
        break;
    case FR_RESULT: rc = struct_key(p, f, result_fields, 6); break;
    case FR_REF: rc = struct_key(p, f, ref_fields, 5); break;
    case FR_FIELD: rc = struct_key(p, f, field_fields, 3); break;
    case FR_FILE: rc = struct_key(p, f, file_fields, 2); break;
    case FR_META:
        f->meta_dst = key_is(&p->ev, "name") ? &p->legacy_name
                    : key_is(&p->ev, "namespace") ? &p->legacy_namespace : NULL;
        break;
    case FR_TAGS:
        if (track_key(p, 1) < 0)
            return -1;
        rc = read_tag_key(p, &f->tag_key);
        break;
    default:
        break;
    }
    if (rc < 0)
        return -1;
    f->want_value = 1;
    return skip_node(p);
}

/* The current event is the value for the key frame f noted. */
static int on_value(rl_parser *p, frame *f)
{
    f->want_value = 0;
    char *key;
    switch (f->kind) {
    case FR_TOP: return read_top_value(p, f->key);
    case FR_LEGACY:
        if (!f->key)
            return skip_node(p);
        f->seen = 1;
        p->top.legacy_items_kind = yaml_v3_kind_of(&p->ev);
        return p->ev.type == YAML_SEQUENCE_START_EVENT ? push_frame(p, FR_RESULT_LIST)
                                                       : skip_node(p);
    case FR_META:
        if (f->meta_dst && p->ev.type == YAML_SCALAR_EVENT)
            return read_string(p, f->meta_dst, "string");
        return skip_node(p);
    case FR_TAGS:
        key = f->tag_key;
        f->tag_key = NULL;
        return key ? read_tag_value(p, &p->cur, key) : skip_node(p);
    default:
        break;
    }
    if (f->key < 0)
        return skip_node(p);
    switch (f->kind) {
    case FR_RESULT: return read_result_value(p, f->key);
    case FR_REF: return read_ref_value(p, f->key);
    case FR_FIELD: return read_field_value(p, f->key);
    default: return read_file_value(p, f->key);
    }
}

/* Frame f's collection has ended: pop it and finish what it decoded.
 * yaml.v3 checks a struct's keys for duplicates once it has read them all;
 * a result with duplicate keys is not kept. */
static int on_end(rl_parser *p)
{
    frame f = p->frames[--p->n_frames];
    int dup = 0;
    switch (f.kind) {
    case FR_RESULT:
    case FR_REF:
    case FR_FIELD:
    case FR_FILE:
    case FR_TAGS:
        dup = check_duplicates(p, &p->keys[frame_level(f.kind)], f.mark);
        break;
    default:
        break;
    }
    if (f.kind == FR_REF) {
        adopt_legacy(&p->cur.ref_name, &p->legacy_name);
        adopt_legacy(&p->cur.ref_namespace, &p->legacy_namespace);
    }
    if (dup < 0)
        return -1;
    if (f.kind != FR_RESULT)
        return 0;
    if (dup) {
        result_free(&p->cur);
        return 0;
    }
    return store_result(p, &p->cur);
}

/* An entry of a results list. A null element becomes a nil *Result in Go
 * (which then crashes the wrapper when printed); it is skipped here. */
static int on_result_entry(rl_parser *p)
{
    switch (p->ev.type) {
    case YAML_MAPPING_START_EVENT:
        p->cur = (rl_result){0};
        return push_struct(p, FR_RESULT, 0);
    case YAML_ALIAS_EVENT:
        return 0;
    default:
        return yaml_v3_is_null(&p->ev) ? 0 : wrong_type(p, "fn.Result");
    }
}

/* Hands the current event to the frame it belongs to. */
static int on_event(rl_parser *p)
{
    if (p->skipping) {
        if (p->depth == p->skip_to)
            p->skipping = 0;   /* the skipped node's end */
        return 0;
    }
    frame *f = &p->frames[p->n_frames - 1];
    yaml_event_type_t type = p->ev.type;
    switch (f->kind) {
    case FR_STREAM:
        return on_stream_event(p);
    case FR_ITEMS:
        return type == YAML_SEQUENCE_END_EVENT ? on_end(p) : on_item(p);
    case FR_RESULT_LIST:
        return type == YAML_SEQUENCE_END_EVENT ? on_end(p) : on_result_entry(p);
    default:   /* mappings */
        if (f->want_value)
            return on_value(p, f);
        return type == YAML_MAPPING_END_EVENT ? on_end(p) : on_key(p, f);
    }
}

/* ------------------------------------------------------------------------ */
/* Verdict (rl_errors.c) and the end of a pass                               */

static int judge(rl_parser *p)
{
    return rl_errors_verdict(&p->top, &p->terr, p->err);
}


/* Moves what was learnt into the list handed to the caller. */
static void finish_list(rl_parser *p)
{
    p->list.kind = p->top.kind;
    p->list.api_version = p->top.api_version;
    p->top.kind = p->top.api_version = NULL;
    p->list.n_items = p->top.n_items;
    p->list.has_function_config = p->top.function_config_kind == YAML_V3_KIND_MAPPING;
}

static void parser_free(rl_parser *p)
{
    if (!p)
        return;
    if (p->have_ev)
        yaml_event_delete(&p->ev);
    yaml_parser_delete(&p->yaml);
    strset_free(&p->anchors);
    yaml_unmarshal_errors_free(&p->terr);
    yaml_unmarshal_keys_free(&p->keys[0]);
    yaml_unmarshal_keys_free(&p->keys[1]);
    for (size_t i = 0; i < p->n_frames; i++)
        free(p->frames[i].tag_key);
    result_free(&p->cur);
    free(p->legacy_name);
    free(p->legacy_namespace);
    free(p->top.kind);
    free(p->top.api_version);
    rl_free(&p->list);
    free(p);
}

static int source_read(void *data, unsigned char *buffer, size_t size, size_t *size_read)
{
    rl_source *src = data;
    int i = src->left[0] ? 0 : 1;
    size_t n = src->left[i] < size ? src->left[i] : size;
    if (n)
        memcpy(buffer, src->piece[i], n);
    src->piece[i] += n;
    src->left[i] -= n;
    src->given += n;
    *size_read = n;
    return 1;
}

/* A parser for the input, or with a cut, for the input without its items.
 * NULL when out of memory. */
static rl_parser *parser_new(const char *data, size_t len, const rl_items_cut *cut)
{
    rl_parser *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    if (!yaml_parser_initialize(&p->yaml)) {
        free(p);
        return NULL;
    }
    p->cut = cut;
    const unsigned char *bytes = (const unsigned char *)(data ? data : "");
    p->src = (rl_source){{bytes, bytes}, {data ? len : 0, 0}, 0};
    if (cut) {
        p->src.left[0] = cut->begin;
        p->src.piece[1] = bytes + cut->end;
        p->src.left[1] = len - cut->end;
    }
    yaml_parser_set_input(&p->yaml, source_read, &p->src);
    p->frames[0] = (frame){.kind = FR_STREAM, .key = -1};
    p->n_frames = 1;
    return p;
}

/* Reads events until the stream ends (0), `budget` events or about
 * RL_STEP_BYTES of input have gone by (1), or the input fails (-1). */
static int parser_run(rl_parser *p, size_t budget)
{
    size_t given_at_start = p->src.given;
    for (size_t n = 0; n < budget; n++) {
        if (pull(p) < 0 || on_event(p) < 0)
            return -1;
        if (p->done)
            return 0;
        if (p->src.given - given_at_start >= RL_STEP_BYTES)
            return 1;
    }
    return 1;
}

/* ------------------------------------------------------------------------ */
/* Judging in steps                                                          */

struct rl_judge {
    const char *data;
    size_t len;
    rl_parse_mode mode;
    rl_items_cut cut;
    rl_parser *p;       /* the current attempt */
    int result;         /* once finished: what rl_parse_with returns */
    int finished;
};

rl_judge *rl_judge_new(const char *data, size_t len, rl_parse_mode mode)
{
    rl_judge *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    *j = (rl_judge){.data = data, .len = len, .mode = mode};
    /* The items scan runs at once: a few bytes per nanosecond, 1.1 ms for
     * a 5 MiB list, and bounded by the message limit. */
    int use_cut = mode != RL_PARSE_LIBYAML && data && rl_scan_items(data, len, &j->cut);
    if (!use_cut && mode == RL_PARSE_SCAN_ONLY) {
        j->finished = 1;
        j->result = -2;
        return j;
    }
    j->p = parser_new(data, len, use_cut ? &j->cut : NULL);
    if (!j->p) {
        free(j);
        return NULL;
    }
    return j;
}

/* A finished attempt: the verdict, or a retry without the cut when the cut
 * document was not what the scan promised. Returns 1 when retrying. */
static int judge_finish(rl_judge *j, int rc, rl_list *out, buf *err)
{
    rl_parser *p = j->p;
    if (rc == 0)
        rc = judge(p);
    if (rc == 0) {
        finish_list(p);
        *out = p->list;
        p->list = (rl_list){0};
    }
    int mismatch = p->cut_mismatch;
    parser_free(p);
    j->p = NULL;
    if (mismatch && j->mode != RL_PARSE_SCAN_ONLY) {
        j->p = parser_new(j->data, j->len, NULL);
        if (j->p)
            return 1;
        rc = rl_errors_oom(err);
    } else if (mismatch) {
        buf_append_str(err, PARSE_PREFIX "items cut mismatch");
        rc = -2;
    }
    j->finished = 1;
    j->result = rc < 0 ? rc : 0;
    return 0;
}

int rl_judge_step(rl_judge *j, size_t budget, rl_list *out, buf *err)
{
    *out = (rl_list){0};
    if (j->finished)
        return j->result;   /* rl_judge_new found nothing to do (SCAN_ONLY) */
    j->p->err = err;
    int rc = parser_run(j->p, budget ? budget : 1);
    if (rc > 0 || judge_finish(j, rc, out, err) > 0)
        return 1;
    return j->result;
}

void rl_judge_free(rl_judge *j)
{
    if (!j)
        return;
    parser_free(j->p);
    free(j);
}

int rl_parse_with(const char *data, size_t len, rl_parse_mode mode, rl_list *out, buf *err)
{
    *out = (rl_list){0};
    rl_judge *j = rl_judge_new(data, len, mode);
    if (!j)
        return rl_errors_oom(err);
    int rc;
    while ((rc = rl_judge_step(j, SIZE_MAX, out, err)) == 1)
        continue;
    rl_judge_free(j);
    return rc;
}

int rl_parse(const char *data, size_t len, rl_list *out, buf *err)
{
    return rl_parse_with(data, len, RL_PARSE_AUTO, out, err);
}

void rl_free(rl_list *rl)
{
    if (!rl)
        return;
    free(rl->api_version);
    free(rl->kind);
    for (size_t i = 0; i < rl->n_results; i++)
        result_free(&rl->results[i]);
    free(rl->results);
    *rl = (rl_list){0};
}
