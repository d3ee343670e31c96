/* duration: human-written durations, for command lines and config files.
 *
 * duration_parse reads values with Go's time.ParseDuration rules (plus "a
 * bare number means seconds"), so flags read like Porch's and kpt's. */
#include "core/duration.h"

#include <string.h>

#define NS_PER_US INT64_C(1000)
#define NS_PER_MS INT64_C(1000000)
#define NS_PER_S INT64_C(1000000000)
#define NS_PER_MIN (60 * NS_PER_S)
#define NS_PER_HOUR (60 * NS_PER_MIN)

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* ---- human durations (Go time.ParseDuration) ---- */

/* Nanoseconds in the unit spelled text[0..len), or 0 when unknown. Both
 * spellings of micro (U+00B5 and U+03BC) are accepted, as Go does. */
static int64_t duration_unit_ns(const char *text, size_t len)
{
    static const struct {
        const char *name;
        int64_t ns;
    } units[] = {
        {"ns", 1}, {"us", NS_PER_US}, {"\xC2\xB5s", NS_PER_US},
        {"\xCE\xBCs", NS_PER_US}, {"ms", NS_PER_MS}, {"s", NS_PER_S},
        {"m", NS_PER_MIN}, {"h", NS_PER_HOUR},
    };
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strlen(units[i].name) == len && memcmp(units[i].name, text, len) == 0)
            return units[i].ns;
    }
    return 0;
}

/* One "<digits>[.<digits>]<unit>" piece of a duration, as spans of text. */
typedef struct duration_part {
    const char *whole;     /* digits before the point */
    size_t whole_len;
    const char *fraction;  /* digits after the point */
    size_t fraction_len;
    const char *unit;      /* letters after the number; may be empty */
    size_t unit_len;
} duration_part;

static size_t span_digits(const char *s)
{
    size_t n = 0;
    while (is_digit(s[n]))
        n++;
    return n;
}

/* Splits the part starting at *pos and advances *pos past it. Returns -1
 * when there is no digit on either side of the optional point. */
static int split_part(const char **pos, duration_part *part)
{
    const char *s = *pos;
    part->whole = s;
    part->whole_len = span_digits(s);
    s += part->whole_len;
    part->fraction = s;
    part->fraction_len = 0;
    if (*s == '.') {
        part->fraction = ++s;
        part->fraction_len = span_digits(s);
        s += part->fraction_len;
    }
    if (part->whole_len == 0 && part->fraction_len == 0)
        return -1;
    part->unit = s;
    while (*s && *s != '.' && !is_digit(*s))
        s++;
    part->unit_len = (size_t)(s - part->unit);
    *pos = s;
    return 0;
}

/* floor(0.<fraction digits> * unit_ns), exactly. Works from the last digit
 * back: each step folds one digit in and divides by ten, and nested floors
 * of integer divisions equal the floor of the whole quotient. */
static int64_t fraction_ns(const char *digits, size_t len, int64_t unit_ns)
{
    int64_t acc = 0;
    for (size_t i = len; i-- > 0;)
        acc = ((digits[i] - '0') * unit_ns + acc) / 10;
    return acc;
}

/* Nanoseconds of one part, or -1 on overflow. */
static int64_t part_ns(const duration_part *part, int64_t unit_ns)
{
    int64_t whole = 0;
    for (size_t i = 0; i < part->whole_len; i++) {
        int digit = part->whole[i] - '0';
        if (whole > (INT64_MAX - digit) / 10)
            return -1;
        whole = whole * 10 + digit;
    }
    if (whole > INT64_MAX / unit_ns)
        return -1;
    int64_t whole_ns = whole * unit_ns;
    int64_t frac_ns = fraction_ns(part->fraction, part->fraction_len, unit_ns);
    if (frac_ns > INT64_MAX - whole_ns)
        return -1;
    return whole_ns + frac_ns;
}

int duration_parse(const char *text, int64_t *ns)
{
    if (!text)
        return -1;
    if (*text == '+')
        text++;
    if (*text == '\0')
        return -1;
    const char *pos = text;
    int64_t total = 0;
    while (*pos) {
        duration_part part;
        if (split_part(&pos, &part) < 0)
            return -1;
        int64_t unit_ns = duration_unit_ns(part.unit, part.unit_len);
        int bare_number = part.unit_len == 0 && part.whole == text && *pos == '\0';
        if (bare_number)
            unit_ns = NS_PER_S;
        if (unit_ns == 0)
            return -1;
        int64_t piece = part_ns(&part, unit_ns);
        if (piece < 0 || piece > INT64_MAX - total)
            return -1;
        total += piece;
    }
    *ns = total;
    return 0;
}
