/* Fuzzes server reflection's request handling (svc_reflection.c): each
 * input is one ServerReflectionRequest message as a client sends it. The
 * answer must be a status that ends the stream, or a response that decodes
 * again, carries the request back, and answers what was asked: a file is
 * one of the embedded descriptors, an error is NOT_FOUND. Symbol and file
 * names reach the descriptor walker (proto_index.c) unchanged. */
#include <string.h>

#include "grpc/grpc_status.h"
#include "runtime/services.h"
#include "fuzz_common.h"
#include "reflection.pb-c.h"

static const rpc_method *const methods[] = {
    &reflection_v1_method, &reflection_v1alpha_method, &health_check_method, NULL,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    buf out = {0}, why = {0};
    int code = reflection_answer(methods, data, size, &out, &why);
    if (code != GRPC_OK) {
        FUZZ_CHECK(out.len == 0 && why.len > 0);
        FUZZ_CHECK(code == GRPC_INTERNAL || code == GRPC_INVALID_ARGUMENT ||
                   code == GRPC_RESOURCE_EXHAUSTED);
    } else {
        Grpc__Reflection__V1__ServerReflectionResponse *resp =
            grpc__reflection__v1__server_reflection_response__unpack(NULL, out.len,
                                                                      (const uint8_t *)out.data);
        FUZZ_CHECK(resp && resp->original_request);
        switch (resp->message_response_case) {
        case GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE:
            FUZZ_CHECK(resp->error_response->error_code == GRPC_NOT_FOUND);
            break;
        case GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE:
            FUZZ_CHECK(resp->file_descriptor_response->n_file_descriptor_proto == 1);
            break;
        case GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE:
            FUZZ_CHECK(resp->list_services_response->n_service == 3);
            break;
        default:
            FUZZ_CHECK(resp->message_response_case ==
                       GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE);
        }
        grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
    }
    buf_free(&out);
    buf_free(&why);
    return 0;
}
