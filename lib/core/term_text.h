/* term_text: runner-client's messages on the user's terminal.
 *
 * Its messages carry text others chose: a server's status message, a
 * function's stderr inside it, a pod's last log lines, a registry's or the
 * API server's error text. Written raw, an ESC or C1 byte in them would
 * drive the user's terminal (clear it, set its title, fake a prompt). So
 * every message goes out through here: control bytes other than the line
 * break, DEL, C1 controls and bytes that are not UTF-8 are written escaped
 * (\xNN, \u00NN), as the servers' log sink escapes them. */
#ifndef KRM_RC_TERM_TEXT_H
#define KRM_RC_TERM_TEXT_H

#include <stddef.h>
#include <stdio.h>

#include "core/buf.h"

/* Appends text[0..len) escaped as above, line breaks included (the caller
 * decides what a line break becomes). 0, or -1 when out of memory. */
int term_escape(const char *text, size_t len, buf *out);

/* fprintf, escaped as above, line breaks kept: for the messages whose
 * lines are meant (a pod's last log lines under its failure). Returns the
 * bytes written, or -1. */
int term_printf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* fprintf of a one-line message (fmt ends in its one line break): escaped
 * as above, and a line break or carriage return inside it written as \n or
 * \r, so an argument (an image, a path, a server's text) can neither end
 * the line nor forge the next one ("[PASS] ..."). Returns the bytes
 * written, or -1. */
int term_line(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One line of a table or a listing on f: each cell escaped as above, line
 * breaks too (a pod name cannot forge a row), left-aligned in widths[i]
 * columns (widths NULL or 0: as long as it is), one space between cells,
 * then a line break. 0, or -1 (out of memory, or f failed). */
int term_row(FILE *f, const char *const *cells, const int *widths, size_t n);

#endif
