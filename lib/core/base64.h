/* base64: standard-alphabet base64 (RFC 4648 §4), as Docker's config.json
 * stores credentials ("auth": base64("user:password")). */
#ifndef KRM_BASE64_H
#define KRM_BASE64_H

#include <stddef.h>

#include "core/buf.h"

/* Decodes s[0..len) into out (appended). Padding is optional; whitespace
 * and characters outside the alphabet are errors. Returns 0 or -1. */
int base64_decode(const char *s, size_t len, buf *out);
/* Appends the padded encoding of data[0..len). Returns 0 or -1 (ENOMEM). */
int base64_encode(const void *data, size_t len, buf *out);

#endif
