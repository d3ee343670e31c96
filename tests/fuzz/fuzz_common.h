/* Shared helpers of the libFuzzer targets in tests/fuzz/.
 *
 * FUZZ_CHECK aborts with a message when a property the code promises does not
 * hold, so libFuzzer records the input as a crash even when no sanitizer
 * fires. */
#ifndef KRM_FUZZ_COMMON_H
#define KRM_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                              \
        }                                                                         \
    } while (0)

/* Writes data[0..size) to out with one span repeated: hdr[1] picks where
 * it starts, hdr[2] its length (1-32), hdr[3] * 64 how many more times
 * it appears; at most max bytes in all. Returns the length. libFuzzer grows
 * inputs slowly from a 4 KiB maximum, so limits that only long inputs reach
 * (an 8 KiB HTTP/1.1 head, HPACK's) are found through this: a four-byte
 * change makes any seed tens of KiB long. */
static inline size_t fuzz_stretch(const uint8_t hdr[4], const uint8_t *data, size_t size,
                                  uint8_t *out, size_t max)
{
    if (size > max)
        size = max;
    size_t at = size ? hdr[1] * size / 256 : 0;
    size_t len = 1 + hdr[2] % 32;
    if (len > size - at)
        len = size - at;
    size_t reps = (size_t)hdr[3] * 64;
    if (len && reps > (max - size) / len)
        reps = (max - size) / len;
    memcpy(out, data, at + len);
    size_t n = at + len;
    for (size_t i = 0; len && i < reps; i++, n += len)
        memcpy(out + n, data + at, len);
    memcpy(out + n, data + at + len, size - at - len);
    return n + size - at - len;
}

#endif
