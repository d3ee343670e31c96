/* Unit tests for pb_request, the in-place EvaluateFunctionRequest decoder:
 * each case is checked against protobuf-c's generated unpack, the decoder
 * it replaces, so the two agree on what a request means. */
#include <criterion/criterion.h>
#include <string.h>

#include "runtime/pb_request.h"
#include "evaluator.pb-c.h"
#include "scoped_buf.h"

/* Decodes with both; asserts they agree; returns our result code. */
static int decode_both(const uint8_t *msg, size_t len, pb_eval_request *r)
{
    SCOPED_BUF why = {0};
    int rc = pb_eval_request_decode(msg, len, r, &why);
    Evaluator__EvaluateFunctionRequest *ref =
        evaluator__evaluate_function_request__unpack(NULL, len, msg);
    cr_assert_eq(rc == 0, ref != NULL, "decoder %s, protobuf-c %s (%s)", rc ? "failed" : "ok",
                 ref ? "ok" : "failed", rc ? why.data : "");
    if (ref) {
        cr_assert_eq(r->resource_list_len, ref->resource_list.len);
        if (ref->resource_list.len)
            cr_assert(!memcmp(r->resource_list, ref->resource_list.data, ref->resource_list.len));
        cr_assert_str_eq(r->image, ref->image ? ref->image : "");
        cr_assert_str_eq(r->tag, ref->tag ? ref->tag : "");
        evaluator__evaluate_function_request__free_unpacked(ref, NULL);
    }
    return rc;
}

#define MSG(...) ((const uint8_t[]){__VA_ARGS__})

Test(pb_request, both_fields_point_into_the_message)
{
    const uint8_t m[] = {0x0a, 3, 'a', 'b', 'c', 0x12, 2, 'f', 'n'};
    pb_eval_request r;
    cr_assert_eq(decode_both(m, sizeof m, &r), 0);
    cr_assert_eq(r.resource_list, m + 2, "not in place");
    cr_assert_str_eq(r.image, "fn");
    pb_eval_request_free(&r);
}

Test(pb_request, empty_message_is_a_request_with_nothing)
{
    pb_eval_request r;
    cr_assert_eq(decode_both(MSG(0), 0, &r), 0);
    cr_assert_null(r.resource_list);
    cr_assert_str_eq(r.image, "");
    pb_eval_request_free(&r);
}

Test(pb_request, last_occurrence_wins_and_unknown_fields_are_skipped)
{
    const uint8_t m[] = {0x0a, 1, 'x', 0x20, 0x96, 0x01, 0x21, 1, 2, 3, 4, 5, 6, 7, 8,
                         0x2d, 1, 2, 3, 4, 0x3a, 2, 'z', 'z', 0x0a, 1, 'y'};
    pb_eval_request r;
    cr_assert_eq(decode_both(m, sizeof m, &r), 0);
    cr_assert_eq(r.resource_list_len, 1);
    cr_assert_eq(r.resource_list[0], 'y');
    pb_eval_request_free(&r);
}

Test(pb_request, malformed_messages_are_refused)
{
    const struct { const uint8_t *m; size_t n; } bad[] = {
        {MSG(0x0a, 5, 'a'), 3},                  /* length beyond the end */
        {MSG(0x0a), 1},                          /* length missing */
        {MSG(0x08, 1), 2},                       /* field 1 as a varint */
        {MSG(0x15, 1, 2, 3, 4), 5},              /* field 2 as fixed32 */
        {MSG(0x18, 1), 2},                       /* field 3 (Tag) as a varint */
        {MSG(0x1a, 3, 'v', '1'), 4},             /* Tag cut short */
        {MSG(0x1b), 1},                          /* start group */
        {MSG(0x1f), 1},                          /* wire type 7 */
        {MSG(0x19, 1, 2), 3},                    /* fixed64 cut short */
        {MSG(0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), 12},
        {MSG(0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f), 6},   /* a 4 GiB field */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        pb_eval_request r;
        cr_assert_eq(decode_both(bad[i].m, bad[i].n, &r), -1, "case %zu", i);
    }
}

Test(pb_request, image_must_be_utf8_as_grpc_go_requires)
{
    pb_eval_request r;
    SCOPED_BUF why = {0};
    const uint8_t bad[] = {0x12, 3, 0xff, 'i', 'm'};
    cr_assert_eq(pb_eval_request_decode(bad, sizeof bad, &r, &why), -1);
    cr_assert_str_eq(why.data, "field 2: string field contains invalid UTF-8");
    const uint8_t good[] = {0x12, 4, 0xc3, 0xa9, 'f', 'n'};   /* "éfn" */
    cr_assert_eq(pb_eval_request_decode(good, sizeof good, &r, &why), 0);
    cr_assert_str_eq(r.image, "\xc3\xa9" "fn");
    pb_eval_request_free(&r);
}

Test(pb_request, field_number_zero_is_refused_with_a_reason)
{
    pb_eval_request r;
    SCOPED_BUF why = {0};
    cr_assert_eq(pb_eval_request_decode(MSG(0x00, 0x00), 2, &r, &why), -1);
    cr_assert_str_eq(why.data, "field 0: illegal field number");
}

Test(pb_request, image_keeps_its_length_past_a_nul)
{
    const uint8_t m[] = {0x12, 5, 'f', 'n', 0, 'x', 'y'};
    pb_eval_request r;
    cr_assert_eq(decode_both(m, sizeof m, &r), 0);
    cr_assert_eq(r.image_len, 5, "the NUL must not end the image: the service refuses it");
    cr_assert(!memcmp(r.image, "fn\0xy", 5));
    pb_eval_request_free(&r);
}

Test(pb_request, tag_is_field_3_as_porch_numbers_it)
{
    const uint8_t m[] = {0x1a, 2, '^', '1', 0x12, 2, 'f', 'n', 0x1a, 4, '~', '1', '.', '2'};
    pb_eval_request r;
    cr_assert_eq(decode_both(m, sizeof m, &r), 0);
    cr_assert_str_eq(r.image, "fn");
    cr_assert_str_eq(r.tag, "~1.2", "the last Tag wins");
    cr_assert_eq(r.tag_len, 4);
    pb_eval_request_free(&r);
    SCOPED_BUF why = {0};
    const uint8_t bad[] = {0x1a, 2, 0xc3, 'x'};
    cr_assert_eq(pb_eval_request_decode(bad, sizeof bad, &r, &why), -1);
    cr_assert_str_eq(why.data, "field 3: string field contains invalid UTF-8");
    cr_assert_eq(decode_both(MSG(0x12, 1, 'f'), 3, &r), 0);
    cr_assert_str_eq(r.tag, "", "no Tag is an empty one");
    pb_eval_request_free(&r);
}
