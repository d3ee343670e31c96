/* yaml_limits: nesting and alias limits, event by event; see yaml_limits.h. */
#include "krm/yaml_limits.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define OPEN SIZE_MAX   /* an anchor whose node has not ended yet */

static size_t add_sat(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

void yaml_limits_init(yaml_limits *l, size_t input_len)
{
    memset(l, 0, offsetof(yaml_limits, open));
    l->open[0] = (yaml_limit_frame){ 0 };
    l->anchors = (strset){ 0 };
    l->alias_weight = 0;
    l->alias_budget = input_len > YAML_MIN_ALIAS_BUDGET ? input_len : YAML_MIN_ALIAS_BUDGET;
}

static void forget_anchors(yaml_limits *l)
{
    for (size_t i = 1; i <= l->depth && i <= YAML_MAX_DEPTH; i++) {
        free(l->open[i].anchor);
        l->open[i].anchor = NULL;
    }
    strset_free(&l->anchors);
}

void yaml_limits_free(yaml_limits *l)
{
    forget_anchors(l);
}

/* A node of `weight` ended: it counts in the collection around it, and
 * its anchor (when it has one) now names that weight. */
static const char *node_done(yaml_limits *l, const yaml_char_t *anchor, size_t weight)
{
    l->open[l->depth].weight = add_sat(l->open[l->depth].weight, weight);
    if (anchor && strset_put(&l->anchors, (const char *)anchor, weight) < 0)
        return "out of memory";
    return NULL;
}

static const char *open_collection(yaml_limits *l, const yaml_event_t *ev,
                                   const yaml_char_t *anchor)
{
    if (yaml_flow_depth_note(&l->flow, ev) < 0)
        return YAML_FLOW_DEPTH_PROBLEM;
    if (l->depth == YAML_MAX_DEPTH)
        return YAML_DEPTH_PROBLEM;
    char *copy = NULL;
    if (anchor && (!(copy = strdup((const char *)anchor)) ||
                   strset_put(&l->anchors, (const char *)anchor, OPEN) < 0)) {
        free(copy);
        return "out of memory";
    }
    l->open[++l->depth] = (yaml_limit_frame){ .weight = 1, .anchor = copy };
    return NULL;
}

static const char *close_collection(yaml_limits *l, const yaml_event_t *ev)
{
    yaml_flow_depth_note(&l->flow, ev);
    if (l->depth == 0)
        return NULL;   /* libyaml pairs them; nothing to undo */
    yaml_limit_frame done = l->open[l->depth--];
    const char *problem = node_done(l, (const yaml_char_t *)done.anchor, done.weight);
    free(done.anchor);
    return problem;
}

static const char *alias(yaml_limits *l, const yaml_event_t *ev)
{
    size_t weight;
    if (!strset_get(&l->anchors, (const char *)ev->data.alias.anchor, &weight))
        return node_done(l, NULL, 1);   /* undefined: the reader says so in its words */
    if (weight == OPEN)
        return YAML_CYCLE_PROBLEM;
    l->alias_weight = add_sat(l->alias_weight, weight);
    if (l->alias_weight > l->alias_budget)
        return YAML_ALIAS_PROBLEM;
    return node_done(l, NULL, weight);
}

const char *yaml_limits_note(yaml_limits *l, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        forget_anchors(l);
        l->alias_weight = 0;
        return NULL;
    case YAML_SEQUENCE_START_EVENT:
        return open_collection(l, ev, ev->data.sequence_start.anchor);
    case YAML_MAPPING_START_EVENT:
        return open_collection(l, ev, ev->data.mapping_start.anchor);
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        return close_collection(l, ev);
    case YAML_SCALAR_EVENT:
        return node_done(l, ev->data.scalar.anchor, add_sat(1, ev->data.scalar.length));
    case YAML_ALIAS_EVENT:
        return alias(l, ev);
    default:
        return NULL;
    }
}
