/* yaml_limits: every limit a YAML document we read must keep, checked
 * event by event while libyaml parses it, so a document past a limit is
 * refused before anything more is built from it.
 *
 * Why while parsing: a limit checked on a finished tree comes too late.
 * A Kptfile of "a:" nested 2,000,000 deep took 800 MiB and 3 s to load
 * before its depth was looked at; an input object 500,000 deep reached the
 * function although 1000 levels is the documented limit. Counted here, the
 * same Kptfile is refused at its 1001st level, after a few KiB.
 *
 * The limits:
 * - nesting: YAML_MAX_DEPTH collections of any style (yaml.v3 allows
 *   10,000; the deepest real objects we measured nest 37), and of them
 *   YAML_MAX_FLOW_DEPTH flow ones (yaml_depth.h: libyaml's cost per token
 *   grows with the flow depth).
 * - aliases: an alias stands for a copy of the node its anchor names, and
 *   a reader that follows it (a function's yaml.v3, kyaml's, ours) pays
 *   for that copy. Ten aliases of ten aliases ... ("billion laughs") make
 *   a few hundred bytes stand for gigabytes. So the copies the aliases of
 *   one document stand for may together weigh at most as much as the
 *   document's own text, or YAML_MIN_ALIAS_BUDGET for a small document:
 *   a node weighs 1, plus its text for a scalar, plus what it holds. An
 *   alias inside the node its anchor names (a cycle) is refused: yaml.v3
 *   refuses it too ("anchor 'a' value contains itself").
 *
 * The size of the tree itself follows from the size of the text, which
 * every reader bounds before parsing (files, messages). */
#ifndef KRM_YAML_LIMITS_H
#define KRM_YAML_LIMITS_H

#include <stddef.h>
#include <yaml.h>

#include "core/strset.h"
#include "krm/yaml_depth.h"

#define YAML_MAX_DEPTH 1000
#define YAML_MIN_ALIAS_BUDGET ((size_t)1 << 20)
/* What the messages say, after where it happened. */
#define YAML_DEPTH_PROBLEM "collections nested more than " YAML_DEPTH_STR(YAML_MAX_DEPTH) " deep"
#define YAML_CYCLE_PROBLEM "alias inside the node its anchor names"
#define YAML_ALIAS_PROBLEM \
    "aliases expand to more than the document's own size (or 1 MiB for a smaller one)"

typedef struct yaml_limit_frame {
    size_t weight;   /* of the collection so far */
    char *anchor;    /* its anchor, or NULL */
} yaml_limit_frame;

typedef struct yaml_limits {
    yaml_flow_depth flow;
    size_t depth;                               /* collections open */
    yaml_limit_frame open[YAML_MAX_DEPTH + 1];  /* [0]: the document */
    strset anchors;                             /* name -> weight; SIZE_MAX while open */
    size_t alias_weight, alias_budget;
} yaml_limits;

/* Starts counting for a text of input_len bytes (sets the alias budget).
 * A yaml_limits is large (about 16 KiB): allocate it, or keep one. */
void yaml_limits_init(yaml_limits *l, size_t input_len);

/* Counts ev (feed every event in order). Returns NULL, or the problem
 * (static text) when ev goes past a limit: its start_mark says where. Anchors are forgotten at each document start, as YAML says.
 * "out of memory" when the anchor table cannot grow. */
const char *yaml_limits_note(yaml_limits *l, const yaml_event_t *ev);

void yaml_limits_free(yaml_limits *l);

#endif
