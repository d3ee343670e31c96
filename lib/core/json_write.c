/* json_write: JSON text as Go's encoding/json writes it; see json_write.h. */
#include "core/json_write.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/utf8.h"

int json_write_string(buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)s;
    int rc = buf_append(out, "\"", 1);
    for (size_t i = 0; i < len && rc == 0;) {
        unsigned char c = p[i];
        if (c < 0x80) {
            const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b"
                            : c == '\f' ? "\\f" : NULL;
            if (esc)
                rc = buf_append_str(out, esc);
            else if (c < 0x20 || c == '<' || c == '>' || c == '&')
                rc = buf_printf(out, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
            else
                rc = buf_append(out, &c, 1);
            i++;
            continue;
        }
        uint32_t cp;
        size_t n = utf8_decode(p + i, len - i, &cp);
        if (n == 0)
            rc = buf_append_str(out, "\\ufffd"), n = 1;
        else if (cp == 0x2028 || cp == 0x2029)
            rc = buf_printf(out, "\\u%04x", (unsigned)cp);
        else
            rc = buf_append(out, p + i, n);
        i += n;
    }
    return rc ? rc : buf_append(out, "\"", 1);
}

/* Shortest decimal digits that read back as f (like Go's -1 precision):
 * writes the digits and returns the decimal exponent of the first digit. */
static int shortest_digits(double f, char *digits, size_t size)
{
    char tmp[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, f);
        if (strtod(tmp, NULL) == f || prec == 17)
            break;
    }
    size_t n = 0;
    const char *s = tmp;
    for (; *s && *s != 'e'; s++)
        if (*s >= '0' && *s <= '9' && n + 1 < size)
            digits[n++] = *s;
    while (n > 1 && digits[n - 1] == '0')
        n--;
    digits[n] = '\0';
    return *s == 'e' ? atoi(s + 1) : 0;
}

/* encoding/json's float64: 'f' format, or 'e' (with a one-digit exponent
 * kept short) below 1e-6 or from 1e21. */
int json_write_float(buf *out, double f)
{
    if (f == 0)
        return buf_append_str(out, signbit(f) ? "-0" : "0");
    char digits[24];
    double mag = f < 0 ? -f : f;
    int exp = shortest_digits(mag, digits, sizeof digits);
    int nd = (int)strlen(digits);
    int rc = f < 0 ? buf_append_str(out, "-") : 0;
    if (mag < 1e-6 || mag >= 1e21) {
        /* strconv writes e-07; encoding/json trims it to e-7 */
        rc |= buf_printf(out, "%c%s%s", digits[0], nd > 1 ? "." : "", digits + 1);
        return rc | buf_printf(out, "e%c%d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
    if (exp < 0) {
        rc |= buf_append_str(out, "0.");
        for (int i = -1; i > exp; i--)
            rc |= buf_append(out, "0", 1);
        return rc | buf_append_str(out, digits);
    }
    for (int i = 0; i <= exp || i < nd; i++) {
        if (i == exp + 1)
            rc |= buf_append_str(out, ".");
        rc |= buf_append(out, i < nd ? &digits[i] : "0", 1);
    }
    return rc;
}

void json_obj_begin(json_obj *o, buf *out)
{
    *o = (json_obj){out, 0, buf_append(out, "{", 1)};
}

void json_obj_key(json_obj *o, const char *key)
{
    o->rc |= buf_append_str(o->out, o->count++ ? ",\"" : "\"");
    o->rc |= buf_append_str(o->out, key);
    o->rc |= buf_append_str(o->out, "\":");
}

void json_obj_string(json_obj *o, const char *key, const char *value)
{
    if (!value || !*value)
        return;
    json_obj_key(o, key);
    o->rc |= json_write_string(o->out, value, strlen(value));
}

int json_obj_end(json_obj *o)
{
    o->rc |= buf_append(o->out, "}", 1);
    return o->rc;
}
