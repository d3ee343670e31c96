/* yaml_unmarshal: the "unmarshal errors" yaml.v3 reports when it decodes a
 * node into a Go value of the wrong shape, and its duplicate-key check.
 *
 * Why: when a function's `results` do not fit the SDK's Result struct,
 * Porch fails the call with yaml.v3's text, one line per problem ("line 7:
 * cannot unmarshal !!seq into string", "line 9: mapping key \"message\"
 * already defined at line 8"), and users compare it with what Go says. The
 * judge (resourcelist.c) decides which node is wrong; this module words the
 * lines as yaml.v3 does, in its order, and bounds what hostile input can
 * make us keep (YAML_UNMARSHAL_MAX_ERRORS lines, YAML_UNMARSHAL_MAX_KEYS
 * keys per mapping; every error is still counted).
 *
 * yaml.v3 checks a mapping's keys before it decodes the values, so when it
 * finds duplicates it reports only those: a mark taken when a mapping
 * starts lets yaml_unmarshal_duplicates drop the value errors recorded
 * since. Every function returns -1 only when out of memory. */
#ifndef KRM_YAML_UNMARSHAL_H
#define KRM_YAML_UNMARSHAL_H

#include <stddef.h>
#include <yaml.h>

#include "core/buf.h"

enum {
    YAML_UNMARSHAL_MAX_ERRORS = 100,    /* lines kept; more are counted only */
    YAML_UNMARSHAL_MAX_KEYS = 10000,    /* keys per mapping checked for duplicates */
};

/* The error lines so far, joined by "\n  " (how yaml.v3 joins them). */
typedef struct yaml_unmarshal_errors {
    buf text;
    size_t count;   /* including those past YAML_UNMARSHAL_MAX_ERRORS */
} yaml_unmarshal_errors;

/* Where the errors stood, to go back to (yaml_unmarshal_duplicates). */
typedef struct yaml_unmarshal_mark {
    size_t len;
    size_t count;
} yaml_unmarshal_mark;

/* The keys of one mapping being decoded. A key's identity is its node kind
 * byte followed by its text, in `arena`. */
typedef struct yaml_unmarshal_key {
    size_t offset;
    size_t len;
    size_t line;
} yaml_unmarshal_key;

typedef struct yaml_unmarshal_keys {
    buf arena;
    yaml_unmarshal_key *keys;
    size_t n;
    size_t cap;
} yaml_unmarshal_keys;

yaml_unmarshal_mark yaml_unmarshal_save(const yaml_unmarshal_errors *e);
void yaml_unmarshal_errors_free(yaml_unmarshal_errors *e);

/* Records yaml.v3's "line N: cannot unmarshal !!tag `value` into T" for the
 * node ev starts, `line` being its one-based line in the input. Long values
 * are cut to 7 bytes plus "..." (here never inside a UTF-8 sequence). */
int yaml_unmarshal_type_error(yaml_unmarshal_errors *e, const yaml_event_t *ev, size_t line,
                              const char *go_type);

/* Forgets the keys of the previous mapping (keeps the memory). */
void yaml_unmarshal_keys_reset(yaml_unmarshal_keys *t);
void yaml_unmarshal_keys_free(yaml_unmarshal_keys *t);

/* Remembers a key event's identity: yaml.v3 compares node kind and text
 * (an alias's text is its anchor name, a collection's is empty); `line` is
 * its one-based line in the input. */
int yaml_unmarshal_keys_add(yaml_unmarshal_keys *t, const yaml_event_t *ev, size_t line);

/* Once a mapping's keys are all read: every later key equal to an earlier
 * one is an error, reported for each pair in order, and then none of the
 * mapping's values are decoded; so when duplicates are found, the errors
 * recorded since `mark` are replaced by them. Returns 1 when duplicates
 * were found, 0 when not, -1 on ENOMEM. */
int yaml_unmarshal_duplicates(yaml_unmarshal_errors *e, const yaml_unmarshal_keys *t,
                              yaml_unmarshal_mark mark);

#endif
