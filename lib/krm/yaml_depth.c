/* yaml_depth: the flow-nesting limit; see yaml_depth.h for why. */
#include "krm/yaml_depth.h"

/* A flow collection holds only flow collections, so the innermost open
 * collection is a flow one exactly when the count is above zero: an end
 * event closes a flow collection then, and a block one otherwise. */
int yaml_flow_depth_note(yaml_flow_depth *d, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SEQUENCE_START_EVENT:
        if (ev->data.sequence_start.style != YAML_FLOW_SEQUENCE_STYLE)
            return 0;
        break;
    case YAML_MAPPING_START_EVENT:
        if (ev->data.mapping_start.style != YAML_FLOW_MAPPING_STYLE)
            return 0;
        break;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (d->depth > 0)
            d->depth--;
        return 0;
    default:
        return 0;
    }
    return ++d->depth > YAML_MAX_FLOW_DEPTH ? -1 : 0;
}
