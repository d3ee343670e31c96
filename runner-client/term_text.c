/* term_text: escaped messages on the terminal; see term_text.h. */
#include "term_text.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/log.h"

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
    char chunk[1024];
    int rc = 0;
    /* line by line: the line breaks are the message's own */
    for (const char *p = text, *end = text + n; p < end && rc == 0;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        while (len && rc == 0) {
            size_t used, m = log_escape(chunk, sizeof chunk, p, len, &used);
            rc = buf_append(&out, chunk, m);
            p += used;
            len -= used;
        }
        if (nl && rc == 0) {
            rc = buf_append(&out, "\n", 1);
            p = nl + 1;
        }
    }
    free(text);
    if (rc == 0)
        rc = fwrite(out.data ? out.data : "", 1, out.len, f) == out.len ? (int)out.len : -1;
    buf_free(&out);
    return rc;
}
