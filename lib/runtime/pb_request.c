/* pb_request: in-place EvaluateFunctionRequest decoding; see pb_request.h. */
#include "runtime/pb_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "grpc/grpc_status.h"

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_SGROUP = 3, WIRE_EGROUP = 4,
       WIRE_I32 = 5 };

/* Reads a varint of at most max_bytes at *p (< end). Returns 0, or -1 when
 * truncated or longer. Values take up to 10 bytes; field keys and lengths
 * up to 5 (32 bits), as protobuf-c and upb read them. */
static int read_varint_n(const uint8_t **p, const uint8_t *end, int max_bytes, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 7 * max_bytes; shift += 7) {
        if (*p >= end)
            return -1;
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    return read_varint_n(p, end, 10, out);
}

/* Skips the value of an unknown field. Returns 0 or -1. */
static int skip_value(const uint8_t **p, const uint8_t *end, unsigned wire)
{
    uint64_t n;
    switch (wire) {
    case WIRE_VARINT:
        return read_varint(p, end, &n);
    case WIRE_I64:
        n = 8;
        break;
    case WIRE_I32:
        n = 4;
        break;
    case WIRE_LEN:
        if (read_varint_n(p, end, 5, &n) < 0)
            return -1;
        break;
    default:
        return -1;   /* groups (deprecated) and wire types 6, 7 */
    }
    if (n > (uint64_t)(end - *p))
        return -1;
    *p += n;
    return 0;
}

static int fail(buf *why, const char *text, uint64_t field)
{
    return buf_fail(why, "field %llu: %s", (unsigned long long)field, text);
}

/* A NUL-terminated copy of a string field's n bytes (a NUL inside kept). */
static char *copy_string(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        if (n)
            memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

int pb_eval_request_decode(const uint8_t *msg, size_t len, pb_eval_request *out, buf *why)
{
    const uint8_t *p = msg, *end = msg + len;
    const uint8_t *text[2] = {NULL, NULL};   /* image, Tag */
    size_t text_len[2] = {0, 0};
    *out = (pb_eval_request){0};
    while (p < end) {
        uint64_t key, n;
        if (read_varint_n(&p, end, 5, &key) < 0 || key > 0xffffffffu)
            return buf_fail(why, "truncated or overlong field key");
        uint64_t field = key >> 3;
        unsigned wire = (unsigned)(key & 7);
        if (field == 0 || field > 536870911)   /* 1 .. 2^29-1 */
            return fail(why, "illegal field number", field);
        if (field < 1 || field > 3) {
            if (skip_value(&p, end, wire) < 0)
                return fail(why, "bad or truncated value", field);
            continue;
        }
        if (wire != WIRE_LEN)
            return fail(why, "wrong wire type", field);
        if (read_varint_n(&p, end, 5, &n) < 0 || n > (uint64_t)(end - p))
            return fail(why, "truncated", field);
        if (field == 1) {
            out->resource_list = p;
            out->resource_list_len = (size_t)n;
        } else {
            if (!utf8_valid((const char *)p, (size_t)n))
                return fail(why, "string field contains invalid UTF-8", field);
            text[field - 2] = p;
            text_len[field - 2] = (size_t)n;
        }
        p += n;
    }
    if (!(out->image = copy_string(text[0], text_len[0])) ||
        !(out->tag = copy_string(text[1], text_len[1]))) {
        pb_eval_request_free(out);
        return buf_fail(why, "out of memory");
    }
    out->image_len = text_len[0];
    out->tag_len = text_len[1];
    return 0;
}

void pb_eval_request_free(pb_eval_request *r)
{
    free(r->image);
    free(r->tag);
    r->image = r->tag = NULL;
}

int pb_eval_request_peek_list(const uint8_t *msg, size_t have, size_t total, size_t *off,
                              size_t *len)
{
    if (have < 2 || msg[0] != (1 << 3 | 2))   /* field 1, length-delimited */
        return 0;
    const uint8_t *p = msg + 1;
    uint64_t v;
    if (read_varint(&p, msg + have, &v) < 0 || v > total - (size_t)(p - msg))
        return 0;   /* cut short or running past the message: the decoder will say so */
    *off = (size_t)(p - msg);
    *len = (size_t)v;
    return 1;
}
