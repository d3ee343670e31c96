/* Unit tests for grpc_status: code names, code parsing, and the grpc-message
 * percent-encoding, which must match the gRPC spec byte for byte because
 * grpc-go clients decode it and show the result to Porch users. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/utf8.h"
#include "grpc/grpc_status.h"

static void expect_encoded(const char *input, size_t len, const char *expected)
{
    buf out = {0};
    cr_assert_eq(grpc_message_encode(input, len, &out), 0);
    cr_assert_eq(out.len, strlen(expected));
    cr_assert_str_eq(out.data, expected);
    buf_free(&out);
}

static void expect_decoded(const char *input, const char *expected, size_t expected_len)
{
    buf out = {0};
    cr_assert_eq(grpc_message_decode(input, strlen(input), &out), 0);
    cr_assert_eq(out.len, expected_len);
    cr_assert(memcmp(out.data, expected, expected_len) == 0);
    cr_assert_eq(out.data[out.len], '\0');
    buf_free(&out);
}

Test(grpc_status, code_names)
{
    cr_assert_str_eq(grpc_code_name(GRPC_OK), "OK");
    cr_assert_str_eq(grpc_code_name(GRPC_CANCELLED), "CANCELLED");
    cr_assert_str_eq(grpc_code_name(GRPC_DEADLINE_EXCEEDED), "DEADLINE_EXCEEDED");
    cr_assert_str_eq(grpc_code_name(GRPC_RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
    cr_assert_str_eq(grpc_code_name(GRPC_UNIMPLEMENTED), "UNIMPLEMENTED");
    cr_assert_str_eq(grpc_code_name(GRPC_INTERNAL), "INTERNAL");
    cr_assert_str_eq(grpc_code_name(GRPC_UNAUTHENTICATED), "UNAUTHENTICATED");
}

Test(grpc_status, every_code_has_a_distinct_name)
{
    for (int i = 0; i <= 16; i++) {
        cr_assert_str_neq(grpc_code_name(i), "UNKNOWN_CODE");
        for (int j = 0; j < i; j++)
            cr_assert_str_neq(grpc_code_name(i), grpc_code_name(j));
    }
}

Test(grpc_status, out_of_range_code_name)
{
    cr_assert_str_eq(grpc_code_name(-1), "UNKNOWN_CODE");
    cr_assert_str_eq(grpc_code_name(17), "UNKNOWN_CODE");
    cr_assert_str_eq(grpc_code_name(1000), "UNKNOWN_CODE");
}

Test(grpc_status, code_parse_valid)
{
    char text[4];
    for (int code = 0; code <= 16; code++) {
        int n = snprintf(text, sizeof text, "%d", code);
        cr_assert_eq(grpc_code_parse(text, (size_t)n), code);
    }
    /* Only len bytes are read, so the text need not end there. */
    cr_assert_eq(grpc_code_parse("13xyz", 2), 13);
}

Test(grpc_status, code_parse_invalid)
{
    cr_assert_eq(grpc_code_parse("", 0), -1);
    cr_assert_eq(grpc_code_parse("17", 2), -1);
    cr_assert_eq(grpc_code_parse("99", 2), -1);
    cr_assert_eq(grpc_code_parse("100", 3), -1);
    cr_assert_eq(grpc_code_parse("01", 2), -1);
    cr_assert_eq(grpc_code_parse("00", 2), -1);
    cr_assert_eq(grpc_code_parse("-1", 2), -1);
    cr_assert_eq(grpc_code_parse("+1", 2), -1);
    cr_assert_eq(grpc_code_parse(" 1", 2), -1);
    cr_assert_eq(grpc_code_parse("1 ", 2), -1);
    cr_assert_eq(grpc_code_parse("a", 1), -1);
}

Test(grpc_status, encode_plain_ascii_unchanged)
{
    expect_encoded("function failed: exit 1", 23, "function failed: exit 1");
    expect_encoded(" ~", 2, " ~");
    expect_encoded("", 0, "");
}

Test(grpc_status, encode_control_characters)
{
    expect_encoded("a\tb", 3, "a%09b");
    expect_encoded("line1\r\nline2\n", 13, "line1%0D%0Aline2%0A");
    expect_encoded("\x7f", 1, "%7F");
    expect_encoded("\x1f", 1, "%1F");
    expect_encoded("nul\0x", 5, "nul%00x");
}

Test(grpc_status, encode_percent)
{
    expect_encoded("100%", 4, "100%25");
    expect_encoded("%%", 2, "%25%25");
}

Test(grpc_status, encode_utf8_bmp_and_non_bmp)
{
    /* U+00E9 (2 bytes), U+20AC (3 bytes), U+1F600 (4 bytes, non-BMP) */
    expect_encoded("caf\xC3\xA9", 5, "caf%C3%A9");
    expect_encoded("\xE2\x82\xAC", 3, "%E2%82%AC");
    expect_encoded("\xF0\x9F\x98\x80", 4, "%F0%9F%98%80");
}

Test(grpc_status, encode_appends)
{
    buf out = {0};
    buf_append_str(&out, "prefix:");
    cr_assert_eq(grpc_message_encode("\n", 1, &out), 0);
    cr_assert_str_eq(out.data, "prefix:%0A");
    cr_assert_eq(grpc_message_encode("ok", 2, &out), 0);
    cr_assert_str_eq(out.data, "prefix:%0Aok");
    buf_free(&out);
}

Test(grpc_status, decode_valid_escapes)
{
    expect_decoded("a%09b", "a\tb", 3);
    expect_decoded("%0D%0A", "\r\n", 2);
    expect_decoded("100%25", "100%", 4);
    expect_decoded("%F0%9F%98%80", "\xF0\x9F\x98\x80", 4);
    expect_decoded("%c3%a9", "\xC3\xA9", 2);  /* lowercase hex is accepted */
    expect_decoded("%00", "\0", 1);
    expect_decoded("", "", 0);
}

Test(grpc_status, decode_bad_escapes_kept_literally)
{
    expect_decoded("%", "%", 1);
    expect_decoded("%G1", "%G1", 3);
    expect_decoded("%4", "%4", 2);
    expect_decoded("%1G", "%1G", 3);
    expect_decoded("50% off", "50% off", 7);
    expect_decoded("a%%41", "a%A", 3);
    expect_decoded("end%", "end%", 4);
}

Test(grpc_status, round_trip_all_bytes)
{
    char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (char)i;
    buf encoded = {0};
    buf decoded = {0};
    cr_assert_eq(grpc_message_encode(all, sizeof all, &encoded), 0);
    for (size_t i = 0; i < encoded.len; i++) {
        unsigned char c = (unsigned char)encoded.data[i];
        cr_assert(c >= 0x20 && c <= 0x7E, "byte %zu is 0x%02x", i, c);
    }
    /* 95 printable bytes, minus '%', stay; the other 161 take three bytes. */
    cr_assert_eq(encoded.len, 94 + 162 * 3);
    cr_assert_eq(grpc_message_decode(encoded.data, encoded.len, &decoded), 0);
    cr_assert_eq(decoded.len, sizeof all);
    cr_assert(memcmp(decoded.data, all, sizeof all) == 0);
    buf_free(&encoded);
    buf_free(&decoded);
}

Test(grpc_status, utf8_sanitize_replaces_each_bad_byte)
{
    buf out = {0};
    const char in[] = "caf\xc3\xa9 \xff\xfe bad \xc3( \xed\xa0\x80 \xf0\x9f\x98\x80";
    cr_assert_eq(utf8_sanitize(in, sizeof in - 1, &out), 0);
    cr_assert_str_eq(out.data, "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd bad \xef\xbf\xbd( "
                               "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd \xf0\x9f\x98\x80");
    buf_free(&out);
}
