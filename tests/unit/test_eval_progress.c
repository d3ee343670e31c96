/* Tests for eval_progress: kpt's [RUNNING]/[PASS]/[FAIL] lines, the time as
 * Go writes a time.Duration truncated to 100ms, and the Results, Stderr and
 * Error blocks with kpt's truncation. */
#include <criterion/criterion.h>

#include <string.h>

#include "eval/eval_progress.h"

#define MS 1000000LL
#define S (1000 * MS)

static void check_duration(int64_t ns, const char *want)
{
    buf out = { 0 };
    cr_assert_eq(progress_duration(ns, &out), 0);
    cr_assert_str_eq(out.data, want, "%lld ns", (long long)ns);
    buf_free(&out);
}

Test(eval_progress, durations_as_go_writes_them_truncated_to_100ms)
{
    check_duration(0, "0s");
    check_duration(99 * MS, "0s");
    check_duration(120 * MS, "100ms");
    check_duration(999 * MS, "900ms");
    check_duration(1 * S, "1s");
    check_duration(1 * S + 250 * MS, "1.2s");
    check_duration(65 * S + 300 * MS, "1m5.3s");
    check_duration(120 * S, "2m0s");
    check_duration(3600 * S + 100 * MS, "1h0m0.1s");
    check_duration(-5 * S, "0s");
}

static char *done(const progress_step *s, int truncate)
{
    buf out = { 0 };
    cr_assert_eq(progress_done(s, truncate, &out), 0);
    return out.data;
}

Test(eval_progress, running_and_pass_quote_the_name_as_go)
{
    buf out = { 0 };
    cr_assert_eq(progress_running("img\"x", &out), 0);
    cr_assert_str_eq(out.data, "[RUNNING] \"img\\\"x\"\n");
    buf_free(&out);
    progress_step s = { .name = "a/b:v1", .elapsed_ns = 1500 * MS };
    char *text = done(&s, 1);
    cr_assert_str_eq(text, "[PASS] \"a/b:v1\" in 1.5s\n");
    free(text);
}

Test(eval_progress, results_are_the_sdk_lines_and_truncated_after_4)
{
    rl_result r[6] = {
        { .message = "m0", .severity = "error", .has_resource_ref = 1, .ref_api_version = "v1",
          .ref_kind = "ConfigMap", .ref_namespace = "ns", .ref_name = "x", .has_field = 1,
          .field_path = "data.a" },
        { .message = "two\nlines" }, { .message = "m2", .severity = "warning" },
        { .message = "m3" }, { .message = "m4" }, { .message = "m5" },
    };
    rl_list rl = { .kind = "ResourceList", .results = r, .n_results = 6 };
    progress_step s = { .name = "i", .failed = 1, .results = &rl };
    char *text = done(&s, 1);
    cr_assert_str_eq(text, "[FAIL] \"i\" in 0s\n"
                           "  Results:\n"
                           "    [error] v1/ConfigMap/ns/x data.a: m0\n"
                           "    [info]: two lines\n"
                           "    [warning]: m2\n"
                           "    [info]: m3\n"
                           "    ...(2 line(s) truncated, use '--truncate-output=false' to disable)\n");
    free(text);
    text = done(&s, 0);
    cr_assert(strstr(text, "    [info]: m5\n") && !strstr(text, "truncated"), "%s", text);
    free(text);
}

Test(eval_progress, stderr_lines_are_quoted_and_the_error_is_indented)
{
    const char log[] = "plain\n\ttab \x1b[31mred\n\nlast without newline";
    progress_step s = { .name = "i", .failed = 1, .log = log, .log_len = sizeof log - 1,
                        .error = "INTERNAL: first\nsecond\n" };
    char *text = done(&s, 1);
    cr_assert_str_eq(text, "[FAIL] \"i\" in 0s\n"
                           "  Stderr:\n"
                           "    \"plain\"\n"
                           "    \"\\ttab \\x1b[31mred\"\n"
                           "    \"\"\n"
                           "    \"last without newline\"\n"
                           "  Error: INTERNAL: first\n"
                           "    second\n");
    free(text);
}

Test(eval_progress, a_final_line_break_makes_no_empty_line)
{
    const char log[] = "one\ntwo\nthree\nfour\nfive\n";
    progress_step s = { .name = "i", .log = log, .log_len = sizeof log - 1 };
    char *text = done(&s, 1);
    cr_assert_str_eq(text, "[PASS] \"i\" in 0s\n"
                           "  Stderr:\n    \"one\"\n    \"two\"\n    \"three\"\n    \"four\"\n"
                           "    ...(1 line(s) truncated, use '--truncate-output=false' to disable)\n");
    free(text);
}

Test(eval_progress, a_functions_text_cannot_drive_the_terminal)
{
    rl_result r[1] = { { .message = "clear \x1b[2J then \xc2\x9b C1", .severity = "error" } };
    rl_list rl = { .results = r, .n_results = 1 };
    progress_step s = { .name = "img", .failed = 1, .results = &rl,
                        .error = "INTERNAL: title \x1b]0;owned\x07 set\nsecond \x1b[31mred" };
    char *text = done(&s, 1);
    cr_assert_null(strchr(text, '\x1b'), "%s", text);
    cr_assert_null(strchr(text, '\x07'), "%s", text);
    cr_assert_null(strstr(text, "\xc2\x9b"), "%s", text);
    cr_assert(strstr(text, "    [error]: clear \\x1b[2J then \\u009b C1\n"), "%s", text);
    cr_assert(strstr(text, "  Error: INTERNAL: title \\x1b]0;owned\\x07 set\n"
                           "    second \\x1b[31mred\n"), "%s", text);
    free(text);
}
