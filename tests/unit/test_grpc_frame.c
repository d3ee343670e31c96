/* Unit tests for grpc_frame: the Length-Prefixed-Message reader must cope
 * with messages cut anywhere by HTTP/2 DATA frames, several messages in one
 * frame, and must refuse oversized or unknown-flag messages from the prefix
 * alone, without buffering them. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/grpc_frame.h"

#define MAX_SEEN 8

/* What the on_message callback saw. */
typedef struct seen {
    size_t count;
    uint8_t flags[MAX_SEEN];
    size_t lens[MAX_SEEN];
    uint8_t *copies[MAX_SEEN];
    size_t fail_at;  /* return non-zero on this 1-based call; 0 = never */
} seen;

static int record_message(void *ctx, uint8_t flag, const uint8_t *msg, size_t len)
{
    seen *s = ctx;
    cr_assert_lt(s->count, MAX_SEEN);
    cr_assert_not_null(msg);
    s->flags[s->count] = flag;
    s->lens[s->count] = len;
    s->copies[s->count] = malloc(len ? len : 1);
    memcpy(s->copies[s->count], msg, len);
    s->count++;
    return s->count == s->fail_at ? 1 : 0;
}

static void seen_free(seen *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->copies[i]);
}

/* Appends a framed message (prefix + body) to out. */
static void frame_into(buf *out, uint8_t flag, const void *body, uint32_t len)
{
    uint8_t prefix[GRPC_PREFIX_LEN];
    grpc_frame_prefix(prefix, len);
    prefix[0] = flag;
    buf_append(out, prefix, sizeof prefix);
    buf_append(out, body, len);
}

static void expect_message(const seen *s, size_t i, const char *body)
{
    cr_assert_lt(i, s->count);
    cr_assert_eq(s->lens[i], strlen(body));
    cr_assert(memcmp(s->copies[i], body, s->lens[i]) == 0);
}

Test(grpc_frame, prefix_encoding)
{
    uint8_t prefix[GRPC_PREFIX_LEN];
    grpc_frame_prefix(prefix, 0x01020304);
    const uint8_t expected[] = {0, 1, 2, 3, 4};
    cr_assert(memcmp(prefix, expected, sizeof expected) == 0);
    grpc_frame_prefix(prefix, 6 * 1024 * 1024);
    const uint8_t six_mib[] = {0, 0x00, 0x60, 0x00, 0x00};
    cr_assert(memcmp(prefix, six_mib, sizeof six_mib) == 0);
}

Test(grpc_frame, whole_message_in_one_feed)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    buf wire = {0};
    frame_into(&wire, 0, "hello", 5);
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, wire.len, record_message, &s), 0);
    cr_assert_eq(s.count, 1);
    cr_assert_eq(s.flags[0], 0);
    expect_message(&s, 0, "hello");
    cr_assert_eq(r.n_messages, 1);
    cr_assert_not(grpc_reader_partial(&r));
    seen_free(&s);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, byte_by_byte)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    buf wire = {0};
    frame_into(&wire, 0, "abcdefghij", 10);
    frame_into(&wire, 1, "xy", 2);
    seen s = {0};
    for (size_t i = 0; i < wire.len; i++) {
        cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + i, 1, record_message, &s), 0);
        int at_boundary = i + 1 == 15 || i + 1 == wire.len;
        cr_assert_eq(grpc_reader_partial(&r), !at_boundary, "after byte %zu", i);
    }
    cr_assert_eq(s.count, 2);
    expect_message(&s, 0, "abcdefghij");
    expect_message(&s, 1, "xy");
    cr_assert_eq(s.flags[1], 1);
    /* Collected bodies are allocated at their exact size. */
    cr_assert_leq(r.msg.cap, 10);
    seen_free(&s);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, several_messages_in_one_feed)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    buf wire = {0};
    frame_into(&wire, 0, "one", 3);
    frame_into(&wire, 0, "", 0);
    frame_into(&wire, 0, "three", 5);
    frame_into(&wire, 0, "fo", 2);
    seen s = {0};
    /* Feed all but the last byte, then the last byte. */
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, wire.len - 1, record_message, &s), 0);
    cr_assert_eq(s.count, 3);
    cr_assert(grpc_reader_partial(&r));
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + wire.len - 1, 1, record_message, &s), 0);
    cr_assert_eq(s.count, 4);
    expect_message(&s, 0, "one");
    expect_message(&s, 1, "");
    expect_message(&s, 2, "three");
    expect_message(&s, 3, "fo");
    cr_assert_eq(r.n_messages, 4);
    cr_assert_not(grpc_reader_partial(&r));
    seen_free(&s);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, every_split_point)
{
    buf wire = {0};
    frame_into(&wire, 0, "first", 5);
    frame_into(&wire, 0, "second!", 7);
    for (size_t split = 0; split <= wire.len; split++) {
        grpc_reader r;
        grpc_reader_init(&r, 64);
        seen s = {0};
        cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, split, record_message, &s), 0);
        cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + split, wire.len - split,
                                      record_message, &s), 0);
        cr_assert_eq(s.count, 2, "split %zu", split);
        expect_message(&s, 0, "first");
        expect_message(&s, 1, "second!");
        cr_assert_not(grpc_reader_partial(&r));
        seen_free(&s);
        grpc_reader_free(&r);
    }
    buf_free(&wire);
}

Test(grpc_frame, zero_length_message)
{
    grpc_reader r;
    grpc_reader_init(&r, 0);
    const uint8_t empty[] = {0, 0, 0, 0, 0};
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, empty, 3, record_message, &s), 0);
    cr_assert_eq(s.count, 0);
    cr_assert(grpc_reader_partial(&r));
    cr_assert_eq(grpc_reader_feed(&r, empty + 3, 2, record_message, &s), 0);
    cr_assert_eq(s.count, 1);
    cr_assert_eq(s.lens[0], 0);
    cr_assert_not(grpc_reader_partial(&r));
    seen_free(&s);
    grpc_reader_free(&r);
}

Test(grpc_frame, empty_feed_is_harmless)
{
    grpc_reader r;
    grpc_reader_init(&r, 16);
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, NULL, 0, record_message, &s), 0);
    cr_assert_eq(s.count, 0);
    cr_assert_not(grpc_reader_partial(&r));
    grpc_reader_free(&r);
}

Test(grpc_frame, message_exactly_at_max_accepted)
{
    enum { MAX = 4096 };
    grpc_reader r;
    grpc_reader_init(&r, MAX);
    uint8_t *body = malloc(MAX);
    for (size_t i = 0; i < MAX; i++)
        body[i] = (uint8_t)(i * 7);
    buf wire = {0};
    frame_into(&wire, 0, body, MAX);
    seen s = {0};
    /* Two halves, so the body is collected in r.msg. */
    size_t half = wire.len / 2;
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, half, record_message, &s), 0);
    cr_assert_eq(r.state, GRPC_READER_BODY);
    cr_assert_eq(r.msg.cap, MAX, "reserved exactly once at the declared size");
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + half, wire.len - half,
                                  record_message, &s), 0);
    cr_assert_eq(s.count, 1);
    cr_assert_eq(s.lens[0], MAX);
    cr_assert(memcmp(s.copies[0], body, MAX) == 0);
    cr_assert_eq(r.msg.cap, MAX);
    seen_free(&s);
    free(body);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, message_over_max_refused_without_allocation)
{
    const uint32_t max = 6 * 1024 * 1024;
    grpc_reader r;
    grpc_reader_init(&r, max);
    uint8_t prefix[GRPC_PREFIX_LEN];
    grpc_frame_prefix(prefix, max + 1);
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, prefix, 4, record_message, &s), 0);
    cr_assert_eq(grpc_reader_feed(&r, prefix + 4, 1, record_message, &s), -1);
    cr_assert_eq(r.state, GRPC_READER_TOO_LARGE);
    cr_assert_eq(r.msg_len, max + 1);
    cr_assert_leq(r.msg.cap, 64);
    cr_assert_null(r.msg.data);
    /* Further input is ignored and keeps failing. */
    const uint8_t more[] = {1, 2, 3, 0, 0, 0, 0, 0};
    cr_assert_eq(grpc_reader_feed(&r, more, sizeof more, record_message, &s), -1);
    cr_assert_eq(r.state, GRPC_READER_TOO_LARGE);
    cr_assert_eq(s.count, 0);
    cr_assert_leq(r.msg.cap, 64);
    grpc_reader_free(&r);
}

Test(grpc_frame, huge_declared_length_refused)
{
    grpc_reader r;
    grpc_reader_init(&r, 4 * 1024 * 1024);
    const uint8_t prefix[] = {0, 0xFF, 0xFF, 0xFF, 0xFF};
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, prefix, sizeof prefix, record_message, &s), -1);
    cr_assert_eq(r.state, GRPC_READER_TOO_LARGE);
    cr_assert_eq(r.msg_len, UINT32_MAX);
    cr_assert_null(r.msg.data);
    grpc_reader_free(&r);
}

Test(grpc_frame, too_large_after_a_good_message)
{
    grpc_reader r;
    grpc_reader_init(&r, 4);
    buf wire = {0};
    frame_into(&wire, 0, "ok", 2);
    frame_into(&wire, 0, "toolong", 7);
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, wire.len, record_message, &s), -1);
    cr_assert_eq(s.count, 1);
    expect_message(&s, 0, "ok");
    cr_assert_eq(r.state, GRPC_READER_TOO_LARGE);
    seen_free(&s);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, bad_flag)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    const uint8_t wire[] = {2, 0, 0, 0, 1, 'x'};
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, wire, sizeof wire, record_message, &s), -1);
    cr_assert_eq(r.state, GRPC_READER_BAD_FLAG);
    cr_assert_eq(r.flag, 2);
    cr_assert_eq(s.count, 0);
    cr_assert_eq(grpc_reader_feed(&r, wire, sizeof wire, record_message, &s), -1);
    cr_assert_eq(r.state, GRPC_READER_BAD_FLAG);
    grpc_reader_free(&r);
}

Test(grpc_frame, bad_flag_0xff)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    const uint8_t wire[] = {0xFF, 0, 0, 0, 0};
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, wire, sizeof wire, record_message, &s), -1);
    cr_assert_eq(r.state, GRPC_READER_BAD_FLAG);
    grpc_reader_free(&r);
}

Test(grpc_frame, compressed_flag_passed_through)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    buf wire = {0};
    frame_into(&wire, 1, "gz", 2);
    seen s = {0};
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, wire.len, record_message, &s), 0);
    cr_assert_eq(s.count, 1);
    cr_assert_eq(s.flags[0], 1);
    seen_free(&s);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, partial_detection)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    buf wire = {0};
    frame_into(&wire, 0, "body", 4);
    seen s = {0};
    cr_assert_not(grpc_reader_partial(&r));
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, 1, record_message, &s), 0);
    cr_assert(grpc_reader_partial(&r));  /* inside the prefix */
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + 1, 4, record_message, &s), 0);
    cr_assert(grpc_reader_partial(&r));  /* prefix done, body missing */
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + 5, 3, record_message, &s), 0);
    cr_assert(grpc_reader_partial(&r));  /* body incomplete */
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + 8, 1, record_message, &s), 0);
    cr_assert_not(grpc_reader_partial(&r));
    cr_assert_eq(s.count, 1);
    expect_message(&s, 0, "body");
    seen_free(&s);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, callback_failure_direct)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    buf wire = {0};
    frame_into(&wire, 0, "a", 1);
    frame_into(&wire, 0, "b", 1);
    seen s = {.fail_at = 1};
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, wire.len, record_message, &s), -2);
    cr_assert_eq(s.count, 1, "no further message after the callback failed");
    seen_free(&s);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, callback_failure_buffered)
{
    grpc_reader r;
    grpc_reader_init(&r, 1024);
    buf wire = {0};
    frame_into(&wire, 0, "abc", 3);
    seen s = {.fail_at = 1};
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data, 6, record_message, &s), 0);
    cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + 6, 2, record_message, &s), -2);
    cr_assert_eq(s.count, 1);
    expect_message(&s, 0, "abc");
    seen_free(&s);
    buf_free(&wire);
    grpc_reader_free(&r);
}

Test(grpc_frame, large_message_in_small_pieces)
{
    enum { SIZE = 6 * 1024 * 1024, PIECE = 16384 };
    grpc_reader r;
    grpc_reader_init(&r, SIZE);
    uint8_t *body = malloc(SIZE);
    for (size_t i = 0; i < SIZE; i++)
        body[i] = (uint8_t)(i ^ (i >> 8));
    buf wire = {0};
    frame_into(&wire, 0, body, SIZE);
    seen s = {0};
    for (size_t off = 0; off < wire.len; off += PIECE) {
        size_t n = wire.len - off < PIECE ? wire.len - off : PIECE;
        cr_assert_eq(grpc_reader_feed(&r, (uint8_t *)wire.data + off, n, record_message, &s), 0);
    }
    cr_assert_eq(s.count, 1);
    cr_assert_eq(s.lens[0], SIZE);
    cr_assert(memcmp(s.copies[0], body, SIZE) == 0);
    cr_assert_eq(r.msg.cap, 0, "a large message buffer must be released once delivered");
    seen_free(&s);
    free(body);
    buf_free(&wire);
    grpc_reader_free(&r);
}

/* A prefix declaring megabytes costs the peer 5 bytes: nothing near that
 * size may be allocated until the body arrives; then it is all reserved at
 * once (one allocation, no doubling). */
Test(grpc_frame, declared_size_is_reserved_only_as_the_body_arrives)
{
    grpc_reader r;
    grpc_reader_init(&r, 8u << 20);
    seen s = {0};
    uint8_t prefix[GRPC_PREFIX_LEN];
    grpc_frame_prefix(prefix, 6u << 20);
    cr_assert_eq(grpc_reader_feed(&r, prefix, sizeof prefix, record_message, &s), 0);
    cr_assert_leq(r.msg.cap, 64 * 1024, "reserved %zu bytes for a body not yet sent", r.msg.cap);
    static uint8_t body[100 * 1024];
    memset(body, 'x', sizeof body);
    cr_assert_eq(grpc_reader_feed(&r, body, sizeof body, record_message, &s), 0);
    cr_assert_eq(r.msg.cap, 6u << 20);
    cr_assert_eq(r.msg.len, sizeof body);
    grpc_reader_free(&r);
    seen_free(&s);
}
