/* grpc_timeout: the grpc-timeout header.
 *
 * Why this exists: clients send their deadline as "1*8DIGIT unit" (gRPC
 * PROTOCOL-HTTP2). grpc-go encodes with the finest unit that fits in eight
 * digits, so "1000000u" (one second) and "0n" (already expired) are normal,
 * and a parser that only knows seconds would misread every Go client. The
 * formatter mirrors grpc-go's encoder so our own client sends the same bytes. */
#include "grpc/grpc_timeout.h"

#include <string.h>

#define NS_PER_US INT64_C(1000)
#define NS_PER_MS INT64_C(1000000)
#define NS_PER_S INT64_C(1000000000)
#define NS_PER_MIN (60 * NS_PER_S)
#define NS_PER_HOUR (60 * NS_PER_MIN)

#define TIMEOUT_MAX_DIGITS 8
#define TIMEOUT_MAX_VALUE INT64_C(99999999)

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* ---- grpc-timeout header ---- */

/* Nanoseconds in one header unit, or 0 for an unknown unit letter. */
static int64_t timeout_unit_ns(char unit)
{
    switch (unit) {
    case 'H': return NS_PER_HOUR;
    case 'M': return NS_PER_MIN;
    case 'S': return NS_PER_S;
    case 'm': return NS_PER_MS;
    case 'u': return NS_PER_US;
    case 'n': return 1;
    default: return 0;
    }
}

int grpc_timeout_parse(const char *value, size_t len, int64_t *ns)
{
    if (len < 2 || len > TIMEOUT_MAX_DIGITS + 1)
        return -1;
    int64_t unit_ns = timeout_unit_ns(value[len - 1]);
    if (unit_ns == 0)
        return -1;
    int64_t count = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (!is_digit(value[i]))
            return -1;
        count = count * 10 + (value[i] - '0');
    }
    *ns = count > INT64_MAX / unit_ns ? INT64_MAX : count * unit_ns;
    return 0;
}

/* Division rounding up, for positive operands. */
static int64_t div_round_up(int64_t ns, int64_t unit_ns)
{
    return ns / unit_ns + (ns % unit_ns != 0);
}

/* Writes "<count><unit>" and a NUL; count is 0..99999999, so at most ten
 * bytes are written. */
static void write_count(char out[10], int64_t count, char unit)
{
    char digits[TIMEOUT_MAX_DIGITS];
    size_t n = 0;
    do {
        digits[n++] = (char)('0' + count % 10);
        count /= 10;
    } while (count > 0 && n < TIMEOUT_MAX_DIGITS);
    for (size_t i = 0; i < n; i++)
        out[i] = digits[n - 1 - i];
    out[n] = unit;
    out[n + 1] = '\0';
}

void grpc_timeout_format(int64_t ns, char out[10])
{
    static const struct {
        char letter;
        int64_t ns;
    } finest_first[] = {
        {'n', 1}, {'u', NS_PER_US}, {'m', NS_PER_MS},
        {'S', NS_PER_S}, {'M', NS_PER_MIN}, {'H', NS_PER_HOUR},
    };
    const size_t unit_count = sizeof finest_first / sizeof finest_first[0];

    if (ns <= 0) {
        memcpy(out, "0n", 3);
        return;
    }
    size_t i = 0;
    int64_t count = div_round_up(ns, finest_first[0].ns);
    /* INT64_MAX is under 2.6 million hours, so the last unit always fits. */
    while (count > TIMEOUT_MAX_VALUE && i + 1 < unit_count) {
        i++;
        count = div_round_up(ns, finest_first[i].ns);
    }
    write_count(out, count, finest_first[i].letter);
}
