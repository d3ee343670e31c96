/* Fuzzes lib/grpc/http1, the HTTP/1.1 responder that answers anything on the
 * gRPC port whose first bytes are not the HTTP/2 preface (so: anyone on the
 * network). The request is sent over a real socketpair, split at a point the
 * input chooses; whatever arrives, the exchange must end (no endless
 * LOOP_READ after the peer closed) with exactly one response that starts
 * with a status line, or with nothing when the peer sent no complete head.
 *
 * Input: [split] [span_at] [span_len] [reps] request...
 * The span of span_len (1-32) request bytes at span_at is repeated reps * 64
 * times (up to 3 * HTTP1_MAX_REQUEST in all). This stretch is why the target
 * can reach the limits: libFuzzer grows inputs slowly from its 4 KiB default
 * maximum, so without it a request line or header block past the 8 KiB head
 * limit (a stack overflow once, issue 13) was never tried; with it, a
 * four-byte change turns any seed into one. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/loop.h"
#include "grpc/http1.h"
#include "fuzz_common.h"

#define MAX_REQUEST (3 * HTTP1_MAX_REQUEST)

static void handler(void *ctx, const char *path, const char *query, http1_response *r)
{
    (void)ctx;
    FUZZ_CHECK(path[0] == '/' && query && !strchr(path, '?'));
    r->status = strcmp(path, "/healthz") ? 404 : 200;
    buf_append_str(&r->body, "ok\n");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4)
        return 0;
    static uint8_t req[MAX_REQUEST];
    size_t n = fuzz_stretch(data, data + 4, size - 4, req, MAX_REQUEST);
    size_t split = n ? data[0] * n / 256 : 0;   /* bytes given as "already read" */
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    int big = 1 << 20;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    FUZZ_CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
    size_t rest = n - split;
    FUZZ_CHECK(write(sv[0], req + split, rest) == (ssize_t)rest);
    shutdown(sv[0], SHUT_WR);
    http1_conn *h = http1_new(sv[1], req, split, handler, NULL);
    FUZZ_CHECK(h != NULL);
    int rounds = 0;
    while (http1_on_io(h) != 0)
        FUZZ_CHECK(++rounds < 1000);   /* the peer closed: it must end */
    http1_free(h);
    close(sv[1]);                      /* so the read below sees EOF, not a wait */
    char reply[16];
    ssize_t got = read(sv[0], reply, sizeof reply);
    FUZZ_CHECK(got <= 0 || (got >= 12 && !memcmp(reply, "HTTP/1.1 ", 9)));
    close(sv[0]);
    return 0;
}
