/* err_line: the one-line messages rl_input and its pieces append to the
 * caller's `buf *err`.
 *
 * Why one line: runner-client prints the reason after "eval: " and tests
 * compare it whole, while the text often carries a file name, which may
 * itself hold a line break. Every piece that reports (event_list,
 * rl_writer, pkg_files, rl_input) writes with buf_fail_line
 * (core/buf.h), which turns line breaks into spaces, so none forgets. */
#ifndef KRM_RC_ERR_LINE_H
#define KRM_RC_ERR_LINE_H

#include <stddef.h>

#include "core/buf.h"

/* When text[0..len) holds a NUL byte, appends `FIELD "TEXT" holds a NUL
 * byte (\x00) at offset N: ...` (TEXT Go-quoted) to err and returns 1; else 0.
 * Why: a value that becomes a file name or an image is used as a C string,
 * which ends at the NUL ("x.yaml\0/../.." would open x.yaml): such values
 * are refused, naming the byte, wherever they come from. */
int err_line_nul(buf *err, const char *field, const char *text, size_t len);

#endif
