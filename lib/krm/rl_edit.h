/* rl_edit: one YAML object (a Kptfile, a functionConfig) held as a libyaml
 * document tree, to be read, built and written back.
 *
 * Why: a Kptfile's pipeline is read by looking things up in it, and each
 * step's functionConfig is an object the pipeline builds (`--fn IMG=k=v`)
 * or reads (`configPath`) and then writes into every request. The lists
 * passed between steps are not trees (lib/pkg/rl_rewrite.h).
 *
 * How: documents are loaded with yaml_load (libyaml's loader with our
 * limits, checked while it reads) and written with yaml_emitter_dump of a
 * copy, node by node, so anchors, styles and tags pass through untouched.
 * Comments are lost: libyaml's document API drops them. Copies and
 * emission recurse, so nesting deeper than RL_EDIT_MAX_DEPTH is refused
 * with an error instead of exhausting the stack. */
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

/* Loads any single document whose root is a mapping (a KRM object such as a
 * functionConfig or a Kptfile). NULL with a reason appended to err. */
rl_doc *rl_doc_load_object(const char *data, size_t len, buf *err);

/* A new `apiVersion: v1, kind: ConfigMap, metadata: {name: NAME}, data:
 * {k: v...}` object (kpt's functionConfig for `fn eval IMG -- k=v`). A key
 * given twice keeps its last value. NULL when out of memory. */
rl_doc *rl_doc_config_map(const char *name, const rl_kv *data, size_t n);

void rl_doc_free(rl_doc *d);

/* Appends the document to out as YAML (no "---", a final line break).
 * `omit_key` (NULL: none) names a top-level key left out of the output. The
 * document is not changed. Returns 0, or -1 with a reason appended to err. */
int rl_doc_emit(const rl_doc *d, const char *omit_key, buf *out, buf *err);

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
