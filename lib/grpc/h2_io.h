/* h2_io: moves bytes between a non-blocking socket and an nghttp2 session.
 *
 * nghttp2 does the protocol work (framing, HPACK, flow control) but no I/O;
 * this module is the glue both the server and the client use: read what the
 * socket has and feed it to the session, and write what the session wants to
 * send, batching frames into large writes and keeping what the socket did
 * not take for the next writable event. */
#ifndef KRM_H2_IO_H
#define KRM_H2_IO_H

#include <nghttp2/nghttp2.h>

#include "core/buf.h"
#include "grpc/h2_seen.h"

typedef struct h2_io {
    int fd;
    nghttp2_session *session;
    buf out;          /* serialized frames not yet written */
    size_t out_off;   /* bytes of out already written */
    int busy;         /* inside nghttp2 (recv or send): it must not be re-entered */
    int flush_again;  /* a flush was asked for while busy */
    uint8_t *bulk;    /* read buffer for bulk transfers, kept until h2_io_idle */
    int bulk_release; /* h2_io_idle was asked for while busy */
    int bulk_keep;    /* ... and whether to keep the buffers as spares */
    uint64_t written; /* bytes written to the socket so far: progress, for stall checks */
    int check_closed; /* server: frames on closed client streams end the connection */
    h2_seen seen;     /* ... told by what the frame headers said (h2_seen.h) */
    /* Server: a header block of more CONTINUATION frames than the session
     * takes (nghttp2_option_set_max_continuations) is answered with GOAWAY
     * (ENHANCE_YOUR_CALM) carrying this text, which names the limit; NULL:
     * such a block closes the connection without a word. */
    const char *headers_refusal;
    int refused;      /* that GOAWAY is queued: input is dropped, and the
                       * connection is finished once it is written */
} h2_io;

/* Server sessions: answer DATA or HEADERS on a client stream nghttp2 has
 * closed and forgotten with a connection error, as RFC 9113 §5.1 and
 * §5.1.1 require (see h2_seen.h). Call before the preface is fed. */
void h2_io_check_closed_streams(h2_io *io);

enum h2_io_result {
    H2_IO_OK = 0,        /* nothing more to do until the next event */
    H2_IO_BLOCKED = 1,   /* the socket is full: wait for it to be writable */
    H2_IO_CLOSED = -1,   /* peer closed, I/O error or protocol error: close */
    H2_IO_DEFERRED = 2,  /* asked while busy: the outer call will flush */
};

/* Feed bytes already read from the socket (e.g. while telling HTTP/2 from
 * HTTP/1.1) to the session. Returns H2_IO_OK or H2_IO_CLOSED. */
int h2_io_feed(h2_io *io, const uint8_t *data, size_t len);

/* Read until the socket would block (or a bounded number of reads) and feed
 * the session. Returns H2_IO_OK or H2_IO_CLOSED. */
int h2_io_read(h2_io *io);

/* Write everything the session has to send. Returns H2_IO_OK when all is
 * written, H2_IO_BLOCKED when the socket is full, H2_IO_CLOSED on error.
 *
 * nghttp2 must not be re-entered, yet its callbacks (and what they call)
 * submit frames and ask for flushes. A flush asked for while the session is
 * busy returns H2_IO_DEFERRED and is done when the outer call returns. */
int h2_io_flush(h2_io *io);

/* True when the session has nothing left to read or write and nothing is
 * buffered: the connection can be closed (e.g. after GOAWAY, or once the
 * GOAWAY of a refused header block is written). */
int h2_io_finished(const h2_io *io);

/* DATA frames without the extra copy. A data source's read callback that
 * returns NGHTTP2_DATA_FLAG_NO_COPY only counts the bytes; nghttp2 then
 * calls the session's send_data callback, which passes here with a `copy`
 * function that writes the next `len` bytes of the body at dst. The frame
 * is queued in io->out, its payload copied once, straight from the body
 * (without NO_COPY a body is copied twice: into nghttp2's frame buffer,
 * then into io->out). Returns what the send_data callback returns: 0,
 * NGHTTP2_ERR_PAUSE once a write batch is full, or
 * NGHTTP2_ERR_CALLBACK_FAILURE. */
typedef void h2_io_copy_fn(void *src, uint8_t *dst, size_t len);
int h2_io_queue_data(h2_io *io, const nghttp2_frame *frame, const uint8_t *framehd, size_t len,
                     h2_io_copy_fn *copy, void *src);

/* Nothing is in flight on the connection: give back its bulk read buffer
 * and its grown write buffer, kept as the process's spares (one of each)
 * when `keep` (the caller saw a large message: another may follow), freed
 * otherwise. Returns 1 when it handed memory to the spares (or will, once
 * the read or flush it was called from ends). */
int h2_io_idle(h2_io *io, int keep);
/* Free the spares; the bytes they hold. */
void h2_io_spare_release(void);
size_t h2_io_spare_bytes(void);

void h2_io_free(h2_io *io);

#endif
