/* log: klog-like lines on stderr; see log.h.
 * Each line is formatted into one buffer and written with a single write(2)
 * so lines from the server and its children never interleave mid-line. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int log_verbosity = 2;

void log_line(char severity, const char *file, int line, const char *fmt, ...)
{
    char msg[4096];
    struct timeval tv;
    struct tm tm;
    gettimeofday(&tv, NULL);
    gmtime_r(&tv.tv_sec, &tm);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;

    int n = snprintf(msg, sizeof msg, "%c%02d%02d %02d:%02d:%02d.%06ld %7d %s:%d] ",
                     severity, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, (long)tv.tv_usec, (int)getpid(), base, line);
    if (n < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0)
        return;
    size_t len = (size_t)n + (size_t)m;
    if (len > sizeof msg - 2) {        /* cut long lines visibly, never silently */
        len = sizeof msg - 5;
        memcpy(msg + len - 3, "...", 3);
    }
    /* one event per line: fold embedded newlines */
    for (size_t i = (size_t)n; i < len; i++)
        if (msg[i] == '\n')
            msg[i] = ' ';
    msg[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, msg, len);
    (void)w; /* nowhere to report a failing stderr */
}
