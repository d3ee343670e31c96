/* rl_rewrite: a ResourceList rewritten event by event; see rl_rewrite.h.
 *
 * The root mapping's entries alternate key and value; `at_key` says which
 * comes next, and flips each time a node at that level ends (a scalar or
 * an alias there, or a collection closing back to it). A dropped key is
 * not emitted, and its value is read through without being emitted. */
#include "pkg/rl_rewrite.h"

#include <stdlib.h>
#include <string.h>

#include "core/strset.h"
#include "krm/yaml_limits.h"
#include "krm/yaml_v3.h"
#include "pkg/rl_writer.h"

typedef struct rewriter {
    const rl_rewrite_opts *o;
    rl_writer w;
    buf *err;
    yaml_limits *limits;
    strset anchors;       /* name -> 1: defined in a dropped value; 0: kept (the last wins) */
    size_t depth;         /* collections open */
    size_t documents;
    int at_key;           /* in the root mapping, the next node is a key */
    int value_is_items;   /* the value about to come is items' */
    int items_seen;
    int skip_next;        /* the next node is a dropped value */
    size_t skipping;      /* > 0: inside a dropped collection, that many deep */
} rewriter;

static int fail_at(rewriter *r, const yaml_mark_t *at, const char *problem)
{
    return buf_fail_line(r->err, "line %zu: %s", at->line + 1, problem);
}

static const yaml_char_t *anchor_of(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return ev->data.scalar.anchor;
    case YAML_SEQUENCE_START_EVENT:
        return ev->data.sequence_start.anchor;
    case YAML_MAPPING_START_EVENT:
        return ev->data.mapping_start.anchor;
    default:
        return NULL;
    }
}

static int opens(const yaml_event_t *ev)
{
    return ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT;
}

static int closes(const yaml_event_t *ev)
{
    return ev->type == YAML_SEQUENCE_END_EVENT || ev->type == YAML_MAPPING_END_EVENT;
}

static int is_key(const yaml_event_t *ev, const char *key)
{
    size_t n = strlen(key);
    return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == n &&
           memcmp(ev->data.scalar.value, key, n) == 0;
}

static int dropped_key(const rewriter *r, const yaml_event_t *ev)
{
    for (const char *const *k = r->o->drop; k && *k; k++)
        if (is_key(ev, *k))
            return 1;
    return is_key(ev, "functionConfig") && r->o->config;   /* replaced */
}

/* Reads through a dropped value; its anchors are remembered as dropped. */
static int skip(rewriter *r, const yaml_event_t *ev)
{
    if (r->skip_next) {
        r->skip_next = 0;
        r->skipping = opens(ev) ? 1 : 0;
    } else if (opens(ev)) {
        r->skipping++;
    } else if (closes(ev)) {
        r->skipping--;
    }
    const yaml_char_t *anchor = anchor_of(ev);
    if (anchor && strset_put(&r->anchors, (const char *)anchor, 1) < 0)
        return fail_at(r, &ev->start_mark, "out of memory");
    if (!r->skipping)
        r->at_key = 1;
    return 0;
}

/* The functionConfig object's events, from o->config's first document. */
static int emit_config(rewriter *r)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return rl_writer_fail(&r->w, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)r->o->config, r->o->config_len);
    int rc = rl_writer_emit_plain(&r->w, "functionConfig");
    size_t depth = 0;
    int started = 0;
    while (rc == 0 && !(started && depth == 0)) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = rl_writer_fail(&r->w, "functionConfig: line %zu: %s",
                                p.problem_mark.line + 1, p.problem ? p.problem : "out of memory");
            break;
        }
        if (ev.type == YAML_STREAM_START_EVENT || ev.type == YAML_DOCUMENT_START_EVENT) {
            yaml_event_delete(&ev);
            continue;
        }
        if (ev.type == YAML_STREAM_END_EVENT || ev.type == YAML_DOCUMENT_END_EVENT) {
            yaml_event_delete(&ev);
            rc = rl_writer_fail(&r->w, "functionConfig: no object");
            break;
        }
        started = 1;
        depth += opens(&ev) ? 1 : closes(&ev) ? (size_t)-1 : 0;
        rc = rl_writer_emit(&r->w, &ev);
    }
    yaml_parser_delete(&p);
    return rc;
}

/* Before the root mapping closes: items when there were none, the config. */
static int finish_root(rewriter *r)
{
    int rc = 0;
    if (!r->items_seen)
        rc = rl_writer_emit_plain(&r->w, "items") < 0 ||
                     rl_writer_emit_new(&r->w, YAML_SEQUENCE_START_EVENT) < 0
                 ? -1
                 : rl_writer_emit_new(&r->w, YAML_SEQUENCE_END_EVENT);
    if (rc == 0 && r->o->config)
        rc = emit_config(r);
    return rc;
}

/* One node event of the document (takes *ev). */
static int node_event(rewriter *r, yaml_event_t *ev)
{
    if (ev->type == YAML_ALIAS_EVENT) {
        size_t dropped;
        if (strset_get(&r->anchors, (const char *)ev->data.alias.anchor, &dropped) && dropped)
            return fail_at(r, &ev->start_mark, "an alias to an anchor in a key left out");
    }
    const yaml_char_t *anchor = anchor_of(ev);
    if (anchor && strset_put(&r->anchors, (const char *)anchor, 0) < 0)
        return fail_at(r, &ev->start_mark, "out of memory");
    if (r->depth == 0 && ev->type != YAML_MAPPING_START_EVENT)
        return fail_at(r, &ev->start_mark, "not a mapping");
    int root_level = r->depth == 1;
    if (root_level && r->at_key && dropped_key(r, ev)) {
        r->skip_next = 1;
        r->at_key = 0;
        return 0;
    }
    if (root_level && r->at_key && is_key(ev, "items"))
        r->value_is_items = r->items_seen = 1;
    else if (root_level && !r->at_key && r->value_is_items && yaml_v3_is_null(ev)) {
        r->value_is_items = 0;
        r->at_key = 1;   /* items: null -> [] */
        return rl_writer_emit_new(&r->w, YAML_SEQUENCE_START_EVENT) < 0
                   ? -1
                   : rl_writer_emit_new(&r->w, YAML_SEQUENCE_END_EVENT);
    } else if (root_level && !r->at_key) {
        r->value_is_items = 0;
    }
    if (root_level && ev->type == YAML_MAPPING_END_EVENT && finish_root(r) < 0)
        return -1;
    if (opens(ev))
        r->depth++;
    else if (closes(ev))
        r->depth--;
    if ((root_level && !opens(ev) && !closes(ev)) || (closes(ev) && r->depth == 1))
        r->at_key = !r->at_key;
    if (opens(ev) && r->depth == 1)
        r->at_key = 1;   /* the root mapping opened */
    return rl_writer_emit(&r->w, ev);
}

static int event(rewriter *r, yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_STREAM_START_EVENT:
    case YAML_STREAM_END_EVENT:
        return 0;   /* the writer has its own */
    case YAML_DOCUMENT_START_EVENT:
        if (r->documents++)
            return fail_at(r, &ev->start_mark, "expected one YAML document, found more");
        return rl_writer_emit_new(&r->w, YAML_DOCUMENT_START_EVENT);
    case YAML_DOCUMENT_END_EVENT:
        return rl_writer_emit_new(&r->w, YAML_DOCUMENT_END_EVENT);
    default:
        break;
    }
    if (r->skip_next || r->skipping)
        return skip(r, ev);
    return node_event(r, ev);
}

static int parse_error(rewriter *r, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR || !p->problem)
        return rl_writer_fail(&r->w, "out of memory");
    return fail_at(r, &p->problem_mark, p->problem);
}

int rl_rewrite(const char *data, size_t len, const rl_rewrite_opts *o, buf *out, buf *err)
{
    rewriter r = { .o = o, .err = err };
    rl_writer_init(&r.w, out, err, "ResourceList");
    yaml_parser_t p;
    if (!(r.limits = malloc(sizeof *r.limits)) || !yaml_parser_initialize(&p)) {
        free(r.limits);
        return buf_fail_line(err, "out of memory");
    }
    yaml_limits_init(r.limits, len);
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    int rc = rl_writer_open_stream(&r.w);
    for (int end = 0; rc == 0 && !end;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            rc = parse_error(&r, &p);
            break;
        }
        const char *problem = yaml_limits_note(r.limits, &ev);
        end = ev.type == YAML_STREAM_END_EVENT;
        rc = problem ? fail_at(&r, &ev.start_mark, problem) : event(&r, &ev);
        yaml_event_delete(&ev);   /* nothing when the writer took it */
    }
    if (rc == 0 && r.documents != 1)
        rc = rl_writer_fail(&r.w, "no YAML document");
    rc = rl_writer_close(&r.w, rc);
    yaml_parser_delete(&p);
    yaml_limits_free(r.limits);
    free(r.limits);
    strset_free(&r.anchors);
    return rc;
}
