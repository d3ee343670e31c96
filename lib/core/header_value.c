/* header_value: control bytes refused in header values; see header_value.h. */
#include "core/header_value.h"

int header_value_check(const char *what, const char *value, size_t len, buf *err)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)value[i];
        if (c < 0x20 || c == 0x7f) {
            buf_printf(err, "%s contains a control byte (0x%02x at byte %zu of %zu), which would "
                       "end or split the HTTP header it is sent in: refused", what, c, i, len);
            return -1;
        }
    }
    return 0;
}
