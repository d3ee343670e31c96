/* runner-client: the companion of wrapper-server: calls function servers
 * (eval, health) and serves as the function runner (serve). See README.md. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "term_text.h"

#define RC_VERSION "0.1.0"

static const char usage[] =
    "Usage: runner-client COMMAND [flags]\n"
    "\n"
    "Commands:\n"
    "  eval     evaluate a package through a wrapper server's EvaluateFunction\n"
    "  health   check a server's grpc.health.v1 status\n"
    "  image    print an image's digest and entrypoint, read from its registry\n"
    "  pod      render a function's Pod and Service as Porch creates them; print its podId;\n"
    "           list and delete function pods on a cluster\n"
    "  render   apply a package's Kptfile pipeline in place, as kpt fn render\n"
    "  serve    run the function runner: EvaluateFunction for any configured image\n"
    "\n"
    "Run 'runner-client COMMAND --help' for a command's flags.\n";

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "eval"))
        return cmd_eval(argc - 2, argv + 2);
    if (!strcmp(cmd, "health"))
        return cmd_health(argc - 2, argv + 2);
    if (!strcmp(cmd, "pod"))
        return cmd_pod(argc - 2, argv + 2);
    if (!strcmp(cmd, "render"))
        return cmd_render(argc - 2, argv + 2);
    if (!strcmp(cmd, "image"))
        return cmd_image(argc - 2, argv + 2);
    if (!strcmp(cmd, "serve"))
        return cmd_serve(argc - 2, argv + 2);
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("runner-client " RC_VERSION "\n");
        return 0;
    }
    term_printf(stderr, "runner-client: unknown command \"%s\" (see --help)\n", cmd);
    return 2;
}
