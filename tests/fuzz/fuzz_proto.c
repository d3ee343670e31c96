/* Fuzzes protobuf decoding of every message the server and the client
 * unpack from the network (evaluator.proto, health.proto): each input is
 * decoded as each type. When decoding succeeds, the message is re-encoded:
 * get_packed_size must match what pack writes, and decoding and re-encoding
 * that output must give the same bytes again (a stable canonical form). */
#include <string.h>

#include "evaluator.pb-c.h"
#include "fuzz_common.h"
#include "health.pb-c.h"

static const ProtobufCMessageDescriptor *const types[] = {
    &evaluator__evaluate_function_request__descriptor,
    &evaluator__evaluate_function_response__descriptor,
    &evaluator__config_map__descriptor,
    &grpc__health__v1__health_check_request__descriptor,
    &grpc__health__v1__health_check_response__descriptor,
    &grpc__health__v1__health_list_request__descriptor,
    &grpc__health__v1__health_list_response__descriptor,
};

/* True when msg or a message inside it kept unknown fields. protobuf-c
 * accepts field number 0 spelled as a non-minimal varint (80 00) as an
 * unknown field, re-encodes it minimally (00) and then refuses its own
 * output, so the second decode is only required to succeed without them. */
static int has_unknown_fields(const ProtobufCMessage *msg)
{
    if (msg->n_unknown_fields)
        return 1;
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_MESSAGE)
            continue;
        const char *base = (const char *)msg;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *(const size_t *)(base + f->quantifier_offset);
            ProtobufCMessage *const *items = *(ProtobufCMessage *const *const *)(base + f->offset);
            for (size_t k = 0; k < n; k++)
                if (has_unknown_fields(items[k]))
                    return 1;
        } else {
            const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)(base + f->offset);
            if (sub && has_unknown_fields(sub))
                return 1;
        }
    }
    return 0;
}

/* Packs msg into a new allocation of exactly get_packed_size bytes. */
static uint8_t *pack(const ProtobufCMessage *msg, size_t *len)
{
    size_t size = protobuf_c_message_get_packed_size(msg);
    uint8_t *out = malloc(size ? size : 1);
    FUZZ_CHECK(out != NULL);
    size_t written = protobuf_c_message_pack(msg, out);
    FUZZ_CHECK(written == size);
    *len = size;
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        ProtobufCMessage *msg = protobuf_c_message_unpack(types[i], NULL, size, data);
        if (!msg)
            continue;
        FUZZ_CHECK(msg->descriptor == types[i]);
        FUZZ_CHECK(protobuf_c_message_check(msg));

        size_t len1;
        uint8_t *once = pack(msg, &len1);
        int unknown = has_unknown_fields(msg);
        protobuf_c_message_free_unpacked(msg, NULL);

        ProtobufCMessage *again = protobuf_c_message_unpack(types[i], NULL, len1, once);
        FUZZ_CHECK(again != NULL || unknown);
        if (!again) {
            free(once);
            continue;
        }
        size_t len2;
        uint8_t *twice = pack(again, &len2);
        protobuf_c_message_free_unpacked(again, NULL);
        FUZZ_CHECK(len1 == len2);
        FUZZ_CHECK(len1 == 0 || memcmp(once, twice, len1) == 0);
        free(once);
        free(twice);
    }
    return 0;
}
