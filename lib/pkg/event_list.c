/* event_list: one YAML input as libyaml events; see event_list.h. */
#include "pkg/event_list.h"

#include <stdlib.h>
#include <string.h>

#include "krm/yaml_limits.h"

void event_list_free(event_list *list)
{
    for (size_t i = 0; i < list->count; i++)
        yaml_event_delete(&list->events[i]);
    free(list->events);
    *list = (event_list){ 0 };
}

void event_list_drop(event_list *list, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        yaml_event_delete(&list->events[i]);
}

/* Takes ownership of *ev (deleting it on failure). */
static int events_push(event_list *list, yaml_event_t *ev)
{
    if (list->count == list->cap) {
        size_t cap = list->cap ? list->cap * 2 : 64;
        yaml_event_t *grown = cap > SIZE_MAX / sizeof *grown
                                  ? NULL
                                  : realloc(list->events, cap * sizeof *grown);
        if (!grown) {
            yaml_event_delete(ev);
            return -1;
        }
        list->events = grown;
        list->cap = cap;
    }
    list->events[list->count++] = *ev;
    return 0;
}

static int fail_parse(const yaml_parser_t *parser, const char *name, buf *err)
{
    const char *problem = parser->problem ? parser->problem : "invalid input";
    if (parser->error == YAML_MEMORY_ERROR)
        buf_fail_line(err, "%s: out of memory while parsing YAML", name);
    else if (parser->error == YAML_READER_ERROR)
        buf_fail_line(err, "%s: YAML error at byte %zu: %s", name,
                      parser->problem_offset, problem);
    else if (parser->context)
        buf_fail_line(err, "%s: YAML error at line %zu, column %zu: %s (%s)", name,
                      parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem,
                      parser->context);
    else
        buf_fail_line(err, "%s: YAML error at line %zu, column %zu: %s", name,
                      parser->problem_mark.line + 1, parser->problem_mark.column + 1, problem);
    return -1;
}

int event_list_parse(const char *data, size_t len, const char *name, event_list *list,
                     buf *err)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return buf_fail_line(err, "%s: out of memory while parsing YAML", name);
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    yaml_limits *limits = malloc(sizeof *limits);
    if (!limits) {
        yaml_parser_delete(&parser);
        return buf_fail_line(err, "%s: out of memory while parsing YAML", name);
    }
    yaml_limits_init(limits, len);
    int rc = 0;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = fail_parse(&parser, name, err);
            break;
        }
        const char *problem = yaml_limits_note(limits, &ev);
        if (problem) {
            buf_fail_line(err, "%s: YAML error at line %zu, column %zu: %s", name,
                          ev.start_mark.line + 1, ev.start_mark.column + 1, problem);
            yaml_event_delete(&ev);
            rc = -1;
            break;
        }
        yaml_event_type_t type = ev.type;
        if (events_push(list, &ev) < 0) {
            rc = buf_fail_line(err, "%s: out of memory while parsing YAML", name);
            break;
        }
        if (type == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&parser);
    yaml_limits_free(limits);
    free(limits);
    if (rc < 0)
        event_list_free(list);
    return rc;
}

/* The list comes from a successful parse, so it is well nested. */
size_t event_list_node_end(const event_list *list, size_t at)
{
    size_t depth = 0;
    for (size_t i = at; i < list->count; i++) {
        switch (list->events[i].type) {
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            depth++;
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT:
            depth--;
            break;
        default:
            break;
        }
        if (depth == 0)
            return i + 1;
    }
    return list->count;
}

size_t event_list_find_key(const event_list *list, size_t map, const char *key)
{
    size_t at = map + 1;
    while (at < list->count && list->events[at].type != YAML_MAPPING_END_EVENT) {
        size_t value = event_list_node_end(list, at);
        if (event_scalar_is(&list->events[at], key))
            return value;
        at = event_list_node_end(list, value);
    }
    return EVENT_NONE;
}

int event_scalar_is(const yaml_event_t *ev, const char *text)
{
    size_t len = strlen(text);
    return ev->type == YAML_SCALAR_EVENT && ev->data.scalar.length == len &&
           memcmp(ev->data.scalar.value, text, len) == 0;
}

int event_is_null(const yaml_event_t *ev)
{
    if (ev->type != YAML_SCALAR_EVENT)
        return 0;
    const char *tag = (const char *)ev->data.scalar.tag;
    if (tag)
        return strcmp(tag, YAML_NULL_TAG) == 0;
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return 0;
    static const char *const spellings[] = { "", "~", "null", "Null", "NULL" };
    for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++)
        if (event_scalar_is(ev, spellings[i]))
            return 1;
    return 0;
}

const char *event_node_kind(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SEQUENCE_START_EVENT:
        return "a sequence";
    case YAML_MAPPING_START_EVENT:
        return "a mapping";
    case YAML_ALIAS_EVENT:
        return "an alias";
    default:
        return "a scalar";
    }
}
