/* term_text: escaped messages on the terminal; see term_text.h. */
#include "core/term_text.h"

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

/* text[0..len) escaped into out; its line breaks kept (`one_line` 0) or
 * written as \n and \r, but for a final line break (1). */
static int escape_message(const char *text, size_t len, int one_line, buf *out)
{
    int ends_line = one_line && len && text[len - 1] == '\n';
    len -= (size_t)ends_line;
    int rc = 0;
    for (size_t i = 0, run; i < len && rc == 0; i += run) {
        for (run = 0; i + run < len && text[i + run] != '\n' &&
                      (!one_line || text[i + run] != '\r'); run++)
            ;
        rc = term_escape(text + i, run, out);
        if (i + run < len && rc == 0) {
            const char *brk = !one_line ? "\n" : text[i + run] == '\n' ? "\\n" : "\\r";
            rc = buf_append_str(out, brk);
            run++;
        }
    }
    return rc == 0 && ends_line ? buf_append(out, "\n", 1) : rc;
}

static int write_message(FILE *f, int one_line, const char *fmt, va_list ap)
{
    char *text = NULL;
    int n = vasprintf(&text, fmt, ap);
    if (n < 0)
        return -1;
    buf out = { 0 };
    int rc = escape_message(text, (size_t)n, one_line, &out);
    free(text);
    if (rc == 0)
        rc = fwrite(out.data ? out.data : "", 1, out.len, f) == out.len ? (int)out.len : -1;
    buf_free(&out);
    return rc;
}

int term_printf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = write_message(f, 0, fmt, ap);
    va_end(ap);
    return rc;
}

int term_line(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = write_message(f, 1, fmt, ap);
    va_end(ap);
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
