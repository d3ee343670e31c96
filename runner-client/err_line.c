/* err_line: one-line error messages; see err_line.h. */
#include "err_line.h"

#include <stdio.h>

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
