/* msg: the copier's one-line messages on stderr and help text on stdout.
 *
 * Both programs in this directory (the `copier` form and the `cp` form) talk
 * to people through these functions, so every error has the same shape:
 * "PROG: what failed 'NAME': errno text". Lines are formatted into a buffer
 * and written with one write(2) (no stdio streams: the binary is linked
 * statically and should stay small). Control characters in the message
 * (a file name may hold a newline) are escaped so one event stays one line. */
#ifndef COPIER_MSG_H
#define COPIER_MSG_H

/* Program name used as the message prefix: "copier" or "cp". */
extern const char *cop_prog;

/* "PROG: <fmt>: strerror(errnum)\n" on stderr; errnum 0 leaves the suffix out. */
void cop_msg(int errnum, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes s as is on stdout (help and version text). Returns 0 or -1. */
int cop_out(const char *s);

/* Escapes control bytes of src into dst (size n > 0, always NUL-terminated):
 * "\n" for newline, "\t" for tab, "\xHH" for the others; cut with "..." when
 * too long (n >= 4). Exposed for the unit tests. */
void cop_escape(char *dst, size_t n, const char *src);

#endif
