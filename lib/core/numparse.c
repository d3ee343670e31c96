/* numparse: strict unsigned parsing; see numparse.h. */
#include "core/numparse.h"

#include <errno.h>
#include <stdlib.h>

int parse_uint(const char *text, unsigned long long max, unsigned long long *out)
{
    if (!text || *text < '0' || *text > '9')
        return -1;   /* rejects "", signs and spaces, which strtoull would take */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 10);
    if (errno || *end || v > max)
        return -1;
    *out = v;
    return 0;
}
