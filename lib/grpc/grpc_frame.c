/* grpc_frame: incremental reader and writer of gRPC Length-Prefixed-Messages.
 *
 * Why this exists: HTTP/2 DATA frames cut gRPC messages at arbitrary points,
 * so a request of several MiB arrives in many pieces and one piece may hold
 * the tail of one message and the head of the next. The reader is a small
 * state machine fed with whatever bytes arrived. It enforces the receive
 * limit from the 5-byte prefix alone (grpc-go answers RESOURCE_EXHAUSTED
 * before reading the body), so an oversized request never costs memory.
 * A message that arrives whole within one feed is handed over in place,
 * without copying; otherwise its exact size is allocated once. */
#include "grpc/grpc_frame.h"

#include <stdlib.h>
#include <string.h>

/* Room reserved when a prefix arrives; the rest once the body follows. */
#define GRPC_READER_FIRST_RESERVE (64 * 1024)

typedef int (*message_fn)(void *ctx, uint8_t flag, const uint8_t *msg, size_t len);

void grpc_frame_prefix(uint8_t out[GRPC_PREFIX_LEN], uint32_t len)
{
    out[0] = 0;
    out[1] = (uint8_t)(len >> 24);
    out[2] = (uint8_t)(len >> 16);
    out[3] = (uint8_t)(len >> 8);
    out[4] = (uint8_t)len;
}

void grpc_reader_init(grpc_reader *r, uint32_t max_len)
{
    memset(r, 0, sizeof *r);
    r->max_len = max_len;
    r->state = GRPC_READER_PREFIX;
}

void grpc_reader_free(grpc_reader *r)
{
    buf_free(&r->msg);
    r->prefix_len = 0;
    r->state = GRPC_READER_PREFIX;
}

int grpc_reader_partial(const grpc_reader *r)
{
    if (r->state == GRPC_READER_BODY)
        return 1;
    return r->state == GRPC_READER_PREFIX && r->prefix_len > 0;
}

static int deliver(grpc_reader *r, const uint8_t *msg, size_t len,
                   message_fn on_message, void *ctx)
{
    r->n_messages++;
    return on_message(ctx, r->flag, msg, len) != 0 ? -2 : 0;
}

/* Validates a complete prefix. Returns 0, or -1 after entering an error
 * state. */
static int accept_prefix(grpc_reader *r)
{
    r->flag = r->prefix[0];
    r->msg_len = (uint32_t)r->prefix[1] << 24 | (uint32_t)r->prefix[2] << 16 |
                 (uint32_t)r->prefix[3] << 8 | (uint32_t)r->prefix[4];
    r->prefix_len = 0;
    if (r->flag > 1) {
        r->state = GRPC_READER_BAD_FLAG;
        return -1;
    }
    if (r->msg_len > r->max_len) {
        r->state = GRPC_READER_TOO_LARGE;
        return -1;
    }
    return 0;
}

/* Consumes prefix bytes from data; once the prefix is complete, either hands
 * over a message that is wholly present or prepares to collect it. Sets
 * *used to the bytes consumed. Returns 0, or -1 / -2 as grpc_reader_feed. */
static int feed_prefix(grpc_reader *r, const uint8_t *data, size_t len,
                       message_fn on_message, void *ctx, size_t *used)
{
    size_t take = GRPC_PREFIX_LEN - r->prefix_len;
    if (take > len)
        take = len;
    memcpy(r->prefix + r->prefix_len, data, take);
    r->prefix_len += take;
    *used = take;
    if (r->prefix_len < GRPC_PREFIX_LEN)
        return 0;
    if (accept_prefix(r) < 0)
        return -1;

    if (len - take >= r->msg_len) {
        *used += r->msg_len;
        return deliver(r, data + take, r->msg_len, on_message, ctx);
    }
    /* Reserve what the peer declared only as its bytes arrive: 5 bytes of
     * prefix on each of many streams must not make us allocate megabytes.
     * A spare buffer that fits (a server's last large call) costs nothing. */
    buf_reset(&r->msg);
    if (!buf_reserve_spare(&r->msg, r->msg_len) &&
        buf_reserve_exact(&r->msg, r->msg_len < GRPC_READER_FIRST_RESERVE ? r->msg_len
                                                                      : GRPC_READER_FIRST_RESERVE) < 0)
        return -2;

    r->state = GRPC_READER_BODY;
    return 0;
}

/* Appends body bytes and delivers the message once complete. Sets *used to
 * the bytes consumed. Returns 0 or -2. */
static int feed_body(grpc_reader *r, const uint8_t *data, size_t len,
                     message_fn on_message, void *ctx, size_t *used)
{
    size_t missing = r->msg_len - r->msg.len;
    size_t take = missing < len ? missing : len;
    if (r->msg.len + take > r->msg.cap && buf_reserve_exact(&r->msg, r->msg_len) < 0)
        return -2;   /* the body is really coming: room for all of it, once */
    if (buf_append(&r->msg, data, take) < 0)
        return -2;
    *used = take;
    if (r->msg.len < r->msg_len)
        return 0;
    r->state = GRPC_READER_PREFIX;
    int rc = deliver(r, (const uint8_t *)r->msg.data, r->msg.len, on_message, ctx);
    /* A unary call reads one message: do not sit on a multi-megabyte buffer
     * for the rest of the call. Small buffers are kept for the next message. */
    if (r->msg.cap > 64 * 1024)
        buf_free(&r->msg);
    else
        buf_reset(&r->msg);
    return rc;
}

int grpc_reader_take(grpc_reader *r, const uint8_t *msg, size_t len, buf *out)
{
    if (r->msg.data && msg == (const uint8_t *)r->msg.data) {
        *out = r->msg;
        r->msg = (buf){0};
        return 0;
    }
    return buf_append(out, msg, len);
}

int grpc_reader_feed(grpc_reader *r, const uint8_t *data, size_t len,
                     message_fn on_message, void *ctx)
{
    if (r->state == GRPC_READER_TOO_LARGE || r->state == GRPC_READER_BAD_FLAG)
        return -1;
    size_t done = 0;
    while (done < len) {
        size_t used = 0;
        int rc = r->state == GRPC_READER_BODY
                     ? feed_body(r, data + done, len - done, on_message, ctx, &used)
                     : feed_prefix(r, data + done, len - done, on_message, ctx, &used);
        if (rc < 0)
            return rc;
        done += used;
    }
    return 0;
}
