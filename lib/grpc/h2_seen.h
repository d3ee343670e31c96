/* h2_seen: the client streams a server connection has seen, read from the
 * inbound frame headers ahead of nghttp2.
 *
 * Why: a frame on a stream that is closed must not pass silently (RFC 9113
 * §5.1.1: PROTOCOL_ERROR for HEADERS on a lower stream id, used before or
 * not; §5.1: STREAM_CLOSED for DATA after the client ended the stream), or
 * the client waits out
 * its deadline for an answer that will never come. nghttp2 tells these
 * apart only from the closed streams it keeps, and we turn that off
 * (nghttp2_option_set_no_closed_streams: up to SETTINGS_MAX_CONCURRENT_
 * STREAMS of them, about 290 bytes each, held for the connection's life);
 * without them it drops such frames without a callback. This remembers 2
 * bits for each of the last H2_SEEN_IDS client stream ids (whether the
 * client opened it, whether it ended or reset it) and the highest id:
 * 72 bytes a connection. Older ids are not told apart (their frames are
 * ignored, as before).
 *
 * The caller feeds the connection's bytes through h2_seen_next, which stops
 * at each DATA or HEADERS frame on an id that is not new; the caller then
 * gives nghttp2 the bytes before that frame and asks h2_seen_verdict,
 * knowing whether nghttp2 still has the stream open. */
#ifndef KRM_H2_SEEN_H
#define KRM_H2_SEEN_H

#include <stddef.h>
#include <stdint.h>

#define H2_SEEN_IDS 256

typedef struct h2_seen {
    uint32_t skip;          /* bytes of the current frame (or the preface) to pass */
    uint8_t hd[9];          /* a frame header split across reads */
    uint8_t hd_len;
    int32_t top_id;         /* highest client stream id a HEADERS frame opened */
    uint64_t opened[H2_SEEN_IDS / 64], ended[H2_SEEN_IDS / 64];
} h2_seen;

/* A frame the caller must check (h2_seen_next). */
typedef struct h2_seen_frame {
    size_t start;           /* offset of its header in the data given (0 when
                               the header began in an earlier chunk) */
    uint8_t type, flags;
    int32_t id;
} h2_seen_frame;

/* preface_len: bytes to pass before the first frame (the client preface). */
void h2_seen_init(h2_seen *s, size_t preface_len);

/* Scans data[0..len). Returns how many bytes it consumed: up to the end of
 * a frame header to check (1 and *f filled in: call h2_seen_verdict, then
 * h2_seen_next again on the rest), or all of them (0). */
int h2_seen_next(h2_seen *s, const uint8_t *data, size_t len, size_t *consumed,
                 h2_seen_frame *f);

/* For a frame h2_seen_next stopped at: 0 when it may go to nghttp2, else
 * the HTTP/2 error code to end the connection with. open: nghttp2 still
 * has the stream (its own state rules apply then). Records the frame. */
uint32_t h2_seen_verdict(h2_seen *s, const h2_seen_frame *f, int open);

#endif
