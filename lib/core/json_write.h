/* json_write: JSON text written as Go's encoding/json writes it.
 *
 * Porch puts JSON that Go marshalled into messages users read (the results
 * it logs for a function that exited 0 with errors, image facts), and tests
 * written against Porch compare them byte for byte; so strings, floats and
 * objects come out exactly as encoding/json would write them, not merely as
 * valid JSON. Writing only: json.h reads. Every function appends to a buf
 * and reports running out of memory, nothing else. */
#ifndef KRM_JSON_WRITE_H
#define KRM_JSON_WRITE_H

#include <stddef.h>

#include "core/buf.h"

/* Appends s as a JSON string literal exactly as Go's encoding/json writes
 * it (Porch's messages embed such text, so byte-for-byte matters): the
 * short escapes, \u00XX for other controls and for < > & (HTML safety),
 * \u2028 and \u2029, and \ufffd for each byte that is not valid UTF-8; DEL
 * and all other text as is. Returns 0 or -1 when out of memory. */
int json_write_string(buf *out, const char *s, size_t len);

/* Appends a finite float64 as encoding/json does: the shortest digits that
 * read back as f, in 'f' format, or in 'e' format (exponent without leading
 * zeros, "1e-7") below 1e-6 or from 1e21; zero as "0" or "-0". The caller
 * refuses NaN and infinities (json.Marshal fails on them). Returns 0 or -1. */
int json_write_float(buf *out, double f);

/* Writes one object's members, placing the commas. Errors are collected in
 * rc and returned by json_obj_end, so a sequence of members needs one check:
 *     json_obj o;
 *     json_obj_begin(&o, out);
 *     json_obj_string(&o, "name", name);
 *     json_obj_key(&o, "index");
 *     o.rc |= buf_printf(out, "%ld", index);
 *     return json_obj_end(&o);
 */
typedef struct json_obj {
    buf *out;
    int count;   /* members written so far */
    int rc;      /* 0, or negative once an append failed */
} json_obj;

void json_obj_begin(json_obj *o, buf *out);
/* Writes `"key":` (key is written as is: a field name, not user text); the
 * caller then appends the value. */
void json_obj_key(json_obj *o, const char *key);
/* A string member, left out when value is NULL or empty (Go's omitempty). */
void json_obj_string(json_obj *o, const char *key, const char *value);
/* Closes the object; returns 0, or negative when any append failed. */
int json_obj_end(json_obj *o);

#endif
