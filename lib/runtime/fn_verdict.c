/* fn_verdict: Porch-compatible classification of a function run; see fn_verdict.h. */
#include "runtime/fn_verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/go_quote.h"
#include "grpc/grpc_status.h"
#include "krm/resourcelist.h"
#include "krm/rl_results.h"

static void verdict_parse_failure(const char *image, const fn_job *job, const char *why,
                                  fn_verdict *v)
{
    v->code = GRPC_INTERNAL;
    buf_append_str(&v->message, "failed to parse the output of function ");
    go_quote(image, &v->message);
    buf_printf(&v->message, " with stderr '%s': %s", job->err.data ? job->err.data : "", why);
}

static void verdict_too_large(const char *image, const fn_job *job, fn_verdict *v)
{
    v->code = GRPC_INTERNAL;
    buf_append_str(&v->message, "the output of function ");
    go_quote(image, &v->message);
    buf_printf(&v->message, " is larger than the maximum message size of %zu bytes "
               "(--max-request-body-size)", job->spec.max_stdout);
}

/* The verdict once the output has been read: rc and rl as rl_parse gives them. */
static void verdict_of(const char *image, const fn_job *job, int rc, rl_list *rl, const char *why,
                       fn_verdict *v)
{
    if (rc < 0) {
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
        rl_results_text(rl, &v->message);
        buf_printf(&v->message, " and stderr: %s", stderr_text);
    } else {
        v->code = GRPC_OK;
        if (rl_error_count(rl) > 0) {
            buf_append_str(&v->warning, "failed to evaluate function ");
            go_quote(image, &v->warning);
            buf_append_str(&v->warning, " with structured results: ");
            rl_results_json(rl, &v->warning);
            buf_printf(&v->warning, " and stderr: %s", stderr_text);
        }
    }
    rl_free(rl);
}

struct fn_judging {
    const char *image;
    const fn_job *job;
    rl_judge *rl;   /* NULL when the output was too large to judge */
};

fn_judging *fn_verdict_start(const char *image, const fn_job *job)
{
    fn_judging *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->image = image;
    j->job = job;
    if (!job->output_too_large &&
        !(j->rl = rl_judge_new(job->out.data ? job->out.data : "", job->out.len, RL_PARSE_AUTO))) {
        free(j);
        return NULL;
    }
    return j;
}

int fn_verdict_step(fn_judging *j, fn_verdict *v)
{
    *v = (fn_verdict){0};
    if (!j->rl) {
        verdict_too_large(j->image, j->job, v);
        return 0;
    }
    rl_list rl;
    buf why = {0};
    int rc = rl_judge_step(j->rl, FN_VERDICT_STEP_EVENTS, &rl, &why);
    if (rc != 1)
        verdict_of(j->image, j->job, rc, &rl,
                   why.data ? why.data : "failed to parse input bytes: out of memory", v);
    buf_free(&why);
    return rc == 1;
}

void fn_verdict_stop(fn_judging *j)
{
    if (!j)
        return;
    rl_judge_free(j->rl);
    free(j);
}

void fn_verdict_judge(const char *image, const fn_job *job, fn_verdict *v)
{
    fn_judging *j = fn_verdict_start(image, job);
    if (!j) {
        *v = (fn_verdict){0};
        verdict_parse_failure(image, job, "failed to parse input bytes: out of memory", v);
        return;
    }
    while (fn_verdict_step(j, v) == 1)
        continue;
    fn_verdict_stop(j);
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
