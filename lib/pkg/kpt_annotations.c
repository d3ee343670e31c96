/* kpt_annotations: kpt's path/index annotations on each object; see
 * kpt_annotations.h.
 *
 * How: plan_object finds where metadata and annotations are (or are not)
 * and decides what to write (doc_plan); emit_object then copies the
 * object's events, splicing new annotation events in or replacing values
 * of the reader's keys. */
#include "pkg/kpt_annotations.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char PATH_KEY[] = KPT_PATH_KEY;
static const char INDEX_KEY[] = KPT_INDEX_KEY;
static const char LEGACY_PATH_KEY[] = KPT_LEGACY_PATH_KEY;
static const char LEGACY_INDEX_KEY[] = KPT_LEGACY_INDEX_KEY;

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

typedef struct annotation {
    const char *key;
    const char *value;
} annotation;

/* Where an object's annotations go and what they become. */
typedef struct doc_plan {
    size_t meta;              /* index of metadata's value, or EVENT_NONE */
    size_t annos;             /* index of metadata.annotations' value, or EVENT_NONE */
    annotation wanted[4];     /* reader annotations, sorted by key */
    size_t n_wanted;
    annotation extra[N_MIRRORED + 4]; /* pairs to append to the annotations */
    size_t n_extra;
    char *copies[N_MIRRORED]; /* owned values among extra (mirrored ones) */
    size_t n_copies;
} doc_plan;

/* ---- planning ------------------------------------------------------------- */

static void plan_free(doc_plan *plan)
{
    for (size_t i = 0; i < plan->n_copies; i++)
        free(plan->copies[i]);
    plan->n_copies = 0;
}

static void plan_wanted(doc_plan *plan, const char *rel_path, const char *index_text)
{
    size_t n = 0;
    if (index_text)
        plan->wanted[n++] = (annotation){ LEGACY_INDEX_KEY, index_text };
    if (rel_path)
        plan->wanted[n++] = (annotation){ LEGACY_PATH_KEY, rel_path };
    if (index_text)
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
        if (event_scalar_is(key, plan->wanted[i].key))
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

/* Value event of annotation `key` in the existing annotations, or
 * EVENT_NONE. */
static size_t annotation_value(const event_list *list, const doc_plan *plan, const char *key)
{
    return plan->annos == EVENT_NONE ||
                   list->events[plan->annos].type != YAML_MAPPING_START_EVENT
               ? EVENT_NONE
               : event_list_find_key(list, plan->annos, key);
}

/* Queues `key: <copy of source>` when source is a non-empty string and key
 * is absent (kyaml treats an empty value as absent; a present empty key is
 * left alone here). */
static int plan_mirror(rl_writer *w, const event_list *list, doc_plan *plan, const char *key,
                       size_t source)
{
    if (source == EVENT_NONE || annotation_value(list, plan, key) != EVENT_NONE)
        return 0;
    const yaml_event_t *ev = &list->events[source];
    if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.length == 0)
        return 0;
    char *copy = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
    if (!copy)
        return rl_writer_fail(w, "%s: out of memory", w->name);
    plan->copies[plan->n_copies++] = copy;
    plan->extra[plan->n_extra++] = (annotation){ key, copy };
    return 0;
}

/* Fills plan->extra: mirrored legacy/internal pairs first, then the reader
 * annotations the object does not have yet, the order kyaml adds them in. */
static int plan_extra(rl_writer *w, const event_list *list, doc_plan *plan)
{
    for (size_t i = 0; i < N_MIRRORED; i++) {
        const char *legacy = MIRRORED[i].legacy, *internal = MIRRORED[i].internal;
        if (is_wanted_key(plan, legacy) || is_wanted_key(plan, internal))
            continue;
        size_t legacy_value = annotation_value(list, plan, legacy);
        size_t internal_value = annotation_value(list, plan, internal);
        if (plan_mirror(w, list, plan, internal, legacy_value) < 0 ||
            plan_mirror(w, list, plan, legacy, internal_value) < 0)
            return -1;
    }
    for (size_t i = 0; i < plan->n_wanted; i++)
        if (annotation_value(list, plan, plan->wanted[i].key) == EVENT_NONE)
            plan->extra[plan->n_extra++] = plan->wanted[i];
    return 0;
}

static int plan_object(rl_writer *w, const event_list *list, size_t root, const char *rel_path,
                       const char *index_text, doc_plan *plan)
{
    *plan = (doc_plan){ .meta = event_list_find_key(list, root, "metadata"),
                        .annos = EVENT_NONE };
    plan_wanted(plan, rel_path, index_text);
    if (plan->meta != EVENT_NONE && !event_is_null(&list->events[plan->meta])) {
        if (list->events[plan->meta].type != YAML_MAPPING_START_EVENT)
            return rl_writer_fail_doc(w, "metadata is %s, not a mapping",
                                      event_node_kind(&list->events[plan->meta]));
        plan->annos = event_list_find_key(list, plan->meta, "annotations");
        const yaml_event_t *annos =
            plan->annos == EVENT_NONE ? NULL : &list->events[plan->annos];
        if (annos && !event_is_null(annos) && annos->type != YAML_MAPPING_START_EVENT)
            return rl_writer_fail_doc(w, "metadata.annotations is %s, not a mapping",
                                      event_node_kind(annos));
    }
    return plan_extra(w, list, plan);
}

/* ---- emitting --------------------------------------------------------------- */

typedef int (*plan_emitter)(rl_writer *w, const doc_plan *plan);

static int emit_extra_pairs(rl_writer *w, const doc_plan *plan)
{
    for (size_t i = 0; i < plan->n_extra; i++)
        if (rl_writer_emit_plain(w, plan->extra[i].key) < 0 ||
            rl_writer_emit_quoted(w, plan->extra[i].value) < 0)
            return -1;
    return 0;
}

static int emit_annotations_map(rl_writer *w, const doc_plan *plan)
{
    if (rl_writer_emit_new(w, YAML_MAPPING_START_EVENT) < 0 || emit_extra_pairs(w, plan) < 0)
        return -1;
    return rl_writer_emit_new(w, YAML_MAPPING_END_EVENT);
}

static int emit_annotations_entry(rl_writer *w, const doc_plan *plan)
{
    return rl_writer_emit_plain(w, "annotations") < 0 ? -1 : emit_annotations_map(w, plan);
}

static int emit_metadata_map(rl_writer *w, const doc_plan *plan)
{
    if (rl_writer_emit_new(w, YAML_MAPPING_START_EVENT) < 0 ||
        emit_annotations_entry(w, plan) < 0)
        return -1;
    return rl_writer_emit_new(w, YAML_MAPPING_END_EVENT);
}

static int emit_metadata_entry(rl_writer *w, const doc_plan *plan)
{
    return rl_writer_emit_plain(w, "metadata") < 0 ? -1 : emit_metadata_map(w, plan);
}

/* Copies events [from, to), emitting `what` just before event `at`. */
static int insert_before(rl_writer *w, event_list *list, size_t from, size_t at, size_t to,
                         plan_emitter what, const doc_plan *plan)
{
    if (rl_writer_copy(w, list, from, at) < 0 || what(w, plan) < 0)
        return -1;
    return rl_writer_copy(w, list, at, to);
}

/* Copies events [from, to), emitting `what` instead of the scalar at `at`. */
static int replace_scalar(rl_writer *w, event_list *list, size_t from, size_t at, size_t to,
                          plan_emitter what, const doc_plan *plan)
{
    if (rl_writer_copy(w, list, from, at) < 0)
        return -1;
    event_list_drop(list, at, at + 1);
    if (what(w, plan) < 0)
        return -1;
    return rl_writer_copy(w, list, at + 1, to);
}

/* Copies the pairs of the existing annotations mapping, events [at, close),
 * giving the reader's keys their new values. */
static int copy_annotation_pairs(rl_writer *w, event_list *list, size_t at, size_t close,
                                 const doc_plan *plan)
{
    while (at < close) {
        size_t value = event_list_node_end(list, at);
        size_t next = event_list_node_end(list, value);
        const char *replacement = wanted_value(plan, &list->events[at]);
        if (rl_writer_copy(w, list, at, value) < 0)
            return -1;
        if (replacement) {
            event_list_drop(list, value, next);
            if (rl_writer_emit_quoted(w, replacement) < 0)
                return -1;
        } else if (rl_writer_copy(w, list, value, next) < 0) {
            return -1;
        }
        at = next;
    }
    return 0;
}

/* Emits the object whose events are [root, end) with its annotations set. */
static int emit_object(rl_writer *w, event_list *list, size_t root, size_t end,
                       const doc_plan *plan)
{
    if (plan->meta == EVENT_NONE)
        return insert_before(w, list, root, end - 1, end, emit_metadata_entry, plan);
    if (event_is_null(&list->events[plan->meta]))
        return replace_scalar(w, list, root, plan->meta, end, emit_metadata_map, plan);
    if (plan->annos == EVENT_NONE)
        return insert_before(w, list, root, event_list_node_end(list, plan->meta) - 1, end,
                             emit_annotations_entry, plan);
    if (event_is_null(&list->events[plan->annos]))
        return replace_scalar(w, list, root, plan->annos, end, emit_annotations_map, plan);
    size_t close = event_list_node_end(list, plan->annos) - 1;
    if (rl_writer_copy(w, list, root, plan->annos + 1) < 0 ||
        copy_annotation_pairs(w, list, plan->annos + 1, close, plan) < 0 ||
        emit_extra_pairs(w, plan) < 0)
        return -1;
    return rl_writer_copy(w, list, close, end);
}

int kpt_annotations_emit_object(rl_writer *w, event_list *list, size_t root, size_t end,
                                const char *rel_path, size_t index)
{
    char index_text[24];
    snprintf(index_text, sizeof index_text, "%zu", index);
    doc_plan plan;
    int rc = plan_object(w, list, root, rel_path, index == KPT_NO_INDEX ? NULL : index_text,
                         &plan);
    if (rc == 0)
        rc = emit_object(w, list, root, end, &plan);
    plan_free(&plan);
    return rc;
}
