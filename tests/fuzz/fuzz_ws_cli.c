/* Fuzzes the wrapper server's command-line parser (wrapper-server/cli.c).
 *
 * The input is split on NUL bytes into arguments after argv[0], as the
 * kernel hands them over. ws_cli_parse never exits the process: it returns
 * RUN, EXIT or ERROR and the caller acts on it, so the whole function is
 * fuzzed. Checks: a RUN configuration is within the documented ranges and
 * its entrypoint is the tail of argv after "--"; EXIT and ERROR come with
 * text. */
#include <string.h>

#include "cli.h"
#include "fuzz_common.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* One heap copy, NUL-terminated, so each argument is a C string that
     * ASan guards at its end. */
    char *copy = malloc(size + 1);
    FUZZ_CHECK(copy != NULL);
    if (size)
        memcpy(copy, data, size);
    copy[size] = '\0';

    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "wrapper-server";
    if (size > 0) {
        char *p = copy;
        char *end = copy + size;
        while (argc < MAX_ARGS + 1) {
            argv[argc++] = p;
            char *nul = memchr(p, '\0', (size_t)(end - p) + 1);
            if (nul >= end)
                break;
            p = nul + 1;
        }
    }
    argv[argc] = NULL;

    ws_config cfg;
    buf text = {0};
    enum ws_cli_result res = ws_cli_parse(argc, argv, &cfg, &text);
    switch (res) {
    case WS_CLI_RUN:
        FUZZ_CHECK(text.len == 0);
        FUZZ_CHECK(cfg.port >= 0 && cfg.port <= 65535);
        FUZZ_CHECK(cfg.max_message >= 1 && cfg.max_message <= 2147483647u);
        FUZZ_CHECK(cfg.verbosity >= 0 && cfg.verbosity <= 10);
        FUZZ_CHECK(cfg.max_streams >= 1 && cfg.max_streams <= 100000);
        FUZZ_CHECK(cfg.shutdown_grace_ns >= 0 && cfg.idle_timeout_ns >= 0);
        FUZZ_CHECK(cfg.entrypoint > argv && cfg.entrypoint <= argv + argc);
        FUZZ_CHECK(strcmp(cfg.entrypoint[-1], "--") == 0);
        for (char **e = cfg.entrypoint; *e; e++)
            FUZZ_CHECK(e < argv + argc);
        break;
    case WS_CLI_EXIT:
    case WS_CLI_ERROR:
        FUZZ_CHECK(text.len > 0 && strlen(text.data) == text.len);
        break;
    default:
        FUZZ_CHECK(!"unknown result");
    }
    buf_free(&text);
    free(copy);
    return 0;
}
