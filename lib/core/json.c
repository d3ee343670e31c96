/* json: a strict JSON reader into a tree; see json.h. */
#include "core/json.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

typedef struct parser {
    const char *p, *start, *end;
    buf *err;
    int depth;
    size_t values_left;   /* the caller's budget of values (tree nodes) */
    size_t max_values;
} parser;

static json *parse_value(parser *ps);

static void *fail(parser *ps, const char *reason)
{
    if (ps->err && ps->err->len == 0)
        buf_printf(ps->err, "offset %zu: %s", (size_t)(ps->p - ps->start), reason);
    return NULL;
}

/* fail, for the parts that answer 0 or -1 */
static int fail_code(parser *ps, const char *reason)
{
    fail(ps, reason);
    return -1;
}

static void skip_ws(parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static json *new_value(parser *ps, json_type t)
{
    if (ps->values_left == 0) {
        if (ps->err && ps->err->len == 0)
            buf_printf(ps->err, "offset %zu: more than %zu JSON values (the limit for this document)",
                       (size_t)(ps->p - ps->start), ps->max_values);
        return NULL;
    }
    ps->values_left--;
    json *v = calloc(1, sizeof *v);
    if (!v)
        return fail(ps, "out of memory");
    v->type = t;
    return v;
}

static json *parse_literal(parser *ps, const char *word, json_type t)
{
    size_t n = strlen(word);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n))
        return fail(ps, "invalid literal");
    ps->p += n;
    return new_value(ps, t);
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

static json *parse_number(parser *ps)
{
    const char *s = ps->p;
    if (ps->p < ps->end && *ps->p == '-')
        ps->p++;
    if (ps->p < ps->end && *ps->p == '0')
        ps->p++;
    else if (ps->p < ps->end && is_digit(*ps->p))
        while (ps->p < ps->end && is_digit(*ps->p))
            ps->p++;
    else
        return fail(ps, "invalid number");
    if (ps->p < ps->end && *ps->p == '.') {
        ps->p++;
        if (ps->p >= ps->end || !is_digit(*ps->p))
            return fail(ps, "invalid number: digit expected after '.'");
        while (ps->p < ps->end && is_digit(*ps->p))
            ps->p++;
    }
    if (ps->p < ps->end && (*ps->p == 'e' || *ps->p == 'E')) {
        ps->p++;
        if (ps->p < ps->end && (*ps->p == '+' || *ps->p == '-'))
            ps->p++;
        if (ps->p >= ps->end || !is_digit(*ps->p))
            return fail(ps, "invalid number: digit expected in exponent");
        while (ps->p < ps->end && is_digit(*ps->p))
            ps->p++;
    }
    char tmp[64];
    size_t n = (size_t)(ps->p - s);
    json *v = new_value(ps, JSON_NUMBER);
    if (v) {
        if (n >= sizeof tmp)
            n = sizeof tmp - 1;   /* precision beyond this is irrelevant here */
        memcpy(tmp, s, n);
        tmp[n] = '\0';
        v->number = strtod(tmp, NULL);
    }
    return v;
}

static int hex4(parser *ps, unsigned *out)
{
    if (ps->end - ps->p < 4)
        return -1;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = ps->p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v * 16 + (unsigned)d;
    }
    ps->p += 4;
    *out = v;
    return 0;
}

static int put_utf8(buf *b, unsigned cp)
{
    char o[4];
    size_t n;
    if (cp < 0x80) {
        o[0] = (char)cp, n = 1;
    } else if (cp < 0x800) {
        o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
    } else if (cp < 0x10000) {
        o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
    } else {
        o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
    }
    return buf_append(b, o, n);
}

/* After "\u" has been read: one code point, pairing surrogates. */
static int unicode_escape(parser *ps, buf *out)
{
    unsigned cp;
    if (hex4(ps, &cp) < 0)
        return fail_code(ps, "invalid \\u escape");
    if (cp >= 0xD800 && cp < 0xDC00 && ps->end - ps->p >= 6 && ps->p[0] == '\\' && ps->p[1] == 'u') {
        const char *save = ps->p;
        unsigned lo;
        ps->p += 2;
        if (hex4(ps, &lo) == 0 && lo >= 0xDC00 && lo < 0xE000)
            return put_utf8(out, 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00));
        ps->p = save;
    }
    if (cp >= 0xD800 && cp < 0xE000)
        cp = 0xFFFD;
    return put_utf8(out, cp);
}

static int escape(parser *ps, buf *out)
{
    if (ps->p >= ps->end)
        return fail_code(ps, "unterminated string");
    char c = *ps->p++;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *hit = strchr(from, c);
    if (c && hit)
        return buf_append(out, &to[hit - from], 1);
    if (c == 'u')
        return unicode_escape(ps, out);
    ps->p--;
    return fail_code(ps, "invalid escape in string");
}

static int parse_string_into(parser *ps, buf *out)
{
    ps->p++;   /* opening quote */
    for (;;) {
        if (ps->p >= ps->end)
            return fail_code(ps, "unterminated string");
        unsigned char c = (unsigned char)*ps->p;
        if (c == '"') {
            ps->p++;
            return buf_append(out, "", 0);   /* data is never NULL afterwards */
        }
        if (c < 0x20)
            return fail_code(ps, "control character in string");
        if (c == '\\') {
            ps->p++;
            if (escape(ps, out) < 0)
                return -1;
            continue;
        }
        uint32_t cp;
        size_t n = utf8_decode((const unsigned char *)ps->p, (size_t)(ps->end - ps->p), &cp);
        if (!n)
            return fail_code(ps, "invalid UTF-8 in string");
        if (buf_append(out, ps->p, n) < 0)
            return fail_code(ps, "out of memory");
        ps->p += n;
    }
}

static json *parse_string(parser *ps)
{
    buf s = {0};
    if (parse_string_into(ps, &s) < 0) {
        buf_free(&s);
        return NULL;
    }
    json *v = new_value(ps, JSON_STRING);
    if (!v) {
        buf_free(&s);
        return NULL;
    }
    v->str = buf_steal(&s, &v->len);
    return v;
}

static int add_member(parser *ps, json *v, char *key, json *item)
{
    /* capacity doubles: growing by one member per realloc copied the
     * array each time, quadratic in a registry's 100,000-element array */
    if (v->len == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 4;
        json **items = realloc(v->items, cap * sizeof *items);
        if (items)
            v->items = items;
        char **keys = v->type == JSON_OBJECT && items ? realloc(v->keys, cap * sizeof *keys) : NULL;
        if (keys)
            v->keys = keys;
        if (!items || (v->type == JSON_OBJECT && !keys))
            return fail_code(ps, "out of memory");
        v->cap = cap;
    }
    v->items[v->len] = item;
    if (v->type == JSON_OBJECT)
        v->keys[v->len] = key;
    v->len++;
    return 0;
}

/* One "key": value member of an object, at the opening quote of the key. */
static int parse_member(parser *ps, json *obj)
{
    buf key = {0};
    if (ps->p >= ps->end || *ps->p != '"')
        return fail_code(ps, "object member name expected");
    if (parse_string_into(ps, &key) < 0) {
        buf_free(&key);
        return -1;
    }
    skip_ws(ps);
    if (ps->p >= ps->end || *ps->p != ':') {
        buf_free(&key);
        return fail_code(ps, "':' expected after member name");
    }
    ps->p++;
    json *item = parse_value(ps);
    if (!item) {
        buf_free(&key);
        return -1;
    }
    char *k = buf_steal(&key, NULL);
    if (!k || add_member(ps, obj, k, item) < 0) {
        free(k);
        json_free(item);
        return -1;
    }
    return 0;
}

/* Arrays and objects: open is '[' or '{'. */
static json *parse_container(parser *ps, json_type t)
{
    char close = t == JSON_ARRAY ? ']' : '}';
    if (++ps->depth > JSON_MAX_DEPTH)
        return fail(ps, "nested too deeply");
    json *v = new_value(ps, t);
    if (!v)
        return NULL;
    ps->p++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return v;
    }
    for (;;) {
        skip_ws(ps);
        if (t == JSON_OBJECT ? parse_member(ps, v) < 0 : 0)
            break;
        if (t == JSON_ARRAY) {
            json *item = parse_value(ps);
            if (!item)
                break;
            if (add_member(ps, v, NULL, item) < 0) {
                json_free(item);
                break;
            }
        }
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            ps->depth--;
            return v;
        }
        fail(ps, t == JSON_ARRAY ? "',' or ']' expected" : "',' or '}' expected");
        break;
    }
    json_free(v);
    return NULL;
}

static json *parse_value(parser *ps)
{
    skip_ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of input");
    switch (*ps->p) {
    case '{': return parse_container(ps, JSON_OBJECT);
    case '[': return parse_container(ps, JSON_ARRAY);
    case '"': return parse_string(ps);
    case 't': return parse_literal(ps, "true", JSON_TRUE);
    case 'f': return parse_literal(ps, "false", JSON_FALSE);
    case 'n': return parse_literal(ps, "null", JSON_NULL);
    default:
        if (*ps->p == '-' || is_digit(*ps->p))
            return parse_number(ps);
        return fail(ps, "unexpected character");
    }
}

json *json_parse(const char *data, size_t len, buf *err)
{
    return json_parse_max(data, len, SIZE_MAX, err);
}

json *json_parse_max(const char *data, size_t len, size_t max_values, buf *err)
{
    parser ps = {.p = data, .start = data, .end = data + len, .err = err, .values_left = max_values,
                  .max_values = max_values};
    if (err)
        buf_reset(err);
    json *v = parse_value(&ps);
    if (!v)
        return NULL;
    skip_ws(&ps);
    if (ps.p != ps.end) {
        json_free(v);
        return fail(&ps, "unexpected data after the JSON value");
    }
    return v;
}

void json_free(json *v)
{
    if (!v)
        return;
    for (size_t i = 0; (v->type == JSON_ARRAY || v->type == JSON_OBJECT) && i < v->len; i++) {
        json_free(v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->str);
    free(v);
}

const json *json_get(const json *v, const char *key)
{
    if (!v || v->type != JSON_OBJECT)
        return NULL;
    for (size_t i = v->len; i-- > 0;)
        if (!strcmp(v->keys[i], key))
            return v->items[i];
    return NULL;
}

const char *json_str(const json *v)
{
    return v && v->type == JSON_STRING ? v->str : NULL;
}

const char *json_get_str(const json *v, const char *key)
{
    return json_str(json_get(v, key));
}

/* The one tree writer: colon and comma are the separators (Go's compact
 * form, or with the space YAML's flow style needs). */
static int write_tree(buf *out, const json *v, size_t max, const char *colon, const char *comma)
{
    int rc = 0;
    switch (v->type) {
    case JSON_NULL:
        return buf_append_str(out, "null");
    case JSON_FALSE:
        return buf_append_str(out, "false");
    case JSON_TRUE:
        return buf_append_str(out, "true");
    case JSON_NUMBER:
        if (!isfinite(v->number))
            return -2;
        return json_write_float(out, v->number);
    case JSON_STRING:
        return json_write_string(out, v->str, v->len);
    case JSON_ARRAY:
    case JSON_OBJECT:
        /* depth is the reader's (JSON_MAX_DEPTH): the recursion is bounded */
        rc = buf_append_str(out, v->type == JSON_ARRAY ? "[" : "{");
        for (size_t i = 0; i < v->len && rc == 0; i++) {
            if (i)
                rc = buf_append_str(out, comma);
            if (rc == 0 && v->type == JSON_OBJECT) {
                rc = json_write_string(out, v->keys[i], strlen(v->keys[i]));
                rc = rc < 0 ? rc : buf_append_str(out, colon);
            }
            rc = rc < 0 ? rc : write_tree(out, v->items[i], max, colon, comma);
            if (rc == 0 && out->len > max)
                rc = 1;
        }
        if (rc)
            return rc;
        return buf_append_str(out, v->type == JSON_ARRAY ? "]" : "}") < 0 ? -1 : 0;
    }
    return -1;
}

int json_write_tree(buf *out, const json *v, size_t max)
{
    return write_tree(out, v, max, ": ", ", ");
}

int json_write_value(buf *out, const json *v)
{
    return write_tree(out, v, SIZE_MAX, ":", ",") == 0 ? 0 : -1;
}
