/* fn_call: one EvaluateFunction call; see fn_call.h. */
#include "eval/fn_call.h"

#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_status.h"
#include "evaluator.pb-c.h"
#include "cli/peer_hint.h"

/* Packs the request into packed; -1 when out of memory. */
static int pack_request(const char *image, const char *tag, const char *rl, size_t len,
                        buf *packed)
{
    Evaluator__EvaluateFunctionRequest req = EVALUATOR__EVALUATE_FUNCTION_REQUEST__INIT;
    req.resource_list.data = (uint8_t *)rl;
    req.resource_list.len = len;
    req.image = (char *)image;
    if (tag && *tag)
        req.tag = (char *)tag;
    size_t size = evaluator__evaluate_function_request__get_packed_size(&req);
    if (buf_reserve(packed, size) < 0)
        return -1;
    evaluator__evaluate_function_request__pack(&req, (uint8_t *)packed->data);
    packed->len = size;
    return 0;
}

/* Takes resource_list and log out of an OK answer. */
static int unpack_response(const gc_unary_result *r, fn_call_result *out)
{
    Evaluator__EvaluateFunctionResponse *resp =
        evaluator__evaluate_function_response__unpack(NULL, r->response_len, r->response);
    if (!resp) {
        out->status = GRPC_INTERNAL;
        out->message = strdup("the response is not valid protobuf");
        return out->message ? 0 : -1;
    }
    int rc = buf_append(&out->resource_list, resp->resource_list.data, resp->resource_list.len) < 0 ||
                     buf_append(&out->log, resp->log.data, resp->log.len) < 0
                 ? -1
                 : 0;
    evaluator__evaluate_function_response__free_unpacked(resp, NULL);
    out->message = rc == 0 ? strdup("") : NULL;
    return rc == 0 && out->message ? 0 : -1;
}

int fn_call(const char *addr, const char *image, const char *tag, const char *rl, size_t len,
            const gc_unary_opts *opts, fn_call_result *out)
{
    *out = (fn_call_result){ 0 };
    buf packed = { 0 };
    if (pack_request(image, tag, rl, len, &packed) < 0)
        return -1;
    gc_unary_result r;
    int called = gc_unary(addr, "/evaluator.FunctionEvaluator/EvaluateFunction", packed.data,
                          packed.len, opts, &r);
    buf_free(&packed);
    if (called < 0)
        return -1;
    int rc;
    out->status = r.status;
    if (r.status == GRPC_OK) {
        rc = unpack_response(&r, out);
    } else {
        peer_hint_apply(addr, r.connected, r.status, &r.message);
        out->message = r.message;
        r.message = NULL;
        rc = 0;
    }
    gc_unary_result_free(&r);
    if (rc < 0)
        fn_call_result_free(out);
    return rc;
}

void fn_call_result_free(fn_call_result *r)
{
    free(r->message);
    buf_free(&r->resource_list);
    buf_free(&r->log);
    *r = (fn_call_result){ 0 };
}

int fn_call_result_set(fn_call_result *out, const ev_result *res)
{
    out->status = res->code;
    out->message = strdup(res->code != GRPC_OK && res->message ? res->message : "");
    if (!out->message)
        return -1;
    if (res->code != GRPC_OK)
        return 0;
    return buf_append(&out->resource_list, res->out, res->out_len) < 0 ||
                   buf_append(&out->log, res->log, res->log_len) < 0
               ? -1
               : 0;
}
