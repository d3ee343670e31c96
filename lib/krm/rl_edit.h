/* rl_edit: a ResourceList (or any one-object YAML document) held as a
 * libyaml document tree, to be edited and written back.
 *
 * Why: running functions as a pipeline means taking one function's output
 * as the next input (without its results, kept as text elsewhere), with a
 * functionConfig of the step's own, and building functionConfig objects. The server never does this
 * (it passes bytes through); runner-client does, and this module keeps the
 * YAML handling in one place.
 *
 * How: documents are loaded with yaml_load (libyaml's loader with our
 * limits, checked while it reads) and written with yaml_emitter_dump. Nodes are copied between documents node by node, so
 * everything inside an item (kpt's internal.config.kubernetes.io/...
 * annotations, field order, scalar and collection styles, anchors) passes
 * through untouched. Comments are lost: libyaml's document API drops them.
 * Copies and emission recurse, so nesting deeper than RL_EDIT_MAX_DEPTH is
 * refused with an error instead of exhausting the stack. */
#ifndef KRM_RL_EDIT_H
#define KRM_RL_EDIT_H

#include <stddef.h>
#include <yaml.h>

#include "core/buf.h"

#define RL_EDIT_MAX_DEPTH 1000
#define RL_EDIT_MAX_DEPTH_TEXT "1000"

typedef struct rl_doc rl_doc;

/* A string key and value (functionConfig data, result tags). */
typedef struct rl_kv {
    const char *key;
    const char *value;
} rl_kv;

/* Loads a ResourceList: exactly one document, a mapping whose kind is
 * ResourceList (apiVersion is not checked, as in the SDK), whose items are a
 * sequence (or absent/null) and whose results are a sequence, the legacy
 * mapping with `items`, absent or null. Returns NULL with a one-line reason
 * in err ("line 3: mapping values are not allowed in this context",
 * "kind is \"ConfigMap\", not ResourceList", ...). `skip_key` (NULL: none)
 * names a top-level key that is read and checked but left out of the tree
 * (a pipeline keeps a step's results elsewhere, as text). */
rl_doc *rl_doc_load_resource_list(const char *data, size_t len, const char *skip_key, char *err,
                                  size_t errlen);

/* Loads any single document whose root is a mapping (a KRM object such as a
 * functionConfig or a Kptfile). NULL with a reason in err. */
rl_doc *rl_doc_load_object(const char *data, size_t len, char *err, size_t errlen);

/* A new `apiVersion: v1, kind: ConfigMap, metadata: {name: NAME}, data:
 * {k: v...}` object (kpt's functionConfig for `fn eval IMG -- k=v`). A key
 * given twice keeps its last value. NULL when out of memory. */
rl_doc *rl_doc_config_map(const char *name, const rl_kv *data, size_t n);

void rl_doc_free(rl_doc *d);

/* Appends the document to out as YAML (no "---", a final line break).
 * `omit_key` (NULL: none) names a top-level key left out of the output. The
 * document is not changed. Returns 0, or -1 with a reason in err. */
int rl_doc_emit(const rl_doc *d, const char *omit_key, buf *out, char *err, size_t errlen);

/* Makes d's items an empty sequence when they are absent or null (a
 * function's output taken as the next state). Returns 0 or -1 when out of
 * memory. */
int rl_doc_ensure_items(rl_doc *d);

/* d.functionConfig = a copy of config's root; config NULL removes the key.
 * Returns 0 or -1 with a reason in err. */
int rl_doc_set_function_config(rl_doc *d, const rl_doc *config, char *err, size_t errlen);

/* Removes top-level `key` from d (nothing when absent). */
void rl_doc_remove(rl_doc *d, const char *key);

/* Entries of the top-level sequence `key` ("items", "results"; the legacy
 * results mapping counts its items); 0 when absent. */
size_t rl_doc_count(const rl_doc *d, const char *key);

/* ---- reading other objects (a Kptfile) ---- */

/* The libyaml tree, for reading. */
const yaml_document_t *rl_doc_yaml(const rl_doc *d);

/* Node id of the value under scalar key `key` of mapping `map` (0: the
 * root), or 0 when map is not a mapping or has no such key. */
int rl_yaml_get(const yaml_document_t *doc, int map, const char *key);

/* The text of scalar node `id`, or NULL when it is not a scalar. */
const char *rl_yaml_text(const yaml_document_t *doc, int id);

/* A YAML null: no node (id 0), or an untagged plain "", "~", "null". */
int rl_yaml_is_null(const yaml_document_t *doc, int id);

#endif
