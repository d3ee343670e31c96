/* eval_run: steps, their progress and results, the output; see eval_run.h. */
#include "eval/eval_run.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/fdio.h"
#include "grpc/grpc_status.h"
#include "krm/rl_results.h"
#include "eval/eval_progress.h"
#include "core/term_text.h"


static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Progress goes out as soon as it is known, in one write per block. */
static void say(buf *text)
{
    if (text->len)
        (void)fd_write_all(STDERR_FILENO, text->data, text->len);
    buf_reset(text);
}

/* Decides whether the answer passes; fills s->failed, s->error, s->parsed.
 * Returns 0, or -1 when out of memory. */
static int judge(eval_step *s)
{
    const fn_call_result *a = &s->answer;
    buf why = { 0 };
    int rc = 0;
    if (a->status != GRPC_OK) {
        rc = buf_printf(&s->error, "%s: %s", grpc_code_name(a->status), a->message);
        s->failed = 1;
    } else if (rl_parse(a->resource_list.data ? a->resource_list.data : "", a->resource_list.len,
                        &s->parsed, &why) < 0) {
        rc = buf_printf(&s->error, "the output is not a valid ResourceList: %s",
                        why.data ? why.data : "out of memory");
        s->failed = 1;
    } else {
        s->failed = rl_error_count(&s->parsed) > 0;
    }
    buf_free(&why);
    return rc;
}

int eval_step_run(eval_run *run, const char *image, const char *tag, const char *rl, size_t len,
                  eval_step *s)
{
    *s = (eval_step){ 0 };
    const char *name = image && *image ? image : run->unnamed;
    buf text = { 0 };
    if (progress_running(name, &text) < 0) {
        buf_free(&text);
        return -1;
    }
    say(&text);
    int64_t t0 = now_ns();
    if (run->call(run->call_ctx, image ? image : "", tag, rl, len, &s->answer) < 0) {
        buf_free(&text);
        return -1;
    }
    progress_step p = { .name = name, .elapsed_ns = now_ns() - t0 };
    if (judge(s) < 0) {
        buf_free(&text);
        return -1;
    }
    p.failed = s->failed;
    p.results = s->parsed.kind ? &s->parsed : NULL;
    p.log = s->answer.log.data;
    p.log_len = s->answer.log.len;
    p.error = s->error.len ? s->error.data : NULL;
    int rc = progress_done(&p, run->truncate, &text);
    if (rc == 0)
        say(&text);
    buf_free(&text);
    size_t dropped = 0;
    if (rc == 0 && run->results_dir)
        rc = results_file_add(&run->results, image, s->failed, p.results, p.error, p.log,
                              p.log_len, &dropped);
    if (rc == 0 && dropped)
        term_line(stderr, "runner-client %s: results.yaml keeps %zu fewer results of \"%s\" than "
                            "it answered: see the warning result in their place\n", eval_command,
                    dropped, name);
    if (s->failed)
        run->failed = 1;
    return rc;
}

void eval_step_free(eval_step *s)
{
    fn_call_result_free(&s->answer);
    rl_free(&s->parsed);
    buf_free(&s->error);
}

int eval_run_single(eval_run *run, const char *image, const buf *input, const eval_output *o)
{
    eval_step s;
    if (eval_step_run(run, image, NULL, input->data, input->len, &s) < 0) {
        eval_step_free(&s);
        term_line(stderr, "runner-client %s: out of memory\n", eval_command);
        return 1;
    }
    const buf *answer = &s.answer.resource_list;
    int ok = s.answer.status == GRPC_OK;
    int rc = eval_run_finish(run, o, input, ok ? (answer->data ? answer->data : "") : NULL,
                             ok ? answer->len : 0);
    eval_step_free(&s);
    return rc;
}

int eval_run_finish(eval_run *run, const eval_output *o, const buf *input, const char *final,
                    size_t len)
{
    buf why = { 0 };
    /* A results.yaml that cannot be written fails the run before the
     * package is touched: the package is then as it was. */
    if (run->results_dir && results_file_check(run->results_dir, &why) < 0) {
        term_line(stderr, "runner-client %s: cannot write the results: %s\n", eval_command,
                  why.data ? why.data : "out of memory");
        buf_free(&why);
        return 1;
    }
    int rc = eval_output_write(o, input, final, len, run->failed) < 0 || run->failed ? 1 : 0;
    if (run->results_dir) {
        buf path = { 0 };
        if (results_file_write(&run->results, run->results_dir, rc, &path, &why) < 0) {
            term_line(stderr, "runner-client %s: cannot write the results: %s\n", eval_command,
                      why.data ? why.data : "out of memory");
            rc = 1;
        } else {
            fputc('\n', stderr);
            term_line(stderr, "For complete results, see %s\n", path.data);
        }
        buf_free(&path);
    }
    buf_free(&why);
    return rc;
}

void eval_run_free(eval_run *run)
{
    results_file_free(&run->results);
}
