/* log: klog-like lines on stderr, one line per event.
 *
 * Format: "Lmmdd hh:mm:ss.uuuuuu pid file:line] message", L in I/W/E, the
 * header klog uses, so operators read our logs as they read Porch's.
 * --verbosity N enables log_v(level <= N); levels 0-2 are always shown. */
#ifndef KRM_LOG_H
#define KRM_LOG_H

extern int log_verbosity;

void log_line(char severity, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define log_info(...)  log_line('I', __FILE__, __LINE__, __VA_ARGS__)
#define log_warn(...)  log_line('W', __FILE__, __LINE__, __VA_ARGS__)
#define log_error(...) log_line('E', __FILE__, __LINE__, __VA_ARGS__)
#define log_v(level, ...) \
    do { if (log_verbosity >= (level)) log_line('I', __FILE__, __LINE__, __VA_ARGS__); } while (0)

#endif
