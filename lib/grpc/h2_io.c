/* h2_io: socket <-> nghttp2 session glue; see h2_io.h. */
#include "grpc/h2_io.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "grpc/metrics.h"

/* Reads land in a buffer on the stack and nghttp2's callbacks run below it
 * (a call starts there: decode, spawn the function), so every stack page a
 * read ever fills, and every page those callbacks reach below it, stays in
 * the process's RSS for good. At 64 KiB, bursts of calls (8 or 64 streams
 * on a connection) filled it all, and with the spawns below it 76 KiB of
 * stack stayed resident after 10,000 small calls. So small reads use 8 KiB
 * of stack, and only a read that fills it (more is waiting: a request or
 * response of megabytes) moves the connection to a heap buffer of
 * H2_IO_BULK_CHUNK, kept until the connection has nothing in flight
 * (h2_io_idle): a 5 MiB request takes 20 reads instead of 640.
 *
 * The write buffer (io->out) likewise grows to a batch and more while a
 * large body goes out.
 *
 * An idle connection keeps neither. After a large call (the server says
 * so) it parks each as the process's one spare of its kind, and the next
 * large call (on any connection) takes it: mapping them afresh for every
 * large call cost page faults and, at munmap, a TLB shootdown on the other
 * CPU, about 0.8 ms of server CPU per 5 MiB call on our VM. After small
 * calls (a burst of many streams fills them too) they are freed: nothing
 * to win there, and RSS would hold them. The server frees the spares with
 * its other spare memory once idle (h2_io_spare_release). */
#define H2_IO_READ_CHUNK (8 * 1024)
#define H2_IO_BULK_CHUNK (256 * 1024)
#define H2_IO_EVENT_BYTES (1024 * 1024)   /* per event, so one busy peer cannot starve others */
#define H2_IO_WRITE_BATCH (128 * 1024)
#define H2_IO_OUT_KEEP (16 * 1024)   /* a bigger write buffer is not kept when idle */
#define H2_FRAME_HEADER_LEN 9

static uint8_t *spare_bulk;   /* a bulk buffer no connection is using */
static buf spare_out;         /* a grown write buffer no connection is using */

static uint8_t *bulk_take(void)
{
    uint8_t *p = spare_bulk;
    spare_bulk = NULL;
    if (p)
        return p;
    /* mapped, not malloc'd: given back whole, and glibc's malloc does not
     * raise its mmap threshold over it */
    p = mmap(NULL, H2_IO_BULK_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;   /* NULL: go on with small reads */
}

static void bulk_unmap(uint8_t *p)
{
    if (p && munmap(p, H2_IO_BULK_CHUNK) < 0)
        log_error("munmap(bulk read buffer): %s", strerror(errno));
}

/* Room for `extra` more bytes in io->out, from the spare when it is short. */
static int out_reserve(h2_io *io, size_t extra)
{
    size_t need = io->out.len + extra;
    if (need > io->out.cap && spare_out.cap >= need) {
        if (io->out.len)
            memcpy(spare_out.data, io->out.data, io->out.len);
        spare_out.len = io->out.len;
        spare_out.data[spare_out.len] = '\0';
        buf_free(&io->out);
        io->out = spare_out;
        spare_out = (buf){0};
    }
    return buf_reserve(&io->out, extra);
}

void h2_io_spare_release(void)
{
    bulk_unmap(spare_bulk);
    spare_bulk = NULL;
    buf_free(&spare_out);
}

size_t h2_io_spare_bytes(void)
{
    return (spare_bulk ? H2_IO_BULK_CHUNK : 0) + (spare_out.data ? spare_out.cap : 0);
}

/* nghttp2 gave up on a header block of too many CONTINUATION frames: it
 * cannot go on decoding the connection's headers, so the connection ends,
 * but with a GOAWAY that says why (RFC 9113 §5.4.1) rather than a reset.
 * Logged once at the default verbosity (a client that keeps doing it
 * cannot fill the log), then at 3. */
static int h2_io_refuse_headers(h2_io *io)
{
    static int said;
    int32_t last = nghttp2_session_get_last_proc_stream_id(io->session);
    if (!said++)
        log_warn("fd %d: %s; GOAWAY and closing the connection (more are logged at verbosity 3)",
                 io->fd, io->headers_refusal);
    else
        log_v(3, "fd %d: %s; GOAWAY and closing the connection", io->fd, io->headers_refusal);
    metrics_count(METRIC_HEADERS_REFUSED);
    io->refused = 1;
    if (nghttp2_submit_goaway(io->session, NGHTTP2_FLAG_NONE, last, NGHTTP2_ENHANCE_YOUR_CALM,
                              (const uint8_t *)io->headers_refusal,
                              strlen(io->headers_refusal)) != 0)
        return H2_IO_CLOSED;
    return H2_IO_OK;
}

static int h2_io_recv(h2_io *io, const uint8_t *data, size_t len)
{
    if (!len || io->refused)
        return H2_IO_OK;   /* refused: read and dropped, so closing sends no reset */
    ssize_t used = nghttp2_session_mem_recv(io->session, data, len);
    if (used == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS && io->headers_refusal)
        return h2_io_refuse_headers(io);
    if (used < 0) {
        log_v(3, "fd %d: HTTP/2 error: %s", io->fd, nghttp2_strerror((int)used));
        return H2_IO_CLOSED;
    }
    return H2_IO_OK;
}

void h2_io_check_closed_streams(h2_io *io)
{
    io->check_closed = 1;
    h2_seen_init(&io->seen, NGHTTP2_CLIENT_MAGIC_LEN);
}

/* Feeds nghttp2, stopping before each frame on a stream id that is not
 * new so that it can be checked against what nghttp2 knows by then. A
 * frame nghttp2 would drop silently ends the connection instead:
 * nghttp2_session_terminate_session queues the GOAWAY, reads stop and the
 * connection closes once it is sent. */
static int h2_io_feed_busy(h2_io *io, const uint8_t *data, size_t len)
{
    metrics_bytes_received(len);
    if (!io->check_closed)
        return h2_io_recv(io, data, len);
    size_t off = 0, fed = 0, used;
    h2_seen_frame f;
    while (off < len && h2_seen_next(&io->seen, data + off, len - off, &used, &f)) {
        size_t start = off + f.start;   /* the frame's header, if it began in this chunk */
        off += used;
        if (start > fed) {
            if (h2_io_recv(io, data + fed, start - fed) == H2_IO_CLOSED)
                return H2_IO_CLOSED;
            fed = start;
        }
        if (io->refused)
            return H2_IO_OK;   /* the rest is dropped */
        if (!nghttp2_session_want_read(io->session))
            continue;   /* ending already */
        int open = nghttp2_session_find_stream(io->session, f.id) != NULL;
        uint32_t code = h2_seen_verdict(&io->seen, &f, open);
        if (code) {
            log_v(2, "fd %d: %s on closed stream %d: %s; closing the connection", io->fd,
                  f.type == NGHTTP2_HEADERS ? "HEADERS" : "DATA", f.id,
                  nghttp2_http2_strerror(code));
            nghttp2_session_terminate_session(io->session, code);
        }
    }
    return h2_io_recv(io, data + fed, len - fed);
}

int h2_io_feed(h2_io *io, const uint8_t *data, size_t len)
{
    io->busy = 1;
    int rv = h2_io_feed_busy(io, data, len);
    io->busy = 0;
    return rv;
}

static int h2_io_read_busy(h2_io *io)
{
    uint8_t small[H2_IO_READ_CHUNK];
    size_t got = 0;
    while (got < H2_IO_EVENT_BYTES) {
        uint8_t *data = io->bulk ? io->bulk : small;
        size_t cap = io->bulk ? H2_IO_BULK_CHUNK : sizeof small;
        ssize_t n = read(io->fd, data, cap);
        if (n == 0)
            return H2_IO_CLOSED;
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return H2_IO_OK;
            if (errno == EINTR)
                continue;
            log_v(3, "read(fd %d): %s", io->fd, strerror(errno));
            return H2_IO_CLOSED;
        }
        if (h2_io_feed_busy(io, data, (size_t)n) == H2_IO_CLOSED)
            return H2_IO_CLOSED;
        if ((size_t)n < cap)
            return H2_IO_OK;
        got += (size_t)n;
        if (!io->bulk)
            io->bulk = bulk_take();
    }
    return H2_IO_OK;
}

/* Pull frames from the session into io->out until the batch is big enough. */
static int h2_io_fill(h2_io *io)
{
    while (io->out.len < H2_IO_WRITE_BATCH) {
        const uint8_t *frames;
        size_t queued = io->out.len;   /* DATA frames go there directly (h2_io_queue_data) */
        ssize_t n = nghttp2_session_mem_send(io->session, &frames);
        if (n < 0) {
            log_v(3, "fd %d: HTTP/2 send error: %s", io->fd, nghttp2_strerror((int)n));
            return -1;
        }
        if (n == 0 && io->out.len == queued)
            break;
        if (n > 0 && buf_append(&io->out, frames, (size_t)n) < 0)
            return -1;
    }
    return 0;
}

int h2_io_queue_data(h2_io *io, const nghttp2_frame *frame, const uint8_t *framehd, size_t len,
                     h2_io_copy_fn *copy, void *src)
{
    if (frame->data.padlen > 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;   /* we never ask for padding */
    if (out_reserve(io, H2_FRAME_HEADER_LEN + len) < 0)
        return NGHTTP2_ERR_CALLBACK_FAILURE;
    uint8_t *at = (uint8_t *)io->out.data + io->out.len;
    memcpy(at, framehd, H2_FRAME_HEADER_LEN);
    copy(src, at + H2_FRAME_HEADER_LEN, len);
    io->out.len += H2_FRAME_HEADER_LEN + len;
    io->out.data[io->out.len] = '\0';   /* buf keeps its terminator */
    /* nghttp2 would go on queueing frames up to the peer's flow-control
     * window (megabytes): stop at a batch, the next fill goes on */
    return io->out.len >= H2_IO_WRITE_BATCH ? NGHTTP2_ERR_PAUSE : 0;
}

int h2_io_read(h2_io *io)
{
    io->busy = 1;
    int rv = h2_io_read_busy(io);
    io->busy = 0;
    if (io->bulk_release)
        h2_io_idle(io, io->bulk_keep);
    return rv;
}

int h2_io_idle(h2_io *io, int keep)
{
    int big_out = io->out.cap > H2_IO_OUT_KEEP;
    if (io->busy) {   /* called back from inside a read: maybe from the bulk buffer */
        io->bulk_release = 1;
        io->bulk_keep = keep;
        return keep && (io->bulk != NULL || big_out);
    }
    io->bulk_release = 0;
    int parked = 0;
    if (keep && io->bulk && !spare_bulk) {
        spare_bulk = io->bulk;
        parked = 1;
    } else {
        bulk_unmap(io->bulk);
    }
    io->bulk = NULL;
    if (big_out && io->out_off == io->out.len) {   /* not while frames wait for the socket */
        buf_reset(&io->out);
        io->out_off = 0;
        if (keep && spare_out.cap < io->out.cap) {
            buf_free(&spare_out);
            spare_out = io->out;
            parked = 1;
        } else {
            buf_free(&io->out);
        }
        io->out = (buf){0};
    }
    return parked;
}

static int h2_io_write(h2_io *io)
{
    for (;;) {
        if (io->out_off == io->out.len) {
            buf_reset(&io->out);
            io->out_off = 0;
            if (h2_io_fill(io) < 0)
                return H2_IO_CLOSED;
            if (io->out.len == 0)
                return H2_IO_OK;
        }
        ssize_t n = send(io->fd, io->out.data + io->out_off, io->out.len - io->out_off,
                         MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return H2_IO_BLOCKED;
            if (errno == EINTR)
                continue;
            log_v(3, "send(fd %d): %s", io->fd, strerror(errno));
            return H2_IO_CLOSED;
        }
        io->out_off += (size_t)n;
        io->written += (uint64_t)n;
        metrics_bytes_sent((size_t)n);
    }
}

int h2_io_flush(h2_io *io)
{
    if (io->busy) {
        io->flush_again = 1;
        return H2_IO_DEFERRED;
    }
    int rv;
    do {
        io->flush_again = 0;
        io->busy = 1;
        rv = h2_io_write(io);
        io->busy = 0;
    } while (io->flush_again && rv != H2_IO_CLOSED);
    if (io->bulk_release)   /* the last call ended while its trailers went out */
        h2_io_idle(io, io->bulk_keep);
    return rv;
}

int h2_io_finished(const h2_io *io)
{
    return io->out_off == io->out.len &&
           (io->refused || !nghttp2_session_want_read(io->session)) &&
           !nghttp2_session_want_write(io->session);
}

void h2_io_free(h2_io *io)
{
    if (io->session)
        nghttp2_session_del(io->session);
    io->session = NULL;
    buf_free(&io->out);
    io->busy = 0;
    io->bulk_release = 0;
    bulk_unmap(io->bulk);   /* not parked: a client process has no idle timer to unmap it */
    io->bulk = NULL;
    if (io->fd >= 0)
        close(io->fd);
    io->fd = -1;
}
