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

int yaml_flow_depth_check(const char *data, size_t len, size_t *line, size_t *column)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        return 0;   /* the loader will run out of memory too, and say so */
    yaml_parser_set_input_string(&p, (const unsigned char *)data, len);
    yaml_flow_depth d = {0};
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev))
            break;
        yaml_event_type_t type = ev.type;
        if (yaml_flow_depth_note(&d, &ev) < 0) {
            *line = ev.start_mark.line + 1;
            *column = ev.start_mark.column + 1;
            rc = -1;
        }
        yaml_event_delete(&ev);
        if (rc < 0 || type == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&p);
    return rc;
}
