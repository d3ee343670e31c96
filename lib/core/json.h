/* json: a small strict JSON reader (RFC 8259).
 *
 * Registry answers (manifests, indexes, image configs, token responses,
 * error bodies) and Docker's config.json are JSON; libyaml cannot be relied
 * on for JSON's escapes (\u surrogate pairs, \/), so this module parses into
 * a small tree. Strings are decoded to UTF-8 and keep their length (a
 * "\u0000" inside is kept); numbers are kept as doubles. Depth is limited so
 * hostile input cannot exhaust the stack; lone surrogates become U+FFFD, as
 * Go's encoding/json decodes them. */
#ifndef KRM_JSON_H
#define KRM_JSON_H

#include <stddef.h>

#include "core/buf.h"
#include "core/json_write.h"

typedef enum json_type {
    JSON_NULL,
    JSON_FALSE,
    JSON_TRUE,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_type;

typedef struct json json;
struct json {
    json_type type;
    double number;        /* JSON_NUMBER */
    char *str;            /* JSON_STRING: NUL-terminated UTF-8 */
    size_t len;           /* JSON_STRING: bytes; ARRAY/OBJECT: members */
    char **keys;          /* JSON_OBJECT: member names, in document order */
    json **items;         /* ARRAY: elements; OBJECT: member values */
    size_t cap;           /* ARRAY/OBJECT: members items (and keys) have room for */
};

#define JSON_MAX_DEPTH 64

/* Parses all of data[0..len) (one value, surrounding whitespace allowed).
 * Returns the tree, or NULL with "offset N: reason" in err. */
json *json_parse(const char *data, size_t len, buf *err);
/* The same with at most max_values values (tree nodes: each costs about 80
 * bytes, so a peer's 16 MiB of "[1,1,...]" would cost 0.6 GB): more is an
 * error ("offset N: more than MAX JSON values (the limit for this document)"). */
json *json_parse_max(const char *data, size_t len, size_t max_values, buf *err);
void json_free(json *v);

/* The value of member `key` of an object (the last one when repeated, as
 * Go does), or NULL when v is not an object or has no such member. */
const json *json_get(const json *v, const char *key);
/* The string of v when it is a JSON string, else NULL. */
const char *json_str(const json *v);
/* json_str(json_get(v, key)). */
const char *json_get_str(const json *v, const char *key);

/* Writing JSON (json_write_string and the rest) is json_write.h, included
 * here for the callers that read and write. */

/* Appends v as JSON text, members in document order, with a space after
 * each ':' and ',' (so that YAML readers, which need it in flow style, read
 * it as the same value). Returns 0; 1 when out grew past max bytes (the
 * writing stopped there, so a large tree costs no more than max); -1 when
 * out of memory; -2 for a number that is not finite (JSON has none, but
 * the reader reads 1e400 as infinity; Go's encoding/json refuses it too). */
int json_write_tree(buf *out, const json *v, size_t max);
/* Appends v as compact JSON (no spaces: an API request's body). 0, or -1
 * when out of memory or when a number is not finite. */
int json_write_value(buf *out, const json *v);

#endif
