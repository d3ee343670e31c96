/* msg: one-line messages for the copier; see msg.h. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "msg.h"

const char *cop_prog = "copier";

/* One byte as it appears in a message; returns its length (1 to 4). */
static size_t escape_byte(char *out, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    if (c == '\n' || c == '\t') {
        out[0] = '\\', out[1] = c == '\n' ? 'n' : 't';
        return 2;
    }
    if (c < 0x20 || c == 0x7f) {
        out[0] = '\\', out[1] = 'x', out[2] = hex[c >> 4], out[3] = hex[c & 15];
        return 4;
    }
    out[0] = (char)c;
    return 1;
}

void cop_escape(char *dst, size_t n, const char *src)
{
    size_t o = 0;                       /* invariant: o <= n - 4 */
    for (; *src; src++) {
        char esc[4];
        size_t len = escape_byte(esc, (unsigned char)*src);
        if (o + len > n - 4) {          /* keep room for "..." and the NUL */
            memcpy(dst + o, "...", 3);
            o += 3;
            break;
        }
        memcpy(dst + o, esc, len);
        o += len;
    }
    dst[o] = '\0';
}

static void write_stderr(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w <= 0)
            return;      /* nowhere left to report a failing stderr */
        p += w;
        n -= (size_t)w;
    }
}

void cop_msg(int errnum, const char *fmt, ...)
{
    char raw[2048], line[3072];
    va_list ap;
    va_start(ap, fmt);
    if (vsnprintf(raw, sizeof raw, fmt, ap) < 0)
        raw[0] = '\0';
    va_end(ap);
    int n = snprintf(line, sizeof line, "%s: ", cop_prog);
    if (n < 0 || (size_t)n >= sizeof line / 4)
        n = 0;
    cop_escape(line + n, sizeof line - 256 - (size_t)n, raw);
    size_t len = strlen(line);
    int m = snprintf(line + len, sizeof line - len, "%s%s\n",
                     errnum ? ": " : "", errnum ? strerror(errnum) : "");
    if (m < 0)
        return;
    len += (size_t)m < sizeof line - len ? (size_t)m : sizeof line - len - 1;
    write_stderr(line, len);
}

int cop_out(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(STDOUT_FILENO, s, n);
        if (w < 0)
            return -1;
        s += w;
        n -= (size_t)w;
    }
    return 0;
}
