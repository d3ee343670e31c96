/* grpc_status: status code names and the grpc-message header encoding.
 *
 * Why this exists: the server puts function stderr (tabs, newlines, UTF-8)
 * into grpc-message, and HTTP/2 header values may only carry visible ASCII.
 * The gRPC spec (PROTOCOL-HTTP2, "Status-Message") fixes the escaping: every
 * byte outside 0x20..0x7E, and '%' itself, is sent as %XX in uppercase hex.
 * Decoders must be lenient, so a malformed escape is kept as literal text.
 * Code names follow the canonical spelling used in the spec and status.proto. */
#include "grpc/grpc_status.h"

#include <stdint.h>

static const char *const code_names[] = {
    [GRPC_OK] = "OK",
    [GRPC_CANCELLED] = "CANCELLED",
    [GRPC_UNKNOWN] = "UNKNOWN",
    [GRPC_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
    [GRPC_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
    [GRPC_NOT_FOUND] = "NOT_FOUND",
    [GRPC_ALREADY_EXISTS] = "ALREADY_EXISTS",
    [GRPC_PERMISSION_DENIED] = "PERMISSION_DENIED",
    [GRPC_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
    [GRPC_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
    [GRPC_ABORTED] = "ABORTED",
    [GRPC_OUT_OF_RANGE] = "OUT_OF_RANGE",
    [GRPC_UNIMPLEMENTED] = "UNIMPLEMENTED",
    [GRPC_INTERNAL] = "INTERNAL",
    [GRPC_UNAVAILABLE] = "UNAVAILABLE",
    [GRPC_DATA_LOSS] = "DATA_LOSS",
    [GRPC_UNAUTHENTICATED] = "UNAUTHENTICATED",
};

#define CODE_COUNT ((int)(sizeof code_names / sizeof code_names[0]))

const char *grpc_code_name(int code)
{
    if (code < 0 || code >= CODE_COUNT)
        return "UNKNOWN_CODE";
    return code_names[code];
}

/* The names grpc-go's codes.Code.String() gives, as users see them in
 * "rpc error: code = Unavailable desc = ..." messages. */
static const char *const go_code_names[CODE_COUNT] = {
    "OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded", "NotFound",
    "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
    "OutOfRange", "Unimplemented", "Internal", "Unavailable", "DataLoss", "Unauthenticated",
};

const char *grpc_code_go_name(int code)
{
    if (code < 0 || code >= CODE_COUNT)
        return "Unknown";
    return go_code_names[code];
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int grpc_code_parse(const char *text, size_t len)
{
    if (len == 0 || len > 2)
        return -1;
    if (len == 2 && text[0] == '0')
        return -1;
    int code = 0;
    for (size_t i = 0; i < len; i++) {
        if (!is_digit(text[i]))
            return -1;
        code = code * 10 + (text[i] - '0');
    }
    return code < CODE_COUNT ? code : -1;
}

/* ---- grpc-message percent-encoding ---- */

static int needs_escape(unsigned char byte)
{
    return byte < 0x20 || byte > 0x7E || byte == '%';
}

static size_t count_escapes(const unsigned char *bytes, size_t len)
{
    size_t escapes = 0;
    for (size_t i = 0; i < len; i++)
        escapes += (size_t)needs_escape(bytes[i]);
    return escapes;
}

int grpc_message_encode(const char *msg, size_t len, buf *out)
{
    static const char hex_upper[] = "0123456789ABCDEF";
    const unsigned char *bytes = (const unsigned char *)msg;
    size_t escapes = count_escapes(bytes, len);
    if (escapes > (SIZE_MAX - len) / 2 || buf_reserve(out, len + 2 * escapes) < 0)
        return -1;
    if (escapes == 0)
        return buf_append(out, msg, len);

    char *dst = out->data + out->len;
    for (size_t i = 0; i < len; i++) {
        unsigned char byte = bytes[i];
        if (!needs_escape(byte)) {
            *dst++ = (char)byte;
            continue;
        }
        *dst++ = '%';
        *dst++ = hex_upper[byte >> 4];
        *dst++ = hex_upper[byte & 0x0F];
    }
    out->len = (size_t)(dst - out->data);
    out->data[out->len] = '\0';
    return 0;
}

/* Value of one hex digit (either case), or -1. */
static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Decoded byte of the escape starting at text[i] ('%'), or -1 when the
 * escape is malformed or cut short. */
static int escape_value(const char *text, size_t len, size_t i)
{
    if (len - i < 3)
        return -1;
    int high = hex_value(text[i + 1]);
    int low = hex_value(text[i + 2]);
    if (high < 0 || low < 0)
        return -1;
    return high << 4 | low;
}

int grpc_message_decode(const char *text, size_t len, buf *out)
{
    /* Decoding never grows the text, so one reservation covers it all. */
    if (buf_reserve(out, len) < 0)
        return -1;
    char *dst = out->data + out->len;
    size_t i = 0;
    while (i < len) {
        int value = text[i] == '%' ? escape_value(text, len, i) : -1;
        if (value < 0) {
            *dst++ = text[i++];
            continue;
        }
        *dst++ = (char)value;
        i += 3;
    }
    out->len = (size_t)(dst - out->data);
    out->data[out->len] = '\0';
    return 0;
}

