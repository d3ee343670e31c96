/* yaml_json: a YAML node as JSON; see yaml_json.h. */
#include "krm/yaml_json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_write.h"
#include "krm/yaml_node.h"

static int scalar(const yaml_node_t *n, buf *out)
{
    const char *text = yaml_node_text(n);
    switch (yaml_node_kind(n)) {
    case YV_NULL:
        return buf_append_str(out, "null");
    case YV_BOOL:
        return buf_append_str(out, yaml_bool_parse(text) ? "true" : "false");
    case YV_NUMBER: {
        long long i;
        if (yaml_int_parse(text, &i) == 0)
            return buf_printf(out, "%lld", i);
        double d = strtod(text, NULL);
        return isfinite(d) ? json_write_float(out, d) : -1;
    }
    default:
        return json_write_string(out, text, n->data.scalar.length);
    }
}

int yaml_node_to_json(yaml_document_t *doc, const yaml_node_t *n, buf *out)
{
    int rc = 0;
    if (n->type == YAML_SCALAR_NODE)
        return scalar(n, out);
    if (n->type == YAML_SEQUENCE_NODE) {
        rc |= buf_append_str(out, "[");
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top && !rc; i++) {
            if (i != n->data.sequence.items.start)
                rc |= buf_append_str(out, ",");
            rc |= yaml_node_to_json(doc, yaml_document_get_node(doc, *i), out);
        }
        return rc | buf_append_str(out, "]");
    }
    rc |= buf_append_str(out, "{");
    for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top && !rc; p++) {
        const yaml_node_t *k = yaml_document_get_node(doc, p->key);
        if (p != n->data.mapping.pairs.start)
            rc |= buf_append_str(out, ",");
        rc |= k->type == YAML_SCALAR_NODE ? json_write_string(out, yaml_node_text(k), k->data.scalar.length)
                                          : -1;   /* Kubernetes objects have string keys */
        rc |= buf_append_str(out, ":");
        rc |= yaml_node_to_json(doc, yaml_document_get_node(doc, p->value), out);
    }
    return rc | buf_append_str(out, "}");
}
