/* call_opts: the time limits of runner-client's gRPC calls (eval, its
 * pipelines, health), so that no command waits forever on a peer that
 * accepts a connection and never answers.
 *
 * Every call gets a deadline (--timeout, Go duration; a bare number is
 * seconds): by default 5m for EvaluateFunction, room for a large package
 * through a slow function while a dead peer is still noticed, and 5s for a
 * health check. "0" means no deadline (grpcurl's -max-time 0). Connecting
 * (TCP) may take 10s, grpcurl's -connect-timeout default, or the deadline
 * when that is shorter. */
#ifndef KRM_RC_CALL_OPTS_H
#define KRM_RC_CALL_OPTS_H

#include <stdint.h>

#include "core/buf.h"
#include "grpc/grpc_unary.h"

#define CALL_CONNECT_TIMEOUT_NS (10LL * 1000000000)
#define CALL_EVAL_TIMEOUT_NS (5LL * 60 * 1000000000)
#define CALL_HEALTH_TIMEOUT_NS (5LL * 1000000000)

/* Sets o's deadline and connect timeout from --timeout `text` (NULL: the
 * default_ns). Returns 0, or -1 with `invalid --timeout "TEXT": ...` in err. */
int call_opts_timeouts(const char *text, int64_t default_ns, gc_unary_opts *o, buf *err);

#endif
