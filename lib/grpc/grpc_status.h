/* grpc_status: gRPC status codes and the grpc-message header encoding.
 *
 * Shared by the server (which sends statuses) and the client (which prints
 * them), so both spell the codes the same way. */
#ifndef KRM_GRPC_STATUS_H
#define KRM_GRPC_STATUS_H

#include <stddef.h>

#include "core/buf.h"

enum grpc_code {
    GRPC_OK = 0,
    GRPC_CANCELLED = 1,
    GRPC_UNKNOWN = 2,
    GRPC_INVALID_ARGUMENT = 3,
    GRPC_DEADLINE_EXCEEDED = 4,
    GRPC_NOT_FOUND = 5,
    GRPC_ALREADY_EXISTS = 6,
    GRPC_PERMISSION_DENIED = 7,
    GRPC_RESOURCE_EXHAUSTED = 8,
    GRPC_FAILED_PRECONDITION = 9,
    GRPC_ABORTED = 10,
    GRPC_OUT_OF_RANGE = 11,
    GRPC_UNIMPLEMENTED = 12,
    GRPC_INTERNAL = 13,
    GRPC_UNAVAILABLE = 14,
    GRPC_DATA_LOSS = 15,
    GRPC_UNAUTHENTICATED = 16,
};

/* "INTERNAL", "DEADLINE_EXCEEDED", ...; "CODE_<n>" style text is not
 * returned: codes outside 0..16 give "UNKNOWN_CODE". */
const char *grpc_code_name(int code);

/* grpc-go's spelling: "Canceled", "DeadlineExceeded", "Unavailable", ... */
const char *grpc_code_go_name(int code);

/* Parses "0".."16" (decimal, no sign, no leading zeros except "0").
 * Returns the code, or -1 when the text is not a valid status. */
int grpc_code_parse(const char *text, size_t len);

/* grpc-message encoding (gRPC PROTOCOL-HTTP2): every byte outside 0x20..0x7E,
 * and '%' itself, becomes %XX with uppercase hex. Appends to out. */
int grpc_message_encode(const char *msg, size_t len, buf *out);

/* Reverse of the above. Malformed escapes are kept literally; decoding never fails
 * except on ENOMEM (-1). Appends to out. */
int grpc_message_decode(const char *text, size_t len, buf *out);

#endif
