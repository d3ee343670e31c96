/* svc_reflection: grpc.reflection.v1.ServerReflection and its older twin
 * grpc.reflection.v1alpha.ServerReflection (ServerReflectionInfo), so that
 * `grpcurl -plaintext HOST:9446 list` and `describe` work without proto
 * files.
 *
 * A bidirectional stream: each request message gets one response message,
 * answered from the descriptors embedded at build time (proto_index.h), as
 * grpc-go's reflection server answers:
 *
 *   list_services                  the services the server routes (its
 *                                  method table), sorted
 *   file_by_filename               that file ("evaluator.proto")
 *   file_containing_symbol         the file declaring it (messages, fields,
 *                                  enums and values, services, methods)
 *   file_containing_extension      NOT_FOUND: our protos declare none
 *   all_extension_numbers_of_type  an empty list for a known type
 *
 * An unknown name gets an error_response (NOT_FOUND, "proto: not found")
 * and the stream goes on; a request that is not valid protobuf ends it
 * with INTERNAL, one with no request set with INVALID_ARGUMENT. Both
 * versions share one wire format, so v1's generated code serves both. The
 * stream ends OK when the client half-closes; streams still open when the
 * server drains are ended by the transport, as health's Watch streams are
 * (the handler keeps no state of its own). */
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"
#include "grpc/grpc_status.h"
#include "runtime/proto_index.h"
#include "runtime/services.h"
#include "reflection.pb-c.h"

typedef Grpc__Reflection__V1__ServerReflectionRequest refl_request;
typedef Grpc__Reflection__V1__ServerReflectionResponse refl_response;

#define NOT_FOUND_TEXT "proto: not found"   /* grpc-go's: protoregistry.NotFound */

/* ---- answers ------------------------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct services of the method table, sorted, into names (room for
 * every method). Returns how many. */
static size_t served_services(const rpc_method *const *methods, const char **names)
{
    size_t n = 0;
    for (size_t i = 0; methods[i]; i++) {
        size_t k = 0;
        while (k < n && strcmp(names[k], methods[i]->service))
            k++;
        if (k == n)
            names[n++] = methods[i]->service;
    }
    qsort(names, n, sizeof *names, cmp_names);
    return n;
}

static int pack_response(const refl_response *resp, buf *out)
{
    size_t n = grpc__reflection__v1__server_reflection_response__get_packed_size(resp);
    if (buf_reserve(out, n) < 0)
        return -1;
    out->len = grpc__reflection__v1__server_reflection_response__pack(resp, (uint8_t *)out->data);
    return 0;
}

static int answer_list(const rpc_method *const *methods, refl_response *resp, buf *out)
{
    size_t n_methods = 0;
    while (methods[n_methods])
        n_methods++;
    const char **names = calloc(n_methods + 1, sizeof *names);
    Grpc__Reflection__V1__ServiceResponse *svcs = calloc(n_methods + 1, sizeof *svcs);
    Grpc__Reflection__V1__ServiceResponse **ptrs = calloc(n_methods + 1, sizeof *ptrs);
    int rc = -1;
    if (names && svcs && ptrs) {
        size_t n = served_services(methods, names);
        for (size_t i = 0; i < n; i++) {
            grpc__reflection__v1__service_response__init(&svcs[i]);
            svcs[i].name = (char *)names[i];
            ptrs[i] = &svcs[i];
        }
        Grpc__Reflection__V1__ListServiceResponse list =
            GRPC__REFLECTION__V1__LIST_SERVICE_RESPONSE__INIT;
        list.n_service = n;
        list.service = ptrs;
        resp->message_response_case =
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
        resp->list_services_response = &list;
        rc = pack_response(resp, out);
    }
    free(names);
    free(svcs);
    free(ptrs);
    return rc;
}

static int answer_not_found(refl_response *resp, buf *out)
{
    Grpc__Reflection__V1__ErrorResponse err = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;
    err.error_code = GRPC_NOT_FOUND;
    err.error_message = NOT_FOUND_TEXT;
    resp->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    resp->error_response = &err;
    return pack_response(resp, out);
}

/* A file, or NOT_FOUND when found < 0. */
static int answer_file(int found, const proto_file *file, refl_response *resp, buf *out)
{
    if (found < 0)
        return answer_not_found(resp, out);
    ProtobufCBinaryData fd = {file->len, (uint8_t *)file->data};
    Grpc__Reflection__V1__FileDescriptorResponse files =
        GRPC__REFLECTION__V1__FILE_DESCRIPTOR_RESPONSE__INIT;
    files.n_file_descriptor_proto = 1;
    files.file_descriptor_proto = &fd;
    resp->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
    resp->file_descriptor_response = &files;
    return pack_response(resp, out);
}

/* Our protos declare no extensions: a known type has none, and asking for
 * one is NOT_FOUND. */
static int answer_extension_numbers(const char *type, refl_response *resp, buf *out)
{
    proto_file file;
    if (proto_file_by_symbol(type, strlen(type), &file) < 0)
        return answer_not_found(resp, out);
    Grpc__Reflection__V1__ExtensionNumberResponse nums =
        GRPC__REFLECTION__V1__EXTENSION_NUMBER_RESPONSE__INIT;
    nums.base_type_name = (char *)type;
    resp->message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
    resp->all_extension_numbers_response = &nums;
    return pack_response(resp, out);
}

/* What protobuf-c lets through and grpc-go does not, checked on the wire:
 * a field number 0 or over 2^29-1 (protobuf-c keeps it as an unknown field
 * and then cannot read its own re-encoding: the echoed original_request),
 * and a NUL byte in a string (protobuf-c's strings end there, so
 * "evaluator.proto\0x" would be found). grpc-go finds no such name; here
 * the request is refused. Walks the request and the ExtensionRequest in it;
 * malformed data is left to protobuf-c to refuse. 0, or -1. */
static int wire_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 64 && *p < end; shift += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 0;
        }
    }
    return -1;
}

static int wire_check(const uint8_t *p, const uint8_t *end, int nested)
{
    uint64_t key, n;
    while (p < end && wire_varint(&p, end, &key) == 0) {
        uint64_t field = key >> 3;
        if (field == 0 || field > 536870911 || key > 0xffffffffu)
            return -1;
        unsigned wire = key & 7;
        if (wire == 0 && wire_varint(&p, end, &n) == 0)
            continue;
        if (wire == 1 || wire == 5) {
            size_t w = wire == 1 ? 8 : 4;
            if ((size_t)(end - p) < w)
                return 0;
            p += w;
            continue;
        }
        if (wire != 2 || wire_varint(&p, end, &n) < 0 || n > (uint64_t)(end - p))
            return 0;   /* malformed: protobuf-c refuses it */
        if ((nested ? field == 1 : field != 5) && memchr(p, 0, (size_t)n))
            return -1;
        if (!nested && field == 5 && wire_check(p, p + n, 1) < 0)
            return -1;
        p += n;
    }
    return 0;
}

static int valid_utf8(const char *s)
{
    return !s || utf8_valid(s, strlen(s));
}

/* proto3 strings must be UTF-8 (grpc-go refuses them; protobuf-c does not
 * check). */
static int request_strings_valid(const refl_request *req)
{
    const Grpc__Reflection__V1__ExtensionRequest *ext = req->file_containing_extension;
    switch (req->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
        return valid_utf8(req->host) && (!ext || valid_utf8(ext->containing_type));
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
        return valid_utf8(req->host) && valid_utf8(req->file_by_filename);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
        return valid_utf8(req->host) && valid_utf8(req->file_containing_symbol);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        return valid_utf8(req->host) && valid_utf8(req->all_extension_numbers_of_type);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        return valid_utf8(req->host) && valid_utf8(req->list_services);
    default:
        return valid_utf8(req->host);
    }
}

static int answer(const rpc_method *const *methods, const refl_request *req, buf *out)
{
    refl_response resp = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__INIT;
    resp.valid_host = req->host;
    resp.original_request = (refl_request *)req;
    proto_file file = {0};
    const char *s;
    switch (req->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        return answer_list(methods, &resp, out);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
        s = req->file_by_filename;
        return answer_file(proto_file_by_name(s, strlen(s), &file), &file, &resp, out);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
        s = req->file_containing_symbol;
        return answer_file(proto_file_by_symbol(s, strlen(s), &file), &file, &resp, out);
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        return answer_extension_numbers(req->all_extension_numbers_of_type, &resp, out);
    default:   /* file_containing_extension */
        return answer_not_found(&resp, out);
    }
}

int reflection_answer(const rpc_method *const *methods, const uint8_t *msg, size_t len, buf *out,
                      buf *why)
{
    refl_request *req = wire_check(msg, msg + len, 0) < 0
                            ? NULL
                            : grpc__reflection__v1__server_reflection_request__unpack(NULL, len, msg);
    int code = GRPC_OK;
    if (!req || !request_strings_valid(req)) {
        code = GRPC_INTERNAL;
        buf_printf(why, "grpc: error unmarshalling request: %s",
                   req ? "a string field of the ServerReflectionRequest is not valid UTF-8"
                       : "the ServerReflectionRequest is not valid protobuf (or names a field "
                         "0, or holds a NUL byte in a string)");
    } else if (req->message_request_case ==
               GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST__NOT_SET) {
        code = GRPC_INVALID_ARGUMENT;
        buf_printf(why, "invalid MessageRequest: <nil>");   /* grpc-go's words */
    } else if (answer(methods, req, out) < 0) {
        code = GRPC_RESOURCE_EXHAUSTED;
        buf_printf(why, "out of memory");
    }
    if (req)
        grpc__reflection__v1__server_reflection_request__free_unpacked(req, NULL);
    return code;
}

/* ---- the stream ---------------------------------------------------------- */

static void reflection_handle(rpc_call *c, const uint8_t *msg, size_t len)
{
    buf out = {0}, why = {0};
    int code = reflection_answer(rpc_server_methods(c->srv), msg, len, &out, &why);
    if (code == GRPC_OK)
        rpc_send(c, out.data ? out.data : "", out.len);   /* copied by the transport */
    else
        rpc_finish(c, code, why.data ? why.data : "");
    buf_free(&out);
    buf_free(&why);
}

static void reflection_request_end(rpc_call *c)
{
    rpc_finish(c, GRPC_OK, "");
}

const rpc_method reflection_v1_method = {
    .service = "grpc.reflection.v1.ServerReflection", .name = "ServerReflectionInfo",
    .server_streaming = 1, .client_streaming = 1,
    .handle = reflection_handle, .request_end = reflection_request_end,
};
const rpc_method reflection_v1alpha_method = {
    .service = "grpc.reflection.v1alpha.ServerReflection", .name = "ServerReflectionInfo",
    .server_streaming = 1, .client_streaming = 1,
    .handle = reflection_handle, .request_end = reflection_request_end,
};
