/* Unit tests of the Porch-compatible verdict on a function run
 * (lib/runtime/fn_verdict.c), with hand-made finished jobs. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/wait.h>

#include "core/go_quote.h"
#include "grpc/grpc_status.h"
#include "runtime/fn_verdict.h"

static fn_job job_with(const char *out, const char *err, int exit_code)
{
    fn_job job = {0};
    buf_append_str(&job.out, out);
    buf_append_str(&job.err, err);
    job.exited = 1;
    job.wait_status = exit_code << 8;   /* as waitpid reports a normal exit */
    job.spec.max_stdout = 1000;
    return job;
}

static void job_release(fn_job *job)
{
    buf_free(&job->out);
    buf_free(&job->err);
}

static const char rl_ok[] = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n";
static const char rl_with_error[] =
    "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n"
    "- message: bad replicas\n  severity: error\n"
    "  resourceRef: {apiVersion: apps/v1, kind: Deployment, name: web, namespace: prod}\n"
    "  field: {path: spec.replicas}\n";

Test(fn_verdict, ok_on_exit_zero)
{
    fn_job job = job_with(rl_ok, "note\n", 0);
    fn_verdict v;
    fn_verdict_judge("img", &job, &v);
    cr_assert_eq(v.code, GRPC_OK);
    cr_assert_eq(v.warning.len, 0);
    fn_verdict_free(&v);
    job_release(&job);
}

Test(fn_verdict, error_results_on_exit_zero_warn_only)
{
    fn_job job = job_with(rl_with_error, "", 0);
    fn_verdict v;
    fn_verdict_judge("img", &job, &v);
    cr_assert_eq(v.code, GRPC_OK);
    cr_assert(strstr(v.warning.data, "failed to evaluate function \"img\" with structured results: ["));
    cr_assert(strstr(v.warning.data, "bad replicas"));
    fn_verdict_free(&v);
    job_release(&job);
}

Test(fn_verdict, empty_stdout_is_a_parse_failure)
{
    fn_job job = job_with("", "boom\n", 0);
    fn_verdict v;
    fn_verdict_judge("gcr.io/x:v1", &job, &v);
    cr_assert_eq(v.code, GRPC_INTERNAL);
    cr_assert_str_eq(v.message.data,
                     "failed to parse the output of function \"gcr.io/x:v1\" with stderr 'boom\n': "
                     "failed to parse input bytes: expected exactly one object, got 0");
    fn_verdict_free(&v);
    job_release(&job);
}

Test(fn_verdict, nonzero_exit_with_results)
{
    fn_job job = job_with(rl_with_error, "oops", 1);
    fn_verdict v;
    fn_verdict_judge("img", &job, &v);
    cr_assert_eq(v.code, GRPC_INTERNAL);
    cr_assert_str_eq(v.message.data,
                     "failed to evaluate function \"img\" with structured results: [error] "
                     "apps/v1/Deployment/prod/web spec.replicas: bad replicas and stderr: oops");
    fn_verdict_free(&v);
    job_release(&job);
}

Test(fn_verdict, killed_by_signal_counts_as_failure)
{
    fn_job job = job_with(rl_ok, "", 0);
    job.wait_status = SIGSEGV;   /* WIFSIGNALED */
    fn_verdict v;
    fn_verdict_judge("img", &job, &v);
    cr_assert_eq(v.code, GRPC_INTERNAL);
    cr_assert(strstr(v.message.data, "failed to evaluate function \"img\" with structured results: "));
    fn_verdict_free(&v);
    job_release(&job);
}

Test(fn_verdict, output_too_large_names_the_limit)
{
    fn_job job = job_with("", "", 0);
    job.output_too_large = 1;
    fn_verdict v;
    fn_verdict_judge("img", &job, &v);
    cr_assert_eq(v.code, GRPC_INTERNAL);
    cr_assert(strstr(v.message.data, "1000 bytes"));
    fn_verdict_free(&v);
    job_release(&job);
}

Test(fn_verdict, spawn_failure_in_porch_words)
{
    fn_verdict v;
    fn_verdict_spawn_failed("img", "exec: \"nope\": executable file not found in $PATH", &v);
    cr_assert_eq(v.code, GRPC_INTERNAL);
    cr_assert_str_eq(v.message.data, "Failed to execute function \"img\": exec: \"nope\": "
                                     "executable file not found in $PATH ()");
    fn_verdict_free(&v);
}

Test(fn_verdict, go_quote_escapes)
{
    buf b = {0};
    go_quote("a\"b\\c\nd\x01\xc3\xa9", &b);
    cr_assert_str_eq(b.data, "\"a\\\"b\\\\c\\nd\\x01\xc3\xa9\"");
    buf_free(&b);
}

/* As strconv.Quote: bad UTF-8 byte by byte, unprintable code points escaped. */
Test(fn_verdict, go_quote_escapes_what_go_does_not_print)
{
    buf b = {0};
    static const char s[] = "\x7f\xff\xe2\x80\xa8\xf3\xa0\x80\x81\xc2\xa0";
    go_quote_bytes(s, sizeof s - 1, &b);
    cr_assert_str_eq(b.data, "\"\\x7f\\xff\\u2028\\U000e0001\\u00a0\"");
    buf_free(&b);
}
