/* fn_call: one EvaluateFunction call as runner-client makes it: pack the
 * request, call, unpack the answer. Shared by `eval --image` (one call) and
 * pipelines (one call per step), so both see failures the same way. */
#ifndef KRM_RC_FN_CALL_H
#define KRM_RC_FN_CALL_H

#include <stddef.h>

#include "core/buf.h"
#include "grpc/grpc_unary.h"
#include "runtime/evaluator.h"

typedef struct fn_call_result {
    int status;         /* gRPC status code */
    char *message;      /* status message; never NULL after fn_call */
    buf resource_list;  /* status OK: the function's output */
    buf log;            /* status OK: the function's stderr */
} fn_call_result;

/* Calls EvaluateFunction on addr with `image`, Tag `tag` (NULL or "": none)
 * and the ResourceList rl.
 * Returns 0 with *out filled (check out->status; an answer that is not
 * valid protobuf becomes INTERNAL; a failure that points at a peer that
 * is not a gRPC server carries peer_hint's hint), or -1 when out of memory. Release *out
 * with fn_call_result_free. */
int fn_call(const char *addr, const char *image, const char *tag, const char *rl, size_t len,
            const gc_unary_opts *opts, fn_call_result *out);
void fn_call_result_free(fn_call_result *r);

/* The same from an evaluator's answer (eval --kube's pod, eval --exec's
 * process), into a zeroed *out. 0, or -1 when out of memory. */
int fn_call_result_set(fn_call_result *out, const ev_result *res);

#endif
