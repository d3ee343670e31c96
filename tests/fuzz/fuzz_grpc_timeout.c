/* Fuzzes the grpc-timeout header parser and formatter and duration_parse
 * (lib/grpc/grpc_timeout).
 *
 * grpc_timeout_parse gets the raw bytes (it takes a length, the value is not
 * NUL-terminated); its result is checked against a direct computation.
 * Formatting the result and parsing it back must give a value no smaller
 * than the original (the formatter rounds up) and less than one unit above.
 * duration_parse gets the input up to its first NUL as a C string. */
#include <string.h>

#include "core/duration.h"
#include "grpc/grpc_timeout.h"
#include "fuzz_common.h"

static int64_t unit_ns(char c)
{
    switch (c) {
    case 'H': return INT64_C(3600000000000);
    case 'M': return INT64_C(60000000000);
    case 'S': return INT64_C(1000000000);
    case 'm': return INT64_C(1000000);
    case 'u': return INT64_C(1000);
    case 'n': return 1;
    default: return 0;
    }
}

/* The header grammar, written out independently: 1..8 digits, one unit. */
static int reference_parse(const char *v, size_t len, int64_t *ns)
{
    if (len < 2 || len > 9 || unit_ns(v[len - 1]) == 0)
        return -1;
    int64_t count = 0;
    for (size_t i = 0; i + 1 < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        count = count * 10 + (v[i] - '0');
    }
    /* 99999999 hours is past INT64_MAX ns: saturate, as documented. */
    int64_t unit = unit_ns(v[len - 1]);
    *ns = count > INT64_MAX / unit ? INT64_MAX : count * unit;
    return 0;
}

static void check_format_round_trip(int64_t ns)
{
    char text[10];
    memset(text, 'x', sizeof text);
    grpc_timeout_format(ns, text);
    size_t len = strnlen(text, sizeof text);
    FUZZ_CHECK(len >= 2 && len < sizeof text);
    int64_t back;
    FUZZ_CHECK(grpc_timeout_parse(text, len, &back) == 0);
    if (ns <= 0) {
        FUZZ_CHECK(back == 0);
        return;
    }
    int64_t unit = unit_ns(text[len - 1]);
    FUZZ_CHECK(back >= ns || back == INT64_MAX);
    FUZZ_CHECK(back - ns < unit);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* Exact-size heap copy: no NUL after it, ASan catches over-reads. */
    char *value = malloc(size ? size : 1);
    FUZZ_CHECK(value != NULL);
    if (size)
        memcpy(value, data, size);
    int64_t ns = -1, want = -1;
    int rc = grpc_timeout_parse(value, size, &ns);
    FUZZ_CHECK(rc == reference_parse(value, size, &want));
    if (rc == 0) {
        FUZZ_CHECK(ns == want && ns >= 0);
        check_format_round_trip(ns);
    }
    free(value);

    /* Arbitrary 64-bit values through the formatter. */
    if (size >= 8) {
        uint64_t raw;
        memcpy(&raw, data, sizeof raw);
        check_format_round_trip((int64_t)raw);
    }

    char *text = malloc(size + 1);
    FUZZ_CHECK(text != NULL);
    if (size)
        memcpy(text, data, size);
    text[size] = '\0';
    int64_t d = -1;
    if (duration_parse(text, &d) == 0) {
        FUZZ_CHECK(d >= 0);
        /* A run of digits alone is seconds. */
        size_t digits = strspn(text, "0123456789");
        if (digits > 0 && digits < 10 && text[digits] == '\0')
            FUZZ_CHECK(d == strtoll(text, NULL, 10) * INT64_C(1000000000));
    } else {
        FUZZ_CHECK(d == -1);  /* untouched on failure */
    }
    free(text);
    return 0;
}
