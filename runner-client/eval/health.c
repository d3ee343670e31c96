/* health: `runner-client health --addr HOST:PORT [--service S] [--timeout DUR]`
 * calls grpc.health.v1.Health/Check and exits 0 when the answer is SERVING. */
#include <stdio.h>

#include "grpc/grpc_status.h"
#include "grpc/grpc_unary.h"
#include "grpc/grpc_client.h"
#include "cli/call_opts.h"
#include "commands.h"
#include "cli/flags.h"
#include "health.pb-c.h"
#include "cli/peer_hint.h"
#include "core/term_text.h"

static const char health_usage[] =
    "Usage: runner-client health --addr HOST:PORT [--service NAME] [--timeout DUR]\n"
    "Calls grpc.health.v1.Health/Check and prints the status (SERVING, NOT_SERVING, ...).\n"
    "\n"
    "  --service NAME   the service to ask about (default \"\": the server as a whole)\n"
    "  --timeout DUR    deadline of the call, e.g. 1s (default 5s; 0: none); connecting\n"
    "                   may take at most 10s, or DUR when shorter\n"
    "Exit status: 0 SERVING, 1 not serving or the call failed, 2 bad usage.\n";

int cmd_health(int argc, char **argv)
{
    const char *addr = NULL, *service = "", *timeout = NULL;
    flag_def defs[] = {{"--addr", &addr}, {"--service", &service}, {"--timeout", &timeout}, {0}};
    int n_pos, help;
    buf err = {0};
    gc_unary_opts opts = {0};
    if (flags_parse(argc, argv, defs, NULL, 0, &n_pos, &help, &err) < 0 ||
        (!help && !addr && buf_printf(&err, "--addr HOST:PORT is required") == 0) ||
        (!help && gc_addr_check(addr, &err) < 0) ||
        (!help && call_opts_timeouts(timeout, CALL_HEALTH_TIMEOUT_NS, &opts, &err) < 0)) {
        term_line(stderr, "runner-client health: %s\n", err.data);
        buf_free(&err);
        return 2;
    }
    buf_free(&err);
    if (help) {
        fputs(health_usage, stdout);
        return 0;
    }
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)service;
    uint8_t packed[1024];
    size_t len = grpc__health__v1__health_check_request__get_packed_size(&req);
    if (len > sizeof packed) {
        term_line(stderr, "runner-client health: service name too long\n");
        return 2;
    }
    grpc__health__v1__health_check_request__pack(&req, packed);
    gc_unary_result r;
    if (gc_unary(addr, "/grpc.health.v1.Health/Check", packed, len, &opts, &r) < 0) {
        term_line(stderr, "runner-client: out of memory\n");
        return 1;
    }
    int rc = 1;
    if (r.status != GRPC_OK) {
        peer_hint_apply(addr, r.connected, r.status, &r.message);
        term_line(stderr, "runner-client: %s: %s\n", grpc_code_name(r.status), r.message);
    } else {
        Grpc__Health__V1__HealthCheckResponse *resp =
            grpc__health__v1__health_check_response__unpack(NULL, r.response_len, r.response);
        if (!resp) {
            term_line(stderr, "runner-client: INTERNAL: the HealthCheckResponse is not valid protobuf\n");
        } else {
            const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
                &grpc__health__v1__health_check_response__serving_status__descriptor,
                (int)resp->status);
            printf("%s\n", v ? v->name : "UNKNOWN");
            rc = resp->status == GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING ? 0 : 1;
            grpc__health__v1__health_check_response__free_unpacked(resp, NULL);
        }
    }
    gc_unary_result_free(&r);
    return rc;
}
