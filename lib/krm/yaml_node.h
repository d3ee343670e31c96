/* yaml_node: the type of a libyaml document node as Kubernetes tools read
 * it, for strict readers of small configuration files.
 *
 * Why: FunctionConfigs and kubeconfigs are both read with libyaml's
 * document API and checked field by field ("must be a string, not a
 * number"). kubectl and sigs.k8s.io/yaml resolve plain scalars by YAML 1.1
 * (`yes`, `on` and `true` are booleans, `0x1F` and `1_000` integers), which
 * libyaml leaves to its caller; this is that resolution, in one place.
 * Quoted scalars are strings; an explicit tag (!!int, !!str) wins. */
#ifndef KRM_YAML_NODE_H
#define KRM_YAML_NODE_H

#include <yaml.h>

typedef enum yaml_vkind { YV_NULL, YV_STRING, YV_NUMBER, YV_BOOL, YV_MAP, YV_LIST } yaml_vkind;

/* The kind of a node; NULL (an absent field) counts as null. */
yaml_vkind yaml_node_kind(const yaml_node_t *n);
/* "null", "a string", "a number", "a boolean", "a mapping", "a list". */
const char *yaml_vkind_name(yaml_vkind k);
/* A scalar node's text (NUL-terminated; may hold NULs before its length). */
const char *yaml_node_text(const yaml_node_t *n);
/* A YAML 1.1 integer (decimal, 0x, 0o, 0b, leading-0 octal, '_'
 * separators). 0, or -1 when s is not one or overflows. */
int yaml_int_parse(const char *s, long long *out);
/* A YAML 1.1 boolean's value: 1 true, 0 false, -1 not a boolean word. */
int yaml_bool_parse(const char *s);

#endif
