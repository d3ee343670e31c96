/* pipeline_run: running the steps; see pipeline_run.h.
 *
 * The state is the text of the ResourceList whose items the next step
 * gets: the input, then each mutator's output as it came. The results the
 * steps have reported so far are kept beside it as YAML text
 * (results_text.h), bounded, and follow the items in the final list. A
 * request is the state with the step's functionConfig and without results
 * (a function sees only its own input, as in kpt); the output is the state
 * without functionConfig (each step had its own), then the results. Both
 * are written from the state event by event (rl_rewrite.h): no tree.
 *
 * A step fails when the call fails (any gRPC error, including the server's
 * INTERNAL for a function that exited non-zero), when its output is not a
 * ResourceList, or when its results hold severity "error" (the SDK's
 * rule). A failed step changes no items; its results are kept, and a
 * failed call becomes a result of its own. */
#include "eval/pipeline_run.h"
#include "pkg/results_text.h"
#include "pkg/rl_rewrite.h"
#include "core/term_text.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "krm/rl_edit.h"


/* The steps' results so far, as sequence entries, within `bound` bytes. */
typedef struct kept_results {
    buf text;
    size_t bound;
} kept_results;

typedef struct step_ctx {
    const pl_step *step;
    size_t number;       /* 1-based */
    char number_text[24];
    rl_kv tags[3];
    size_t n_tags;
} step_ctx;

static void step_ctx_init(step_ctx *c, const pl_step *step, size_t number)
{
    *c = (step_ctx){ .step = step, .number = number };
    snprintf(c->number_text, sizeof c->number_text, "%zu", number);
    c->tags[c->n_tags++] = (rl_kv){ PL_TAG_STEP, c->number_text };
    c->tags[c->n_tags++] = (rl_kv){ PL_TAG_IMAGE, step->image };
    if (step->name)
        c->tags[c->n_tags++] = (rl_kv){ PL_TAG_NAME, step->name };
}

static void report_failure(const step_ctx *c, const char *what)
{
    if (c->step->name)
        term_line(stderr, "runner-client %s: step %zu \"%s\" (%s) failed: %s\n", eval_command, c->number, c->step->image,
                c->step->name, what);
    else
        term_line(stderr, "runner-client %s: step %zu \"%s\" failed: %s\n", eval_command, c->number, c->step->image, what);
}

/* Keeps a step's results (and `error` as one more) for the final list.
 * Returns 0 or -1 (out of memory). */
static int keep_results(kept_results *k, const step_ctx *c, const rl_list *results,
                        const char *error)
{
    size_t dropped = 0;
    if (results_text_append(&k->text, k->bound, k->bound, results, error, c->tags, c->n_tags,
                            &dropped) < 0)
        return -1;
    if (dropped)
        term_line(stderr, "runner-client %s: step %zu \"%s\": the ResourceList keeps %zu fewer "
                            "results than it answered: see the warning result in their place\n",
                    eval_command, c->number, c->step->image, dropped);
    return 0;
}

/* A failure without results of the function's own, kept as an error
 * result. Returns 1 (the step failed) or -1 (out of memory). */
static int fail_step(kept_results *k, const step_ctx *c, const char *what)
{
    return keep_results(k, c, NULL, what) < 0 ? -1 : 1;
}

/* The same for a failure the step's progress did not show. */
static int fail_step_unseen(kept_results *k, const step_ctx *c, const char *what)
{
    report_failure(c, what);
    return fail_step(k, c, what);
}

/* Keys a request and the final list never take from the state: each step
 * gets its own functionConfig (none for the final list), and the results
 * are kept apart. */
static const char *const STATE_ONLY[] = { "functionConfig", "results", NULL };

/* What a judged answer means: its results are kept (the judge read them:
 * s->parsed), and a mutator's output, as it came, becomes the state. */
static int take_output(buf *state, kept_results *k, const step_ctx *c, eval_step *s)
{
    if (s->error.len)
        return fail_step(k, c, s->error.data); /* the call or the output failed */
    if (keep_results(k, c, &s->parsed, NULL) < 0)
        return -1;
    if (s->failed) /* error results, shown with the step */
        return 1;
    if (!c->step->validator) {
        buf_free(state);
        *state = s->answer.resource_list;
        s->answer.resource_list = (buf){ 0 };
    }
    return 0;
}

/* The request: the state with the step's functionConfig. */
static int build_request(const buf *state, const pl_step *step, buf *request, buf *why)
{
    buf config = { 0 };
    rl_rewrite_opts o = { .drop = STATE_ONLY };
    int rc = 0;
    if (step->config && (rc = rl_doc_emit(step->config, NULL, &config, why)) == 0) {
        o.config = config.data;
        o.config_len = config.len;
    }
    if (rc == 0)
        rc = rl_rewrite(state->data, state->len, &o, request, why);
    buf_free(&config);
    return rc;
}

/* Runs one step: 0 passed, 1 failed, -1 out of memory. */
static int run_step(buf *state, kept_results *k, const step_ctx *c, eval_run *run)
{
    buf request = { 0 }, why = { 0 };
    if (build_request(state, c->step, &request, &why) < 0) {
        buf_free(&request);
        run->failed = 1;
        int rc = fail_step_unseen(k, c, why.data ? why.data : "out of memory");
        buf_free(&why);
        return rc;
    }
    eval_step s;
    int rc = eval_step_run(run, c->step->image, c->step->tag, request.data, request.len, &s);
    buf_free(&request);
    if (rc == 0)
        rc = take_output(state, k, c, &s);
    if (rc > 0)
        run->failed = 1;
    eval_step_free(&s);
    return rc;
}

/* The final list: the state without functionConfig, then the results. */
static int write_final(const buf *state, const kept_results *k, buf *final)
{
    buf why = { 0 };
    rl_rewrite_opts o = { .drop = STATE_ONLY };
    if (rl_rewrite(state->data, state->len, &o, final, &why) < 0) {
        term_line(stderr, "runner-client %s: cannot write the output: %s\n", eval_command,
                  why.data ? why.data : "out of memory");
        buf_free(&why);
        return -1;
    }
    if (k->text.len && (buf_append_str(final, "results:\n") < 0 ||
                        buf_append(final, k->text.data, k->text.len) < 0)) {
        term_line(stderr, "runner-client %s: out of memory\n", eval_command);
        return -1;
    }
    return 0;
}

int pipeline_run(const pipeline *p, const char *input, size_t len, eval_run *run,
                 int stop_on_error, buf *final)
{
    buf state = { 0 }, why = { 0 };
    rl_list checked = { 0 };
    /* as the SDK reads it; the output holds the steps' results only */
    rl_rewrite_opts o = { .drop = STATE_ONLY };
    if (rl_parse(input, len, &checked, &why) < 0 ||
        rl_rewrite(input, len, &o, &state, &why) < 0) {
        term_line(stderr, "runner-client %s: the input is not a valid ResourceList: %s\n",
                  eval_command, why.data ? why.data : "out of memory");
        rl_free(&checked);
        buf_free(&state);
        buf_free(&why);
        return 2;
    }
    rl_free(&checked);
    kept_results kept = { .bound = run->results.bound };
    int failed = 0, rc = 0;
    for (size_t i = 0; i < p->n_steps && rc >= 0 && !(failed && stop_on_error); i++) {
        step_ctx c;
        step_ctx_init(&c, &p->steps[i], i + 1);
        rc = run_step(&state, &kept, &c, run);
        if (rc > 0)
            failed = 1;
    }
    if (rc < 0)
        term_line(stderr, "runner-client %s: out of memory\n", eval_command);
    else if (write_final(&state, &kept, final) < 0)
        rc = -1;
    buf_free(&kept.text);
    buf_free(&state);
    return rc < 0 || failed ? 1 : 0;
}
