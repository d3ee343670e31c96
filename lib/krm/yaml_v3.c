/* yaml_v3: yaml.v3's reading of a libyaml node (kind, tag, scalar value);
 * see yaml_v3.h. Scalar resolution follows yaml.v3's resolve.go, numbers
 * Go's strconv base-0 syntax. */
#include "krm/yaml_v3.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TAG_PREFIX "tag:yaml.org,2002:"

static const char *const class_tag[] = {
    [YAML_V3_STR] = "!!str", [YAML_V3_NULL] = "!!null", [YAML_V3_BOOL] = "!!bool",
    [YAML_V3_INT] = "!!int", [YAML_V3_FLOAT] = "!!float", [YAML_V3_TIMESTAMP] = "!!timestamp",
    [YAML_V3_MERGE] = "!!merge",
};

/* Plain scalars yaml.v3 resolves by exact spelling. */
static const struct fixed_word {
    const char *text;
    yaml_v3_class cls;
    int sign;   /* bool value, or the sign of an infinity (0 = NaN) */
} fixed_words[] = {
    {"", YAML_V3_NULL, 0}, {"~", YAML_V3_NULL, 0}, {"null", YAML_V3_NULL, 0},
    {"Null", YAML_V3_NULL, 0}, {"NULL", YAML_V3_NULL, 0},
    {"true", YAML_V3_BOOL, 1}, {"True", YAML_V3_BOOL, 1}, {"TRUE", YAML_V3_BOOL, 1},
    {"false", YAML_V3_BOOL, 0}, {"False", YAML_V3_BOOL, 0}, {"FALSE", YAML_V3_BOOL, 0},
    {".nan", YAML_V3_FLOAT, 0}, {".NaN", YAML_V3_FLOAT, 0}, {".NAN", YAML_V3_FLOAT, 0},
    {".inf", YAML_V3_FLOAT, 1}, {".Inf", YAML_V3_FLOAT, 1}, {".INF", YAML_V3_FLOAT, 1},
    {"+.inf", YAML_V3_FLOAT, 1}, {"+.Inf", YAML_V3_FLOAT, 1}, {"+.INF", YAML_V3_FLOAT, 1},
    {"-.inf", YAML_V3_FLOAT, -1}, {"-.Inf", YAML_V3_FLOAT, -1}, {"-.INF", YAML_V3_FLOAT, -1},
    {"<<", YAML_V3_MERGE, 0},
};

static int match_fixed_word(const char *s, size_t len, yaml_v3_class *cls, yaml_v3_number *num)
{
    for (size_t i = 0; i < sizeof fixed_words / sizeof fixed_words[0]; i++) {
        const struct fixed_word *w = &fixed_words[i];
        if (strlen(w->text) != len || memcmp(w->text, s, len) != 0)
            continue;
        *cls = w->cls;
        num->b = w->sign;
        if (w->cls == YAML_V3_FLOAT)
            num->f = w->sign > 0 ? HUGE_VAL : w->sign < 0 ? -HUGE_VAL : NAN;
        return 1;
    }
    return 0;
}

static int digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 99;
}

/* Reads unsigned digits in Go's strconv base-0 syntax (0x, 0o, 0b, leading 0
 * for octal, else decimal). Returns 0 on success. */
static int parse_go_unsigned(const char *s, size_t len, uint64_t *out)
{
    unsigned base = 10;
    size_t i = 0;
    if (len >= 2 && s[0] == '0') {
        char c = s[1];
        if (c == 'x' || c == 'X')
            base = 16, i = 2;
        else if (c == 'o' || c == 'O')
            base = 8, i = 2;
        else if (c == 'b' || c == 'B')
            base = 2, i = 2;
        else
            base = 8, i = 1;
    }
    if (i == len)
        return -1;
    uint64_t value = 0;
    for (; i < len; i++) {
        unsigned d = (unsigned)digit_value(s[i]);
        if (d >= base || value > (UINT64_MAX - d) / base)
            return -1;
        value = value * base + d;
    }
    *out = value;
    return 0;
}

/* strconv.ParseInt(s, 0, 64) then ParseUint(s, 0, 64), as yaml.v3 tries them. */
static int parse_go_int(const char *s, size_t len, yaml_v3_number *num)
{
    int negative = len > 0 && s[0] == '-';
    size_t skip = len > 0 && (s[0] == '-' || s[0] == '+');
    uint64_t magnitude;
    if (parse_go_unsigned(s + skip, len - skip, &magnitude) < 0)
        return -1;
    if (negative) {
        if (magnitude > (uint64_t)INT64_MAX + 1)
            return -1;
        num->i = magnitude == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)magnitude;
        return 0;
    }
    if (magnitude <= INT64_MAX) {
        num->i = (int64_t)magnitude;
        return 0;
    }
    if (skip)
        return -1;   /* ParseUint takes no sign */
    num->is_unsigned = 1;
    num->u = magnitude;
    return 0;
}

static size_t count_digits(const char *s, size_t len, size_t i)
{
    size_t start = i;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    return i - start;
}

/* yaml.v3's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static int is_yaml_style_float(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && (s[i] == '-' || s[i] == '+'))
        i++;
    if (i < len && s[i] == '.') {
        size_t n = count_digits(s, len, i + 1);
        if (n == 0)
            return 0;
        i += 1 + n;
    } else {
        size_t n = count_digits(s, len, i);
        if (n == 0)
            return 0;
        i += n;
        if (i < len && s[i] == '.')
            i += 1 + count_digits(s, len, i + 1);
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '-' || s[i] == '+'))
            i++;
        size_t n = count_digits(s, len, i);
        if (n == 0)
            return 0;
        i += n;
    }
    return i == len;
}

/* Converts a float spelling that is already known to be well formed;
 * fails, like Go's ParseFloat, when the value is out of range. */
static int parse_float_text(const char *s, size_t len, double *out)
{
    char tmp[64];
    if (len >= sizeof tmp)
        return -1;
    memcpy(tmp, s, len);
    tmp[len] = '\0';
    char *end;
    double f = strtod(tmp, &end);
    if (*end != '\0' || f > DBL_MAX || f < -DBL_MAX)
        return -1;
    *out = f;
    return 0;
}

static int two_digits_max(const char *s, size_t len, size_t *i, int max)
{
    size_t n = count_digits(s, len, *i);
    if (n < 1 || n > 2)
        return -1;
    int v = s[*i] - '0';
    if (n == 2)
        v = v * 10 + (s[*i + 1] - '0');
    *i += n;
    return v <= max ? v : -1;
}

/* yaml.v3 accepts YYYY-M-D, optionally followed by [Tt ]H:M:S[.frac] and,
 * after T/t, a zone (Z or ±hh:mm). This checks that shape and the field
 * ranges; it does not check days per month. */
static int looks_like_timestamp(const char *s, size_t len)
{
    if (count_digits(s, len, 0) != 4 || len < 8 || s[4] != '-')
        return 0;
    size_t i = 5;
    if (two_digits_max(s, len, &i, 12) < 1 || i >= len || s[i++] != '-' ||
        two_digits_max(s, len, &i, 31) < 1)
        return 0;
    if (i == len)
        return 1;
    char sep = s[i++];
    if (sep != 'T' && sep != 't' && sep != ' ')
        return 0;
    if (two_digits_max(s, len, &i, 23) < 0 || i >= len || s[i++] != ':' ||
        two_digits_max(s, len, &i, 59) < 0 || i >= len || s[i++] != ':' ||
        two_digits_max(s, len, &i, 59) < 0)
        return 0;
    if (i < len && s[i] == '.') {
        size_t n = count_digits(s, len, i + 1);
        if (n == 0)
            return 0;
        i += 1 + n;
    }
    if (sep == ' ')
        return i == len;
    if (i < len && s[i] == 'Z')
        return i + 1 == len;
    if (i < len && (s[i] == '+' || s[i] == '-')) {
        i++;
        return two_digits_max(s, len, &i, 23) >= 0 && i < len && s[i++] == ':' &&
               two_digits_max(s, len, &i, 59) >= 0 && i == len;
    }
    return 0;
}

/* Resolves a numeric-looking plain scalar (first byte a digit or sign). */
static yaml_v3_class resolve_number(const char *s, size_t len, yaml_v3_number *num)
{
    if (looks_like_timestamp(s, len))
        return YAML_V3_TIMESTAMP;
    char plain[64];
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '_')
            continue;
        if (n == sizeof plain)
            return YAML_V3_STR;   /* longer than any number yaml.v3 would accept */
        plain[n++] = s[i];
    }
    if (parse_go_int(plain, n, num) == 0)
        return YAML_V3_INT;
    if (is_yaml_style_float(plain, n) && parse_float_text(plain, n, &num->f) == 0)
        return YAML_V3_FLOAT;
    return YAML_V3_STR;
}

yaml_v3_class yaml_v3_resolve_plain(const char *s, size_t len, yaml_v3_number *num)
{
    yaml_v3_class cls;
    *num = (yaml_v3_number){0};
    if (match_fixed_word(s, len, &cls, num))
        return cls;
    char first = s[0];
    if (first == '.') {
        if (is_yaml_style_float(s, len) && parse_float_text(s, len, &num->f) == 0)
            return YAML_V3_FLOAT;
        return YAML_V3_STR;
    }
    if ((first >= '0' && first <= '9') || first == '-' || first == '+')
        return resolve_number(s, len, num);
    return YAML_V3_STR;
}

static int has_explicit_tag(const yaml_char_t *tag)
{
    return tag && strcmp((const char *)tag, "!") != 0;
}

static yaml_v3_class class_of_standard_tag(const char *tag)
{
    static const struct { const char *name; yaml_v3_class cls; } known[] = {
        {TAG_PREFIX "null", YAML_V3_NULL}, {TAG_PREFIX "bool", YAML_V3_BOOL},
        {TAG_PREFIX "int", YAML_V3_INT}, {TAG_PREFIX "float", YAML_V3_FLOAT},
        {TAG_PREFIX "timestamp", YAML_V3_TIMESTAMP},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(tag, known[i].name) == 0)
            return known[i].cls;
    return YAML_V3_STR;
}

yaml_v3_class yaml_v3_classify(const yaml_event_t *ev, yaml_v3_number *num)
{
    const char *text = (const char *)ev->data.scalar.value;
    size_t len = ev->data.scalar.length;
    *num = (yaml_v3_number){0};
    if (has_explicit_tag(ev->data.scalar.tag)) {
        yaml_v3_class want = class_of_standard_tag((const char *)ev->data.scalar.tag);
        if (want == YAML_V3_STR)
            return YAML_V3_STR;
        yaml_v3_class got = yaml_v3_resolve_plain(text, len, num);
        if (want == YAML_V3_FLOAT && got == YAML_V3_INT) {
            num->f = num->is_unsigned ? (double)num->u : (double)num->i;
            return YAML_V3_FLOAT;
        }
        return got == want ? got : YAML_V3_STR;
    }
    if (ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return YAML_V3_STR;
    return yaml_v3_resolve_plain(text, len, num);
}

int yaml_v3_is_str(const yaml_event_t *ev)
{
    if (ev->type != YAML_SCALAR_EVENT)
        return 0;
    const yaml_char_t *tag = ev->data.scalar.tag;
    if (has_explicit_tag(tag))
        return strcmp((const char *)tag, TAG_PREFIX "str") == 0;
    yaml_v3_number num;
    return yaml_v3_classify(ev, &num) == YAML_V3_STR;
}

int yaml_v3_is_null(const yaml_event_t *ev)
{
    yaml_v3_number num;
    return ev->type == YAML_SCALAR_EVENT && yaml_v3_classify(ev, &num) == YAML_V3_NULL;
}

int yaml_v3_kind_of(const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_SCALAR_EVENT: return YAML_V3_KIND_SCALAR;
    case YAML_SEQUENCE_START_EVENT: return YAML_V3_KIND_SEQUENCE;
    case YAML_MAPPING_START_EVENT: return YAML_V3_KIND_MAPPING;
    case YAML_ALIAS_EVENT: return YAML_V3_KIND_ALIAS;
    default: return YAML_V3_KIND_NONE;
    }
}

int yaml_v3_append_tag(buf *out, const yaml_event_t *ev)
{
    const yaml_char_t *tag = NULL;
    if (ev->type == YAML_SCALAR_EVENT)
        tag = ev->data.scalar.tag;
    else if (ev->type == YAML_SEQUENCE_START_EVENT)
        tag = ev->data.sequence_start.tag;
    else if (ev->type == YAML_MAPPING_START_EVENT)
        tag = ev->data.mapping_start.tag;
    if (has_explicit_tag(tag)) {
        const char *t = (const char *)tag;
        if (strncmp(t, TAG_PREFIX, strlen(TAG_PREFIX)) == 0)
            return buf_printf(out, "!!%s", t + strlen(TAG_PREFIX));
        return buf_append_str(out, t);
    }
    if (ev->type == YAML_SEQUENCE_START_EVENT)
        return buf_append_str(out, "!!seq");
    if (ev->type == YAML_MAPPING_START_EVENT)
        return buf_append_str(out, "!!map");
    yaml_v3_number num;
    return buf_append_str(out, class_tag[yaml_v3_classify(ev, &num)]);
}
