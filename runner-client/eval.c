/* eval: `runner-client eval --addr HOST:PORT [--image IMG] [--timeout DUR]
 * [FILE|DIR|-]` sends a ResourceList to a wrapper server's EvaluateFunction
 * and prints the function's output on stdout and its log on stderr. */
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "evaluator.pb-c.h"
#include "flags.h"
#include "grpc_status.h"
#include "grpc_unary.h"
#include "grpc_timeout.h"
#include "numparse.h"
#include "rl_input.h"

static const char eval_usage[] =
    "Usage: runner-client eval --addr HOST:PORT [--image IMG] [--timeout DUR]\n"
    "                          [--max-message BYTES] [FILE|DIR|-]\n"
    "Builds a ResourceList from a YAML file, a directory of YAML files or stdin\n"
    "(an existing ResourceList passes through), evaluates it, writes the result\n"
    "to stdout and the function's log to stderr.\n"
    "Exit status: 0 success, 1 the call failed, 2 bad usage or input.\n";

static int write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int usage_error(buf *err)
{
    fprintf(stderr, "runner-client eval: %s\n", err->data);
    buf_free(err);
    return 2;
}

int cmd_eval(int argc, char **argv)
{
    const char *addr = NULL, *image = "", *timeout = NULL, *max_text = "6291456";
    const char *input = "-";
    flag_def defs[] = {{"--addr", &addr}, {"--image", &image}, {"--timeout", &timeout},
                       {"--max-message", &max_text}, {0}};
    int n_pos, help;
    buf err = {0};
    int64_t timeout_ns = 0;
    unsigned long long max_message;
    if (flags_parse(argc, argv, defs, &input, 1, &n_pos, &help, &err) < 0)
        return usage_error(&err);
    if (help) {
        fputs(eval_usage, stdout);
        return 0;
    }
    if (!addr)
        buf_printf(&err, "--addr HOST:PORT is required");
    else if (timeout && duration_parse(timeout, &timeout_ns) < 0)
        buf_printf(&err, "invalid --timeout \"%s\": want a duration such as 30s", timeout);
    else if (parse_uint(max_text, 2147483647ULL, &max_message) < 0 || max_message == 0)
        buf_printf(&err, "invalid --max-message \"%s\"", max_text);
    if (err.len)
        return usage_error(&err);

    buf rl = {0};
    char why[1024];
    if (rl_input_build(input, &rl, why, sizeof why) < 0) {
        fprintf(stderr, "runner-client eval: %s\n", why);
        buf_free(&rl);
        return 2;
    }
    Evaluator__EvaluateFunctionRequest req = EVALUATOR__EVALUATE_FUNCTION_REQUEST__INIT;
    req.resource_list.data = (uint8_t *)rl.data;
    req.resource_list.len = rl.len;
    req.image = (char *)image;
    buf packed = {0};
    size_t len = evaluator__evaluate_function_request__get_packed_size(&req);
    if (buf_reserve(&packed, len) < 0) {
        fprintf(stderr, "runner-client eval: out of memory\n");
        buf_free(&rl);
        return 1;
    }
    evaluator__evaluate_function_request__pack(&req, (uint8_t *)packed.data);
    buf_free(&rl);

    gc_unary_opts opts = {.timeout_ns = timeout_ns, .max_message = (uint32_t)max_message};
    gc_unary_result r;
    int called = gc_unary(addr, "/evaluator.FunctionEvaluator/EvaluateFunction", packed.data, len,
                          &opts, &r);
    buf_free(&packed);
    int rc = 1;
    if (called < 0) {
        fprintf(stderr, "runner-client eval: out of memory\n");
        return 1;
    }
    if (r.status != GRPC_OK) {
        fprintf(stderr, "runner-client: %s: %s\n", grpc_code_name(r.status), r.message);
    } else {
        Evaluator__EvaluateFunctionResponse *resp =
            evaluator__evaluate_function_response__unpack(NULL, r.response_len, r.response);
        if (!resp) {
            fprintf(stderr, "runner-client: INTERNAL: the response is not valid protobuf\n");
        } else {
            if (write_all(STDERR_FILENO, resp->log.data, resp->log.len) < 0 ||
                write_all(STDOUT_FILENO, resp->resource_list.data, resp->resource_list.len) < 0)
                perror("runner-client: write");
            else
                rc = 0;
            evaluator__evaluate_function_response__free_unpacked(resp, NULL);
        }
    }
    gc_unary_result_free(&r);
    return rc;
}
