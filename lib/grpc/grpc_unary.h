/* grpc_unary: one gRPC call from start to finish, for command-line tools
 * (runner-client, the health probe). Connects, calls, and returns, running
 * a private event loop meanwhile. */
#ifndef KRM_GRPC_UNARY_H
#define KRM_GRPC_UNARY_H

#include <stddef.h>
#include <stdint.h>

typedef struct gc_unary_opts {
    int64_t connect_timeout_ns;   /* <= 0: 20 s */
    int64_t timeout_ns;           /* call deadline; <= 0: none */
    uint32_t max_message;         /* largest response accepted; 0: 4 MiB */
    const char *user_agent;       /* NULL: default */
    const char *const *metadata;  /* name/value pairs */
    size_t n_metadata;
} gc_unary_opts;

typedef struct gc_unary_result {
    int connected;        /* 0: the connection failed; message says why */
    int status;           /* gRPC status code */
    char *message;        /* never NULL after gc_unary */
    uint8_t *response;    /* status OK: the response message */
    size_t response_len;
} gc_unary_result;

/* Returns 0 with *out filled (check connected and status), or -1 when out of
 * memory. Release *out with gc_unary_result_free. */
int gc_unary(const char *addr, const char *path, const void *request, size_t len,
             const gc_unary_opts *opts, gc_unary_result *out);
void gc_unary_result_free(gc_unary_result *r);

#endif
