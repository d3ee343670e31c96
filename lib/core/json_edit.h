/* json_edit: changing a parsed JSON tree (json.h) and writing it back.
 *
 * Why: an object read from the API server (a PodTemplate) is the start of
 * another one sent back (the function's Pod): its members are kept as they
 * are, whatever they hold, and a few are set. Editing the tree keeps every
 * field Kubernetes has, known to us or not; writing it back gives compact
 * JSON (numbers as json_write_float writes them: integers up to 2^53 exact,
 * as Kubernetes' own fields are). Every function reports running out of
 * memory, nothing else. */
#ifndef KRM_JSON_EDIT_H
#define KRM_JSON_EDIT_H

#include "core/json.h"

/* A new empty value of type t (an object or array has no members), or NULL. */
json *json_new(json_type t);
/* A new string holding a copy of s, or NULL. */
json *json_new_string(const char *s);
/* Sets member key of obj to value (owned from now on, even on failure):
 * replaces every member of that name, else appends. 0, or -1. */
int json_set(json *obj, const char *key, json *value);
/* Appends value (owned from now on, even on failure) to array arr. 0, or -1. */
int json_push(json *arr, json *value);
/* The member key of obj, made an empty value of type t when missing or of
 * another type; NULL when obj is not an object or out of memory. */
json *json_want(json *obj, const char *key, json_type t);
/* A deep copy of v, or NULL when out of memory. */
json *json_copy(const json *v);

#endif
