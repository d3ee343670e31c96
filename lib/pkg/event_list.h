/* event_list: one YAML input held as the list of libyaml events it parses
 * to, with the few look-ups rl_input needs: where a node ends, the value
 * under a mapping key, what a scalar says.
 *
 * Why events and not libyaml's document tree: handing the same events back
 * to an emitter (rl_writer.h) keeps every scalar's style and tag and every
 * collection's block or flow style, so an object reaches the ResourceList
 * as it was written, and new events (kpt's annotations) can be spliced in
 * at an index. The list is flat and every walk over it iterative, so input
 * depth costs heap, not stack; nesting and aliases past the limits of
 * lib/krm/yaml_limits.h are refused as soon as libyaml reaches them.
 *
 * Ownership: an event handed to the emitter or dropped is zeroed
 * (YAML_NO_EVENT), so event_list_free is safe at any point. */
#ifndef KRM_RC_EVENT_LIST_H
#define KRM_RC_EVENT_LIST_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "core/buf.h"

#define EVENT_NONE SIZE_MAX /* "no such event" for event indexes */

/* Every event of one parsed input, in order: STREAM_START, then per
 * document DOCUMENT_START, its root node, DOCUMENT_END; STREAM_END. */
typedef struct event_list {
    yaml_event_t *events;
    size_t count;
    size_t cap;
} event_list;

/* Parses data[0..len) into *list (which must be empty). Returns 0, or -1
 * with *list empty and a one-line reason in err that starts with `name`
 * and says where ("NAME: YAML error at line 4, column 2: ..."). */
int event_list_parse(const char *data, size_t len, const char *name, event_list *list,
                     buf *err);
void event_list_free(event_list *list);

/* Deletes events [from, to) in place: they are not to be emitted. */
void event_list_drop(event_list *list, size_t from, size_t to);

/* Index just past the node that starts at `at` (a scalar, an alias, or a
 * whole collection). */
size_t event_list_node_end(const event_list *list, size_t at);

/* Index of the value stored under scalar key `key` in the mapping that
 * starts at `map`, or EVENT_NONE. The first occurrence wins. */
size_t event_list_find_key(const event_list *list, size_t map, const char *key);

/* ev is a scalar whose text is exactly `text` (tag and style aside). */
int event_scalar_is(const yaml_event_t *ev, const char *text);

/* A null node: an untagged plain "", "~" or "null" (YAML 1.1/1.2 core
 * spellings), or anything tagged !!null. */
int event_is_null(const yaml_event_t *ev);

/* "a sequence", "a mapping", "an alias" or "a scalar", for messages about
 * a node found where another kind was expected. */
const char *event_node_kind(const yaml_event_t *ev);

#endif
