/* pipeline_run: running the steps; see pipeline_run.h.
 *
 * The state is one ResourceList document: its items are what the next step
 * gets, its results what the steps have reported so far. A request is the
 * state with the step's functionConfig and without results (a function
 * sees only its own input, as in kpt); the output is the state without
 * functionConfig (each step had its own).
 *
 * A step fails when the call fails (any gRPC error, including the server's
 * INTERNAL for a function that exited non-zero), when its output is not a
 * ResourceList, or when its results hold severity "error" (the SDK's
 * rule). A failed step changes no items; its results are kept, and a
 * failed call becomes a result of its own. */
#include "pipeline_run.h"
#include "term_text.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "krm/rl_edit.h"

#define PREFIX "runner-client eval: "

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
        term_printf(stderr, PREFIX "step %zu \"%s\" (%s) failed: %s\n", c->number, c->step->image,
                c->step->name, what);
    else
        term_printf(stderr, PREFIX "step %zu \"%s\" failed: %s\n", c->number, c->step->image, what);
}

/* A failure without results of the function's own, kept as an error
 * result. Returns 1 (the step failed) or -1 (out of memory). */
static int fail_step(rl_doc *state, const step_ctx *c, const char *what)
{
    return rl_doc_add_result(state, "error", what, c->tags, c->n_tags) < 0 ? -1 : 1;
}

/* The same for a failure the step's progress did not show. */
static int fail_step_unseen(rl_doc *state, const step_ctx *c, const char *what)
{
    report_failure(c, what);
    return fail_step(state, c, what);
}

/* What a judged answer means for the state. */
static int take_output(rl_doc *state, const step_ctx *c, const eval_step *s)
{
    const fn_call_result *r = &s->answer;
    if (s->error[0])
        return fail_step(state, c, s->error); /* the call or the output failed */
    char why[1024];
    rl_doc *out = rl_doc_load_resource_list(r->resource_list.data, r->resource_list.len, why,
                                            sizeof why);
    if (!out) {
        char what[1200];
        snprintf(what, sizeof what, "the output is not a valid ResourceList: %s", why);
        return fail_step_unseen(state, c, what);
    }
    int rc = 0;
    if (rl_doc_append_results(state, out, c->tags, c->n_tags, why, sizeof why) < 0)
        rc = fail_step_unseen(state, c, why);
    else if (s->failed) /* error results, shown with the step */
        rc = 1;
    else if (!c->step->validator && (rl_doc_set_items(state, out, why, sizeof why) < 0 ||
                                     rl_doc_compact(state, why, sizeof why) < 0))
        rc = fail_step_unseen(state, c, why);
    rl_doc_free(out);
    return rc;
}

/* Runs one step: 0 passed, 1 failed, -1 out of memory. */
static int run_step(rl_doc *state, const step_ctx *c, eval_run *run)
{
    char why[1024];
    buf request = { 0 };
    if (rl_doc_set_function_config(state, c->step->config, why, sizeof why) < 0 ||
        rl_doc_emit(state, "results", &request, why, sizeof why) < 0) {
        buf_free(&request);
        run->failed = 1;
        return fail_step_unseen(state, c, why);
    }
    eval_step s;
    int rc = eval_step_run(run, c->step->image, c->step->tag, request.data, request.len, &s);
    buf_free(&request);
    if (rc == 0)
        rc = take_output(state, c, &s);
    if (rc > 0)
        run->failed = 1;
    eval_step_free(&s);
    return rc;
}

int pipeline_run(const pipeline *p, const char *input, size_t len, eval_run *run,
                 int stop_on_error, buf *final)
{
    char why[1024];
    rl_doc *state = rl_doc_load_resource_list(input, len, why, sizeof why);
    if (!state) {
        term_printf(stderr, PREFIX "the input is not a valid ResourceList: %s\n", why);
        return 2;
    }
    rl_doc_remove(state, "results"); /* the output holds the steps' results only */
    int failed = 0, rc = 0;
    for (size_t i = 0; i < p->n_steps && rc >= 0 && !(failed && stop_on_error); i++) {
        step_ctx c;
        step_ctx_init(&c, &p->steps[i], i + 1);
        rc = run_step(state, &c, run);
        if (rc > 0)
            failed = 1;
    }
    if (rc >= 0 && rl_doc_emit(state, "functionConfig", final, why, sizeof why) < 0) {
        term_printf(stderr, PREFIX "cannot write the output: %s\n", why);
        rc = -1;
    } else if (rc < 0) {
        term_printf(stderr, PREFIX "out of memory\n");
    }
    rl_doc_free(state);
    return rc < 0 || failed ? 1 : 0;
}
