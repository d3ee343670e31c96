/* grpc_frame: gRPC Length-Prefixed-Message framing.
 *
 *   byte 0     compressed flag (0 or 1)
 *   bytes 1-4  message length, big endian
 *   bytes 5..  the message
 *
 * HTTP/2 DATA frames split and join messages arbitrarily, so the reader is
 * incremental: feed it bytes as they arrive and it reports each complete
 * message. It checks the length against the limit as soon as the 5-byte
 * prefix is in, before allocating, so an oversized message is refused
 * without being buffered. */
#ifndef KRM_GRPC_FRAME_H
#define KRM_GRPC_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define GRPC_PREFIX_LEN 5

/* Writes the 5-byte prefix for an uncompressed message of `len` bytes. */
void grpc_frame_prefix(uint8_t out[GRPC_PREFIX_LEN], uint32_t len);

enum grpc_reader_state {
    GRPC_READER_PREFIX,     /* waiting for (the rest of) a prefix */
    GRPC_READER_BODY,       /* prefix read, collecting the message */
    GRPC_READER_TOO_LARGE,  /* declared length over the limit; stays here */
    GRPC_READER_BAD_FLAG,   /* compressed flag not 0/1; stays here */
};

typedef struct grpc_reader {
    uint32_t max_len;        /* largest message accepted (equality allowed) */
    enum grpc_reader_state state;
    uint8_t prefix[GRPC_PREFIX_LEN];
    size_t prefix_len;
    uint8_t flag;            /* compressed flag of the current message */
    uint32_t msg_len;        /* declared length of the current message */
    buf msg;                 /* bytes of the current message so far */
    size_t n_messages;       /* complete messages seen */
} grpc_reader;

void grpc_reader_init(grpc_reader *r, uint32_t max_len);
void grpc_reader_free(grpc_reader *r);

/* Feeds bytes. Each time a message completes, on_message(ctx, flag, data,
 * len) is called; the data stays valid only during the call. Returns 0 while
 * the stream is well formed, -1 once it is in TOO_LARGE or BAD_FLAG state
 * (further input is ignored), -2 on ENOMEM or when on_message returns
 * non-zero. */
int grpc_reader_feed(grpc_reader *r, const uint8_t *data, size_t len,
                     int (*on_message)(void *ctx, uint8_t flag, const uint8_t *msg, size_t len),
                     void *ctx);

/* From inside on_message: keep the message beyond the call. The reader's
 * own buffer is handed over when the message was assembled there (no copy:
 * it may be megabytes); a message that arrived in one piece is copied.
 * Returns 0, or -1 on ENOMEM. out must be empty; free it with buf_free. */
int grpc_reader_take(grpc_reader *r, const uint8_t *msg, size_t len, buf *out);

/* True when input ended in the middle of a prefix or a message. */
int grpc_reader_partial(const grpc_reader *r);

#endif
