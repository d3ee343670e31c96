/* call_opts: deadlines of runner-client's calls; see call_opts.h. */
#include "cli/call_opts.h"

#include "core/duration.h"

int call_opts_timeouts(const char *text, int64_t default_ns, gc_unary_opts *o, buf *err)
{
    int64_t ns = default_ns;
    if (text && duration_parse(text, &ns) < 0)
        return buf_fail(err, "invalid --timeout \"%s\": want a duration such as 30s or 5m "
                        "(0: no deadline)", text);
    o->timeout_ns = ns;
    o->connect_timeout_ns = ns > 0 && ns < CALL_CONNECT_TIMEOUT_NS ? ns : CALL_CONNECT_TIMEOUT_NS;
    return 0;
}
