/* flags: "--name value" / "--name=value" parsing for runner-client's
 * subcommands, with positional arguments collected in order. */
#ifndef KRM_RC_FLAGS_H
#define KRM_RC_FLAGS_H

#include "core/buf.h"

typedef struct flag_def {
    const char *name;     /* "--addr" */
    const char **value;   /* where the value goes */
    int *on;              /* instead of value: a boolean flag, bare (true) or
                           * =true/=false (=1/=0), as Go's flag package takes them */
} flag_def;

/* Parses argv[0..argc) (the subcommand's arguments). Positional arguments
 * go to positional[] (at most max_positional). Returns 0, or -1 with a
 * one-line reason in err. "-h"/"--help" sets *help. */
int flags_parse(int argc, char **argv, const flag_def *defs, const char **positional,
                int max_positional, int *n_positional, int *help, buf *err);

#endif
