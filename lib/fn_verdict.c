/* fn_verdict: Porch-compatible classification of a function run; see fn_verdict.h. */
#include "fn_verdict.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "go_quote.h"
#include "grpc_status.h"
#include "resourcelist.h"

static void verdict_parse_failure(const char *image, const fn_job *job, const char *why,
                                  fn_verdict *v)
{
    v->code = GRPC_INTERNAL;
    buf_append_str(&v->message, "failed to parse the output of function ");
    go_quote(image, &v->message);
    buf_printf(&v->message, " with stderr '%s': %s", job->err.data ? job->err.data : "", why);
}

void fn_verdict_judge(const char *image, const fn_job *job, fn_verdict *v)
{
    *v = (fn_verdict){0};
    if (job->output_too_large) {
        v->code = GRPC_INTERNAL;
        buf_append_str(&v->message, "the output of function ");
        go_quote(image, &v->message);
        buf_printf(&v->message, " is larger than the maximum message size of %zu bytes "
                   "(--max-request-body-size)", job->spec.max_stdout);
        return;
    }
    rl_list rl;
    char why[4096];
    if (rl_parse(job->out.data ? job->out.data : "", job->out.len, &rl, why, sizeof why) < 0) {
        verdict_parse_failure(image, job, why, v);
        return;
    }
    int exit_ok = WIFEXITED(job->wait_status) && WEXITSTATUS(job->wait_status) == 0;
    const char *stderr_text = job->err.data ? job->err.data : "";
    if (!exit_ok) {
        v->code = GRPC_INTERNAL;
        buf_append_str(&v->message, "failed to evaluate function ");
        go_quote(image, &v->message);
        buf_append_str(&v->message, " with structured results: ");
        rl_results_text(&rl, &v->message);
        buf_printf(&v->message, " and stderr: %s", stderr_text);
    } else {
        v->code = GRPC_OK;
        if (rl_error_count(&rl) > 0) {
            buf_append_str(&v->warning, "failed to evaluate function ");
            go_quote(image, &v->warning);
            buf_append_str(&v->warning, " with structured results: ");
            rl_results_json(&rl, &v->warning);
            buf_printf(&v->warning, " and stderr: %s", stderr_text);
        }
    }
    rl_free(&rl);
}

void fn_verdict_spawn_failed(const char *image, const char *why, fn_verdict *v)
{
    *v = (fn_verdict){0};
    v->code = GRPC_INTERNAL;
    buf_append_str(&v->message, "Failed to execute function ");
    go_quote(image, &v->message);
    buf_printf(&v->message, ": %s ()", why);
}

void fn_verdict_free(fn_verdict *v)
{
    buf_free(&v->message);
    buf_free(&v->warning);
}
