/* yaml_depth: the nesting limit for flow collections in every YAML we read,
 * and the means to enforce it while libyaml reads.
 *
 * Why: libyaml's scanner keeps one possible simple key per open flow
 * collection ([...] or {...}) and walks that whole stack for every token,
 * so reading costs time in proportion to size times flow depth: a 4.8 MiB
 * function output of [[[...]]] 999 deep took 4.5 s to judge, a 195 KiB one
 * 100,000 deep 15 s to read. (yaml.v3 mended its Go copy of the scanner;
 * Debian's libyaml 0.2.5 has not.) Capping the flow depth makes the cost
 * linear again: at 128 levels libyaml spends at most about 8 times what it
 * spends on ordinary YAML per byte. Real objects nest far less: the deepest
 * CRDs we measured (Argo Workflows' cronworkflows) are 37 levels deep in
 * all, so even written as JSON, where every level is flow, they fit 3 times
 * over. Block nesting is not limited here: libyaml reads it in linear time.
 *
 * How: count flow collections in libyaml's event stream and stop at the
 * first one past the limit (yaml_limits.h, with the other limits). The scanner runs at most about 1 KiB ahead of
 * the events (its simple-key window), so even megabytes of "[[[[" cost
 * about a millisecond before they are refused. */
#ifndef KRM_YAML_DEPTH_H
#define KRM_YAML_DEPTH_H

#include <stddef.h>
#include <yaml.h>

#define YAML_MAX_FLOW_DEPTH 128
#define YAML_DEPTH_STR_(x) #x
#define YAML_DEPTH_STR(x) YAML_DEPTH_STR_(x)
/* What every message about it says, after where it happened. */
#define YAML_FLOW_DEPTH_PROBLEM \
    "flow collections ([...] or {...}) nested more than " YAML_DEPTH_STR(YAML_MAX_FLOW_DEPTH) " deep"

typedef struct yaml_flow_depth {
    size_t depth;   /* flow collections open around the current event */
} yaml_flow_depth;

/* Counts ev; returns -1 when ev opens a flow collection past the limit
 * (its start_mark says where), else 0. Feed it every event in order. */
int yaml_flow_depth_note(yaml_flow_depth *d, const yaml_event_t *ev);

#endif
