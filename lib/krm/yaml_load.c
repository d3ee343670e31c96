/* yaml_load: a document tree from libyaml's events, limits checked on
 * the way; see yaml_load.h.
 *
 * The tree is built as yaml_parser_load builds it: a node is added when
 * its first event arrives, so a collection's id precedes its children's,
 * and attached to the collection around it at once (a mapping's key waits
 * in the frame for its value). The stack of open collections is as deep
 * as yaml_limits lets the document nest. */
#include "krm/yaml_load.h"

#include <stdlib.h>
#include <string.h>

#include "core/strset.h"
#include "krm/yaml_limits.h"

typedef struct frame {
    int id;
    int key;        /* a mapping's key waiting for its value; 0: none */
} frame;

typedef struct loader {
    yaml_parser_t *p;
    yaml_document_t *doc;
    yaml_limits limits;
    strset anchors;                         /* name -> node id */
    frame open[YAML_MAX_DEPTH + 1];
    size_t depth;                           /* open collections */
} loader;

static int fail(loader *l, yaml_error_type_t type, const char *problem, yaml_mark_t mark)
{
    if (l->p->error == YAML_NO_ERROR) {
        l->p->error = type;
        l->p->problem = type == YAML_MEMORY_ERROR ? NULL : problem;
        l->p->problem_mark = mark;
        l->p->context = NULL;
    }
    return 0;
}

static int oom(loader *l, yaml_mark_t mark)
{
    return fail(l, YAML_MEMORY_ERROR, NULL, mark);
}

/* libyaml's rule: no tag or "!" means the default one. */
static yaml_char_t *tag_of(yaml_char_t *tag)
{
    return tag && strcmp((const char *)tag, "!") != 0 ? tag : NULL;
}

static yaml_node_t *node(const loader *l, int id)
{
    return l->doc->nodes.start + id - 1;
}

/* Puts node `id` into the collection around it. */
static int attach(loader *l, int id, yaml_mark_t mark)
{
    if (l->depth == 0)
        return 1;   /* the root */
    frame *f = &l->open[l->depth];
    if (node(l, f->id)->type == YAML_SEQUENCE_NODE)
        return yaml_document_append_sequence_item(l->doc, f->id, id) ? 1 : oom(l, mark);
    if (!f->key) {
        f->key = id;
        return 1;
    }
    int key = f->key;
    f->key = 0;
    return yaml_document_append_mapping_pair(l->doc, f->id, key, id) ? 1 : oom(l, mark);
}

/* A new node `id` (0: adding failed) from ev, with ev's anchor. */
static int added(loader *l, int id, const yaml_event_t *ev, const yaml_char_t *anchor)
{
    if (!id)
        return oom(l, ev->start_mark);
    node(l, id)->start_mark = ev->start_mark;
    node(l, id)->end_mark = ev->end_mark;
    if (anchor && strset_put(&l->anchors, (const char *)anchor, (size_t)id) < 0)
        return oom(l, ev->start_mark);
    return attach(l, id, ev->start_mark);
}

static int open_collection(loader *l, int id, const yaml_event_t *ev, const yaml_char_t *anchor)
{
    if (!added(l, id, ev, anchor))
        return 0;
    l->open[++l->depth] = (frame){ .id = id };
    return 1;
}

static int node_event(loader *l, yaml_event_t *ev)
{
    yaml_document_t *doc = l->doc;
    size_t id;
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return added(l,
                     yaml_document_add_scalar(doc, tag_of(ev->data.scalar.tag),
                                              ev->data.scalar.value, (int)ev->data.scalar.length,
                                              ev->data.scalar.style),
                     ev, ev->data.scalar.anchor);
    case YAML_SEQUENCE_START_EVENT:
        return open_collection(l,
                               yaml_document_add_sequence(doc, tag_of(ev->data.sequence_start.tag),
                                                          ev->data.sequence_start.style),
                               ev, ev->data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT:
        return open_collection(l,
                               yaml_document_add_mapping(doc, tag_of(ev->data.mapping_start.tag),
                                                         ev->data.mapping_start.style),
                               ev, ev->data.mapping_start.anchor);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        node(l, l->open[l->depth].id)->end_mark = ev->end_mark;
        l->depth--;
        return 1;
    case YAML_ALIAS_EVENT:
        if (!strset_get(&l->anchors, (const char *)ev->data.alias.anchor, &id))
            return fail(l, YAML_COMPOSER_ERROR, "found undefined alias", ev->start_mark);
        return attach(l, (int)id, ev->start_mark);
    default:
        return fail(l, YAML_COMPOSER_ERROR, "unexpected event", ev->start_mark);
    }
}

/* Reads the next event into *ev, checking the limits; 0 on failure. */
static int next_event(loader *l, yaml_event_t *ev)
{
    if (!yaml_parser_parse(l->p, ev))
        return 0;
    const char *problem = yaml_limits_note(&l->limits, ev);
    if (!problem)
        return 1;
    yaml_mark_t mark = ev->start_mark;
    yaml_event_delete(ev);
    if (strcmp(problem, "out of memory") == 0)
        return oom(l, mark);
    return fail(l, YAML_COMPOSER_ERROR, problem, mark);
}

static int load_nodes(loader *l)
{
    yaml_event_t ev;
    do {
        if (!next_event(l, &ev))
            return 0;
        int ok = node_event(l, &ev);
        yaml_event_delete(&ev);
        if (!ok)
            return 0;
    } while (l->depth > 0);
    return 1;
}

static int load_document(loader *l, yaml_event_t *start)
{
    yaml_document_t *doc = l->doc;
    int ok = yaml_document_initialize(doc, start->data.document_start.version_directive,
                                      start->data.document_start.tag_directives.start,
                                      start->data.document_start.tag_directives.end,
                                      start->data.document_start.implicit, 0);
    yaml_mark_t mark = start->start_mark;
    yaml_event_delete(start);
    if (!ok)
        return oom(l, mark);
    doc->start_mark = mark;
    if (!load_nodes(l))
        return 0;
    yaml_event_t end;
    if (!next_event(l, &end))
        return 0;
    doc->end_implicit = end.data.document_end.implicit;
    doc->end_mark = end.end_mark;
    yaml_event_delete(&end);
    return 1;
}

int yaml_load(yaml_parser_t *p, size_t input_len, yaml_document_t *doc)
{
    memset(doc, 0, sizeof *doc);
    loader *l = malloc(sizeof *l);   /* the limits and the stack: some 32 KiB */
    if (!l) {
        p->error = YAML_MEMORY_ERROR;
        return 0;
    }
    memset(l, 0, offsetof(loader, open));
    l->p = p;
    l->doc = doc;
    l->depth = 0;
    yaml_limits_init(&l->limits, input_len);
    int ok = 1;
    yaml_event_t ev;
    if (!p->stream_start_produced) {
        ok = next_event(l, &ev);
        if (ok)
            yaml_event_delete(&ev);   /* STREAM-START */
    }
    if (ok && !p->stream_end_produced) {
        ok = next_event(l, &ev);
        if (ok && ev.type == YAML_DOCUMENT_START_EVENT)
            ok = load_document(l, &ev);
        else if (ok)
            yaml_event_delete(&ev);   /* STREAM-END */
    }
    yaml_limits_free(&l->limits);
    strset_free(&l->anchors);
    free(l);
    if (!ok) {
        yaml_document_delete(doc);
        memset(doc, 0, sizeof *doc);
    }
    return ok;
}
