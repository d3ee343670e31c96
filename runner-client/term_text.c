/* term_text: escaped messages on the terminal; see term_text.h. */
#include "term_text.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"

int term_escape(const char *text, size_t len, buf *out)
{
    char chunk[1024];
    while (len) {
        size_t used, n = log_escape(chunk, sizeof chunk, text, len, &used);
        if (buf_append(out, chunk, n) < 0)
            return -1;
        text += used;
        len -= used;
    }
    return 0;
}

int term_printf(FILE *f, const char *fmt, ...)
{
    char *text = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&text, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    buf out = { 0 };
    int rc = 0;
    /* line by line: the line breaks are the message's own */
    for (const char *p = text, *end = text + n; p < end && rc == 0;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        rc = term_escape(p, len, &out);
        p += len;
        if (nl && rc == 0) {
            rc = buf_append(&out, "\n", 1);
            p++;
        }
    }
    free(text);
    if (rc == 0)
        rc = fwrite(out.data ? out.data : "", 1, out.len, f) == out.len ? (int)out.len : -1;
    buf_free(&out);
    return rc;
}

int term_row(FILE *f, const char *const *cells, const int *widths, size_t n)
{
    buf out = { 0 };
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *cell = cells[i] ? cells[i] : "";
        if (i)
            rc = buf_append(&out, " ", 1);
        size_t start = out.len;
        if (rc == 0)
            rc = term_escape(cell, strlen(cell), &out);
        size_t want = widths && widths[i] > 0 ? (size_t)widths[i] : 0;
        while (rc == 0 && out.len - start < want)
            rc = buf_append(&out, " ", 1);
    }
    if (rc == 0)
        rc = buf_append(&out, "\n", 1);
    if (rc == 0)
        rc = fwrite(out.data, 1, out.len, f) == out.len ? 0 : -1;
    buf_free(&out);
    return rc;
}
