/* base64: RFC 4648 standard alphabet; see base64.h. */
#include "core/base64.h"

#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int value_of(char c)
{
    const char *p = c ? strchr(alphabet, c) : NULL;
    return p ? (int)(p - alphabet) : -1;
}

int base64_decode(const char *s, size_t len, buf *out)
{
    while (len > 0 && s[len - 1] == '=')
        len--;
    if (len % 4 == 1)
        return -1;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = value_of(s[i]);
        if (v < 0)
            return -1;
        acc = (acc << 6) | (unsigned)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            char c = (char)((acc >> bits) & 0xFF);
            if (buf_append(out, &c, 1) < 0)
                return -1;
        }
    }
    return 0;
}

int base64_encode(const void *data, size_t len, buf *out)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < len ? (unsigned)p[i + 1] << 8 : 0) |
                     (i + 2 < len ? p[i + 2] : 0);
        char o[4] = {alphabet[v >> 18 & 63], alphabet[v >> 12 & 63],
                     i + 1 < len ? alphabet[v >> 6 & 63] : '=', i + 2 < len ? alphabet[v & 63] : '='};
        if (buf_append(out, o, 4) < 0)
            return -1;
    }
    return buf_append(out, "", 0);
}
