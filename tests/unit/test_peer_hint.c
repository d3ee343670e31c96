/* peer_hint (runner-client): what a peer's first bytes after the HTTP/2
 * preface say, and the hint added to a failed call's message. */
#include <criterion/criterion.h>
#include <string.h>

#include "cli/peer_hint.h"

static peer_kind classify(const char *bytes, size_t n, int closed, int timed_out)
{
    return peer_hint_classify((const uint8_t *)bytes, n, closed, timed_out);
}

Test(peer_hint, classify)
{
    /* a server's SETTINGS frame: length 6, type 4, flags 0, stream 0 */
    cr_assert_eq(classify("\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64", 15, 0, 0), PEER_HTTP2);
    cr_assert_eq(classify("HTTP/1.1 400 Bad Request\r\n", 26, 1, 0), PEER_HTTP1);
    cr_assert_eq(classify("<!DOCTYPE HTML>\n", 16, 1, 0), PEER_HTML);
    cr_assert_eq(classify("\x15\x03\x01\x00\x02\x02\x46", 7, 1, 0), PEER_TLS);
    cr_assert_eq(classify("", 0, 1, 0), PEER_CLOSED);
    cr_assert_eq(classify("", 0, 0, 1), PEER_SILENT);
    cr_assert_eq(classify("", 0, 0, 0), PEER_UNKNOWN);
    cr_assert_eq(classify("+OK redis\r\n", 11, 0, 0), PEER_OTHER);
    /* a frame that is not SETTINGS first (type 7, GOAWAY) is not a server preface */
    cr_assert_eq(classify("\x00\x00\x08\x07\x00\x00\x00\x00\x00", 9, 1, 0), PEER_OTHER);
}

static void assert_hint(peer_kind kind, const char *bytes, const char *want)
{
    buf hint = {0};
    cr_assert_eq(peer_hint_describe(kind, "localhost:8080", (const uint8_t *)bytes, strlen(bytes), &hint), 1);
    cr_assert_str_eq(hint.data, want);
    buf_free(&hint);
}

Test(peer_hint, describe)
{
    assert_hint(PEER_HTTP1, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n",
                " (is localhost:8080 a gRPC server? It answers HTTP/1.x: \"HTTP/1.1 400 Bad Request\")");
    assert_hint(PEER_CLOSED, "",
                " (is localhost:8080 a gRPC server? It closed the connection without sending HTTP/2 SETTINGS)");
    assert_hint(PEER_SILENT, "",
                " (is localhost:8080 a gRPC server? It accepted the connection but sent no HTTP/2 SETTINGS "
                "within 2s)");
    assert_hint(PEER_OTHER, "-ERR \"x\"\x01",
                " (is localhost:8080 a gRPC server? Its first bytes are not HTTP/2: \"-ERR \\x22x\\x22\\x01\")");
    buf none = {0};
    cr_assert_eq(peer_hint_describe(PEER_HTTP2, "a:1", NULL, 0, &none), 0);
    cr_assert_eq(peer_hint_describe(PEER_UNKNOWN, "a:1", NULL, 0, &none), 0);
    cr_assert_eq(none.len, 0);
}

Test(peer_hint, long_lines_are_cut)
{
    char line[200];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 1] = '\0';
    memcpy(line, "HTTP/1.1 ", 9);
    buf hint = {0};
    peer_hint_describe(PEER_HTTP1, "h:1", (const uint8_t *)line, strlen(line), &hint);
    cr_assert(strstr(hint.data, "xxx...\")"), "%s", hint.data);
    cr_assert_lt(hint.len, 140);
    buf_free(&hint);
}

/* Nothing is probed for statuses that say nothing of the peer's protocol,
 * nor when the connection was never made. */
Test(peer_hint, apply_only_after_a_connection_broke)
{
    char *message = strdup("function failed");
    peer_hint_apply("127.0.0.1:1", 1, 13 /* INTERNAL */, &message);
    cr_assert_str_eq(message, "function failed");
    peer_hint_apply("127.0.0.1:1", 0, 14 /* UNAVAILABLE */, &message);
    cr_assert_str_eq(message, "function failed");
    /* port 1 refuses: no evidence, no hint */
    peer_hint_apply("127.0.0.1:1", 1, 14, &message);
    cr_assert_str_eq(message, "function failed");
    free(message);
}
