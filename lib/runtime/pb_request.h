/* pb_request: decodes an EvaluateFunctionRequest in place.
 *
 * protobuf-c's unpack copies every bytes field into a new allocation; for a
 * multi-megabyte ResourceList that is one more copy into fresh memory per
 * call, and page faults on fresh memory are a large part of a big call's
 * cost. The message has three fields (resource_list = 1, bytes; image = 2
 * and Tag = 3, strings), so this decoder points into the received message
 * instead and only copies the short image name and tag. Wire rules follow protobuf: unknown
 * fields are skipped, a repeated scalar field keeps its last value, a known
 * field with the wrong wire type, a truncated field, field number 0 and
 * groups are errors, and so is an image or tag that is not UTF-8 (proto3 strings
 * must be; grpc-go refuses them, protobuf-c does not check), as grpc-go's
 * decoder reports them. tests/fuzz checks it against protobuf-c. */
#ifndef KRM_PB_REQUEST_H
#define KRM_PB_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

typedef struct pb_eval_request {
    const uint8_t *resource_list;   /* points into the message; NULL when absent */
    size_t resource_list_len;
    char *image;                    /* malloc'd, NUL-terminated; "" when absent */
    size_t image_len;               /* its bytes: a NUL inside is kept, for callers to refuse */
    char *tag;                      /* Tag: malloc'd, NUL-terminated; "" when absent */
    size_t tag_len;                 /* as image_len */
} pb_eval_request;

/* Returns 0, or -1 with a reason appended to why (ENOMEM included). */
int pb_eval_request_decode(const uint8_t *msg, size_t len, pb_eval_request *out, buf *why);
void pb_eval_request_free(pb_eval_request *r);

/* For a request still arriving (have of total bytes at msg): when it starts
 * with the resource_list field, where that field's bytes start (*off) and
 * how many there are (*len), all within total. Returns 1, else 0. */
int pb_eval_request_peek_list(const uint8_t *msg, size_t have, size_t total, size_t *off,
                              size_t *len);

#endif
