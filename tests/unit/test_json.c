/* Unit tests for lib/core/json: values, escapes (surrogate pairs, lone
 * surrogates, \u0000), strictness (trailing data, control characters,
 * invalid UTF-8, bad numbers, depth limit), lookups and the string writer. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "core/json.h"

static json *ok(const char *text)
{
    buf err = {0};
    json *v = json_parse(text, strlen(text), &err);
    cr_assert_not_null(v, "rejected %s: %s", text, err.data);
    buf_free(&err);
    return v;
}

static void bad(const char *text, const char *want)
{
    buf err = {0};
    json *v = json_parse(text, strlen(text), &err);
    cr_expect_null(v, "accepted %s", text);
    json_free(v);
    cr_expect(err.data && strstr(err.data, want), "%s: got \"%s\", want \"%s\"", text, err.data, want);
    buf_free(&err);
}

Test(json, values)
{
    json *v = ok(" {\"a\": [1, -2.5e2, true, false, null], \"b\": {\"c\": \"d\"}, \"a2\": {}} ");
    const json *a = json_get(v, "a");
    cr_assert_eq(a->type, JSON_ARRAY);
    cr_assert_eq(a->len, 5);
    cr_expect_eq(a->items[0]->number, 1);
    cr_expect_eq(a->items[1]->number, -250);
    cr_expect_eq(a->items[2]->type, JSON_TRUE);
    cr_expect_eq(a->items[3]->type, JSON_FALSE);
    cr_expect_eq(a->items[4]->type, JSON_NULL);
    cr_expect_str_eq(json_get_str(json_get(v, "b"), "c"), "d");
    cr_expect_eq(json_get(v, "a2")->len, 0);
    cr_expect_null(json_get(v, "missing"));
    cr_expect_null(json_get_str(v, "a"));
    cr_expect_null(json_get(a, "x"));
    json_free(v);
}

Test(json, repeated_key_last_wins)
{
    json *v = ok("{\"k\":\"first\",\"k\":\"last\"}");
    cr_expect_str_eq(json_get_str(v, "k"), "last");
    json_free(v);
}

Test(json, escapes)
{
    json *v = ok("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\u0000z\"");
    const char want[] = "a\"b\\c/d\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80\0z";
    cr_assert_eq(v->len, sizeof want - 1);
    cr_expect_eq(memcmp(v->str, want, v->len), 0);
    json_free(v);
    v = ok("\"\\ud800x\\udc00\"");   /* lone surrogates: U+FFFD, as Go */
    cr_expect_str_eq(v->str, "\xef\xbf\xbdx\xef\xbf\xbd");
    json_free(v);
    v = ok("\"caf\xc3\xa9\"");
    cr_expect_str_eq(v->str, "caf\xc3\xa9");
    json_free(v);
}

Test(json, strictness)
{
    bad("", "unexpected end");
    bad("{} x", "unexpected data after");
    bad("{\"a\":1,}", "member name expected");
    bad("[1,]", "unexpected character");
    bad("[1 2]", "',' or ']' expected");
    bad("{\"a\" 1}", "':' expected");
    bad("{a:1}", "member name expected");
    bad("\"tab\there\"", "control character");
    bad("\"\\x\"", "invalid escape");
    bad("\"\\u12g4\"", "invalid \\u escape");
    bad("\"open", "unterminated string");
    bad("\"\xc3\"", "invalid UTF-8");
    bad("\"\xed\xa0\x80\"", "invalid UTF-8");   /* encoded surrogate */
    bad("\"\xc0\xaf\"", "invalid UTF-8");       /* overlong */
    bad("01", "unexpected data");
    bad("-", "invalid number");
    bad("1.", "digit expected after '.'");
    bad("1e", "digit expected in exponent");
    bad("tru", "invalid literal");
    bad("NaN", "unexpected character");
}

Test(json, depth_limit)
{
    char deep[2 * JSON_MAX_DEPTH + 8];
    size_t n = 0;
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i < JSON_MAX_DEPTH; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    json_free(ok(deep));
    memmove(deep + 1, deep, n + 1);
    deep[0] = '[';
    deep[n + 1] = ']';
    deep[n + 2] = '\0';
    bad(deep, "nested too deeply");
}

Test(json, write_string)
{
    buf out = {0};
    const char s[] = "a\"b\\c\n\x01\x7f\xc3\xa9<&>\xe2\x80\xa8";
    cr_assert_eq(json_write_string(&out, s, sizeof s - 1), 0);
    /* as Go's encoding/json: DEL as is, HTML characters and U+2028 escaped */
    cr_expect_str_eq(out.data, "\"a\\\"b\\\\c\\n\\u0001\x7f\xc3\xa9\\u003c\\u0026\\u003e\\u2028\"");
    json *v = ok(out.data);
    cr_expect_str_eq(v->str, s);
    json_free(v);
    buf_free(&out);
}

Test(json, write_string_replaces_bad_utf8)
{
    buf out = {0};
    const char s[] = "a\xff\xc3(";
    cr_assert_eq(json_write_string(&out, s, sizeof s - 1), 0);
    cr_expect_str_eq(out.data, "\"a\\ufffd\\ufffd(\"");
    buf_free(&out);
}

/* json_parse_max counts every value (containers included) against its
 * budget: a peer's document costs tree nodes only up to what it allows. */
Test(json, value_budget)
{
    buf err = {0};
    const char *doc = "{\"a\":[1,2,3]}";   /* 5 values */
    json *v = json_parse_max(doc, strlen(doc), 5, &err);
    cr_assert_not_null(v, "%s", err.data);
    json_free(v);
    cr_expect_null(json_parse_max(doc, strlen(doc), 4, &err));
    cr_expect_str_eq(err.data, "offset 11: more than 4 JSON values (the limit for this document)");
    buf_free(&err);
}

/* json_write_tree writes what json_parse reads back as the same value, and
 * with the spaces a YAML flow reader needs after ':' and ','. */
Test(json, write_tree_round_trip)
{
    const char *text = "{\"a\":[1,2.5,-0,true,false,null],\"s\":\"x\\u0000y\\u003c\\ud83d\\ude00\","
                       "\"o\":{},\"e\":[],\"k\":{\"n\":1e21}}";
    json *v = ok(text);
    buf out = {0};
    cr_assert_eq(json_write_tree(&out, v, SIZE_MAX), 0);
    cr_assert_str_eq(out.data, "{\"a\": [1, 2.5, -0, true, false, null], \"s\": \"x\\u0000y\\u003c\xf0\x9f\x98\x80\", "
                               "\"o\": {}, \"e\": [], \"k\": {\"n\": 1e+21}}");
    json *back = ok(out.data);
    buf again = {0};
    cr_assert_eq(json_write_tree(&again, back, SIZE_MAX), 0);
    cr_assert_str_eq(again.data, out.data);
    buf_free(&out);
    buf_free(&again);
    json_free(v);
    json_free(back);
}

/* A tree larger than max stops being written soon after max (within one
 * scalar), so a large object costs no more than the bound. */
Test(json, write_tree_stops_past_max)
{
    buf text = {0};
    buf_append_str(&text, "[");
    for (int i = 0; i < 10000; i++)
        buf_printf(&text, "%s\"%0100d\"", i ? "," : "", i);
    buf_append_str(&text, "]");
    json *v = ok(text.data);
    buf out = {0};
    cr_assert_eq(json_write_tree(&out, v, 1000), 1);
    cr_assert(out.len > 1000 && out.len < 1200, "%zu bytes written", out.len);
    buf_free(&text);
    buf_free(&out);
    json_free(v);
}

/* 1e400 reads as infinity, which JSON cannot hold: the writer refuses it
 * (-2) rather than write what no reader takes. */
Test(json, write_tree_refuses_infinity)
{
    json *v = ok("{\"a\": [1e400]}");
    buf out = {0};
    cr_assert_eq(json_write_tree(&out, v, SIZE_MAX), -2);
    buf_free(&out);
    json_free(v);
}
