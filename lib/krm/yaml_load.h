/* yaml_load: libyaml's document loader (yaml_parser_load) with the limits
 * of yaml_limits.h checked while it reads.
 *
 * Why: yaml_parser_load builds the whole tree before its caller can look
 * at it, so a document nested 2,000,000 deep cost 800 MiB before it was
 * refused. This loader builds the same tree from the same events, one at
 * a time, and stops at the first event past a limit. Every reader of a
 * libyaml document tree (Kptfiles, functionConfigs, FunctionConfig files,
 * kubeconfigs, `pod render --entrypoint-json`) loads through it.
 *
 * It differs from yaml_parser_load only where that one is lax or hostile
 * input hurts: the limits, an anchor defined twice (the later one wins, as
 * in YAML 1.2 and yaml.v3, where libyaml refuses), and an alias to an
 * enclosing node (refused: libyaml builds a cycle that recursive readers
 * never leave). Nodes keep their start and end marks. */
#ifndef KRM_YAML_LOAD_H
#define KRM_YAML_LOAD_H

#include <stddef.h>
#include <yaml.h>

/* As yaml_parser_load: loads p's next document into *doc (no root node at
 * the end of the stream). `input_len` is the size of the text p reads
 * (the alias budget). Returns 1, or 0 with p->error, p->problem and
 * p->problem_mark set as libyaml sets them (YAML_COMPOSER_ERROR for a
 * limit, whose problem names it) and *doc zeroed. */
int yaml_load(yaml_parser_t *p, size_t input_len, yaml_document_t *doc);

#endif
