/* go_quote: text quoted as Go's %q (strconv.Quote) writes it; see go_quote.h. */
#include "core/go_quote.h"

#include <string.h>

#include "core/utf8.h"

/* Approximates Go's strconv.IsPrint for non-ASCII code points: the spaces,
 * format characters, C1 controls and private-use areas it rejects. Code
 * points unassigned in Unicode are not known here and count as printable. */
static int go_is_print(uint32_t cp)
{
    if (cp < 0x80)
        return cp >= 0x20 && cp < 0x7F;
    if (cp <= 0xA0 || cp == 0xAD || cp == 0x061C || cp == 0x1680 || cp == 0x180E)
        return 0;
    if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) ||
        (cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF)
        return 0;
    if ((cp >= 0xE000 && cp <= 0xF8FF) || (cp >= 0xFFF9 && cp <= 0xFFFB) ||
        cp == 0xFFFE || cp == 0xFFFF || cp >= 0xF0000)
        return 0;
    if ((cp & 0xFFFE) == 0xFFFE || (cp >= 0xE0000 && cp <= 0xE007F))
        return 0;
    return 1;
}

static int append_escape(buf *out, uint32_t cp)
{
    switch (cp) {
    case '\a': return buf_append_str(out, "\\a");
    case '\b': return buf_append_str(out, "\\b");
    case '\f': return buf_append_str(out, "\\f");
    case '\n': return buf_append_str(out, "\\n");
    case '\r': return buf_append_str(out, "\\r");
    case '\t': return buf_append_str(out, "\\t");
    case '\v': return buf_append_str(out, "\\v");
    }
    if (cp < 0x20 || cp == 0x7F)
        return buf_printf(out, "\\x%02x", (unsigned)cp);
    if (cp < 0x10000)
        return buf_printf(out, "\\u%04x", (unsigned)cp);
    return buf_printf(out, "\\U%08x", (unsigned)cp);
}

int go_quote_bytes(const char *s, size_t len, buf *out)
{
    const unsigned char *p = (const unsigned char *)s;
    int rc = buf_append(out, "\"", 1);
    size_t i = 0;
    while (i < len && rc == 0) {
        uint32_t cp;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (n == 0) {
            rc = buf_printf(out, "\\x%02x", p[i]);
            i++;
            continue;
        }
        if (cp == '"' || cp == '\\')
            rc = buf_printf(out, "\\%c", (char)cp);
        else if (go_is_print(cp))
            rc = buf_append(out, p + i, n);
        else
            rc = append_escape(out, cp);
        i += n;
    }
    return rc ? rc : buf_append(out, "\"", 1);
}

int go_quote_at_most(const char *s, size_t len, size_t shown, buf *out)
{
    if (go_quote_bytes(s, len < shown ? len : shown, out) < 0)
        return -1;
    return len > shown ? buf_printf(out, "... (%zu bytes)", len) : 0;
}

int go_quote(const char *s, buf *out)
{
    return go_quote_bytes(s, strlen(s), out);
}
