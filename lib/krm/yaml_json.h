/* yaml_json: a YAML node written as JSON, each scalar typed as a strict
 * YAML 1.1 reader types it (yaml_node: "8080" quoted is a string, 8080 a
 * number, true a boolean, ~ null).
 *
 * Why: a FunctionConfig read from a YAML file carries Kubernetes objects
 * (podExecutor.templateOverrides: a security context, resources, env) that
 * the pod runtime merges into a Pod it sends as JSON; they are kept as that
 * JSON, whatever fields they have. */
#ifndef KRM_YAML_JSON_H
#define KRM_YAML_JSON_H

#include <yaml.h>

#include "core/buf.h"

/* Appends node n of doc as JSON. 0, or -1 when out of memory or a number
 * JSON cannot hold (.inf, .nan). */
int yaml_node_to_json(yaml_document_t *doc, const yaml_node_t *n, buf *out);

#endif
