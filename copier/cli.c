/* cli: argument parsing for `copier` and `cp`; see cli.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "msg.h"

static const char copier_help[] =
    "Usage: copier [--verify] SRC... DESTDIR\n"
    "Copy files into DESTDIR atomically (temporary file, fsync, mode 0555,\n"
    "rename), skipping files already identical. A source named wrapper-server\n"
    "also gets DESTDIR/grpc-health-probe -> wrapper-server.\n"
    "\n"
    "      --verify   re-read every copy and compare it with its source\n"
    "      --help     show this help\n"
    "      --version  show the version\n"
    "\n"
    "Invoked as cp, it is a small cp: cp [-a|-R|-r|-p|-d|-P|-f] SRC... DEST\n"
    "Exit status: 0 success, 1 failure, 2 bad usage.\n";

static const char copier_version[] = "copier " COPIER_VERSION "\n";
static const char cp_version[] = "cp (krm-fn-runtime copier) " COPIER_VERSION "\n";

static const char cp_help[] =
    "Usage: cp [OPTION]... SRC DEST\n"
    "  or:  cp [OPTION]... SRC... DIRECTORY\n"
    "Copy files atomically (temporary file, fsync, rename). SRC/. copies the\n"
    "contents of SRC into DIRECTORY.\n"
    "\n"
    "  -a, --archive          same as -dR -p\n"
    "  -d, -P, --no-dereference  copy symbolic links as links\n"
    "  -R, -r, --recursive    copy directories recursively\n"
    "  -p                     preserve mode, ownership and timestamps\n"
    "  -f, --force            accepted (targets are always replaced)\n"
    "      --help, --version\n"
    "\n"
    "Failing to preserve ownership, mode or times with EPERM is a warning.\n";

void cop_args_free(cop_args *a)
{
    free(a->operands);
    a->operands = NULL;
    a->n = 0;
}

/* --help and --version: print and stop. Returns 1 if arg was one. */
static int help_or_version(const char *arg, const char *help, const char *version,
                           enum cop_cli_result *r)
{
    if (!strcmp(arg, "--help"))
        cop_out(help);
    else if (!strcmp(arg, "--version"))
        cop_out(version);
    else
        return 0;
    *r = COP_CLI_EXIT;
    return 1;
}

static enum cop_cli_result alloc_operands(int argc, cop_args *a)
{
    memset(a, 0, sizeof *a);
    a->operands = calloc((size_t)argc + 1, sizeof *a->operands);
    if (!a->operands) {
        cop_msg(errno, "cannot allocate memory");
        return COP_CLI_USAGE;
    }
    return COP_CLI_RUN;
}

static int is_option(const char *arg)
{
    return arg[0] == '-' && arg[1] != '\0';
}

enum cop_cli_result cop_parse_copier(int argc, char **argv, cop_args *a)
{
    enum cop_cli_result r = alloc_operands(argc, a);
    int options = 1;
    for (int i = 1; i < argc && r == COP_CLI_RUN; i++) {
        const char *arg = argv[i];
        if (!options || !is_option(arg))
            a->operands[a->n++] = argv[i];
        else if (!strcmp(arg, "--"))
            options = 0;
        else if (!strcmp(arg, "--verify"))
            a->verify = 1;
        else if (!help_or_version(arg, copier_help, copier_version, &r)) {
            cop_msg(0, "unknown option '%s' (try 'copier --help')", arg);
            r = COP_CLI_USAGE;
        }
    }
    if (r == COP_CLI_RUN && a->n < 2) {
        if (a->n)
            cop_msg(0, "missing destination directory after '%s' (try 'copier --help')", a->operands[0]);
        else
            cop_msg(0, "missing operands (try 'copier --help')");
        r = COP_CLI_USAGE;
    }
    return r;
}

/* One short option letter of cp. Returns 0, or -1 if unsupported. */
static int cp_letter(char c, cp_opts *o)
{
    switch (c) {
    case 'a': o->recursive = o->no_deref = o->preserve = 1; return 0;
    case 'd': case 'P': o->no_deref = 1; return 0;
    case 'R': case 'r': o->recursive = 1; return 0;
    case 'p': o->preserve = 1; return 0;
    case 'f': return 0;
    default: return -1;
    }
}

/* One option argument of cp ("-xyz" or "--long"). */
static int cp_option(const char *arg, cp_opts *o)
{
    if (arg[1] == '-') {
        if (!strcmp(arg, "--archive"))
            return cp_letter('a', o);
        if (!strcmp(arg, "--recursive"))
            return cp_letter('R', o);
        if (!strcmp(arg, "--no-dereference"))
            return cp_letter('P', o);
        if (!strcmp(arg, "--force"))
            return 0;
        cop_msg(0, "unsupported option '%s' (try 'cp --help')", arg);
        return -1;
    }
    for (const char *c = arg + 1; *c; c++) {
        if (cp_letter(*c, o) < 0) {
            cop_msg(0, "unsupported option '-%c' (try 'cp --help')", *c);
            return -1;
        }
    }
    return 0;
}

enum cop_cli_result cop_parse_cp(int argc, char **argv, cop_args *a)
{
    enum cop_cli_result r = alloc_operands(argc, a);
    int options = 1;
    for (int i = 1; i < argc && r == COP_CLI_RUN; i++) {
        const char *arg = argv[i];
        if (!options || !is_option(arg))
            a->operands[a->n++] = argv[i];
        else if (!strcmp(arg, "--"))
            options = 0;
        else if (!help_or_version(arg, cp_help, cp_version, &r) && cp_option(arg, &a->cp) < 0)
            r = COP_CLI_USAGE;
    }
    a->cp.no_deref |= a->cp.recursive;      /* GNU: -R never follows symlinks */
    if (r == COP_CLI_RUN && a->n < 2) {
        if (a->n)
            cop_msg(0, "missing destination file operand after '%s'", a->operands[0]);
        else
            cop_msg(0, "missing file operand");
        r = COP_CLI_USAGE;
    }
    return r;
}
