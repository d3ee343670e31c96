/* Unit tests for grpc_timeout: the grpc-timeout header parser and formatter
 * (checked against grpc-go's encoder examples) and the command-line duration
 * parser (checked against Go time.ParseDuration behaviour). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "core/duration.h"
#include "grpc/grpc_timeout.h"

#define NS_US INT64_C(1000)
#define NS_MS INT64_C(1000000)
#define NS_S INT64_C(1000000000)
#define NS_MIN (60 * NS_S)
#define NS_HOUR (60 * NS_MIN)

static int64_t parse_header(const char *value)
{
    int64_t ns = -12345;
    cr_assert_eq(grpc_timeout_parse(value, strlen(value), &ns), 0, "rejected \"%s\"", value);
    return ns;
}

static void expect_header_rejected(const char *value)
{
    int64_t ns = -12345;
    cr_assert_eq(grpc_timeout_parse(value, strlen(value), &ns), -1, "accepted \"%s\"", value);
}

static void expect_format(int64_t ns, const char *expected)
{
    char out[10];
    memset(out, 'X', sizeof out);
    grpc_timeout_format(ns, out);
    cr_assert_str_eq(out, expected, "ns=%lld", (long long)ns);
}

static int64_t parse_duration(const char *text)
{
    int64_t ns = -12345;
    cr_assert_eq(duration_parse(text, &ns), 0, "rejected \"%s\"", text);
    return ns;
}

static void expect_duration_rejected(const char *text)
{
    int64_t ns = -12345;
    cr_assert_eq(duration_parse(text, &ns), -1, "accepted \"%s\"", text);
}

/* ---- grpc_timeout_parse ---- */

Test(grpc_timeout_parse, every_unit)
{
    cr_assert_eq(parse_header("2H"), 2 * NS_HOUR);
    cr_assert_eq(parse_header("3M"), 3 * NS_MIN);
    cr_assert_eq(parse_header("4S"), 4 * NS_S);
    cr_assert_eq(parse_header("5m"), 5 * NS_MS);
    cr_assert_eq(parse_header("6u"), 6 * NS_US);
    cr_assert_eq(parse_header("7n"), 7);
}

Test(grpc_timeout_parse, grpc_go_forms)
{
    cr_assert_eq(parse_header("1000000u"), NS_S);
    cr_assert_eq(parse_header("60000000u"), 60 * NS_S);
    cr_assert_eq(parse_header("120000m"), 120 * NS_S);
    cr_assert_eq(parse_header("0n"), 0);
    cr_assert_eq(parse_header("0S"), 0);
}

Test(grpc_timeout_parse, minutes_versus_milliseconds)
{
    cr_assert_eq(parse_header("1M"), NS_MIN);
    cr_assert_eq(parse_header("1m"), NS_MS);
    cr_assert_eq(parse_header("1S"), NS_S);
    expect_header_rejected("1s");
    expect_header_rejected("1h");
    expect_header_rejected("1U");
    expect_header_rejected("1N");
}

Test(grpc_timeout_parse, digit_count)
{
    cr_assert_eq(parse_header("12345678n"), 12345678);
    cr_assert_eq(parse_header("00000001S"), NS_S);  /* leading zeros are digits */
    expect_header_rejected("123456789n");
    expect_header_rejected("000000001S");
}

Test(grpc_timeout_parse, malformed)
{
    expect_header_rejected("");
    expect_header_rejected("S");
    expect_header_rejected("5");
    expect_header_rejected("12");
    expect_header_rejected("1x");
    expect_header_rejected("-1S");
    expect_header_rejected("+1S");
    expect_header_rejected(" 1S");
    expect_header_rejected("1 S");
    expect_header_rejected("1.5S");
    expect_header_rejected("1SS");
    expect_header_rejected("a1S");
}

Test(grpc_timeout_parse, reads_only_len_bytes)
{
    int64_t ns = 0;
    cr_assert_eq(grpc_timeout_parse("10Sjunk", 3, &ns), 0);
    cr_assert_eq(ns, 10 * NS_S);
}

Test(grpc_timeout_parse, saturates)
{
    cr_assert_eq(parse_header("99999999H"), INT64_MAX);
    /* 99999999 minutes is 6e18 ns, still below INT64_MAX (9.22e18). */
    cr_assert_eq(parse_header("99999999M"), 99999999 * NS_MIN);
    cr_assert_eq(parse_header("99999999S"), 99999999 * NS_S);
    /* 2562047 hours fits; 2562048 hours does not. */
    cr_assert_eq(parse_header("2562047H"), 2562047 * NS_HOUR);
    cr_assert_eq(parse_header("2562048H"), INT64_MAX);
}

/* ---- grpc_timeout_format ---- */

Test(grpc_timeout_format, grpc_go_examples)
{
    expect_format(NS_S, "1000000u");
    expect_format(60 * NS_S, "60000000u");
    expect_format(120 * NS_S, "120000m");
    expect_format(0, "0n");
    expect_format(-5, "0n");
    expect_format(INT64_MIN, "0n");
}

/* The table from grpc-go internal/grpcutil/encode_duration_test.go. */
Test(grpc_timeout_format, grpc_go_test_table)
{
    expect_format(12345678, "12345678n");
    expect_format(123456789, "123457u");
    expect_format(12345678 * NS_US, "12345678u");
    expect_format(123456789 * NS_US, "123457m");
    expect_format(12345678 * NS_MS, "12345678m");
    expect_format(123456789 * NS_MS, "123457S");
    expect_format(12345678 * NS_S, "12345678S");
    expect_format(123456789 * NS_S, "2057614M");
    expect_format(12345678 * NS_MIN, "12345678M");
    expect_format(123456789 * NS_MIN, "2057614H");
}

Test(grpc_timeout_format, unit_boundaries_round_up)
{
    expect_format(1, "1n");
    expect_format(99999999, "99999999n");
    expect_format(100000000, "100000u");
    expect_format(100000001, "100001u");
    expect_format(INT64_MAX, "2562048H");
}

Test(grpc_timeout_format, round_trip_never_shortens)
{
    const int64_t samples[] = {
        1, 999, 1000, 1001, 99999999, 100000000, 123456789, NS_S, 30 * NS_S,
        NS_HOUR + 1, 99999999 * NS_S + 7, INT64_MAX / 3, INT64_MAX - 1,
    };
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        char out[10];
        grpc_timeout_format(samples[i], out);
        size_t len = strlen(out);
        cr_assert(len >= 2 && len <= 9, "\"%s\"", out);
        int64_t back = 0;
        cr_assert_eq(grpc_timeout_parse(out, len, &back), 0, "\"%s\"", out);
        cr_assert_geq(back, samples[i], "\"%s\"", out);
    }
}

Test(grpc_timeout_format, exact_values_round_trip_exactly)
{
    const int64_t samples[] = {1, 999, 12345678, NS_S, 60 * NS_S, 120 * NS_S, 5 * NS_MIN};
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        char out[10];
        grpc_timeout_format(samples[i], out);
        int64_t back = 0;
        cr_assert_eq(grpc_timeout_parse(out, strlen(out), &back), 0);
        cr_assert_eq(back, samples[i], "\"%s\"", out);
    }
}

/* ---- duration_parse ---- */

Test(duration_parse, units)
{
    cr_assert_eq(parse_duration("10ns"), 10);
    cr_assert_eq(parse_duration("250us"), 250 * NS_US);
    cr_assert_eq(parse_duration("250\xC2\xB5s"), 250 * NS_US);  /* U+00B5 */
    cr_assert_eq(parse_duration("250\xCE\xBCs"), 250 * NS_US);  /* U+03BC */
    cr_assert_eq(parse_duration("300ms"), 300 * NS_MS);
    cr_assert_eq(parse_duration("45s"), 45 * NS_S);
    cr_assert_eq(parse_duration("2m"), 2 * NS_MIN);
    cr_assert_eq(parse_duration("3h"), 3 * NS_HOUR);
}

Test(duration_parse, decimals)
{
    cr_assert_eq(parse_duration("1.5s"), 1500 * NS_MS);
    cr_assert_eq(parse_duration(".5s"), 500 * NS_MS);
    cr_assert_eq(parse_duration("1.s"), NS_S);
    cr_assert_eq(parse_duration("0.5h"), 30 * NS_MIN);
    cr_assert_eq(parse_duration("1.000000001s"), NS_S + 1);
    cr_assert_eq(parse_duration("0.0000000019s"), 1);  /* truncated, as Go does */
    cr_assert_eq(parse_duration("2.5ms"), 2500 * NS_US);
}

Test(duration_parse, concatenation)
{
    cr_assert_eq(parse_duration("1h30m"), NS_HOUR + 30 * NS_MIN);
    cr_assert_eq(parse_duration("2m3s"), 2 * NS_MIN + 3 * NS_S);
    cr_assert_eq(parse_duration("1h2m3s4ms5us6ns"),
                 NS_HOUR + 2 * NS_MIN + 3 * NS_S + 4 * NS_MS + 5 * NS_US + 6);
    cr_assert_eq(parse_duration("1.5h0.5m"), 90 * NS_MIN + 30 * NS_S);
    cr_assert_eq(parse_duration("1s1s"), 2 * NS_S);
}

Test(duration_parse, bare_number_is_seconds)
{
    cr_assert_eq(parse_duration("0"), 0);
    cr_assert_eq(parse_duration("30"), 30 * NS_S);
    cr_assert_eq(parse_duration("1.25"), 1250 * NS_MS);
    cr_assert_eq(parse_duration("+5s"), 5 * NS_S);
}

Test(duration_parse, rejects_malformed)
{
    expect_duration_rejected("");
    expect_duration_rejected("+");
    expect_duration_rejected("s");
    expect_duration_rejected(".");
    expect_duration_rejected(".s");
    expect_duration_rejected("1x");
    expect_duration_rejected("1 s");
    expect_duration_rejected(" 1s");
    expect_duration_rejected("1s ");
    expect_duration_rejected("1S");     /* Go units are lowercase */
    expect_duration_rejected("1H");
    expect_duration_rejected("1hm");
    expect_duration_rejected("1h30");   /* only a lone number may omit the unit */
    expect_duration_rejected("1.2.3s");
    expect_duration_rejected("1..2s");
    expect_duration_rejected("1sec");
    expect_duration_rejected("abc");
    expect_duration_rejected(NULL);
}

Test(duration_parse, rejects_negative)
{
    expect_duration_rejected("-1s");
    expect_duration_rejected("-0");
    expect_duration_rejected("1s-1s");
}

Test(duration_parse, overflow)
{
    cr_assert_eq(parse_duration("9223372036854775807ns"), INT64_MAX);
    cr_assert_eq(parse_duration("2562047h"), 2562047 * NS_HOUR);
    expect_duration_rejected("9223372036854775808ns");
    expect_duration_rejected("99999999999999999999s");
    expect_duration_rejected("2562048h");
    expect_duration_rejected("9223372036s854775808ns");
    expect_duration_rejected("2562047h2562047h");
    expect_duration_rejected("9223372037");  /* bare seconds past the limit */
}
