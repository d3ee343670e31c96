/* verbosity: the log level flag of the commands that log as they work
 * (eval, pod create; serve and wrapper-server take the same): --verbosity N,
 * or --log-level N as Porch's function runner spells it, one setting of
 * lib/core/log, 0-10, default 2. */
#ifndef KRM_RC_VERBOSITY_H
#define KRM_RC_VERBOSITY_H

#include "core/buf.h"

/* The highest level (serve's and wrapper-server's too). */
#define VERBOSITY_MAX 10

/* The two spellings' values, as flags_parse fills them. */
typedef struct verbosity_flags {
    const char *verbosity, *log_level;
} verbosity_flags;

#define VERBOSITY_FLAG_DEFS(f) {"--verbosity", &(f)->verbosity}, {"--log-level", &(f)->log_level}

#define VERBOSITY_FLAGS_HELP \
    "  --verbosity N, --log-level N 2 normal, 3 details, 4 debugging (default 2)\n"

/* Sets log_verbosity from the flag given (none: left at its default, 2).
 * Returns 0, or -1 with `invalid value "TEXT" for --FLAG: ...` in err (or
 * both spellings given). */
int verbosity_set(const verbosity_flags *f, buf *err);

#endif
