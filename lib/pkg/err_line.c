/* err_line: one-line error messages; see err_line.h. */
#include "pkg/err_line.h"

#include <string.h>

#include "core/go_quote.h"

int err_line_nul(buf *err, const char *field, const char *text, size_t len)
{
    const char *nul = memchr(text, '\0', len);
    if (!nul)
        return 0;
    buf quoted = { 0 };
    go_quote_bytes(text, len, &quoted);
    buf_fail_line(err,
                  "%s %s holds a NUL byte (\\x00) at offset %zu: refused, the value would be cut "
                  "there", field, quoted.data ? quoted.data : "(out of memory)", (size_t)(nul - text));
    buf_free(&quoted);
    return 1;
}
