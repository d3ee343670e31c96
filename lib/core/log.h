/* log: klog-like lines on stderr, one line per event.
 *
 * Format: "Lmmdd hh:mm:ss.uuuuuu pid file:line] message", L in I/W/E, the
 * header klog uses, so operators read our logs as they read Porch's.
 * --verbosity N enables log_v(level <= N); levels 0-2 are always shown.
 *
 * Messages carry text from requests (image names, paths) and from
 * functions (stderr), so the sink escapes what could forge a record or
 * drive a terminal: every message is exactly one line, whatever it holds
 * (see log_escape). */
#ifndef KRM_LOG_H
#define KRM_LOG_H

#include <stddef.h>

extern int log_verbosity;

void log_line(char severity, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define log_info(...)  log_line('I', __FILE__, __LINE__, __VA_ARGS__)
#define log_warn(...)  log_line('W', __FILE__, __LINE__, __VA_ARGS__)
#define log_error(...) log_line('E', __FILE__, __LINE__, __VA_ARGS__)
#define log_v(level, ...) \
    do { if (log_verbosity >= (level)) log_line('I', __FILE__, __LINE__, __VA_ARGS__); } while (0)

/* Writes in[0..len) to out[0..cap) with every byte that is not printable
 * text escaped: \n, \r and \t as themselves escaped, other C0 controls and
 * DEL as \xNN, C1 controls (U+0080..U+009F, valid UTF-8) as \u00NN, and
 * each byte not part of well-formed UTF-8 as \xNN. Printable ASCII and
 * valid UTF-8 above U+009F pass unchanged (a backslash too: escapes are
 * for safety, not for reversibility). Stops before the first input byte
 * whose output would not fit; *used says how many input bytes went out.
 * Returns the bytes written (no NUL added). Linear in what it writes. */
size_t log_escape(char *out, size_t cap, const char *in, size_t len, size_t *used);

#endif
