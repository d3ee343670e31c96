/* Fuzzes lib/core/json, the reader of registry answers and Docker config files
 * (untrusted network input): parse must either fail with a reason or give
 * a tree whose every string survives json_write_string and a second parse
 * byte for byte (embedded NULs included), json_get must find each
 * object's members, and the whole tree written with json_write_tree (what
 * serve hands its FunctionConfig reader) must read back as a tree written
 * the same, and stop near a bound it passes. */
#include <stdint.h>
#include <string.h>

#include "core/json.h"
#include "fuzz_common.h"

static void check_string_round_trip(const json *v)
{
    buf lit = {0}, err = {0};
    FUZZ_CHECK(json_write_string(&lit, v->str, v->len) == 0);
    json *again = json_parse(lit.data, lit.len, &err);
    FUZZ_CHECK(again && again->type == JSON_STRING);
    FUZZ_CHECK(again->len == v->len && !memcmp(again->str, v->str, v->len));
    json_free(again);
    buf_free(&lit);
    buf_free(&err);
}

static void walk(const json *v)
{
    if (v->type == JSON_STRING)
        check_string_round_trip(v);
    if (v->type != JSON_ARRAY && v->type != JSON_OBJECT)
        return;
    for (size_t i = 0; i < v->len; i++) {
        FUZZ_CHECK(v->items[i] != NULL);
        if (v->type == JSON_OBJECT)
            FUZZ_CHECK(json_get(v, v->keys[i]) != NULL);
        walk(v->items[i]);
    }
}

static void check_tree_round_trip(const json *v)
{
    buf text = {0}, again = {0}, err = {0}, cut = {0};
    int whole = json_write_tree(&text, v, SIZE_MAX);
    if (whole == -2) {   /* a number past JSON's range (1e400): refused, not written */
        buf_free(&text);
        return;
    }
    FUZZ_CHECK(whole == 0);
    json *back = json_parse(text.data, text.len, &err);
    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK(json_write_tree(&again, back, SIZE_MAX) == 0);
    FUZZ_CHECK(again.len == text.len && !memcmp(again.data, text.data, text.len));
    /* past a bound: stopped within one scalar of it (a string of the input) */
    int rc = json_write_tree(&cut, v, 64);
    FUZZ_CHECK(rc == 0 ? cut.len == text.len : rc == 1 && cut.len > 64 && cut.len <= 64 + text.len);
    json_free(back);
    buf_free(&text);
    buf_free(&again);
    buf_free(&err);
    buf_free(&cut);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    buf err = {0};
    json *v = json_parse((const char *)data, size, &err);
    if (v) {
        walk(v);
        check_tree_round_trip(v);
    }
    else
        FUZZ_CHECK(err.len > 0);
    json_free(v);
    buf_free(&err);
    return 0;
}
