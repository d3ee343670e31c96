/* utf8: the one UTF-8 decoder the project uses.
 *
 * Everything that reads text from the wire or from a function agrees on one
 * definition of well-formed UTF-8, the one Go's unicode/utf8, proto3 strings,
 * gRPC's grpc-message and libyaml's reader share: no overlong forms, no
 * surrogates (U+D800..U+DFFF), nothing above U+10FFFF. */
#ifndef KRM_UTF8_H
#define KRM_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* Decodes the sequence at s (n bytes left): its length, with the code point
 * in *cp, or 0 when the bytes at s do not start a well-formed sequence
 * (or n is 0). */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* 1 when text[0..len) is well-formed UTF-8, as proto3 requires of strings. */
int utf8_valid(const char *text, size_t len);

/* Appends text with every byte that is not part of well-formed UTF-8
 * replaced by U+FFFD, as grpc-go does before sending a grpc-message. */
int utf8_sanitize(const char *text, size_t len, buf *out);

/* Length of the longest prefix of s[0..len) no longer than max that does not
 * end in the middle of a UTF-8 sequence: where to cut text to fit. */
size_t utf8_cut(const char *s, size_t len, size_t max);

#endif
