/* peer_hint: when a call failed the way a peer that is not a gRPC server
 * makes it fail (the connection was made, then closed, lost or never
 * answered), look at what the peer actually speaks and say so:
 *   UNAVAILABLE: connection closed by the server (is localhost:8080 a gRPC
 *   server? It answers HTTP/1.x: "HTTP/1.0 505 HTTP Version Not Supported")
 *
 * The evidence comes from one more connection: the HTTP/2 client preface
 * and an empty SETTINGS frame are sent, and up to 256 bytes are read for at
 * most PEER_HINT_WAIT_MS. An HTTP/2 server answers with its SETTINGS at
 * once; then, or when the peer cannot be reached again, nothing is added.
 * (The client library keeps no record of a peer's first bytes; this costs
 * a failed command one short connection and nothing to a good call.) */
#ifndef KRM_RC_PEER_HINT_H
#define KRM_RC_PEER_HINT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

#define PEER_HINT_WAIT_MS 2000

typedef enum {
    PEER_HTTP2,      /* a SETTINGS frame: a real HTTP/2 server, no hint */
    PEER_HTTP1,      /* "HTTP/1.x ..." */
    PEER_HTML,       /* "<!DOCTYPE ..." without a status line (HTTP/0.9 style) */
    PEER_TLS,        /* a TLS record (an alert, most likely) */
    PEER_CLOSED,     /* closed without a byte */
    PEER_SILENT,     /* nothing within the wait */
    PEER_OTHER,      /* some other bytes */
    PEER_UNKNOWN,    /* could not connect again: no evidence */
} peer_kind;

/* What the first bytes of a peer's answer to the HTTP/2 preface say.
 * closed: the peer closed after those bytes; timed_out: the wait ran out. */
peer_kind peer_hint_classify(const uint8_t *bytes, size_t n, int closed, int timed_out);

/* Appends " (is ADDR a gRPC server? ...)" to hint for the kinds that are
 * evidence (all but PEER_HTTP2 and PEER_UNKNOWN), quoting up to one line
 * of the peer's bytes. Returns whether anything was appended. */
int peer_hint_describe(peer_kind kind, const char *addr, const uint8_t *bytes, size_t n, buf *hint);

/* After a call to addr ended with status and message: when status is
 * UNAVAILABLE or DEADLINE_EXCEEDED and connected (the TCP connection had
 * been made), probes addr and appends the hint to *message (reallocated;
 * left as it is on any failure). */
void peer_hint_apply(const char *addr, int connected, int status, char **message);

#endif
