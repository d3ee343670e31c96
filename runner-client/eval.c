/* eval: `runner-client eval` sends a ResourceList to a function endpoint's
 * EvaluateFunction. With `--image` (or no function flag) it makes one call
 * and prints the answer verbatim; with `--fn` (repeated) or `--pipeline
 * KPTFILE` it runs the functions as a pipeline (see pipeline_run.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fdio.h"
#include "core/numparse.h"
#include "grpc/grpc_status.h"
#include "oci/image_ref.h"
#include "call_opts.h"
#include "commands.h"
#include "flags.h"
#include "fn_call.h"
#include "pipeline.h"
#include "pipeline_run.h"
#include "rl_input.h"

static const char eval_usage[] =
    "Usage: runner-client eval --addr HOST:PORT [--image IMG] [--timeout DUR]\n"
    "                          [--max-message BYTES] [FILE|DIR|-]\n"
    "       runner-client eval --addr HOST:PORT --fn IMG[=KEY=VALUE,...]... [flags] [FILE|DIR|-]\n"
    "       runner-client eval --addr HOST:PORT --pipeline KPTFILE|DIR [flags] [FILE|DIR|-]\n"
    "       runner-client eval --kube --image IMG [flags] [FILE|DIR|-]   (see eval --kube --help)\n"
    "Builds a ResourceList from a YAML file, a directory of YAML files or stdin\n"
    "(an existing ResourceList passes through) and evaluates it. A directory\n"
    "without any KRM object is an error (no resources found).\n"
    "\n"
    "  --image IMG          one call with this image; the answer is written to stdout\n"
    "                       verbatim and the function's log to stderr\n"
    "  --fn IMG[=K=V,...]   a pipeline step (repeatable, run in order); the pairs become\n"
    "                       its functionConfig, a ConfigMap named function-input\n"
    "  --pipeline KPTFILE   the steps of a Kptfile's pipeline: mutators, then validators,\n"
    "                       each {image, name, configMap | configPath}\n"
    "  --stop-on-error[=false]  stop at the first failed step (default true)\n"
    "  --timeout DUR        deadline of each call (default 5m; 0: none), e.g. 30s;\n"
    "                       connecting may take at most 10s, or DUR when shorter\n"
    "  --max-message BYTES  largest answer accepted (default 6291456)\n"
    "\n"
    "A pipeline feeds each mutator's output items to the next step; validators\n"
    "run last and cannot change items. A step fails on a call error or on\n"
    "results of severity error. The final ResourceList (written also after a\n"
    "failure) holds every step's results, tagged fn.kpt.dev/step and\n"
    "fn.kpt.dev/image; logs go to stderr as \"[step N IMG] line\".\n"
    "Exit status: 0 success, 1 the call or a step failed (a deadline passed, the server\n"
    "could not be reached: DEADLINE_EXCEEDED, UNAVAILABLE), 2 bad usage or input.\n";

static int usage_error(buf *err)
{
    fprintf(stderr, "runner-client eval: %s\n", err->data);
    buf_free(err);
    return 2;
}

/* ---- arguments ------------------------------------------------------------- */

/* flags_parse knows single-valued flags only: the repeatable --fn and the
 * boolean --stop-on-error are taken out first, the rest is left to it. */
typedef struct eval_args {
    const char **fns;
    int n_fns;
    int stop_on_error;
    char **rest;
    int n_rest;
} eval_args;

static int takes_value(const flag_def *defs, const char *arg)
{
    for (; defs->name; defs++)
        if (!strcmp(defs->name, arg))
            return 1;
    return 0;
}

static int parse_bool(const char *text, int *out)
{
    if (!strcmp(text, "true") || !strcmp(text, "1"))
        *out = 1;
    else if (!strcmp(text, "false") || !strcmp(text, "0"))
        *out = 0;
    else
        return -1;
    return 0;
}

static int split_args(int argc, char **argv, const flag_def *defs, eval_args *a, buf *err)
{
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--fn")) {
            if (i + 1 >= argc)
                return buf_printf(err, "flag --fn needs a value"), -1;
            a->fns[a->n_fns++] = argv[++i];
        } else if (!strncmp(arg, "--fn=", 5)) {
            a->fns[a->n_fns++] = arg + 5;
        } else if (!strcmp(arg, "--stop-on-error")) {
            a->stop_on_error = 1;
        } else if (!strncmp(arg, "--stop-on-error=", 16)) {
            if (parse_bool(arg + 16, &a->stop_on_error) < 0)
                return buf_printf(err, "invalid --stop-on-error \"%s\": want true or false",
                                  arg + 16),
                       -1;
        } else {
            a->rest[a->n_rest++] = argv[i];
            if (takes_value(defs, arg) && i + 1 < argc)
                a->rest[a->n_rest++] = argv[++i];
        }
    }
    return 0;
}

/* The steps from --fn or --pipeline; 0, or -1 with err set. */
static int build_pipeline(const eval_args *a, const char *kptfile, pipeline *p, buf *err)
{
    if (kptfile)
        return pipeline_load_kptfile(p, kptfile, err);
    for (int i = 0; i < a->n_fns; i++)
        if (pipeline_add_fn(p, a->fns[i], err) < 0)
            return -1;
    return 0;
}

/* ---- one call ------------------------------------------------------------------- */

static int eval_single(const char *addr, const char *image, const buf *rl,
                       const gc_unary_opts *opts)
{
    fn_call_result r;
    if (fn_call(addr, image, rl->data, rl->len, opts, &r) < 0) {
        fprintf(stderr, "runner-client eval: out of memory\n");
        return 1;
    }
    int rc = 1;
    if (r.status != GRPC_OK)
        fprintf(stderr, "runner-client: %s: %s\n", grpc_code_name(r.status), r.message);
    else if (fd_write_all(STDERR_FILENO, r.log.data, r.log.len) < 0 ||
             fd_write_all(STDOUT_FILENO, r.resource_list.data, r.resource_list.len) < 0)
        perror("runner-client: write");
    else
        rc = 0;
    fn_call_result_free(&r);
    return rc;
}

/* ---- the command ---------------------------------------------------------------- */

typedef struct eval_opts {
    const char *addr, *image, *timeout, *max_text, *kptfile, *input;
    gc_unary_opts call;
    unsigned long long max_message;
} eval_opts;

/* Parses and checks the flags; 0, 1 for --help (printed), or -1 with err set. */
static int parse_eval(int argc, char **argv, eval_args *a, eval_opts *o, buf *err)
{
    flag_def defs[] = {{"--addr", &o->addr}, {"--image", &o->image}, {"--timeout", &o->timeout},
                       {"--max-message", &o->max_text}, {"--pipeline", &o->kptfile}, {0}};
    int n_pos, help;
    if (split_args(argc, argv, defs, a, err) < 0 ||
        flags_parse(a->n_rest, a->rest, defs, &o->input, 1, &n_pos, &help, err) < 0)
        return -1;
    if (help) {
        fputs(eval_usage, stdout);
        return 1;
    }
    if (!o->addr)
        buf_printf(err, "--addr HOST:PORT is required");
    else if (call_opts_timeouts(o->timeout, CALL_EVAL_TIMEOUT_NS, &o->call, err) < 0)
        ;
    else if (o->image && *o->image && image_ref_check(o->image, err) < 0)
        ;
    else if (parse_uint(o->max_text, 2147483647ULL, &o->max_message) < 0 || o->max_message == 0)
        buf_printf(err, "invalid --max-message \"%s\"", o->max_text);
    else if (o->image && (a->n_fns || o->kptfile))
        buf_printf(err, "--image makes one call; give the functions with --fn or --pipeline instead");
    else if (a->n_fns && o->kptfile)
        buf_printf(err, "give the pipeline either with --fn or with --pipeline, not both");
    else if (o->kptfile && !*o->kptfile)
        buf_printf(err, "--pipeline needs a Kptfile or a directory holding one");
    return err->len ? -1 : 0;
}

int cmd_eval(int argc, char **argv)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--kube"))
            return cmd_eval_kube(argc, argv);   /* a function pod on a cluster: pod_run.c */
    eval_opts o = {.max_text = "6291456", .input = "-"};
    eval_args a = {.stop_on_error = 1, .fns = calloc((size_t)argc + 1, sizeof *a.fns),
                   .rest = calloc((size_t)argc + 1, sizeof *a.rest)};
    buf err = {0};
    pipeline p = {0};
    int rc = !a.fns || !a.rest ? (buf_printf(&err, "out of memory"), -1)
                               : parse_eval(argc, argv, &a, &o, &err);
    int piped = a.n_fns > 0 || o.kptfile;
    if (rc == 0 && piped)
        rc = build_pipeline(&a, o.kptfile, &p, &err);
    if (rc != 0) {
        free(a.fns);
        free(a.rest);
        pipeline_free(&p);
        return rc > 0 ? 0 : usage_error(&err);
    }

    buf rl = {0};
    char why[1024];
    gc_unary_opts call = o.call;
    call.max_message = (uint32_t)o.max_message;
    if (rl_input_build(o.input, &rl, why, sizeof why) < 0) {
        fprintf(stderr, "runner-client eval: %s\n", why);
        rc = 2;
    } else if (piped) {
        pl_run_opts run = {.addr = o.addr, .call = call, .stop_on_error = a.stop_on_error};
        rc = pipeline_run(&p, rl.data, rl.len, &run);
    } else {
        rc = eval_single(o.addr, o.image ? o.image : "", &rl, &call);
    }
    buf_free(&rl);
    free(a.fns);
    free(a.rest);
    pipeline_free(&p);
    return rc;
}
