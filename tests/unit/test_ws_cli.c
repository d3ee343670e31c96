/* Unit tests of the wrapper server's command line (wrapper-server/cli.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "cli.h"

static enum ws_cli_result parse(ws_config *cfg, buf *text, char **argv)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    buf_reset(text);
    return ws_cli_parse(argc, argv, cfg, text);
}

#define ARGV(...) ((char *[]){"wrapper-server", __VA_ARGS__, NULL})

Test(ws_cli, defaults_match_porch)
{
    ws_config cfg;
    buf text = {0};
    char **argv = ARGV("--", "/fn");
    cr_assert_eq(parse(&cfg, &text, argv), WS_CLI_RUN);
    cr_assert_eq(cfg.port, 9446);
    cr_assert_eq(cfg.max_message, 6291456u);
    cr_assert_eq(cfg.verbosity, 2);
    cr_assert_eq(cfg.shutdown_grace_ns, 10LL * 1000000000);
    cr_assert_eq(cfg.idle_timeout_ns, 300LL * 1000000000);
    cr_assert_str_eq(cfg.entrypoint[0], "/fn");
    cr_assert_null(cfg.entrypoint[1]);
    buf_free(&text);
}

Test(ws_cli, both_flag_forms_and_entrypoint_args)
{
    ws_config cfg;
    buf text = {0};
    char **argv = ARGV("--port", "1234", "--max-request-body-size=100", "--verbosity=4",
                       "--shutdown-grace", "1.5s", "--idle-timeout=0", "--", "sh", "-c",
                       "cat --port");
    cr_assert_eq(parse(&cfg, &text, argv), WS_CLI_RUN);
    cr_assert_eq(cfg.port, 1234);
    cr_assert_eq(cfg.max_message, 100u);
    cr_assert_eq(cfg.verbosity, 4);
    cr_assert_eq(cfg.shutdown_grace_ns, 1500000000LL);
    cr_assert_eq(cfg.idle_timeout_ns, 0);
    cr_assert_str_eq(cfg.entrypoint[0], "sh");
    cr_assert_str_eq(cfg.entrypoint[2], "cat --port");
    buf_free(&text);
}

Test(ws_cli, load_limits_default_to_zero_until_the_server_fills_them)
{
    ws_config cfg;
    buf text = {0};
    cr_assert_eq(parse(&cfg, &text, ARGV("--", "/fn")), WS_CLI_RUN);
    cr_assert_eq(cfg.max_functions, 0);
    cr_assert_eq(cfg.max_waiting, RPC_LIMIT_DEFAULT);
    cr_assert_eq(cfg.max_pending_bytes, 0);
    cr_assert_eq(cfg.max_pending_conn_bytes, 0);
    cr_assert_eq(cfg.send_stall_ns, 0);
    char **argv = ARGV("--max-concurrent-functions=3", "--max-waiting-calls", "0",
                       "--max-pending-request-bytes=100", "--max-pending-request-bytes-per-connection",
                       "50", "--stalled-send-timeout=2s", "--", "/fn");
    cr_assert_eq(parse(&cfg, &text, argv), WS_CLI_RUN);
    cr_assert_eq(cfg.max_functions, 3);
    cr_assert_eq(cfg.max_waiting, 0);
    cr_assert_eq(cfg.max_pending_bytes, 100);
    cr_assert_eq(cfg.max_pending_conn_bytes, 50);
    cr_assert_eq(cfg.send_stall_ns, 2000000000LL);
    buf_free(&text);
}

Test(ws_cli, prespawn_defaults_to_one_and_takes_0_to_64)
{
    ws_config cfg;
    buf text = {0};
    cr_assert_eq(parse(&cfg, &text, ARGV("--", "/fn")), WS_CLI_RUN);
    cr_assert_eq(cfg.prespawn, 1);
    cr_assert_eq(parse(&cfg, &text, ARGV("--prespawn", "0", "--", "/fn")), WS_CLI_RUN);
    cr_assert_eq(cfg.prespawn, 0);
    cr_assert_eq(parse(&cfg, &text, ARGV("--prespawn=64", "--", "/fn")), WS_CLI_RUN);
    cr_assert_eq(cfg.prespawn, 64);
    cr_assert_eq(parse(&cfg, &text, ARGV("--prespawn", "65", "--", "/fn")), WS_CLI_ERROR);
    cr_assert(strstr(text.data, "--prespawn") && strstr(text.data, "0-64"), "%s", text.data);
    buf_free(&text);
}

Test(ws_cli, empty_entrypoint_is_allowed)
{
    ws_config cfg;
    buf text = {0};
    char **argv = ARGV("--port", "1", "--");
    cr_assert_eq(parse(&cfg, &text, argv), WS_CLI_RUN);
    cr_assert_null(cfg.entrypoint[0]);
    buf_free(&text);
}

Test(ws_cli, errors_are_one_line)
{
    char **cases[] = {
        ARGV("--port", "9446"),                       /* no -- */
        ARGV("--bogus", "1", "--", "fn"),             /* unknown flag */
        ARGV("--bogus=1", "--", "fn"),
        ARGV("--port", "abc", "--", "fn"),
        ARGV("--port", "70000", "--", "fn"),
        ARGV("--port", "-1", "--", "fn"),
        ARGV("--port", "", "--", "fn"),
        ARGV("--max-request-body-size", "0", "--", "fn"),
        ARGV("--max-request-body-size", "-1", "--", "fn"),
        ARGV("--max-request-body-size", "99999999999", "--", "fn"),
        ARGV("--shutdown-grace", "soon", "--", "fn"),
        ARGV("--port", "--", "fn"),                   /* missing value */
        ARGV("stray", "--", "fn"),
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ws_config cfg;
        buf text = {0};
        cr_assert_eq(parse(&cfg, &text, cases[i]), WS_CLI_ERROR, "case %zu", i);
        cr_assert_gt(text.len, 0, "case %zu", i);
        cr_assert_null(strchr(text.data, '\n'), "case %zu: %s", i, text.data);
        cr_assert(strncmp(text.data, "wrapper-server: ", 16) == 0, "case %zu: %s", i, text.data);
        buf_free(&text);
    }
}

Test(ws_cli, help_and_version)
{
    ws_config cfg;
    buf text = {0};
    cr_assert_eq(parse(&cfg, &text, ARGV("--help")), WS_CLI_EXIT);
    cr_assert(strstr(text.data, "--max-request-body-size"));
    cr_assert_eq(parse(&cfg, &text, ARGV("-h", "--", "fn")), WS_CLI_EXIT);
    cr_assert_eq(parse(&cfg, &text, ARGV("--version")), WS_CLI_EXIT);
    cr_assert(strstr(text.data, WS_VERSION));
    buf_free(&text);
}
