/* grpc_timeout: the grpc-timeout request header ("1*8DIGIT unit").
 *
 * Units H, M, S, m, u, n (hours .. nanoseconds); grpc-go sends microseconds
 * and nanoseconds routinely ("1000000u" for one second, "0n" for a deadline
 * already passed), so every unit is handled. */
#ifndef KRM_GRPC_TIMEOUT_H
#define KRM_GRPC_TIMEOUT_H

#include <stddef.h>
#include <stdint.h>

/* Parses the header value (not NUL-terminated) into nanoseconds, saturating
 * at INT64_MAX. Returns 0, or -1 when the value is malformed: fewer than 1 or
 * more than 8 digits, a non-digit, or an unknown unit. */
int grpc_timeout_parse(const char *value, size_t len, int64_t *ns);

/* Formats a timeout as grpc-go does: the finest unit whose count fits in 8
 * digits, rounding up; ns <= 0 gives "0n". out needs 10 bytes. */
void grpc_timeout_format(int64_t ns, char out[10]);

#endif
