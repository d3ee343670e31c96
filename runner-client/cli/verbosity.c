/* verbosity: the log level flag; see verbosity.h. */
#include "cli/verbosity.h"

#include "core/log.h"
#include "core/numparse.h"

int verbosity_set(const verbosity_flags *f, buf *err)
{
    if (f->verbosity && f->log_level)
        return buf_fail(err, "--verbosity and --log-level are one setting: give one");
    const char *name = f->verbosity ? "--verbosity" : "--log-level";
    const char *text = f->verbosity ? f->verbosity : f->log_level;
    unsigned long long level;
    if (!text)
        return 0;
    if (parse_uint(text, VERBOSITY_MAX, &level) < 0)
        return buf_fail(err, "invalid value \"%s\" for %s: want a whole number 0-%d", text, name,
                        VERBOSITY_MAX);
    log_verbosity = (int)level;
    return 0;
}
