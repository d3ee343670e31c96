/* kptfile_fields: a Kptfile's field names checked as kpt checks them.
 *
 * Why: kpt decodes a Kptfile into its Go types with unknown fields
 * rejected (yaml.v3's KnownFields), so `mutator:` for `mutators:` or
 * `configmap:` for `configMap:` is an error there, not a step silently
 * dropped or a config silently ignored. The names are those of kpt's
 * Kptfile v1 (pkg/api/kptfile/v1) and the message is yaml.v3's ("line 7:
 * field mutator not found in type v1.Pipeline"), followed by the names the
 * type knows. Values are not checked here: the pipeline reader checks the
 * ones it uses. `status` is kpt's to write and is taken as it is. */
#ifndef KRM_RC_KPTFILE_FIELDS_H
#define KRM_RC_KPTFILE_FIELDS_H

#include <stddef.h>
#include <yaml.h>

#include "core/buf.h"

/* Checks every mapping of the document's root object against kpt's types.
 * Returns 0, or -1 with the first unknown field's line appended to why
 * ("out of memory" there when it is). Each node is checked against each type once,
 * however many aliases name it. */
int kptfile_fields_check(const yaml_document_t *doc, buf *why);

#endif
