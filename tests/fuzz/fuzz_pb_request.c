/* Differential fuzzing of pb_request, the in-place EvaluateFunctionRequest
 * decoder the server uses, against protobuf-c's generated unpack, which it
 * replaced: on every input both must accept or both refuse, and accepted
 * requests must mean the same resource_list and image. The one allowed
 * difference: field keys whose number is 0 or beyond 2^29-1 (or whose value
 * exceeds 32 bits), which protobuf-c may truncate and keep as an unknown
 * field, and pb_request refuses as grpc-go's protowire does; and an image
 * that is not UTF-8, which protobuf-c does not check and grpc-go refuses. */
#include <string.h>

#include "runtime/pb_request.h"
#include "evaluator.pb-c.h"
#include "fuzz_common.h"

/* True when the input holds a field key out of protobuf's range (walking
 * the top-level fields the way a decoder would, as far as they parse). */
static int has_bad_field_number(const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    while (p < end) {
        uint64_t key = 0, v = 0;
        int shift = 0;
        while (p < end && shift < 70) {
            key |= (uint64_t)(*p & 0x7f) << shift;
            shift += 7;
            if (!(*p++ & 0x80))
                break;
        }
        if (key >> 3 == 0 || key > 0xffffffffu || key >> 3 > 536870911)
            return 1;
        unsigned wire = key & 7;
        if (wire == 0) {
            while (p < end && (*p++ & 0x80))
                ;
        } else if (wire == 1 || wire == 5) {
            size_t skip = wire == 1 ? 8 : 4;
            if ((size_t)(end - p) < skip)
                return 0;
            p += skip;
        } else if (wire == 2) {
            shift = 0;
            while (p < end && shift < 70) {
                v |= (uint64_t)(*p & 0x7f) << shift;
                shift += 7;
                if (!(*p++ & 0x80))
                    break;
            }
            if (v > (uint64_t)(end - p))
                return 0;
            p += v;
        } else {
            return 0;
        }
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pb_eval_request r;
    buf why = {0};
    int rc = pb_eval_request_decode(data, size, &r, &why);
    Evaluator__EvaluateFunctionRequest *ref =
        evaluator__evaluate_function_request__unpack(NULL, size, data);
    if (rc == 0) {
        FUZZ_CHECK(ref != NULL);
        FUZZ_CHECK(r.resource_list_len == ref->resource_list.len);
        FUZZ_CHECK(!r.resource_list_len ||
                   !memcmp(r.resource_list, ref->resource_list.data, r.resource_list_len));
        FUZZ_CHECK(r.resource_list == NULL ||
                   (r.resource_list >= data && r.resource_list + r.resource_list_len <= data + size));
        FUZZ_CHECK(!strcmp(r.image, ref->image ? ref->image : ""));
        FUZZ_CHECK(!strcmp(r.tag, ref->tag ? ref->tag : ""));
        pb_eval_request_free(&r);
    } else {
        FUZZ_CHECK(why.len > 0);
        FUZZ_CHECK(ref == NULL || has_bad_field_number(data, size) ||
                   strstr(why.data, "invalid UTF-8") != NULL);   /* protobuf-c does not check */
    }
    buf_free(&why);
    if (ref)
        evaluator__evaluate_function_request__free_unpacked(ref, NULL);
    return 0;
}
