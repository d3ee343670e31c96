/* health_probe: a grpc-health-probe compatible health checker; see health_probe.h.
 *
 * Flags are parsed as Go's flag package does: "-flag value", "-flag=value",
 * "--flag" the same as "-flag", booleans only as "-b" or "-b=false", and
 * parsing stops at the first non-flag argument or "--". Messages are the
 * ones grpc-health-probe prints, so existing probe logs read the same. */
#include "grpc/health_probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/duration.h"
#include "core/loop.h"
#include "grpc/grpc_status.h"
#include "grpc/grpc_unary.h"
#include "health.pb-c.h"

enum {
    PROBE_SERVING = 0,
    PROBE_BAD_ARGS = 1,
    PROBE_CONNECT_FAILED = 2,
    PROBE_RPC_FAILED = 3,
    PROBE_UNHEALTHY = 4,
};

#define PROBE_MAX_HEADERS 32

typedef struct probe_opts {
    const char *addr;
    const char *service;
    const char *user_agent;
    const char *connect_timeout;   /* as given, for messages */
    const char *rpc_timeout;
    int64_t connect_timeout_ns;
    int64_t rpc_timeout_ns;
    int verbose;
    int version;
    char *headers[2 * PROBE_MAX_HEADERS];   /* name, value pairs (owned) */
    size_t n_headers;
} probe_opts;

static const char probe_usage[] =
    "Usage of grpc-health-probe:\n"
    "  -addr string             (required) tcp host:port to connect\n"
    "  -connect-timeout duration  timeout for establishing connection (default 1s)\n"
    "  -rpc-header value        additional RPC headers in 'name: value' format; repeatable\n"
    "  -rpc-timeout duration    timeout for health check rpc (default 1s)\n"
    "  -service string          service name to check (default: \"\")\n"
    "  -user-agent string       user-agent header value of health check requests\n"
    "                           (default \"grpc_health_probe\")\n"
    "  -v                       verbose logs\n"
    "  -version                 print the probe version and exit\n"
    "TLS, ALTS, SPIFFE and -gzip are not supported: our servers speak cleartext.\n";

static const char *const unsupported_flags[] = {
    "tls", "tls-no-verify", "tls-ca-cert", "tls-client-cert", "tls-client-key",
    "tls-server-name", "alts", "spiffe", "gzip",
};

static int bad_args(const char *fmt, const char *arg)
{
    fprintf(stderr, "error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    return -1;
}

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
    static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};
    for (size_t i = 0; i < 6; i++) {
        if (!strcmp(v, yes[i]) || !strcmp(v, no[i])) {
            *out = !strcmp(v, yes[i]);
            return 0;
        }
    }
    return -1;
}

static int add_header(probe_opts *o, const char *text)
{
    const char *colon = strchr(text, ':');
    if (!colon || o->n_headers >= PROBE_MAX_HEADERS)
        return bad_args("invalid -rpc-header \"%s\": want 'name: value'", text);
    char *name = strndup(text, (size_t)(colon - text));
    const char *value = colon + 1;
    while (*value == ' ' || *value == '\t')
        value++;
    char *val = strdup(value);
    if (!name || !val) {
        free(name);
        free(val);
        return bad_args("%s", "out of memory");
    }
    for (char *p = name; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');   /* gRPC metadata keys are lowercase */
    o->headers[2 * o->n_headers] = name;
    o->headers[2 * o->n_headers + 1] = val;
    o->n_headers++;
    return 0;
}

/* Applies one flag; has_value says whether a value came with it. */
static int apply_flag(probe_opts *o, const char *name, const char *value, int has_value)
{
    if (!strcmp(name, "v") || !strcmp(name, "version")) {
        int *target = name[1] ? &o->version : &o->verbose;
        if (!has_value) {
            *target = 1;
            return 0;
        }
        return parse_bool(value, target) < 0 ? bad_args("invalid boolean value for -%s", name) : 0;
    }
    for (size_t i = 0; i < sizeof unsupported_flags / sizeof unsupported_flags[0]; i++)
        if (!strcmp(name, unsupported_flags[i]))
            return bad_args("-%s is not supported: this probe speaks cleartext gRPC only", name);
    static const char *const with_values[] = {"addr", "service", "user-agent", "connect-timeout",
                                              "rpc-timeout", "rpc-header"};
    int known = 0;
    for (size_t i = 0; i < sizeof with_values / sizeof with_values[0]; i++)
        known |= !strcmp(name, with_values[i]);
    if (!known)
        return bad_args("flag provided but not defined: -%s", name);
    if (!has_value)
        return bad_args("flag needs an argument: -%s", name);
    if (!strcmp(name, "addr"))
        o->addr = value;
    else if (!strcmp(name, "service"))
        o->service = value;
    else if (!strcmp(name, "user-agent"))
        o->user_agent = value;
    else if (!strcmp(name, "connect-timeout"))
        o->connect_timeout = value;
    else if (!strcmp(name, "rpc-timeout"))
        o->rpc_timeout = value;
    else if (!strcmp(name, "rpc-header"))
        return add_header(o, value);
    else
        return bad_args("flag provided but not defined: -%s", name);
    return 0;
}

static int is_bool_flag(const char *name)
{
    return !strcmp(name, "v") || !strcmp(name, "version") || !strcmp(name, "tls") ||
           !strcmp(name, "tls-no-verify") || !strcmp(name, "alts") || !strcmp(name, "spiffe") ||
           !strcmp(name, "gzip");
}

static int parse_args(int argc, char **argv, probe_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || !arg[1])
            break;                       /* first non-flag argument */
        if (!strcmp(arg, "--"))
            break;
        const char *name = arg + 1 + (arg[1] == '-');
        if (!strcmp(name, "h") || !strcmp(name, "help")) {
            fputs(probe_usage, stderr);
            return -1;
        }
        char buf_name[64];
        const char *eq = strchr(name, '=');
        const char *value = NULL;
        if (eq) {
            snprintf(buf_name, sizeof buf_name, "%.*s", (int)(eq - name), name);
            name = buf_name;
            value = eq + 1;
        } else if (!is_bool_flag(name) && i + 1 < argc) {
            value = argv[++i];
        }
        if (apply_flag(o, name, value, value != NULL) < 0)
            return -1;
    }
    return 0;
}

static int check_options(probe_opts *o)
{
    if (!o->addr || !*o->addr)
        return bad_args("%s", "-addr not specified");
    if (duration_parse(o->connect_timeout, &o->connect_timeout_ns) < 0 || o->connect_timeout_ns <= 0)
        return bad_args("--connect-timeout must be greater than zero (specified: %s)",
                        o->connect_timeout);
    if (duration_parse(o->rpc_timeout, &o->rpc_timeout_ns) < 0 || o->rpc_timeout_ns <= 0)
        return bad_args("--rpc-timeout must be greater than zero (specified: %s)", o->rpc_timeout);
    return 0;
}

static const char *status_name(int status)
{
    const ProtobufCEnumValue *v = protobuf_c_enum_descriptor_get_value(
        &grpc__health__v1__health_check_response__serving_status__descriptor, status);
    return v ? v->name : "UNKNOWN";
}

/* Reads the answer of a call that returned OK: SERVING or not. */
static int judge_response(const gc_unary_result *r)
{
    Grpc__Health__V1__HealthCheckResponse *resp =
        grpc__health__v1__health_check_response__unpack(NULL, r->response_len, r->response);
    if (!resp) {
        fprintf(stderr, "error: health rpc failed: the response is not valid protobuf\n");
        return PROBE_RPC_FAILED;
    }
    int status = (int)resp->status;
    grpc__health__v1__health_check_response__free_unpacked(resp, NULL);
    if (status != GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING) {
        fprintf(stderr, "service unhealthy (responded with \"%s\")\n", status_name(status));
        return PROBE_UNHEALTHY;
    }
    fprintf(stderr, "status: SERVING\n");
    return PROBE_SERVING;
}

static int judge_failure(const probe_opts *o, const gc_unary_result *r)
{
    if (!r->connected) {
        if (strstr(r->message, "timed out"))
            fprintf(stderr, "timeout: failed to connect service \"%s\" within %s\n", o->addr,
                    o->connect_timeout);
        else
            fprintf(stderr, "error: failed to connect service at \"%s\": %s\n", o->addr, r->message);
        return PROBE_CONNECT_FAILED;
    }
    if (r->status == GRPC_UNIMPLEMENTED)
        fprintf(stderr, "error: this server does not implement the grpc health protocol "
                        "(grpc.health.v1.Health): %s\n", r->message);
    else if (r->status == GRPC_DEADLINE_EXCEEDED)
        fprintf(stderr, "timeout: health rpc did not complete within %s\n", o->rpc_timeout);
    else
        fprintf(stderr, "error: health rpc failed: rpc error: code = %s desc = %s\n",
                grpc_code_go_name(r->status), r->message);
    return PROBE_RPC_FAILED;
}

static int probe_run(const probe_opts *o)
{
    Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
    req.service = (char *)o->service;
    size_t len = grpc__health__v1__health_check_request__get_packed_size(&req);
    uint8_t *packed = malloc(len ? len : 1);
    if (!packed)
        return PROBE_RPC_FAILED;
    grpc__health__v1__health_check_request__pack(&req, packed);

    char agent[256];
    snprintf(agent, sizeof agent, "%s wrapper-server-probe", o->user_agent);
    gc_unary_opts opts = {
        .connect_timeout_ns = o->connect_timeout_ns,
        .timeout_ns = o->rpc_timeout_ns,
        .max_message = 1 << 16,
        .user_agent = agent,
        .metadata = (const char *const *)o->headers,
        .n_metadata = o->n_headers,
    };
    int64_t start = loop_now_ns();
    gc_unary_result r;
    int rc = PROBE_RPC_FAILED;
    if (gc_unary(o->addr, "/grpc.health.v1.Health/Check", packed, len, &opts, &r) == 0) {
        if (o->verbose)
            fprintf(stderr, "time elapsed: %.3f ms\n", (double)(loop_now_ns() - start) / 1e6);
        rc = r.connected && r.status == GRPC_OK ? judge_response(&r) : judge_failure(o, &r);
        gc_unary_result_free(&r);
    }
    free(packed);
    return rc;
}

int probe_main(const char *program, int argc, char **argv)
{
    probe_opts o = {
        .service = "",
        .user_agent = "grpc_health_probe",
        .connect_timeout = "1s",
        .rpc_timeout = "1s",
    };
    int rc;
    if (parse_args(argc, argv, &o) < 0) {
        rc = PROBE_BAD_ARGS;
    } else if (o.version) {
        printf("grpc-health-probe (built into %s)\n", program);
        rc = 0;
    } else if (check_options(&o) < 0) {
        rc = PROBE_BAD_ARGS;
    } else {
        if (o.verbose)
            fprintf(stderr, "parsed options:\n> addr=%s conn_timeout=%s rpc_timeout=%s\n"
                            "> headers=%zu\n> service=%s\n",
                    o.addr, o.connect_timeout, o.rpc_timeout, o.n_headers, o.service);
        rc = probe_run(&o);
    }
    for (size_t i = 0; i < 2 * o.n_headers; i++)
        free(o.headers[i]);
    return rc;
}

int probe_invoked_as(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    return !strcmp(base ? base + 1 : argv0, "grpc-health-probe");
}
