/* utf8: the one UTF-8 decoder; see utf8.h. */
#include "core/utf8.h"

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
    if (n == 0)
        return 0;
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    /* The second byte's allowed range carries the rules: it is what rules
     * out overlong forms (E0, F0), surrogates (ED) and values past U+10FFFF
     * (F4) without decoding first. */
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    uint32_t value;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2, value = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3, value = c & 0x0F;
        if (c == 0xE0)
            lo = 0xA0;
        if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4, value = c & 0x07;
        if (c == 0xF0)
            lo = 0x90;
        if (c == 0xF4)
            hi = 0x8F;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        value = (value << 6) | (s[i] & 0x3F);
    }
    *cp = value;
    return len;
}

int utf8_valid(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    uint32_t cp;
    for (size_t i = 0, n; i < len; i += n)
        if (!(n = utf8_decode(p + i, len - i, &cp)))
            return 0;
    return 1;
}

int utf8_sanitize(const char *text, size_t len, buf *out)
{
    const unsigned char *p = (const unsigned char *)text;
    uint32_t cp;
    size_t i = 0;
    while (i < len) {
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (n == 0) {
            if (buf_append(out, "\xEF\xBF\xBD", 3) < 0)   /* U+FFFD per bad byte, as Go */
                return -1;
            i++;
            continue;
        }
        if (buf_append(out, p + i, n) < 0)
            return -1;
        i += n;
    }
    return 0;
}

size_t utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t cut = max;
    while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    return cut;
}
