/* http1: one-request HTTP/1.1 responder; see http1.h.
 *
 * States: reading the request head -> writing the response -> lingering
 * -> done. A request that is malformed, too large, or not GET/HEAD still
 * gets a proper status (400, 431, 405), so a misconfigured probe says why it
 * fails. Lingering: after the response we shut down our side and read what
 * the client still sends until it closes (bounded), because closing a
 * socket with unread data makes the kernel send a reset that can destroy
 * the response before the client reads it. */
#include "grpc/http1.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/log.h"
#include "core/loop.h"

struct http1_conn {
    int fd;
    buf in;
    buf out;
    size_t out_off;
    int responding;
    int lingering;
    size_t discarded;
    http1_handler_fn *handler;
    void *ctx;
};

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Internal Server Error";
    }
}

static void http1_respond(http1_conn *h, int head_only, http1_response *r)
{
    buf_printf(&h->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n",
               r->status, reason(r->status),
               r->content_type ? r->content_type : "text/plain; charset=utf-8", r->body.len);
    if (r->status == 405)
        buf_append_str(&h->out, "Allow: GET, HEAD\r\n");
    buf_append_str(&h->out, "Connection: close\r\n\r\n");
    if (!head_only && r->body.len)
        buf_append(&h->out, r->body.data, r->body.len);
    buf_free(&r->body);
    h->responding = 1;
}

static void http1_error(http1_conn *h, int status, const char *text)
{
    http1_response r = {.status = status};
    buf_printf(&r.body, "%s\n", text);
    http1_respond(h, 0, &r);
}

/* The head is complete (head_len bytes, at most HTTP1_MAX_REQUEST): parse
 * the request line in place and answer. Nothing is copied: the line is cut
 * into method and path by writing NULs into the input buffer, which we own
 * and no longer need as bytes. */
static void http1_handle(http1_conn *h, size_t head_len)
{
    char *line = h->in.data;
    char *eol = memchr(line, '\r', head_len);   /* there is one: the head ends in CRLFCRLF */
    *eol = '\0';
    size_t n = (size_t)(eol - line);
    if (memchr(line, '\0', n)) {
        http1_error(h, 400, "malformed HTTP/1.1 request line");
        return;
    }
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0 || sp1[1] != '/') {
        http1_error(h, 400, "malformed HTTP/1.1 request line");
        return;
    }
    *sp1 = *sp2 = '\0';
    const char *method = line, *path = sp1 + 1;
    int head = !strcmp(method, "HEAD");
    if (!head && strcmp(method, "GET") != 0) {
        http1_error(h, 405, "only GET and HEAD are served on this port over HTTP/1.1");
        return;
    }
    char *query = strchr(sp1 + 1, '?');
    if (query)
        *query++ = '\0';
    log_v(4, "fd %d: HTTP/1.1 %s %s", h->fd, method, path);
    http1_response r = {.status = 200};
    h->handler(h->ctx, path, query ? query : "", &r);
    http1_respond(h, head, &r);
}

/* Reads what there is; answers once the head (up to CRLFCRLF) is in. A head
 * longer than HTTP1_MAX_REQUEST gets 431 whether its end has arrived or not:
 * the limit is on the head, not on what one read happened to bring. */
static int http1_read(http1_conn *h)
{
    char chunk[2048];
    for (;;) {
        const char *end = h->in.len ? memmem(h->in.data, h->in.len, "\r\n\r\n", 4) : NULL;
        size_t head_len = end ? (size_t)(end - h->in.data) + 4 : h->in.len;
        if (head_len > HTTP1_MAX_REQUEST) {
            http1_error(h, 431, "request head larger than 8 KiB");
            return 0;
        }
        if (end) {
            http1_handle(h, head_len);
            return 0;
        }
        ssize_t n = read(h->fd, chunk, sizeof chunk);
        if (n == 0)
            return -1;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? 1 : errno == EINTR ? 0 : -1;
        if (buf_append(&h->in, chunk, (size_t)n) < 0)
            return -1;
    }
}

/* Returns 1 when all is written, 0 when the socket is full, -1 on error. */
static int http1_write(http1_conn *h)
{
    while (h->out_off < h->out.len) {
        ssize_t n = send(h->fd, h->out.data + h->out_off, h->out.len - h->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        }
        h->out_off += (size_t)n;
    }
    return 1;
}

#define HTTP1_LINGER_MAX (64 * 1024)   /* bytes discarded before closing anyway */

/* Returns 1 while the client may still send, 0 when it is time to close. */
static int http1_linger(http1_conn *h)
{
    char chunk[4096];
    for (;;) {
        ssize_t n = read(h->fd, chunk, sizeof chunk);
        if (n == 0)
            return 0;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        h->discarded += (size_t)n;
        if (h->discarded > HTTP1_LINGER_MAX)
            return 0;
    }
}

uint32_t http1_on_io(http1_conn *h)
{
    if (h->lingering)
        return http1_linger(h) ? LOOP_READ : 0;
    if (!h->responding) {
        int rv = http1_read(h);
        if (rv < 0)
            return 0;
        if (rv > 0)
            return LOOP_READ;
    }
    int rv = http1_write(h);
    if (rv == 0)
        return LOOP_WRITE;
    if (rv < 0 || shutdown(h->fd, SHUT_WR) < 0)
        return 0;
    h->lingering = 1;
    return http1_linger(h) ? LOOP_READ : 0;
}

http1_conn *http1_new(int fd, const void *initial, size_t len, http1_handler_fn *handler,
                      void *ctx)
{
    http1_conn *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    *h = (http1_conn){.fd = fd, .handler = handler, .ctx = ctx};
    if (len && buf_append(&h->in, initial, len) < 0) {
        free(h);
        return NULL;
    }
    return h;
}

void http1_free(http1_conn *h)
{
    if (!h)
        return;
    buf_free(&h->in);
    buf_free(&h->out);
    free(h);
}
