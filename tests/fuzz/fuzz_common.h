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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                              \
        }                                                                         \
    } while (0)

#endif
