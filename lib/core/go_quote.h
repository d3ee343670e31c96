/* go_quote: text quoted as Go's %q (strconv.Quote) writes it.
 *
 * Porch's messages quote image names, kinds and keys with %q, and users (and
 * tests written against Porch) compare those messages byte for byte; one
 * writer serves the verdict texts and the ResourceList errors alike. */
#ifndef KRM_GO_QUOTE_H
#define KRM_GO_QUOTE_H

#include <stddef.h>

#include "core/buf.h"

/* Appends s[0..len) in double quotes: \" and \\, the short escapes (\n, \t,
 * ...), \xNN for other controls, DEL and bytes that are not valid UTF-8,
 * \uNNNN / \UNNNNNNNN for code points Go does not print; the rest as is.
 * Returns 0, or -1 when out of memory. */
int go_quote_bytes(const char *s, size_t len, buf *out);

/* The same for a NUL-terminated string. */
int go_quote(const char *s, buf *out);

/* go_quote_bytes of at most the first `shown` bytes, then "... (N bytes)"
 * when there were more: a peer's megabytes named in a message. */
int go_quote_at_most(const char *s, size_t len, size_t shown, buf *out);

#endif
