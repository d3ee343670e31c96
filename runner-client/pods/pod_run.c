/* pod_run: the commands that run functions in pods on a cluster.
 *
 *   runner-client eval --kube ... --image IMG [FILE|DIR|-]
 *       finds or creates the image's function pod (lib/kube/kube_pod_cache),
 *       evaluates through it (lib/runtime/ev_pod) and leaves the pod for the
 *       next call;
 *   runner-client pod create --image IMG ...
 *       finds or creates it, waits until it is Ready, prints its name and
 *       the address to dial.
 * Both run one event loop until the answer, as the runner will. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fdio.h"
#include "core/numparse.h"
#include "grpc/grpc_status.h"
#include "kube/kube_client.h"
#include "kube/kube_pod_cache.h"
#include "kube/kube_templates.h"
#include "kube/kubeconfig.h"
#include "kube/pod_id.h"
#include "kube/pod_template.h"
#include "oci/image_ref.h"
#include "runtime/ev_pod.h"
#include "runtime/health_check.h"
#include "cli/call_opts.h"
#include "commands.h"
#include "eval/eval_output.h"
#include "eval/eval_run.h"
#include "pkg/results_text.h"
#include "cli/flags.h"
#include "pkg/pipeline.h"
#include "cli/registry_flags.h"
#include "cli/verbosity.h"
#include "pkg/rl_input.h"
#include "core/term_text.h"

static const char eval_kube_usage[] =
    "Usage: runner-client eval --kube --image IMG [flags] [FILE|DIR|-] [-- KEY=VALUE...]\n"
    "Runs IMG in its function pod on a cluster, as Porch's function runner does:\n"
    "finds the pod (label fn.kpt.dev/image) or creates it and its Service from\n"
    "Porch's template (runner-client pod render), waits until it can be dialed\n"
    "(the kubelet's reason ends the wait at once when it cannot start), evaluates\n"
    "the ResourceList through it and leaves it for the next call.\n"
    "\n"
    "  --kubeconfig F               (default $KUBECONFIG, ~/.kube/config, in-cluster)\n"
    "  --context C                  kubeconfig context (default: the current one)\n"
    "  --namespace NS               (default " POD_DEFAULT_NAMESPACE ")\n"
    "  --dial service|pod           the Service once the pod is Ready and its endpoints\n"
    "                               list it (default, as Porch), or the pod IP as soon as\n"
    "                               its wrapper answers health SERVING, Ready or not\n"
    "                               (clusters without kube-proxy)\n"
    "  --wrapper-server-image W     init container image (default $WRAPPER_SERVER_IMAGE)\n"
    "  --timeout DUR                deadline of the call (default 5m; 0: none)\n"
    "  --ready-timeout DUR          wait for the pod at most DUR (default 60s, as Porch)\n"
    "  --max-message BYTES          largest answer accepted, and most input read\n"
    "                               (default 6291456)\n"
    "  -o, --output OUT, --results-dir DIR, --truncate-output[=false]   as for eval\n"
    "  --fn-config FILE, -- KEY=VALUE...   the functionConfig, as for eval\n"
    REGISTRY_FLAGS_HELP
    VERBOSITY_FLAGS_HELP
    "                               (3: each API request and the pod's states)\n"
    "The input, output and progress are eval's (see eval --help): the input is the\n"
    "current directory when none is given, a DIR is updated in place, FILE and -\n"
    "(stdin) print the answer; the pod's progress also goes to stderr.\n"
    "Exit status: 0 success, 1 failure (the pod or the call), 2 bad usage or input.\n";

static const char pod_create_usage[] =
    "Usage: runner-client pod create --image IMG [--kubeconfig F] [--context C]\n"
    "           [--namespace NS] [--dial service|pod] [--wrapper-server-image W]\n"
    "           [--ready-timeout DUR] [--docker-config F] [--insecure-registry H]...\n"
    "           [--platform OS/ARCH] [--verbosity N]\n"
    "Finds or creates IMG's function pod and its Service, waits until it can be\n"
    "dialed (--dial service: Ready and listed by the Service's endpoints; --dial\n"
    "pod: its wrapper answers health SERVING, Ready or not), and prints\n"
    "\"pod NAME\", \"uid UID\" and \"address HOST:PORT\" on stdout. Its log lines go\n"
    "to stderr: --verbosity (or --log-level) 2 normal, 3 details (each API request\n"
    "and the pod's states), 4 debugging, 0-10 (default 2).\n"
    "Exit status: 0, 1 failure, 2 bad usage.\n";

typedef struct kube_cli {
    const char *kubeconfig, *context, *ns, *dial, *wrapper, *image, *timeout, *ready_timeout;
    const char *max_text, *input, *fn_config;
    verbosity_flags verbosity;
    char **fn_args;          /* eval: the KEY=VALUE arguments after `--` */
    int n_fn_args;
    int kube;
    registry_flags reg;      /* the image's registry lookup */
    eval_cli_out out;        /* eval's -o, --results-dir, --truncate-output */
} kube_cli;

typedef struct pod_run {
    loop *l;
    kube_config cfg;
    kube_client *c;
    pod_cache *pc;
    kube_templates_opts templates;   /* the namespace's, when it has them */
    int rc;
} pod_run;

static int usage(const char *cmd, const char *msg)
{
    term_printf(stderr, "runner-client %s: %s\n", cmd, msg);
    return 2;
}

/* The registry flags and the bare --kube are taken out; the rest goes to
 * flags_parse. */
static int parse(const char *cmd, int argc, char **argv, kube_cli *k, int *help, buf *err)
{
    for (int i = 0; i < argc; i++)
        if (!strcmp(argv[i], "--")) {   /* the function's arguments, as eval's */
            k->fn_args = argv + i + 1;
            k->n_fn_args = argc - i - 1;
            argc = i;
        }
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int taken = rest ? registry_flags_take(&k->reg, argc, argv, rest, err) : -1, n = 0;
    if (!rest)
        return buf_fail(err, "out of memory");
    if (taken < 0) {
        free(rest);
        return -1;
    }
    for (int i = 0; i < taken; i++) {
        if (!strcmp(rest[i], "--kube"))
            k->kube = 1;
        else
            rest[n++] = rest[i];
    }
    flag_def defs[] = {{"--kubeconfig", &k->kubeconfig}, {"--context", &k->context},
                       {"--namespace", &k->ns}, {"--dial", &k->dial},
                       {"--wrapper-server-image", &k->wrapper}, {"--image", &k->image}, {"-i", &k->image},
                       {"--timeout", &k->timeout}, {"--ready-timeout", &k->ready_timeout},
                       {"--max-message", &k->max_text}, {"--fn-config", &k->fn_config},
                       EVAL_CLI_OUT_FLAGS(&k->out), VERBOSITY_FLAG_DEFS(&k->verbosity), {0}};
    int n_pos = 0;
    int is_eval = !strcmp(cmd, "eval");
    int rc = flags_parse(n, rest, defs, &k->input, is_eval ? 1 : 0, &n_pos, help, err);
    free(rest);
    if (rc < 0 || *help)
        return rc;
    if (!is_eval && (k->out.output || k->out.results_dir || k->fn_config || k->fn_args))
        return buf_fail(err, "-o, --results-dir, --fn-config and -- KEY=VALUE are for eval");
    if (k->fn_config && k->n_fn_args)
        return buf_fail(err, "give the functionConfig either with --fn-config or as KEY=VALUE "
                        "arguments after --, not both");
    if (!k->image || !*k->image)
        return buf_fail(err, "--image IMG is required");
    if (image_ref_check(k->image, err) < 0)
        return -1;
    if (strcmp(k->dial, "service") && strcmp(k->dial, "pod"))
        return buf_fail(err, "invalid --dial \"%s\" (service or pod)", k->dial);
    if (k->ns && !dns1123_label_valid(k->ns))
        return buf_fail(err, "invalid --namespace \"%s\" (a DNS-1123 label)", k->ns);
    if (!k->wrapper || !*k->wrapper)
        return buf_fail(err, "--wrapper-server-image or WRAPPER_SERVER_IMAGE is required (the "
                        "init container's image, as Porch's)");
    if (image_ref_check(k->wrapper, err) < 0)
        return -1;
    return verbosity_set(&k->verbosity, err);
}

static void run_close(pod_run *r)
{
    pod_cache_free(r->pc);
    kube_client_free(r->c);
    if (r->l)
        loop_free(r->l);
    kube_config_free(&r->cfg);
}

/* Configuration, exec plugin, loop, client, cache; 0 or -1 (printed). */
static int run_open(pod_run *r, const char *cmd, const kube_cli *k, int64_t ready_ns)
{
    buf err = {0};
    kube_config_opts o = {k->kubeconfig, k->context, k->ns};
    pod_cache_opts po = {.namespace = k->ns, .wrapper_image = k->wrapper,
                         .dial = strcmp(k->dial, "pod") ? POD_DIAL_SERVICE : POD_DIAL_POD,
                         .ready_timeout_ns = ready_ns, .registry = registry_flags_opts(&k->reg, 0),
                         .health = &health_check_hook};
    /* pods made as a serve of the namespace would make them (same template
     * version: a serve adopts them), without creating templates */
    r->templates = (kube_templates_opts){.namespace = k->ns ? k->ns : POD_DEFAULT_NAMESPACE,
                                         .wrapper_image = k->wrapper, .if_present = 1};
    po.templates = &r->templates;
    if (kube_config_load(&o, &r->cfg, &err) < 0 || kube_config_exec_credential(&r->cfg, &err) < 0 ||
        !(r->l = loop_new()) || !(r->c = kube_client_new(r->l, &r->cfg, &err)) ||
        !(r->pc = pod_cache_new(r->l, r->c, &po, &err))) {
        term_printf(stderr, "runner-client %s: %s\n", cmd, err.data ? err.data : "out of memory");
        buf_free(&err);
        return -1;
    }
    return 0;
}

/* After the answer: let the cache's last API calls (the Delete of a pod
 * that failed) finish, for at most this long. */
#define SETTLE_MAX_NS (5LL * 1000000000)

static int run_loop(pod_run *r, const char *cmd)
{
    if (loop_run(r->l) < 0) {
        term_printf(stderr, "runner-client %s: the event loop failed\n", cmd);
        return 1;
    }
    pod_cache_settle(r->pc, SETTLE_MAX_NS);
    return r->rc;
}

/* ---- pod create ------------------------------------------------------------- */

static void on_created(const pod_answer *a, void *ctx)
{
    pod_run *r = ctx;
    if (a->error) {
        term_printf(stderr, "runner-client pod create: %s\n", a->error);
        r->rc = 1;
    } else {
        /* the names come from the cluster: escaped, one per line */
        const char *pod[] = {"pod", a->pod}, *uid[] = {"uid", a->uid ? a->uid : ""},
                   *addr[] = {"address", a->name};
        term_row(stdout, pod, NULL, 2);
        term_row(stdout, uid, NULL, 2);
        term_row(stdout, addr, NULL, 2);
        term_line(stderr, "pod %s %s, serving after %.2f s%s\n", a->pod, a->created ? "created" : "found",
                (double)a->waited_ns / 1e9, a->ready ? "" : " (its wrapper answered SERVING; not Ready yet)");
        r->rc = fflush(stdout) == 0 ? 0 : 1;
    }
    loop_stop(r->l);
}

static int ready_timeout(const kube_cli *k, int64_t *ns, buf *err)
{
    gc_unary_opts o;
    if (call_opts_timeouts(k->ready_timeout, POD_READY_TIMEOUT_NS, &o, err) < 0)
        return -1;
    *ns = o.timeout_ns > 0 ? o.timeout_ns : POD_READY_TIMEOUT_NS;
    return 0;
}

static int pod_create(kube_cli *k, int argc, char **argv)
{
    int help = 0;
    int64_t ready_ns = 0;
    buf err = {0};
    if (parse("pod create", argc, argv, k, &help, &err) < 0 ||
        (!help && ready_timeout(k, &ready_ns, &err) < 0)) {
        int rc = usage("pod create", err.data ? err.data : "out of memory");
        buf_free(&err);
        return rc;
    }
    if (help) {
        fputs(pod_create_usage, stdout);
        return 0;
    }
    if (k->kube)
        return usage("pod create", "--kube is for eval (pod create always uses the cluster)");
    pod_run r = {.rc = 1};
    if (run_open(&r, "pod create", k, ready_ns) < 0) {
        run_close(&r);
        return 1;
    }
    int rc = pod_cache_get(r.pc, k->image, on_created, &r) ? run_loop(&r, "pod create") : 1;
    run_close(&r);
    return rc;
}

int cmd_pod_create(int argc, char **argv)
{
    kube_cli k = {.dial = "service", .wrapper = getenv("WRAPPER_SERVER_IMAGE")};
    int rc = pod_create(&k, argc, argv);
    registry_flags_free(&k.reg);
    return rc;
}

/* ---- eval --kube ----------------------------------------------------------------- */

/* eval_call_fn through a function pod: starts the call on the loop and runs
 * the loop until its answer. */
typedef struct kube_caller {
    pod_run *r;
    evaluator *ev;
    int64_t t0;
    fn_call_result *out;
    int oom;
} kube_caller;

static void on_evaluated(ev_call *call, const ev_result *res, void *ctx)
{
    kube_caller *k = ctx;
    const ev_pod_last *last = ev_pod_last_call(call->ev);
    k->oom = fn_call_result_set(k->out, res) < 0;
    if (last)
        term_line(stderr, "runner-client: pod %s (%s%s) at %s: pod %.2f s, call answered %.2f s after the start\n",
                last->pod, last->created ? "created" : "reused",
                last->ready ? "" : ", wrapper SERVING before the pod was Ready", last->addr,
                (double)last->pod_wait_ns / 1e9, (double)(loop_now_ns() - k->t0) / 1e9);
    k->r->rc = 0;
    loop_stop(k->r->l);
}

static int call_kube(void *ctx, const char *image, const char *tag, const char *rl, size_t len,
                     fn_call_result *out)
{
    kube_caller *k = ctx;
    *out = (fn_call_result){ 0 };
    k->out = out;
    k->oom = 0;
    k->r->rc = 1;
    ev_request req = {.image = image, .input = (const uint8_t *)rl, .input_len = len, .tag = tag};
    ev_call *c = ev_call_start(k->ev, &req, on_evaluated, k);
    if (!c)
        return -1;
    if (loop_run(k->r->l) < 0 || k->r->rc != 0) {
        fn_call_result_free(out);
        out->status = GRPC_INTERNAL;
        out->message = strdup("the event loop failed");
    }
    ev_call_free(c);
    if (k->oom || !out->message) {
        fn_call_result_free(out);
        return -1;
    }
    return 0;
}

static int eval_kube(kube_cli *k, int argc, char **argv)
{
    int help = 0;
    int64_t ready_ns;
    unsigned long long max_message = 0;
    gc_unary_opts call = {0};
    buf err = {0};
    eval_output out;
    if (parse("eval", argc, argv, k, &help, &err) < 0 ||
        (!help && (ready_timeout(k, &ready_ns, &err) < 0 ||
                   call_opts_timeouts(k->timeout, CALL_EVAL_TIMEOUT_NS, &call, &err) < 0 ||
                   ((parse_uint(k->max_text, 2147483647ULL, &max_message) < 0 || !max_message) &&
                    buf_printf(&err, "invalid --max-message \"%s\"", k->max_text) >= 0) ||
                   eval_output_choose(&out, k->input, k->out.output, &err) < 0 ||
                   eval_cli_out_prepare(&k->out, &err) < 0))) {
        int rc = usage("eval", err.data ? err.data : "out of memory");
        buf_free(&err);
        return rc;
    }
    if (help) {
        fputs(eval_kube_usage, stdout);
        return 0;
    }
    buf rl = {0};
    if (rl_input_build(k->input, (size_t)max_message, &rl, &err) < 0) {
        term_printf(stderr, "runner-client eval: %s\n", err.data ? err.data : "out of memory");
        buf_free(&err);
        buf_free(&rl);
        return 2;
    }
    if (pipeline_single_config(&rl, k->fn_config, k->fn_args, (size_t)k->n_fn_args,
                               (size_t)max_message, &err) < 0) {
        int rc = usage("eval", err.data ? err.data : "out of memory");
        buf_free(&err);
        buf_free(&rl);
        return rc;
    }
    pod_run r = {.rc = 1};
    evaluator *ev = NULL;
    int rc = 1;
    if (run_open(&r, "eval", k, ready_ns) == 0) {
        ev_pod_opts eo = {.connect_timeout_ns = call.connect_timeout_ns,
                          .call_timeout_ns = call.timeout_ns, .max_message = (uint32_t)max_message,
                          .max_retries = EV_POD_DEFAULT_RETRIES};
        kube_caller kc = {.r = &r, .t0 = loop_now_ns()};
        eval_run run = {.call = call_kube, .call_ctx = &kc, .unnamed = k->image,
                        .truncate = k->out.truncate, .results_dir = k->out.results_dir,
                        .results = {.bound = results_text_bound(max_message)}};
        if (!(ev = kc.ev = ev_pod_new(r.l, r.pc, &eo))) {
            term_printf(stderr, "runner-client eval: out of memory\n");
        } else {
            rc = eval_run_single(&run, k->image, &rl, &out);
            pod_cache_settle(r.pc, SETTLE_MAX_NS);
        }
        eval_run_free(&run);
    }
    if (ev)
        ev_destroy(ev);
    run_close(&r);
    buf_free(&rl);
    return rc;
}

int cmd_eval_kube(int argc, char **argv)
{
    kube_cli k = {.dial = "service", .wrapper = getenv("WRAPPER_SERVER_IMAGE"), .input = ".",
                  .max_text = "6291456", .out = EVAL_CLI_OUT_INIT};
    int rc = eval_kube(&k, argc, argv);
    registry_flags_free(&k.reg);
    return rc;
}
