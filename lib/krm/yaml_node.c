/* yaml_node: YAML 1.1 typing of libyaml nodes; see yaml_node.h. */
#include "krm/yaml_node.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Value kinds (YAML 1.1 resolution of plain scalars, as kubectl does)       */

const char *yaml_vkind_name(yaml_vkind k)
{
    static const char *const names[] = {
        "null", "a string", "a number", "a boolean", "a mapping", "a list",
    };
    return names[k];
}

static int word_in(const char *s, const char *const *words, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, words[i]) == 0)
            return 1;
    return 0;
}

/* Copies s without '_' (YAML 1.1 digit separators) into out; 0 if too long. */
static int strip_underscores(const char *s, char *out, size_t cap)
{
    size_t o = 0;
    for (; *s; s++) {
        if (*s == '_')
            continue;
        if (o + 1 >= cap)
            return 0;
        out[o++] = *s;
    }
    out[o] = '\0';
    return 1;
}

/* Parses a YAML 1.1 integer (decimal, 0x, 0o, 0b, leading-0 octal, '_'
 * separators). Returns 0, or -1 when s is not one or overflows. */
int yaml_int_parse(const char *s, long long *out)
{
    char t[128];
    if (!strip_underscores(s, t, sizeof t) || !*t)
        return -1;
    const char *p = t;
    int neg = *p == '-';
    if (*p == '-' || *p == '+')
        p++;
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
        base = 16, p += 2;
    else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O'))
        base = 8, p += 2;
    else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B'))
        base = 2, p += 2;
    else if (p[0] == '0' && p[1])
        base = 8, p += 1;
    if (!*p || *p == '-' || *p == '+')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, base);
    if (*end || errno || v > (unsigned long long)LLONG_MAX + neg)
        return -1;
    *out = neg ? (long long)(0 - v) : (long long)v;
    return 0;
}

static int is_yaml_float(const char *s)
{
    static const char *const special[] = {
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
        ".nan", ".NaN", ".NAN",
    };
    if (word_in(s, special, sizeof special / sizeof *special))
        return 1;
    if (!strchr("+-.0123456789", *s))
        return 0;
    char t[128];
    if (!strip_underscores(s, t, sizeof t) || !*t)
        return 0;
    char *end;
    strtod(t, &end);
    return *end == '\0' && end != t;
}

static yaml_vkind plain_kind(const char *s)
{
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    static const char *const bools[] = {
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE",
        "on", "On", "ON", "off", "Off", "OFF",
    };
    long long ignored;
    if (word_in(s, nulls, sizeof nulls / sizeof *nulls))
        return YV_NULL;
    if (word_in(s, bools, sizeof bools / sizeof *bools))
        return YV_BOOL;
    if (yaml_int_parse(s, &ignored) == 0 || is_yaml_float(s))
        return YV_NUMBER;
    return YV_STRING;
}

/* The kind of a node; NULL (absent) counts as null. */
yaml_vkind yaml_node_kind(const yaml_node_t *n)
{
    if (!n)
        return YV_NULL;
    if (n->type == YAML_MAPPING_NODE)
        return YV_MAP;
    if (n->type == YAML_SEQUENCE_NODE)
        return YV_LIST;
    const char *tag = (const char *)n->tag;
    if (tag && strcmp(tag, YAML_STR_TAG) != 0) {   /* explicit !!int etc. */
        if (strcmp(tag, YAML_NULL_TAG) == 0)
            return YV_NULL;
        if (strcmp(tag, YAML_BOOL_TAG) == 0)
            return YV_BOOL;
        if (strcmp(tag, YAML_INT_TAG) == 0 || strcmp(tag, YAML_FLOAT_TAG) == 0)
            return YV_NUMBER;
        return YV_STRING;
    }
    if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return YV_STRING;
    return plain_kind((const char *)n->data.scalar.value);
}

const char *yaml_node_text(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}

int yaml_bool_parse(const char *s)
{
    static const char *const yes[] = {"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"};
    static const char *const no[] = {"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"};
    if (word_in(s, yes, sizeof yes / sizeof *yes))
        return 1;
    if (word_in(s, no, sizeof no / sizeof *no))
        return 0;
    return -1;
}
