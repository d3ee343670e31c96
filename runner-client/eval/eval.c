/* eval: `runner-client eval` runs functions on a package through a function
 * endpoint's EvaluateFunction, as kpt fn eval does. With `--image` (or no
 * function flag) it makes one call; with `--fn` (repeated) or `--pipeline
 * KPTFILE` it runs the functions as a pipeline (see pipeline_run.h). What
 * happens around the calls (progress, results, output) is eval_run's, the
 * same for eval --kube (pod_run.c). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fdio.h"
#include "core/numparse.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"
#include "oci/image_ref.h"
#include "cli/call_opts.h"
#include "commands.h"
#include "cli/flags.h"
#include "cli/verbosity.h"
#include "eval/fn_call.h"
#include "eval/eval_output.h"
#include "eval/eval_run.h"
#include "pkg/results_text.h"
#include "eval/exec_call.h"
#include "pkg/pipeline.h"
#include "serve/serve_sandbox.h"
#include "eval/pipeline_run.h"
#include "eval/render_tree.h"
#include "pkg/rl_input.h"
#include "core/term_text.h"

static const char eval_usage[] =
    "Usage: runner-client eval --addr HOST:PORT [-i IMG] [flags] [DIR|FILE|-] [-- KEY=VALUE...]\n"
    "       runner-client eval --exec CMD [flags] [DIR|FILE|-] [-- KEY=VALUE...]\n"
    "       runner-client eval --addr HOST:PORT --fn IMG[=KEY=VALUE,...]... [flags] [DIR|FILE|-]\n"
    "       runner-client eval --addr HOST:PORT --pipeline KPTFILE|DIR [flags] [DIR|FILE|-]\n"
    "       runner-client eval --kube --image IMG [flags] [DIR|FILE|-]   (see eval --kube --help)\n"
    "Runs functions on a package, as kpt fn eval does: a directory's YAML files\n"
    "(default: the current directory, as kpt's; or a YAML file, or - for stdin)\n"
    "become a ResourceList (an existing ResourceList passes through), each\n"
    "function's answer the next input. A directory without any KRM object is an\n"
    "error (no resources found).\n"
    "\n"
    "  -i, --image IMG      one call with this image\n"
    "  --exec CMD           one call: CMD (words split at spaces, no quoting) run here as\n"
    "                       the function, judged as the wrapper server judges it\n"
    "  --fn-config FILE     the call's functionConfig: FILE's one KRM object\n"
    "  -- KEY=VALUE...      the call's functionConfig: a ConfigMap named function-input\n"
    "                       with these entries (as kpt fn eval IMG -- KEY=VALUE)\n"
    "  --fn IMG[=K=V,...]   a pipeline step (repeatable, run in order); the pairs become\n"
    "                       its functionConfig, a ConfigMap named function-input\n"
    "  --pipeline KPTFILE   the steps of a Kptfile's pipeline: mutators, then validators,\n"
    "                       each {image, name, configMap | configPath}\n"
    "  --stop-on-error[=false]  stop at the first failed step (default true)\n"
    "  -o, --output OUT     where the result goes (default: a DIR is updated in place,\n"
    "                       FILE and - print the ResourceList): stdout (the ResourceList),\n"
    "                       unwrap (the resources as YAML documents), or a new directory\n"
    "  --results-dir DIR    write the functions' results to DIR/results.yaml (kpt's\n"
    "                       FunctionResultList), also when a function fails\n"
    "  --truncate-output[=false]  at most 4 lines of results and stderr per function in\n"
    "                       the progress (default true)\n"
    "  --timeout DUR        deadline of each call (default 5m; 0: none), e.g. 30s;\n"
    "                       connecting may take at most 10s, or DUR when shorter\n"
    "  --max-message BYTES  largest answer accepted, and most input read: a file, a\n"
    "                       package's files together, stdin (default 6291456)\n"
    "  --sandbox auto|strict|off, --sandbox-memory MIB, --sandbox-cpu SECONDS,\n"
    "  --sandbox-processes N, --sandbox-file-size MIB, --sandbox-open-files N,\n"
    "  --sandbox-read LIST, --sandbox-write LIST, --sandbox-env LIST\n"
    "                       run --exec's function in serve's sandbox (see serve --help),\n"
    "                       with these limits; without any, it runs as a plain child\n"
    "                       (as kpt's); one of them alone means --sandbox auto\n"
    "  --verbosity N, --log-level N  log lines on stderr: 2 normal, 3 details (--exec:\n"
    "                       each run's time), 4 debugging (--exec: each start), 0-10\n"
    "                       (default 2)\n"
    "\n"
    "Progress goes to stderr, per function: [RUNNING] \"IMG\", then [PASS] or [FAIL]\n"
    "\"IMG\" in TIME, its results, its stderr and, on failure, the error. A function\n"
    "fails on a call error, an answer that is not a ResourceList, or results of\n"
    "severity error; a package is then left as it was. In place, files whose\n"
    "resources did not change are not touched, changed ones are rewritten (their\n"
    "comments are lost), new resources go to new files (KIND_NAME.yaml), and a file\n"
    "left without resources is removed. A pipeline's ResourceList holds every\n"
    "step's results, tagged fn.kpt.dev/step and fn.kpt.dev/image.\n"
    "Exit status: 0 success, 1 a function failed or the output could not be written\n"
    "(a deadline passed, the server could not be reached: DEADLINE_EXCEEDED,\n"
    "UNAVAILABLE), 2 bad usage or input.\n";

static const char render_usage[] =
    "Usage: runner-client render --addr HOST:PORT [flags] [DIR]\n"
    "Runs the pipeline of DIR's Kptfile (default: the current directory) on the\n"
    "package and writes the result back in place, as kpt fn render does: the\n"
    "mutators, then the validators, each {image, name, configMap | configPath}.\n"
    "Subpackages (directories beneath DIR with a Kptfile of their own) are rendered\n"
    "first, depth first: each one's pipeline on its own resources and its rendered\n"
    "subpackages', then the parent's on its own and all of its subpackages'.\n"
    "A failed step stops the render (naming the subpackage) and leaves the package\n"
    "as it was. See eval --help for what is read and written.\n"
    "\n"
    "  -o, --output OUT     stdout, unwrap or a new directory instead of in place\n"
    "  --results-dir DIR    write the functions' results to DIR/results.yaml\n"
    "  --truncate-output[=false], --timeout DUR, --max-message BYTES,\n"
    "  --verbosity N        as for eval\n"
    "\n"
    "Exit status: 0 success, 1 a function failed or the output could not be\n"
    "written, 2 bad usage or input (a Kptfile kpt would refuse: an unknown field\n"
    "is named with its line).\n";

static int usage_error(buf *err)
{
    term_line(stderr, "runner-client %s: %s\n", eval_command, err->data);
    buf_free(err);
    return 2;
}

/* ---- arguments ------------------------------------------------------------- */

/* flags_parse knows single-valued flags only: the repeatable --fn, the
 * boolean --stop-on-error and the function's arguments after `--` are
 * taken out first, the rest is left to it. */
typedef struct eval_args {
    const char **fns;
    int n_fns;
    char **fn_args;          /* after `--`: KEY=VALUE */
    int n_fn_args;
    int dash_dash;           /* `--` was given */
    int stop_on_error;
    int stop_on_error_given;
    char **rest;
    int n_rest;
} eval_args;

static int takes_value(const flag_def *defs, const char *arg)
{
    for (; defs->name; defs++)
        if (!strcmp(defs->name, arg))
            return defs->value != NULL;
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
        if (!strcmp(arg, "--")) {
            a->dash_dash = 1;
            a->fn_args = argv + i + 1;
            a->n_fn_args = argc - i - 1;
            break;
        } else if (!strcmp(arg, "--fn")) {
            if (i + 1 >= argc)
                return buf_fail(err, "flag --fn needs a value");
            a->fns[a->n_fns++] = argv[++i];
        } else if (!strncmp(arg, "--fn=", 5)) {
            a->fns[a->n_fns++] = arg + 5;
        } else if (!strcmp(arg, "--stop-on-error")) {
            a->stop_on_error = a->stop_on_error_given = 1;
        } else if (!strncmp(arg, "--stop-on-error=", 16)) {
            a->stop_on_error_given = 1;
            if (parse_bool(arg + 16, &a->stop_on_error) < 0)
                return buf_fail(err, "invalid --stop-on-error \"%s\": want true or false",
                                arg + 16);
        } else {
            a->rest[a->n_rest++] = argv[i];
            if (takes_value(defs, arg) && i + 1 < argc)
                a->rest[a->n_rest++] = argv[++i];
        }
    }
    return 0;
}

/* The steps from --fn or --pipeline; 0, or -1 with err set. */
static int build_pipeline(const eval_args *a, const char *kptfile, size_t max, pipeline *p,
                          buf *err)
{
    if (kptfile)
        return pipeline_load_kptfile(p, kptfile, max, err);
    for (int i = 0; i < a->n_fns; i++)
        if (pipeline_add_fn(p, a->fns[i], err) < 0)
            return -1;
    return 0;
}

/* ---- the command ---------------------------------------------------------------- */

typedef struct eval_opts {
    const char *addr, *image, *timeout, *max_text, *kptfile, *input, *fn_config, *exec;
    verbosity_flags verbosity;
    serve_sandbox_flags sandbox;   /* --exec's */
    eval_cli_out out;
    gc_unary_opts call;
    unsigned long long max_message;
} eval_opts;

/* eval_call_fn over gRPC: the endpoint and the call's limits. */
typedef struct grpc_caller {
    const char *addr;
    gc_unary_opts call;
} grpc_caller;

static int call_grpc(void *ctx, const char *image, const char *tag, const char *rl, size_t len,
                     fn_call_result *out)
{
    const grpc_caller *g = ctx;
    return fn_call(g->addr, image, tag, rl, len, &g->call, out);
}

/* render: the package's own Kptfile is the pipeline, so the flags that
 * name functions are eval's only; the input must be a directory. */
static int check_render(const eval_args *a, eval_opts *o, buf *err)
{
    struct stat st;
    const char *evals = o->image ? "--image" : o->kptfile ? "--pipeline" : a->n_fns ? "--fn"
                      : o->exec ? "--exec" : o->fn_config ? "--fn-config"
                      : a->dash_dash ? "-- KEY=VALUE" : a->stop_on_error_given ? "--stop-on-error"
                      : NULL;
    if (evals)
        return buf_fail(err, "%s is eval's: render runs the functions of DIR's Kptfile",
                        evals);
    if (!strcmp(o->input, "-") || (stat(o->input, &st) == 0 && !S_ISDIR(st.st_mode)))
        return buf_fail(err, "%s is not a directory: render updates a package (a directory "
                        "holding a Kptfile)", !strcmp(o->input, "-") ? "-" : o->input);
    o->kptfile = o->input;
    return 0;
}

/* Parses and checks the flags; 0, 1 for --help (printed), or -1 with err set. */
static int parse_eval(int argc, char **argv, eval_args *a, eval_opts *o, int render, buf *err)
{
    flag_def defs[] = {{"--addr", &o->addr}, {"--image", &o->image}, {"-i", &o->image},
                       {"--timeout", &o->timeout}, {"--max-message", &o->max_text},
                       {"--pipeline", &o->kptfile}, {"--fn-config", &o->fn_config},
                       {"--exec", &o->exec}, EVAL_CLI_OUT_FLAGS(&o->out),
                       VERBOSITY_FLAG_DEFS(&o->verbosity),
                       SERVE_SANDBOX_FLAG_DEFS(&o->sandbox), {0}};
    int n_pos, help;
    if (split_args(argc, argv, defs, a, err) < 0 ||
        flags_parse(a->n_rest, a->rest, defs, &o->input, 1, &n_pos, &help, err) < 0)
        return -1;
    if (help) {
        fputs(render ? render_usage : eval_usage, stdout);
        return 1;
    }
    if (render && check_render(a, o, err) < 0)
        return -1;
    if (o->exec && o->addr)
        buf_printf(err, "--exec runs the function here; --addr calls a server: give one");
    else if (!o->addr && !o->exec)
        buf_printf(err, "--addr HOST:PORT is required (or --exec CMD to run a local function)");
    else if (o->addr && gc_addr_check(o->addr, err) < 0)
        ;
    else if (o->exec && (o->image || a->n_fns || o->kptfile))
        buf_printf(err, "--exec is the function of one call: not with --image, --fn or --pipeline");
    else if (o->exec && !*o->exec)
        buf_printf(err, "--exec needs a command");
    else if (!o->exec && serve_sandbox_flags_given(&o->sandbox))
        buf_printf(err, "the --sandbox flags are --exec's: a server's functions run in its own");
    else if ((o->fn_config || a->dash_dash) && (a->n_fns || o->kptfile))
        buf_printf(err, "%s is the functionConfig of one call (--image or --exec); a pipeline's "
                    "steps have their own", o->fn_config ? "--fn-config" : "-- KEY=VALUE");
    else if (o->fn_config && a->n_fn_args)
        buf_printf(err, "give the functionConfig either with --fn-config or as KEY=VALUE "
                    "arguments after --, not both");
    else if (call_opts_timeouts(o->timeout, CALL_EVAL_TIMEOUT_NS, &o->call, err) < 0)
        ;
    else if (verbosity_set(&o->verbosity, err) < 0)
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

/* The directory of --exec's program when it names one with a path (the
 * sandbox lets the function read there, as serve's --functions), in dir;
 * NULL for a program found in PATH, or one not there (the spawn says so). */
static const char *exec_dir(const char *cmd, char *dir, size_t size)
{
    size_t len = strcspn(cmd + strspn(cmd, " \t"), " \t");
    char path[PATH_MAX], real[PATH_MAX];
    if (len >= sizeof path || size < sizeof real)
        return NULL;
    memcpy(path, cmd + strspn(cmd, " \t"), len);
    path[len] = '\0';
    if (!strchr(path, '/') || !realpath(path, real))
        return NULL;
    *strrchr(real, '/') = '\0';
    snprintf(dir, size, "%s", *real ? real : "/");
    return dir;
}

/* eval, or render (the input's Kptfile as the pipeline). */
static int run_eval(int argc, char **argv, int render)
{
    eval_opts o = {.max_text = "6291456", .input = ".", .out = EVAL_CLI_OUT_INIT};
    eval_args a = {.stop_on_error = 1, .fns = calloc((size_t)argc + 1, sizeof *a.fns),
                   .rest = calloc((size_t)argc + 1, sizeof *a.rest)};
    buf err = {0};
    pipeline p = {0};
    eval_output out;
    int rc = !a.fns || !a.rest ? (buf_printf(&err, "out of memory"), -1)
                               : parse_eval(argc, argv, &a, &o, render, &err);
    int piped = a.n_fns > 0 || o.kptfile;
    exec_caller *local = NULL;
    if (rc == 0 && piped)
        rc = build_pipeline(&a, o.kptfile, (size_t)o.max_message, &p, &err);
    if (rc == 0)
        rc = eval_output_choose(&out, o.input, o.out.output, &err);
    sandbox *sb = NULL;
    char fn_dir[PATH_MAX];
    sandbox_config sandboxing;
    if (rc == 0 && o.exec && serve_sandbox_flags_given(&o.sandbox) &&
        (serve_sandbox_parse("eval", &o.sandbox, exec_dir(o.exec, fn_dir, sizeof fn_dir),
                             &sandboxing) < 0 ||
         !(sb = serve_sandbox_start("eval", &sandboxing, &(serve_sandbox_secrets){0})))) {
        free(a.fns);
        free(a.rest);
        pipeline_free(&p);
        return 2;   /* said */
    }
    if (rc == 0 && o.exec)
        rc = (local = exec_caller_new(o.exec, (size_t)o.max_message, o.call.timeout_ns, sb, &err))
                 ? 0 : -1;
    if (rc != 0) {
        free(a.fns);
        free(a.rest);
        pipeline_free(&p);
        return rc > 0 ? 0 : usage_error(&err);
    }

    buf rl = {0}, final = {0}, why = {0};
    grpc_caller g = {.addr = o.addr, .call = o.call};
    g.call.max_message = (uint32_t)o.max_message;
    eval_run run = {.call = call_grpc, .call_ctx = &g, .unnamed = o.addr,
                    .truncate = o.out.truncate, .results_dir = o.out.results_dir,
                    .results = {.bound = results_text_bound(o.max_message)}};
    if (local) {
        run.call = exec_call;
        run.call_ctx = local;
        o.image = o.exec; /* the name its progress shows, as kpt shows it */
    }
    if (rl_input_build(o.input, (size_t)o.max_message, &rl, &why) < 0) {
        term_line(stderr, "runner-client %s: %s\n", eval_command,
                  why.data ? why.data : "out of memory");
        rc = 2;
    } else if (pipeline_single_config(&rl, o.fn_config, a.fn_args, (size_t)a.n_fn_args,
                                      (size_t)o.max_message, &err) < 0 ||
               eval_cli_out_prepare(&o.out, &err) < 0) {
        rc = usage_error(&err);
    } else if (piped) {
        rc = render ? render_tree(o.input, &p, rl.data, rl.len, (size_t)o.max_message, &run, &final)
                    : pipeline_run(&p, rl.data, rl.len, &run, a.stop_on_error, &final);
        if (rc != 2)
            rc = eval_run_finish(&run, &out, &rl, final.data, final.len) || rc ? 1 : 0;
    } else {
        rc = eval_run_single(&run, o.image, &rl, &out);
    }
    eval_run_free(&run);
    buf_free(&final);
    buf_free(&rl);
    buf_free(&why);
    free(a.fns);
    free(a.rest);
    pipeline_free(&p);
    exec_caller_free(local);
    sandbox_free(sb);
    return rc;
}

int cmd_eval(int argc, char **argv)
{
    return run_eval(argc, argv, 0);
}

int cmd_render(int argc, char **argv)
{
    eval_command = "render";
    return run_eval(argc, argv, 1);
}
