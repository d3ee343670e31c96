/* err_line: the one-line messages rl_input and its pieces leave in the
 * caller's `char *err, size_t errlen`.
 *
 * Why one line: runner-client prints the reason after "eval: " and tests
 * compare it whole, while the text often carries a file name, which may
 * itself hold a line break. Every piece that reports (event_list,
 * rl_writer, pkg_files, rl_input) writes through here so none forgets. */
#ifndef KRM_RC_ERR_LINE_H
#define KRM_RC_ERR_LINE_H

#include <stdarg.h>
#include <stddef.h>

/* Formats into err (nothing when err is NULL or errlen 0), truncating, with
 * any '\n' or '\r' turned into a space. */
void err_line_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void err_line_vset(char *err, size_t errlen, const char *fmt, va_list ap);

/* When text[0..len) holds a NUL byte, sets err to `FIELD "TEXT" holds a NUL
 * byte (\x00) at offset N: ...` (TEXT Go-quoted) and returns 1; else 0.
 * Why: a value that becomes a file name or an image is used as a C string,
 * which ends at the NUL ("x.yaml\0/../.." would open x.yaml): such values
 * are refused, naming the byte, wherever they come from. */
int err_line_nul(char *err, size_t errlen, const char *field, const char *text, size_t len);

#endif
