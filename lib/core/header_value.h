/* header_value: the one rule for text that becomes an HTTP header value.
 *
 * Why: a value is written into a header line as it is, so a CR or LF in it
 * ends that line and starts a header (or a request) of the value's choosing;
 * a NUL cuts it where libcurl and servers disagree. Tokens from a
 * kubeconfig, a token file or an exec credential plugin, content types and
 * the user agent are all checked here before any becomes a header, and a
 * value with a control byte (0x00-0x1f, DEL 0x7f; tab too: no credential
 * carries one) is refused, never cleaned: a token that is not what its
 * owner wrote would fail later with a misleading 401. */
#ifndef KRM_HEADER_VALUE_H
#define KRM_HEADER_VALUE_H

#include <stddef.h>

#include "core/buf.h"

/* 0 when value[0..len) may be sent as a header value; else -1 with why in
 * err: "WHAT contains a control byte (0x0d at byte 12) ...". what names the
 * value for the user ("the token"). */
int header_value_check(const char *what, const char *value, size_t len, buf *err);

#endif
