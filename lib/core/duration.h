/* duration: Go-style durations ("1.5s", "300ms", "2m", "1h30m", "250us",
 * "10ns") for command lines and config files. */
#ifndef KRM_DURATION_H
#define KRM_DURATION_H

#include <stdint.h>

/* Parses a human duration: Go's time.ParseDuration units; a bare number is
 * seconds. Returns 0 and nanoseconds, or -1 when malformed, negative or
 * past INT64_MAX nanoseconds. */
int duration_parse(const char *text, int64_t *ns);

#endif
