/* runner-client: the companion of wrapper-server: calls function servers
 * (eval, render, health) and serves as the function runner (serve). See
 * README.md.
 *
 * Invoked as `server` it is `runner-client serve`, and as
 * `grpc-health-probe` that probe: the two paths Porch's function-runner
 * Deployment runs in its image (/home/nonroot/server and
 * /home/nonroot/grpc-health-probe), so our image (images/runner_image.py)
 * replaces Porch's under Porch's own manifest. */
#include <stdio.h>
#include <string.h>

#include "grpc/health_probe.h"
#include "commands.h"
#include "core/term_text.h"

#define RC_VERSION "0.1.0"

/* eval, or with --kube anywhere in its arguments eval in a function pod
 * on a cluster (pods/pod_run.c). Decided here, at the top: eval/ knows
 * nothing of pods/, which builds on it. */
static int cmd_eval_or_kube(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--kube"))
            return cmd_eval_kube(argc, argv);
    return cmd_eval(argc, argv);
}

/* The commands, as `runner-client --help` lists them and `runner-client
 * help CMD` finds them. */
static const struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;   /* may span lines, each indented as the first */
} commands[] = {
    {"eval", cmd_eval_or_kube, "evaluate a package through a wrapper server's EvaluateFunction"},
    {"render", cmd_render, "apply a package's Kptfile pipeline in place, as kpt fn render"},
    {"health", cmd_health, "check a server's grpc.health.v1 status"},
    {"image", cmd_image, "print an image's digest and entrypoint, read from its registry"},
    {"pod", cmd_pod, "render a function's Pod and Service as Porch creates them; print its podId;\n"
                     "           list and delete function pods on a cluster"},
    {"serve", cmd_serve, "run the function runner: EvaluateFunction for any configured image"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *out)
{
    fputs("Usage: runner-client COMMAND [flags]\n"
          "\n"
          "Commands:\n", out);
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "Run 'runner-client help COMMAND' (or 'runner-client COMMAND --help') for a\n"
          "command's flags. Invoked as 'server' it is 'runner-client serve', and as\n"
          "'grpc-health-probe' that probe (-addr HOST:PORT): the paths Porch's\n"
          "function-runner Deployment runs.\n", out);
}

static const struct command *find_command(const char *name)
{
    for (size_t i = 0; i < N_COMMANDS; i++)
        if (!strcmp(commands[i].name, name))
            return &commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    term_line(stderr, "runner-client: unknown command \"%s\" (see --help)\n", name);
    return 2;
}

static int invoked_as_porch_server(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    return !strcmp(base ? base + 1 : argv0, "server");
}

int main(int argc, char **argv)
{
    if (argc > 0 && probe_invoked_as(argv[0]))
        return probe_main("runner-client", argc, argv);
    if (argc > 0 && invoked_as_porch_server(argv[0]))
        return cmd_serve(argc - 1, argv + 1);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    const struct command *c = find_command(cmd);
    if (c)
        return c->run(argc - 2, argv + 2);
    if (!strcmp(cmd, "help") && argc > 2) {
        /* help CMD: the command's own --help */
        char help_flag[] = "--help";
        char *help_argv[] = {help_flag, NULL};
        return (c = find_command(argv[2])) ? c->run(1, help_argv) : unknown_command(argv[2]);
    }
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("runner-client " RC_VERSION "\n");
        return 0;
    }
    return unknown_command(cmd);
}
