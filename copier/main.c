/* copier: puts the wrapper server into a shared volume from an init
 * container whose image has no shell.
 *
 * One static binary, two forms chosen by the name it is invoked under:
 * `copier [--verify] SRC... DESTDIR` (install.c: atomic, idempotent, 0555,
 * plus the grpc-health-probe symlink) and, as `cp`, the subset of cp that
 * Porch's pod template runs, `cp -a SRC/. DESTDIR` (cp.c, cptree.c), so the
 * image can be used as a drop-in replacement for Porch's wrapper-server
 * image. */
#include <string.h>

#include "cli.h"
#include "cp.h"
#include "install.h"
#include "msg.h"

static int copier_main(int argc, char **argv)
{
    cop_args a;
    enum cop_cli_result r = cop_parse_copier(argc, argv, &a);
    int rc = r == COP_CLI_EXIT ? 0 : 2;
    if (r == COP_CLI_RUN)
        rc = cop_install(a.operands, a.n - 1, a.operands[a.n - 1], a.verify);
    cop_args_free(&a);
    return rc;
}

static int cp_main(int argc, char **argv)
{
    cop_args a;
    cop_prog = "cp";
    enum cop_cli_result r = cop_parse_cp(argc, argv, &a);
    int rc = r == COP_CLI_EXIT ? 0 : 1;
    if (r == COP_CLI_RUN)
        rc = cp_run(&a);
    cop_args_free(&a);
    return rc;
}

int main(int argc, char **argv)
{
    const char *name = argc > 0 ? cop_basename(argv[0]) : "copier";
    if (!strcmp(name, "cp"))
        return cp_main(argc, argv);
    return copier_main(argc, argv);
}
