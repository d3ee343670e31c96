/* state_step: see state_step.h. */
#include "core/state_step.h"

#include <stdarg.h>
#include <stdio.h>

#include "core/log.h"

int state_step(const unsigned *next, const char *const *names, int from, int to,
               const char *who_fmt, ...)
{
    int legal = (next[from] & STATE_BIT(to)) != 0;
    if (legal && log_verbosity < 4)
        return 1;
    char who[160];   /* a name for the log line: truncation only shortens it */
    va_list ap;
    va_start(ap, who_fmt);
    vsnprintf(who, sizeof who, who_fmt, ap);
    va_end(ap);
    if (!legal)
        log_error("%s: %s refused after %s", who, names[to], names[from]);
    else
        log_v(4, "%s: %s -> %s", who, names[from], names[to]);
    return legal;
}
