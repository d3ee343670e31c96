/* Unit tests for server reflection: the descriptor walker (proto_index)
 * over the descriptors embedded at build time, and reflection_answer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "grpc/grpc_status.h"
#include "runtime/proto_index.h"
#include "runtime/services.h"
#include "reflection.pb-c.h"

static const char *file_of(const char *symbol)
{
    static char name[64];
    proto_file f;
    if (proto_file_by_symbol(symbol, strlen(symbol), &f) < 0)
        return NULL;
    /* field 1 of a FileDescriptorProto is its name: tag, length, bytes */
    cr_assert(f.len > 2 && f.data[0] == 0x0a && f.data[1] < sizeof name);
    memcpy(name, f.data + 2, f.data[1]);
    name[f.data[1]] = 0;
    return name;
}

Test(proto_index, symbols_of_every_kind)
{
    static const char *const found[][2] = {
        {"evaluator.FunctionEvaluator", "evaluator.proto"},
        {"evaluator.FunctionEvaluator.EvaluateFunction", "evaluator.proto"},
        {"evaluator.EvaluateFunctionRequest", "evaluator.proto"},
        {"evaluator.EvaluateFunctionRequest.resource_list", "evaluator.proto"},
        {"grpc.health.v1.HealthCheckResponse.ServingStatus", "health.proto"},
        {"grpc.health.v1.HealthCheckResponse.SERVICE_UNKNOWN", "health.proto"},  /* enum value */
        {"grpc.health.v1.HealthListResponse.StatusesEntry", "health.proto"},      /* map entry */
        {"grpc.health.v1.HealthListResponse.StatusesEntry.key", "health.proto"},
        {"grpc.reflection.v1.ServerReflectionRequest.message_request", "reflection.proto"},
        {"grpc.reflection.v1alpha.ServerReflection.ServerReflectionInfo", "reflection_v1alpha.proto"},
    };
    for (size_t i = 0; i < sizeof found / sizeof found[0]; i++) {
        const char *got = file_of(found[i][0]);
        cr_assert(got && !strcmp(got, found[i][1]), "%s: %s", found[i][0], got ? got : "(none)");
    }
    static const char *const missing[] = {
        "", ".", "evaluator", "evaluator.", "grpc.health.v1", "evaluator.FunctionEvaluator.",
        "evaluator.FunctionEvaluatorX", "grpc.health.v1.HealthCheckResponse.ServingStatus.SERVING",
        "grpc.health.v1.SERVING", "evaluator.FunctionEvaluator.EvaluateFunction.x",
        ".evaluator.FunctionEvaluator",
    };
    for (size_t i = 0; i < sizeof missing / sizeof missing[0]; i++)
        cr_assert_null(file_of(missing[i]), "%s", missing[i]);
}

Test(proto_index, files_by_name)
{
    proto_file f;
    cr_assert_eq(proto_file_by_name("health.proto", 12, &f), 0);
    cr_assert_eq(proto_file_by_name("health.prot", 11, &f), -1);
    cr_assert_eq(proto_file_by_name("health.proto\0", 13, &f), -1);
}

Test(proto_index, every_served_service_is_described)
{
    const rpc_method *const methods[] = {
        &evaluate_method, &health_check_method, &health_list_method, &health_watch_method,
        &reflection_v1_method, &reflection_v1alpha_method,
    };
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++) {
        char sym[160];
        snprintf(sym, sizeof sym, "%s.%s", methods[i]->service, methods[i]->name);
        cr_assert_not_null(file_of(sym), "%s", sym);
    }
}

Test(reflection, list_services_sorted_and_distinct)
{
    const rpc_method *const methods[] = {
        &health_check_method, &reflection_v1_method, &health_list_method, &evaluate_method, NULL,
    };
    Grpc__Reflection__V1__ServerReflectionRequest req =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__INIT;
    req.message_request_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES;
    req.list_services = "";
    uint8_t msg[64];
    size_t len = grpc__reflection__v1__server_reflection_request__pack(&req, msg);
    buf out = {0}, why = {0};
    cr_assert_eq(reflection_answer(methods, msg, len, &out, &why), GRPC_OK);
    Grpc__Reflection__V1__ServerReflectionResponse *resp =
        grpc__reflection__v1__server_reflection_response__unpack(NULL, out.len,
                                                                  (uint8_t *)out.data);
    cr_assert_not_null(resp);
    Grpc__Reflection__V1__ListServiceResponse *list = resp->list_services_response;
    cr_assert_eq(list->n_service, 3);
    cr_assert_str_eq(list->service[0]->name, "evaluator.FunctionEvaluator");
    cr_assert_str_eq(list->service[1]->name, "grpc.health.v1.Health");
    cr_assert_str_eq(list->service[2]->name, "grpc.reflection.v1.ServerReflection");
    grpc__reflection__v1__server_reflection_response__free_unpacked(resp, NULL);
    buf_free(&out);
    buf_free(&why);
}

Test(reflection, refused_requests)
{
    const rpc_method *const methods[] = {&reflection_v1_method, NULL};
    static const struct {
        const char *data;
        size_t len;
        int code;
    } cases[] = {
        {"\xff", 1, GRPC_INTERNAL},                                /* not protobuf */
        {"\x22\x03" "a\0b", 5, GRPC_INTERNAL},                     /* NUL in a symbol */
        {"\x22\x02\xc3\x28", 4, GRPC_INTERNAL},                    /* not UTF-8 */
        {"\x02\x00\x3a\x00", 4, GRPC_INTERNAL},                    /* field 0 */
        {"\x0a\x01h", 3, GRPC_INVALID_ARGUMENT},                   /* no request */
        {"", 0, GRPC_INVALID_ARGUMENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf out = {0}, why = {0};
        int code = reflection_answer(methods, (const uint8_t *)cases[i].data, cases[i].len, &out,
                                     &why);
        cr_assert_eq(code, cases[i].code, "case %zu: %d %s", i, code, why.data ? why.data : "");
        cr_assert_eq(out.len, 0);
        buf_free(&out);
        buf_free(&why);
    }
}
