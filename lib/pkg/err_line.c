/* err_line: one-line error messages; see err_line.h. */
#include "pkg/err_line.h"

#include <stdio.h>
#include <string.h>

#include "core/go_quote.h"

void err_line_vset(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (!err || errlen == 0)
        return;
    vsnprintf(err, errlen, fmt, ap);
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

void err_line_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_line_vset(err, errlen, fmt, ap);
    va_end(ap);
}

int err_line_nul(char *err, size_t errlen, const char *field, const char *text, size_t len)
{
    const char *nul = memchr(text, '\0', len);
    if (!nul)
        return 0;
    buf quoted = { 0 };
    go_quote_bytes(text, len, &quoted);
    err_line_set(err, errlen,
                 "%s %s holds a NUL byte (\\x00) at offset %zu: refused, the value would be cut "
                 "there", field, quoted.data ? quoted.data : "(out of memory)", (size_t)(nul - text));
    buf_free(&quoted);
    return 1;
}
