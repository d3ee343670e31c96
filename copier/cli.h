/* cli: command lines of the two forms of the copier.
 *
 *   copier [--verify] SRC... DESTDIR     (bad usage: exit 2)
 *   cp [-a|-R|-r|-p|-d|-P|-f] SRC... DEST (argv[0] "cp"; bad usage: exit 1)
 *
 * Options may come before, between or after operands (as GNU and busybox
 * allow); "--" ends them. Anything cp does not implement is refused with a
 * clear message rather than silently ignored. Parsing is kept apart from
 * running so the unit tests can exercise it. */
#ifndef COPIER_CLI_H
#define COPIER_CLI_H

#include "cptree.h"

#define COPIER_VERSION "0.1.0"

enum cop_cli_result {
    COP_CLI_RUN,      /* operands ready */
    COP_CLI_EXIT,     /* --help or --version printed: exit 0 */
    COP_CLI_USAGE,    /* message printed on stderr */
};

typedef struct cop_args {
    int verify;           /* copier form: --verify */
    cp_opts cp;           /* cp form: options (umask left to the caller) */
    char **operands;      /* allocated; argv's strings */
    int n;
} cop_args;

/* Parse argv (argv[0] is the program). operands is allocated on every
 * result; release it with cop_args_free. Messages go through msg.h. */
enum cop_cli_result cop_parse_copier(int argc, char **argv, cop_args *a);
enum cop_cli_result cop_parse_cp(int argc, char **argv, cop_args *a);
void cop_args_free(cop_args *a);

#endif
