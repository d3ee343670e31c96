/* yaml_v3: what Go's yaml.v3 (the YAML library under kyaml and the
 * krm-functions-sdk) makes of a node libyaml reports: its kind, the tag it
 * resolves to and, for scalars, the value.
 *
 * Why: Porch judges a function's output with the SDK on yaml.v3, and what
 * yaml.v3 decides about a node shows in what users read: whether `kind: 1`
 * is a string (it is not, so the kind reads as ""), whether a result's
 * `index: 0x10` is an int, which tag an "unmarshal errors" line prints, and
 * the JSON type of field.currentValue when Porch logs results. libyaml only
 * tokenizes; the YAML 1.2 core schema rules yaml.v3 applies (its resolve.go,
 * with Go's strconv number syntax) are here, in one place, for the judge
 * (resourcelist.c, yaml_unmarshal.c) and the results' JSON (rl_results.c).
 *
 * Pure functions of an event or a text: no allocation, no state. */
#ifndef KRM_YAML_V3_H
#define KRM_YAML_V3_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "core/buf.h"

/* yaml.v3 node kinds; the SDK prints these numbers ("unhandled node kind 8"). */
typedef enum yaml_v3_kind {
    YAML_V3_KIND_NONE = 0,
    YAML_V3_KIND_DOCUMENT = 1,
    YAML_V3_KIND_SEQUENCE = 2,
    YAML_V3_KIND_MAPPING = 4,
    YAML_V3_KIND_SCALAR = 8,
    YAML_V3_KIND_ALIAS = 16,
} yaml_v3_kind;

/* The tag a scalar resolves to (YAML 1.2 core rules, as yaml.v3 applies them). */
typedef enum yaml_v3_class {
    YAML_V3_STR,
    YAML_V3_NULL,
    YAML_V3_BOOL,
    YAML_V3_INT,
    YAML_V3_FLOAT,
    YAML_V3_TIMESTAMP,
    YAML_V3_MERGE,
} yaml_v3_class;

/* The value of a scalar that resolved to a bool or a number. */
typedef struct yaml_v3_number {
    int is_unsigned;   /* YAML_V3_INT past INT64_MAX */
    int64_t i;
    uint64_t u;
    double f;
    int b;             /* YAML_V3_BOOL */
} yaml_v3_number;

/* The node kind an event starts (YAML_V3_KIND_NONE for ends and the rest). */
int yaml_v3_kind_of(const yaml_event_t *ev);

/* Classifies a plain (unquoted, untagged) scalar text as yaml.v3's resolve
 * does, filling *num for bools and numbers. */
yaml_v3_class yaml_v3_resolve_plain(const char *s, size_t len, yaml_v3_number *num);

/* What a scalar event resolves to. Quoted and block scalars are strings;
 * an explicit standard tag is honoured when the text fits it (an !!float
 * written as an integer is a float), anything else reads as a string. */
yaml_v3_class yaml_v3_classify(const yaml_event_t *ev, yaml_v3_number *num);

/* Whether yaml.v3 would tag the node !!str, which is what the SDK's map
 * lookups and GetNestedString insist on (an unknown explicit tag is not). */
int yaml_v3_is_str(const yaml_event_t *ev);

/* Whether the event is a scalar that resolves to null. */
int yaml_v3_is_null(const yaml_event_t *ev);

/* Appends the tag yaml.v3 prints for a node: its explicit tag in short form
 * ("!!int" for tag:yaml.org,2002:int), "!!seq" / "!!map", or the tag a
 * scalar resolves to. Returns 0 or -1 when out of memory. */
int yaml_v3_append_tag(buf *out, const yaml_event_t *ev);

#endif
