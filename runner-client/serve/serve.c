/* serve: `runner-client serve`, the function runner: one gRPC endpoint
 * (evaluator.FunctionEvaluator, as Porch's function-runner serves it to
 * porch-server) that evaluates any function image by the runtime configured
 * for it, plus grpc.health.v1.Health.
 *
 * Same transport, limits and signal handling as the wrapper server
 * (lib/grpc/rpc_server, lib/runtime/proc_signals). The runtimes sit behind ev_multi:
 *   exec  FunctionConfig binaryExecutor entries (--function-config) map an
 *         image to a local binary, run like the wrapper server runs its
 *         entrypoint (lib/runtime/ev_exec, same verdict and messages);
 *   pod   every other image runs in its function pod on the cluster
 *         (serve_pod: one pod cache for the server's life), unless
 *         --disable-runtimes=pod; exec entries are tried first, as Porch's
 *         multi-evaluator tries them.
 * FunctionConfigs come from files (--function-config) or from the cluster
 * (cluster_configs: the pod namespace's objects, watched and applied live);
 * see serve_config_source for which. SIGHUP reloads the files off the loop (offload.h: large ones
 * take seconds to read, and calls and health checks go on meanwhile), then
 * swaps them in whole on the loop; a call in flight keeps the binary it was
 * started with, and a config that fails to load leaves the old one.
 *
 * Binaries stay beneath --functions (fnconfig_open_binary): checked at load
 * (a path leading out, a missing or non-executable file refuse the config,
 * as a malformed one is refused), and again at every call, where the binary
 * is opened beneath the directory descriptor taken at load and run through
 * that descriptor.
 *
 * --prespawn N keeps N processes of each binary called recently started
 * and waiting (fn_prespawn's pools, keyed by the file the lookup opened). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/duration.h"
#include "core/log.h"
#include "core/numparse.h"
#include "kube/kubeconfig.h"
#include "core/semver.h"
#include "krm/fnconfig.h"
#include "oci/image_tag.h"
#include "runtime/ev_exec.h"
#include "runtime/ev_multi.h"
#include "runtime/fn_job.h"
#include "runtime/fn_prespawn.h"
#include "runtime/fn_server.h"
#include "runtime/sandbox_host.h"
#include "commands.h"
#include "serve/cluster_configs.h"
#include "cli/flags.h"
#include "cli/verbosity.h"
#include "serve/offload.h"
#include "serve/porch_flags.h"
#include "serve/serve_pod.h"
#include "serve/serve_sandbox.h"
#include "core/term_text.h"

#define DEFAULT_PREFIX "ghcr.io/kptdev/krm-functions-catalog/"
/* Pre-started exec functions: a Go function blocked on stdin holds a few
 * MiB, so the total bounds that memory; a minute without a call is long
 * for a render's pipeline (its functions run back to back), and a
 * process spawned for nothing costs only what the call would have paid. */
#define SERVE_PRESPAWN_TOTAL 32
#define SERVE_PRESPAWN_IDLE_NS (60LL * 1000000000)
/* On exit, how long a reload still running is waited for (one blocked on
 * a read is left to end with the process). */
#define SERVE_RELOAD_EXIT_WAIT_NS (1000 * 1000000LL)

static const char serve_usage[] =
    "Usage: runner-client serve [flags]\n"
    "Serves evaluator.FunctionEvaluator/EvaluateFunction and grpc.health.v1.Health,\n"
    "running each requested image with the runtime configured for it.\n"
    "\n"
    "  --port N                     TCP port (default 9445)\n"
    "  --pod-evaluator-port N       also serve on this port (porch-server's pod evaluator\n"
    "                               port in Porch's newer layout, 9447; default: none)\n"
    "  --address IP                 the address to listen on, e.g. 127.0.0.1 or ::1\n"
    "                               (default: all addresses)\n"
    "  --function-config PATH       FunctionConfig YAML file or directory; SIGHUP reloads it\n"
    "  --function-config-source S   file or cluster: FunctionConfig objects of the pod\n"
    "                               namespace, watched and applied live, with their status\n"
    "                               written, as Porch (default: file with --function-config,\n"
    "                               else cluster when running in a pod, else none)\n"
    "  --functions DIR              where binaryExecutor paths lead; none may lead out of it\n"
    "                               (default ./functions)\n"
    "  --default-image-prefix P     prefix of images named without a registry\n"
    "                               (default " DEFAULT_PREFIX ")\n"
    "  --disable-runtimes LIST      comma-separated: exec, pod\n"
    "  --max-request-body-size N    largest message accepted or sent (default 6291456)\n"
    "  --max-concurrent-streams N   concurrent calls per connection (default 1000)\n"
    "  --idle-timeout DUR           close idle connections after this; 0 never (default 5m)\n"
    "  --shutdown-grace DUR         SIGTERM: time in-flight calls get (default 10s)\n"
    FN_SERVER_LIMIT_FLAGS_HELP
    "  --prespawn N                 processes kept started, waiting for a call, of each\n"
    "                               exec binary called in the last --prespawn-idle,\n"
    "                               0-64; 0 starts each on its call (default 1)\n"
    "  --prespawn-total N           processes waiting in all, 1-256 (default 32)\n"
    "  --prespawn-idle DUR          a binary not called this long loses its waiting\n"
    "                               processes; 0 never (default 1m)\n"
    SERVE_SANDBOX_FLAGS_HELP
    "  --sandbox-keep=true|false    keep a sandbox per function and reuse it for its calls,\n"
    "                               reset between them (a host per call in flight, ended\n"
    "                               after --prespawn-idle unused); false: a fresh sandbox\n"
    "                               per call (default true)\n"
    SERVE_POD_FLAGS_HELP
    PORCH_FLAGS_HELP
    VERBOSITY_FLAGS_HELP;

typedef struct serve_opts {
    const char *port, *also_port, *address, *config, *config_source, *functions, *prefix, *disable, *max_message, *max_streams;
    const char *idle, *grace;
    verbosity_flags verbosity;
    const char *max_functions, *max_waiting, *max_pending, *max_pending_conn, *stall;
    const char *prespawn, *prespawn_total, *prespawn_idle;
    int warm_up;
    int sandbox_keep;                 /* --sandbox-keep: 1, =false 0, not given -1 (kept) */
    serve_pod_flags pod;
    const char *pod_ns, *pod_ready;   /* Porch's --pod-namespace, --pod-ready-timeout */
    serve_sandbox_flags sandbox;
    porch_flags porch;                /* Porch's flags refused until served */
} serve_opts;

typedef struct runner {
    fnconfig cfg;
    int functions_fd;           /* --functions as opened with cfg; -1: no binaries */
    const char *config_path;    /* NULL: no FunctionConfigs */
    const char *functions_dir;
    const char *prefix;
    rpc_server_config server;
    int exec_enabled, pod_disabled;
    const serve_pod_flags *pod_flags;
    serve_pod *pods;            /* the pod runtime, while serving */
    int warm_up;                /* --warm-up-pod-cache */
    size_t prespawn, prespawn_total;   /* the exec runtime's (fn_prespawn.h) */
    sandbox *sandbox;           /* the exec runtime's functions' */
    int64_t prespawn_idle_ns;
    loop *loop;                 /* while serving */
    offload *reloading;         /* a SIGHUP's reload running, or NULL */
    struct reload_job *reload;  /* its work */
    int reload_again;           /* SIGHUP came during it: reload once more after */
    int from_cluster;           /* FunctionConfigs from the cluster, not files */
    const char *cluster_ns;     /* the pod namespace, where they are read */
    cluster_configs *cluster;   /* their watch, while serving */
    int cluster_listed;         /* their first set applied (the warm-up waits for it) */
    kube_config kube_cfg;       /* the cluster's, when the pod runtime is off */
    kube_client *kube;          /* the client made with it, or NULL */
} runner;

/* What loading FunctionConfigs reads: fixed while serving, and copied for a
 * reload's thread, which touches nothing else. */
typedef struct load_spec {
    const char *config_path;    /* NULL: no FunctionConfigs */
    const char *functions_dir;
    int exec_enabled;
} load_spec;

static load_spec runner_load_spec(const runner *r)
{
    return (load_spec){r->config_path, r->functions_dir, r->exec_enabled};
}

/* ---- FunctionConfigs ------------------------------------------------------ */

/* An image's podExecutor.timeToLive, from the FunctionConfigs loaded now
 * (SIGHUP may have changed them); 0: --pod-ttl applies. */
static int64_t runner_pod_ttl(const char *image, void *ctx)
{
    const runner *r = ctx;
    const fnconfig_entry *e = fnconfig_pod_params(&r->cfg, image);
    return e ? e->pod.ttl_ns : 0;
}

/* An image's podExecutor maxParallelExecutions and preferredMaxQueueLength,
 * where set (0 in a FunctionConfig: the flags', as Porch). */
static void runner_pod_limits(const char *image, void *ctx, int *max_pods, int *waitlist)
{
    const runner *r = ctx;
    const fnconfig_entry *e = fnconfig_pod_params(&r->cfg, image);
    if (e && e->pod.max_parallel > 0)
        *max_pods = e->pod.max_parallel;
    if (e && e->pod.queue_len > 0)
        *waitlist = e->pod.queue_len;
}

/* An image's podExecutor.templateOverrides (JSON), or NULL. */
static const char *runner_pod_overrides(const char *image, void *ctx)
{
    const runner *r = ctx;
    const fnconfig_entry *e = fnconfig_pod_params(&r->cfg, image);
    return e ? e->pod.overrides : NULL;
}

static void runner_warn_unsupported(const runner *r, const fnconfig *c)
{
    for (size_t i = 0; i < c->n; i++) {
        const fnconfig_entry *e = &c->entries[i];
        if (e->go.present)
            log_warn("%s: FunctionConfig \"%s\": goExecutor is not supported by this runtime; "
                     "ignored", e->file, e->name);
        if (e->pod.present && e->pod.max_parallel > SERVE_POD_MAX_PODS)
            log_warn("%s: FunctionConfig \"%s\": podExecutor.maxParallelExecutions %d: at most %d "
                     "pods per function are started", e->file, e->name, e->pod.max_parallel,
                     SERVE_POD_MAX_PODS);
        if (e->pod.present && !e->binary.present && r->pod_disabled)
            log_warn("%s: FunctionConfig \"%s\": podExecutor needs the pod runtime, which "
                     "--disable-runtimes turns off", e->file, e->name);
    }
}

static int has_binaries(const fnconfig *c)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->entries[i].binary.present)
            return 1;
    return 0;
}

/* With the exec runtime on, every binary must be there, runnable and
 * beneath --functions now: a user learns of a bad path when the config is
 * (re)loaded, not from each call. The directory is opened here, once per
 * load, and calls resolve beneath that descriptor. */
static int check_binaries(const load_spec *s, const fnconfig *c, int *functions_fd, buf *err)
{
    *functions_fd = -1;
    if (!s->exec_enabled || !has_binaries(c))
        return 0;
    /* binaries run as /proc/self/fd/N (ev_exec): without /proc every call
     * would fail with a misleading "no such file" */
    if (access("/proc/self/fd", X_OK) < 0) {
        buf_printf(err, "the exec runtime runs binaries through /proc/self/fd: %s (is /proc "
                   "mounted?)", strerror(errno));
        return -1;
    }
    *functions_fd = fnconfig_open_functions_dir(s->functions_dir, err);
    if (*functions_fd < 0)
        return -1;
    if (fnconfig_check_binaries(c, *functions_fd, s->functions_dir, err) < 0) {
        close(*functions_fd);
        *functions_fd = -1;
        return -1;
    }
    return 0;
}

/* A runner with nothing to run answers every call NOT_FOUND: say so at
 * load, naming what was read, rather than only in each answer. */
static void runner_warn_empty(const runner *r, const fnconfig *c)
{
    struct stat st;
    if (!r->exec_enabled || !r->pod_disabled)
        return;   /* no runtime ("no function runtime is enabled"), or pods run the rest */
    if (r->from_cluster) {
        return;   /* the cluster's objects are logged as they are applied */
    } else if (!r->config_path) {
        log_warn("no --function-config given: no image is configured, every call will be "
                 "answered NOT_FOUND (give a FunctionConfig file or directory)");
    } else if (!c->n) {
        int dir = stat(r->config_path, &st) == 0 && S_ISDIR(st.st_mode);
        log_warn("%s: no FunctionConfig found (%s); every call will be answered NOT_FOUND",
                 r->config_path,
                 dir ? "read the *.yaml and *.yml files of this directory, not its subdirectories, "
                       "for kind FunctionConfig, apiVersion config.porch.kpt.dev/v1alpha1"
                     : "read this file for kind FunctionConfig, apiVersion "
                       "config.porch.kpt.dev/v1alpha1");
    } else if (!has_binaries(c)) {
        log_warn("%s: %zu FunctionConfigs, none with a binaryExecutor: the exec runtime has "
                 "nothing to run", r->config_path, c->n);
    }
}

/* Reads and checks the FunctionConfigs: no logging and nothing but s and
 * the outputs touched, so a reload's thread may run it. */
static int load_configs(const load_spec *s, fnconfig *out, int *functions_fd, buf *err)
{
    *out = (fnconfig){0};
    *functions_fd = -1;
    if (s->config_path && fnconfig_load(s->config_path, s->functions_dir, out, err) < 0)
        return -1;
    if (check_binaries(s, out, functions_fd, err) < 0) {
        fnconfig_free(out);
        return -1;
    }
    return 0;
}

static int runner_load(runner *r, fnconfig *out, int *functions_fd, buf *err)
{
    load_spec s = runner_load_spec(r);
    if (load_configs(&s, out, functions_fd, err) < 0)
        return -1;
    runner_warn_unsupported(r, out);
    runner_warn_empty(r, out);
    return 0;
}

/* ---- SIGHUP: reloading off the loop ------------------------------------------ */

/* One reload: what its thread reads and what it hands back. */
typedef struct reload_job {
    runner *r;                  /* the loop's alone: the thread reads only spec */
    load_spec spec;
    fnconfig cfg;
    int functions_fd;
    buf err;
    int rc;
    int64_t started_ns;
} reload_job;

static void reload_job_free(reload_job *job)
{
    if (!job)
        return;
    fnconfig_free(&job->cfg);
    if (job->functions_fd >= 0)
        close(job->functions_fd);
    buf_free(&job->err);
    free(job);
}

static void reload_work(void *ctx)
{
    reload_job *job = ctx;
    job->rc = load_configs(&job->spec, &job->cfg, &job->functions_fd, &job->err);
}

static void runner_reload(void *ctx);

static void runner_keep_warm(const runner *r);

/* On the loop: the new FunctionConfigs replace the old ones in one step,
 * so a call sees either, whole; a failed load leaves the old ones. */
static void reload_done(offload *o, void *ctx)
{
    (void)o;
    reload_job *job = ctx;
    runner *r = job->r;
    double secs = (double)(loop_now_ns() - job->started_ns) / 1e9;
    r->reloading = NULL;
    r->reload = NULL;
    if (job->rc < 0) {
        log_error("SIGHUP: keeping the previous FunctionConfigs: %s", job->err.data);
    } else {
        runner_warn_unsupported(r, &job->cfg);
        runner_warn_empty(r, &job->cfg);
        fnconfig old = r->cfg;
        int old_fd = r->functions_fd;
        r->cfg = job->cfg;
        r->functions_fd = job->functions_fd;
        job->cfg = old;
        job->functions_fd = old_fd;   /* freed with the job */
        log_info("SIGHUP: loaded %zu FunctionConfigs from %s in %.2f s", r->cfg.n,
                 r->config_path, secs);
        if (r->pods)
            runner_keep_warm(r);
    }
    reload_job_free(job);
    if (r->reload_again) {
        r->reload_again = 0;
        runner_reload(r);
    }
}

static void runner_reload(void *ctx)
{
    runner *r = ctx;
    if (!r->config_path) {
        log_info("SIGHUP: no --function-config to reload%s", r->from_cluster
                 ? " (FunctionConfigs come from the cluster, applied as they change)" : "");
        return;
    }
    if (r->reloading) {
        r->reload_again = 1;
        log_info("SIGHUP: a reload is running; %s is read again once it ends", r->config_path);
        return;
    }
    reload_job *job = calloc(1, sizeof *job);
    buf err = {0};
    if (job) {
        *job = (reload_job){.r = r, .spec = runner_load_spec(r), .functions_fd = -1,
                            .started_ns = loop_now_ns()};
        r->reload = job;
        r->reloading = offload_start(r->loop, reload_work, reload_done, job, &err);
    }
    if (!r->reloading) {
        log_error("SIGHUP: keeping the previous FunctionConfigs: cannot start reading them: %s",
                  job ? err.data : "out of memory");
        free(job);
        r->reload = NULL;
    }
    buf_free(&err);
}

/* On exit: a reload still running is waited for a moment, its result
 * dropped. */
static void runner_reload_abandon(runner *r)
{
    if (!r->reloading)
        return;
    if (offload_abandon(r->reloading, SERVE_RELOAD_EXIT_WAIT_NS) == 0) {
        log_info("SIGHUP's reload of %s ended at exit; not applied", r->config_path);
        reload_job_free(r->reload);
    } else
        log_warn("SIGHUP's reload of %s still runs at exit; abandoned", r->config_path);
    r->reloading = NULL;
    r->reload = NULL;
}

/* Appends one configured image name to out, as a user would write it: the
 * entry's first prefix ("" = --default-image-prefix) before spec.image, or
 * the bare name when any repository is accepted (no prefixes). */
/* PREFIX/IMAGE:TAG, a '/' put between when the prefix has none at its end. */
static void join_image(const char *prefix, const char *image, const char *tag, buf *out)
{
    size_t n = strlen(prefix);
    buf_printf(out, "%s%s%s:%s", prefix, n && prefix[n - 1] != '/' ? "/" : "", image, tag);
}

static void append_image_name(const runner *r, const fnconfig_entry *e, const char *tag, buf *out)
{
    join_image(!e->n_prefixes ? "" : e->prefixes[0][0] ? e->prefixes[0] : r->prefix, e->image, tag,
               out);
}

/* The image a FunctionConfig's pods run: its first prefix (or the default
 * one), the short name and its first podExecutor tag; NULL (nothing
 * appended) without tags or when the exec runtime serves it. */
static int runner_pod_image(const runner *r, const fnconfig_entry *e, buf *image)
{
    if (!e->pod.present || !e->pod.n_tags)
        return -1;
    join_image(e->n_prefixes && e->prefixes[0][0] ? e->prefixes[0] : r->prefix, e->image,
               e->pod.tags[0], image);
    if (!image->data) {
        log_warn("warm-up: out of memory");
        return -1;
    }
    if (r->exec_enabled && fnconfig_match_binary(&r->cfg, image->data, r->prefix, NULL)) {
        log_v(2, "warm-up: %s runs from its binary (exec runtime): no pod", image->data);
        return -1;
    }
    return 0;
}

/* Warm pods: each FunctionConfig's minimum (its fn.kpt.dev/min-ready-pods,
 * else --min-ready-pods), at start and after each SIGHUP. */
static void runner_keep_warm(const runner *r)
{
    pod_warm *want = calloc(r->cfg.n ? r->cfg.n : 1, sizeof *want);
    buf *names = calloc(r->cfg.n ? r->cfg.n : 1, sizeof *names);
    int n = 0;
    for (size_t i = 0; want && names && i < r->cfg.n; i++)
        if (runner_pod_image(r, &r->cfg.entries[i], &names[n]) == 0) {
            want[n].image = names[n].data;
            want[n].min = r->cfg.entries[i].pod.min_ready;
            n++;
        }
    if (!want || !names)
        log_warn("warm pods: out of memory");
    else
        serve_pod_keep_warm(r->pods, want, n);
    for (int i = 0; names && i < n; i++)
        buf_free(&names[i]);
    free(names);
    free(want);
}

/* Porch's --warm-up-pod-cache: at start, one pod for each FunctionConfig with
 * podExecutor.tags; images the exec runtime serves need none, and those
 * kept warm have theirs already (runner_keep_warm). */
static void runner_warm_up(const runner *r)
{
    for (size_t i = 0; i < r->cfg.n; i++) {
        buf image = {0};
        if (runner_pod_image(r, &r->cfg.entries[i], &image) == 0 &&
            !serve_pod_min_ready(r->pods, r->cfg.entries[i].pod.min_ready))
            serve_pod_warm(r->pods, image.data);
        buf_free(&image);
    }
}

/* What NOT_FOUND adds to `function "IMG" not found`: the images the exec
 * runtime serves, at most SERVE_LIST_MAX of them, then "and N more". */
#define SERVE_LIST_MAX 5
static void runner_describe_configured(void *ctx, const char *image, const char *tag, buf *why)
{
    const runner *r = ctx;
    (void)image;
    (void)tag;
    size_t total = 0;
    for (size_t i = 0; i < r->cfg.n; i++)
        if (r->cfg.entries[i].binary.present)
            total += r->cfg.entries[i].binary.n_tags;
    if (!total) {
        buf_append_str(why, r->config_path ? "; no image is configured (no FunctionConfig in "
                                             "--function-config has a binaryExecutor)"
                                           : "; no image is configured (no --function-config)");
        return;
    }
    buf_append_str(why, "; configured: ");
    size_t shown = 0;
    for (size_t i = 0; i < r->cfg.n && shown < SERVE_LIST_MAX; i++) {
        const fnconfig_entry *e = &r->cfg.entries[i];
        for (size_t t = 0; e->binary.present && t < e->binary.n_tags && shown < SERVE_LIST_MAX; t++) {
            if (shown++)
                buf_append_str(why, ", ");
            append_image_name(r, e, e->binary.tags[t], why);
        }
    }
    if (total > shown)
        buf_printf(why, " and %zu more", total - shown);
}

/* The FunctionConfig for image and a Tag, as Porch's executable evaluator
 * picks it: the highest binaryExecutor tag satisfying the Tag as a semver
 * constraint; NULL (not found: the pod runtime may have it) when none does
 * or the Tag is no constraint ("latest"), with the reason in why. */
static const fnconfig_entry *runner_match_tag(runner *r, const char *image, const char *tag,
                                              buf *why)
{
    buf name = {0}, err = {0};
    const fnconfig_entry *e = NULL;
    semver_constraint *want = semver_constraint_parse(tag, &err);
    if (!want) {
        buf_printf(why, "; Tag: %s", err.data ? err.data : "out of memory");
    } else if (fnconfig_resolve_image(r->prefix, image, &name) == 0 && name.data) {
        name.data[image_tag_name_len(name.data)] = '\0';
        const char *picked = NULL;
        e = fnconfig_match_binary_version(&r->cfg, name.data, r->prefix, want, &picked);
        if (e)
            log_info("Tag \"%s\" picks %s:%s", tag, name.data, picked);
        else
            buf_printf(why, "; no binaryExecutor tag of %s satisfies Tag \"%s\"", name.data, tag);
    }
    semver_constraint_free(want);
    buf_free(&name);
    buf_free(&err);
    return e;
}

/* ev_exec's lookup: the binary a FunctionConfig gives this image (and Tag),
 * opened beneath --functions (inheritable: see ev_exec_lookup_fn). */
static int runner_lookup(void *ctx, const char *image, const char *tag, buf *path, int *fd,
                         const spawn_child_setup **setup, buf *why)
{
    runner *r = ctx;
    buf resolved = {0};
    const fnconfig_entry *e = NULL;
    if (tag && *tag)
        e = runner_match_tag(r, image, tag, why);
    else if (fnconfig_resolve_image(r->prefix, image, &resolved) == 0 && resolved.data)
        e = fnconfig_match_binary(&r->cfg, resolved.data, r->prefix, NULL);
    buf_free(&resolved);
    if (!e)
        return 0;   /* ev_exec adds runner_describe_configured if it answers NOT_FOUND */
    if (buf_append_str(path, e->binary.path) < 0) {
        buf_append_str(why, "out of memory");
        return -1;
    }
    if (r->sandbox && !(*setup = serve_sandbox_setup_for(r->sandbox, &e->sandbox)) &&
        sandbox_child_setup(r->sandbox)) {
        buf_printf(why, "sandbox: cannot set up the settings of FunctionConfig \"%s\"", e->name);
        return -1;
    }
    *fd = r->functions_fd < 0 ? -1
        : fnconfig_open_binary(r->functions_fd, r->functions_dir, e, 1, why);
    if (*fd >= 0)
        return 1;
    if (r->functions_fd < 0)   /* not checked at load: cannot happen with exec on */
        buf_append_str(why, "--functions was not opened");
    buf_printf(why, " (%s: document %d, FunctionConfig \"%s\", spec.binaryExecutor.path)",
               e->file, e->doc, e->name);
    return -1;
}

/* ---- FunctionConfigs from the cluster ------------------------------------------ */

static int bad_flag(const char *flag, const char *value, const char *want);

/* cluster_configs' apply: the new set replaces the old one in one step, as
 * a SIGHUP's reload does. */
static void runner_apply_cluster(fnconfig *cfg, int functions_fd, void *ctx)
{
    runner *r = ctx;
    runner_warn_unsupported(r, cfg);
    fnconfig old = r->cfg;
    int old_fd = r->functions_fd;
    r->cfg = *cfg;
    r->functions_fd = functions_fd;
    fnconfig_free(&old);
    if (old_fd >= 0)
        close(old_fd);
    if (r->pods)
        runner_keep_warm(r);
    /* --warm-up-pod-cache: as Porch, on the FunctionConfigs the first list
     * gives (Porch warms up once its cache has synced) */
    if (r->pods && r->warm_up && !r->cluster_listed)
        runner_warm_up(r);
    r->cluster_listed = 1;
}

/* The source, as Porch decides it and beyond: Porch's function runner
 * always reads the cluster; we read files when given them, the cluster
 * when running in a pod (a service account's token, as Porch's Deployment
 * has), and --function-config-source says which otherwise. */
static int serve_config_source(runner *r, const serve_opts *o)
{
    const char *src = o->config_source;
    if (src && strcmp(src, "file") && strcmp(src, "cluster"))
        return bad_flag("--function-config-source", src, "file or cluster");
    if (src && !strcmp(src, "cluster") && o->config) {
        term_printf(stderr, "runner-client serve: --function-config %s and "
                    "--function-config-source cluster: give one source of FunctionConfigs\n",
                    o->config);
        return -1;
    }
    int in_pod = getenv("KUBERNETES_SERVICE_HOST") && !o->pod.kubeconfig &&
                 access("/var/run/secrets/kubernetes.io/serviceaccount/token", R_OK) == 0;
    r->from_cluster = src ? !strcmp(src, "cluster") : !o->config && in_pod;
    r->cluster_ns = o->pod.ns;
    return 0;
}

/* The cluster's client: the pod runtime's, or one of its own (an exec-only
 * runner, as Porch's newer layout has it). */
static kube_client *runner_kube(runner *r, loop *l, buf *err)
{
    if (r->pods)
        return serve_pod_client(r->pods);
    kube_config_opts ko = {r->pod_flags->kubeconfig, r->pod_flags->context, r->cluster_ns};
    buf why = {0};
    if (kube_config_load(&ko, &r->kube_cfg, &why) < 0 ||
        kube_config_exec_credential(&r->kube_cfg, &why) < 0) {
        buf_printf(err, "FunctionConfigs from the cluster need a Kubernetes cluster: %s; give "
                   "--kubeconfig, or read them from files with --function-config",
                   why.data ? why.data : "out of memory");
        buf_free(&why);
        return NULL;
    }
    return r->kube = kube_client_new(l, &r->kube_cfg, err);
}

static int runner_watch_cluster(runner *r, loop *l, buf *err)
{
    kube_client *c = runner_kube(r, l, err);
    cluster_configs_opts co = {.namespace = r->cluster_ns, .functions_dir = r->functions_dir,
                               .exec_enabled = r->exec_enabled, .apply = runner_apply_cluster,
                               .ctx = r};
    if (!c || !(r->cluster = cluster_configs_start(c, &co, err)))
        return -1;
    log_info("FunctionConfigs: the objects of namespace %s (watched)", r->cluster_ns);
    return 0;
}

/* ---- flags ---------------------------------------------------------------- */

static int bad_flag(const char *flag, const char *value, const char *want)
{
    term_line(stderr, "runner-client serve: invalid value \"%s\" for %s: want %s\n", value, flag,
            want);
    return -1;
}

static int parse_runtimes(runner *r, const char *list)
{
    r->exec_enabled = 1;
    if (!list)
        return 0;
    char *copy = strdup(list);
    if (!copy)
        return -1;
    int rc = 0;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (!strcmp(tok, "exec"))
            r->exec_enabled = 0;
        else if (!strcmp(tok, "pod"))
            r->pod_disabled = 1;
        else
            rc = bad_flag("--disable-runtimes", tok, "exec or pod");
    }
    free(copy);
    return rc;
}

static int parse_duration_flag(const char *flag, const char *text, int64_t *out)
{
    if (text && duration_parse(text, out) < 0)
        return bad_flag(flag, text, "a duration such as 10s or 5m");
    return 0;
}

static int parse_uint_flag(const char *flag, const char *text, unsigned long long min,
                           unsigned long long max, unsigned long long *out)
{
    if (text && (parse_uint(text, max, out) < 0 || *out < min)) {
        char want[64];
        snprintf(want, sizeof want, "a whole number %llu-%llu", min, max);
        return bad_flag(flag, text, want);
    }
    return 0;
}

static int serve_configure(runner *r, const serve_opts *o)
{
    unsigned long long port = 9445, also_port = 0, max_msg = 6291456, streams = 1000;
    unsigned long long functions = 0, waiting = RPC_LIMIT_DEFAULT, pending = 0, pending_conn = 0;
    unsigned long long prespawn = 1, prespawn_total = SERVE_PRESPAWN_TOTAL;
    int64_t idle = 5LL * 60 * 1000000000, grace = 10LL * 1000000000, stall = 0;
    int64_t prespawn_idle = SERVE_PRESPAWN_IDLE_NS;
    if (parse_uint_flag("--port", o->port, 0, 65535, &port) < 0 ||
        parse_uint_flag("--pod-evaluator-port", o->also_port, 0, 65535, &also_port) < 0 ||
        parse_uint_flag("--max-request-body-size", o->max_message, 1, 2147483647ULL, &max_msg) < 0 ||
        parse_uint_flag("--max-concurrent-streams", o->max_streams, 1, 100000, &streams) < 0 ||
        parse_uint_flag("--max-concurrent-functions", o->max_functions, 1, 100000, &functions) < 0 ||
        parse_uint_flag("--max-waiting-calls", o->max_waiting, 0, 1000000, &waiting) < 0 ||
        parse_uint_flag("--max-pending-request-bytes", o->max_pending, 1, SIZE_MAX, &pending) < 0 ||
        parse_uint_flag("--max-pending-request-bytes-per-connection", o->max_pending_conn, 1,
                        SIZE_MAX, &pending_conn) < 0 ||
        parse_duration_flag("--idle-timeout", o->idle, &idle) < 0 ||
        parse_duration_flag("--shutdown-grace", o->grace, &grace) < 0 ||
        parse_duration_flag("--stalled-send-timeout", o->stall, &stall) < 0 ||
        parse_uint_flag("--prespawn", o->prespawn, 0, FN_PRESPAWN_MAX, &prespawn) < 0 ||
        parse_uint_flag("--prespawn-total", o->prespawn_total, 1, FN_PRESPAWN_TOTAL_MAX,
                        &prespawn_total) < 0 ||
        parse_duration_flag("--prespawn-idle", o->prespawn_idle, &prespawn_idle) < 0 ||
        parse_runtimes(r, o->disable) < 0)
        return -1;
    if (also_port && also_port == port) {
        term_line(stderr, "runner-client serve: --pod-evaluator-port %llu is --port's: give another "
                  "port, or leave it out\n", also_port);
        return -1;
    }
    buf perr = {0};
    if (verbosity_set(&o->verbosity, &perr) < 0 ||
        (o->address && rpc_server_address_check(o->address, &perr) < 0)) {
        term_line(stderr, "runner-client serve: %s\n", perr.data ? perr.data : "out of memory");
        buf_free(&perr);
        return -1;
    }
    if (serve_pod_check(&o->pod, &perr) < 0) {
        term_line(stderr, "runner-client serve: %s\n", perr.data ? perr.data : "out of memory");
        buf_free(&perr);
        return -1;
    }
    r->pod_flags = &o->pod;
    r->warm_up = o->warm_up;
    r->config_path = o->config;
    if (serve_config_source(r, o) < 0)
        return -1;
    r->functions_dir = o->functions ? o->functions : "./functions";
    r->prefix = o->prefix ? o->prefix : DEFAULT_PREFIX;
    r->prespawn = (size_t)prespawn;
    r->prespawn_total = (size_t)prespawn_total;
    r->prespawn_idle_ns = prespawn_idle;
    r->server = (rpc_server_config){
        .port = (int)port, .also_port = (int)also_port, .address = o->address, .max_message = (uint32_t)max_msg, .max_streams = (uint32_t)streams,
        .idle_timeout_ns = idle, .shutdown_grace_ns = grace, .send_stall_ns = stall,
        .max_functions = (size_t)functions, .max_waiting = (size_t)waiting,
        .max_pending_bytes = (size_t)pending, .max_pending_conn_bytes = (size_t)pending_conn,
    };
    buf why = {0};
    if (rpc_server_config_fill(&r->server, &why) < 0) {
        term_line(stderr, "runner-client serve: %s\n", why.data);
        buf_free(&why);
        return -1;
    }
    return 0;
}

/* ---- the server ----------------------------------------------------------- */

/* ev_exec's explain_failure: the sandbox limit a failed function reached. */
static int runner_explain_failure(void *ctx, const fn_job *job, buf *out)
{
    const runner *r = ctx;
    const sandbox *sb = sandbox_of_setup(r->sandbox, job->spec.child_setup);
    return sandbox_explain_exit(sb ? sb : r->sandbox, job->wait_status, job->cpu_ns, job->err.data,
                                job->err.len, out);
}

static evaluator *serve_runtimes(runner *r, loop *l)
{
    evaluator *evs[2];
    size_t n = 0;
    if (r->exec_enabled) {
        ev_exec_config exec = {
            .loop = l, .max_stdout = r->server.max_message, .max_stderr = EV_EXEC_MAX_STDERR,
            .kill_grace_ns = rpc_server_kill_grace_ns(), .lookup = runner_lookup, .lookup_ctx = r,
            .describe_missing = runner_describe_configured,
            .explain_failure = runner_explain_failure, .explain_ctx = r,
        };
        if (!(evs[n++] = ev_exec_new(&exec)))
            return NULL;
        fn_prespawn_configure_binaries(l, r->prespawn, r->prespawn_total, r->prespawn_idle_ns);
    }
    if (r->pods && !(evs[n] = serve_pod_evaluator(r->pods))) {
        for (size_t i = 0; i < n; i++)
            ev_destroy(evs[i]);
        return NULL;
    }
    n += r->pods != NULL;
    evaluator *multi = ev_multi_new(l, evs, n);
    for (size_t i = 0; !multi && i < n; i++)
        ev_destroy(evs[i]);
    return multi;
}

/* The server port's other GETs: the pod runtime's and the sandbox's views. */
static int serve_http_get(void *ctx, const char *path, const char *query, http1_response *resp)
{
    const runner *r = ctx;
    return serve_sandbox_http_get(r->sandbox, path, query, resp) ||
           serve_pod_http_get(r->pods, path, query, resp);
}

static int serve_run(runner *r)
{
    loop *l = loop_new();
    buf err = {0};
    if (l && !r->pod_disabled &&
        !(r->pods = serve_pod_open(l, r->pod_flags, r->server.max_message, &err))) {
        term_line(stderr, "runner-client serve: %s\n", err.data ? err.data : "out of memory");
        buf_free(&err);
        loop_free(l);
        return 2;
    }
    evaluator *ev = l ? serve_runtimes(r, l) : NULL;
    r->server.http_get = serve_http_get;   /* GET /debug/pods, /debug/sandbox */
    r->server.http_ctx = r;
    if (!ev) {
        term_line(stderr, "runner-client serve: out of memory\n");
        serve_pod_close(r->pods);
        loop_free(l);
        return 1;
    }
    if (r->pods)
        log_info("pod runtime: function pods in namespace %s, dialed by %s", r->pod_flags->ns,
                 strcmp(r->pod_flags->dial, "pod") ? "their Service" : "pod IP");
    if (r->pods)
        runner_keep_warm(r);
    if (r->pods && r->warm_up)
        runner_warm_up(r);
    if (r->from_cluster && runner_watch_cluster(r, l, &err) < 0) {
        term_printf(stderr, "runner-client serve: %s\n", err.data ? err.data : "out of memory");
        buf_free(&err);
        ev_destroy(ev);
        serve_pod_close(r->pods);
        kube_client_free(r->kube);
        kube_config_free(&r->kube_cfg);
        loop_free(l);
        return 2;
    }
    log_info("function runner: %zu FunctionConfigs%s%s", r->cfg.n,
             r->config_path ? " from " : "", r->config_path ? r->config_path : "");
    r->loop = l;
    int rc = fn_server_run(l, ev, r->server, runner_reload, r, "runner-client serve");
    runner_reload_abandon(r);
    cluster_configs_stop(r->cluster);
    serve_pod_close(r->pods);   /* fn_server_run destroyed the evaluators */
    kube_client_free(r->kube);
    kube_config_free(&r->kube_cfg);
    loop_free(l);
    return rc;
}

/* cmd_serve past the flag tables: reg holds the registry flags (freed by
 * the caller). */
static int serve_with(serve_opts *o, const flag_def *defs, registry_flags *reg, int argc, char **argv)
{
    int n_pos, help;
    buf err = {0};
    char **rest = calloc((size_t)argc + 1, sizeof *rest);
    int n = rest ? registry_flags_take(reg, argc, argv, rest, &err) : -1;
    if (n < 0 || flags_parse(n, rest, defs, NULL, 0, &n_pos, &help, &err) < 0) {
        term_line(stderr, "runner-client serve: %s\n", err.data ? err.data : "out of memory");
        free(rest);
        buf_free(&err);
        return 2;
    }
    free(rest);
    if (help) {
        fputs(serve_usage, stdout);
        return 0;
    }
    if (porch_flags_check(&o->porch, &err) < 0) {
        term_line(stderr, "runner-client serve: %s\n", err.data ? err.data : "out of memory");
        buf_free(&err);
        return 2;
    }
    o->pod.pod_template = o->porch.base_pod_template;
    o->pod.service_template = o->porch.base_service_template;
    o->pod.template_wait = o->porch.template_wait_timeout;
    o->pod.skip_templates = o->porch.skip_template_creation;
    o->pod.private_registries = o->porch.private_registries;
    o->pod.auth_secret_path = o->porch.auth_secret_path;
    o->pod.auth_secret_name = o->porch.auth_secret_name;
    o->pod.private_registries_tls = o->porch.private_registries_tls;
    o->pod.tls_secret_path = o->porch.tls_secret_path;
    if (o->pod_ns) {   /* Porch's names win over ours */
        o->pod.ns = o->pod_ns;
        o->pod.ns_flag = "--pod-namespace";
    }
    if (o->pod_ready) {
        o->pod.ready_timeout = o->pod_ready;
        o->pod.ready_flag = "--pod-ready-timeout";
    }
    runner r = {0};
    o->pod.ttl_for = runner_pod_ttl;   /* the FunctionConfigs r holds at the time */
    o->pod.limits_for = runner_pod_limits;
    o->pod.overrides_for = runner_pod_overrides;
    o->pod.ttl_ctx = &r;
    sandbox_config sandboxing;
    if (serve_configure(&r, o) < 0 || serve_sandbox_parse("serve", &o->sandbox, r.functions_dir, &sandboxing) < 0)
        return 2;
    /* what is missing, after what is wrong in what was given */
    if (!r.pod_disabled && serve_pod_require(&o->pod, &err) < 0) {
        term_line(stderr, "runner-client serve: %s\n", err.data ? err.data : "out of memory");
        buf_free(&err);
        return 2;
    }
    /* every flag checked: from here on, files are read and the system probed */
    if (runner_load(&r, &r.cfg, &r.functions_fd, &err) < 0) {
        term_line(stderr, "runner-client serve: %s\n", err.data);
        buf_free(&err);
        return 2;
    }
    sandbox *sb = NULL;
    if (r.exec_enabled) {
        serve_sandbox_secrets secrets = {.function_config = o->config,
                                         .docker_config = reg->docker_config,
                                         .kubeconfig = o->pod.kubeconfig,
                                         .registry_auth = o->pod.private_registries <= 0 ? NULL
                                             : o->pod.auth_secret_path ? o->pod.auth_secret_path
                                             : SERVE_POD_AUTH_PATH};
        /* a host per function variant and call in flight: as many as the
         * pre-started processes and the functions running at once */
        sandbox_hosts_configure(&(sandbox_keep_config){
            .max_hosts = o->sandbox_keep ? r.prespawn_total + r.server.max_functions : 0,
            .idle_ns = r.prespawn_idle_ns,
            .asked = o->sandbox_keep == 1});
        if (o->sandbox_keep == 1 && sandboxing.mode == SANDBOX_OFF)
            log_warn("--sandbox-keep: no effect with --sandbox off (there is no sandbox to keep)");
        if (!(sb = serve_sandbox_start("serve", &sandboxing, &secrets))) {
            fnconfig_free(&r.cfg);
            if (r.functions_fd >= 0)
                close(r.functions_fd);
            return 2;
        }
        fn_job_set_child_setup(sandbox_child_setup(sb));
        r.sandbox = sb;
    }
    int rc = serve_run(&r);
    fn_job_set_child_setup(NULL);
    sandbox_free(sb);
    fnconfig_free(&r.cfg);
    if (r.functions_fd >= 0)
        close(r.functions_fd);
    return rc;
}

int cmd_serve(int argc, char **argv)
{
    serve_opts o = {.warm_up = 1, .sandbox_keep = -1, .porch = PORCH_FLAGS_INIT, .pod = {.ns = POD_DEFAULT_NAMESPACE, .dial = "service",
                            .wrapper = getenv("WRAPPER_SERVER_IMAGE")}};
    flag_def defs[] = {
        {"--port", &o.port}, {"--pod-evaluator-port", &o.also_port},
        {"--function-config", &o.config},
        {"--function-config-source", &o.config_source}, {"--functions", &o.functions},
        {"--default-image-prefix", &o.prefix}, {"--disable-runtimes", &o.disable},
        {"--max-request-body-size", &o.max_message}, {"--max-concurrent-streams", &o.max_streams},
        {"--idle-timeout", &o.idle}, {"--shutdown-grace", &o.grace}, VERBOSITY_FLAG_DEFS(&o.verbosity),
        {"--address", &o.address},
        {"--max-concurrent-functions", &o.max_functions}, {"--max-waiting-calls", &o.max_waiting},
        {"--max-pending-request-bytes", &o.max_pending},
        {"--max-pending-request-bytes-per-connection", &o.max_pending_conn},
        {"--stalled-send-timeout", &o.stall},
        {"--prespawn", &o.prespawn}, {"--prespawn-total", &o.prespawn_total},
        {"--prespawn-idle", &o.prespawn_idle},
        {"--kubeconfig", &o.pod.kubeconfig}, {"--context", &o.pod.context},
        {"--namespace", &o.pod.ns}, {"--pod-namespace", &o.pod_ns}, {"--dial", &o.pod.dial},
        {"--wrapper-server-image", &o.pod.wrapper}, {"--ready-timeout", &o.pod.ready_timeout},
        {"--pod-ready-timeout", &o.pod_ready},
        {"--max-parallel-pods-per-function", &o.pod.max_pods},
        {"--max-waitlist-length", &o.pod.waitlist}, {"--max-grpc-retries", &o.pod.max_retries},
        {"--pod-ttl", &o.pod.pod_ttl}, {"--scan-interval", &o.pod.scan_interval},
        {"--replica-name", &o.pod.replica}, {"--lease-duration", &o.pod.lease},
        {"--min-ready-pods", &o.pod.min_ready},
        {"--warm-up-pod-cache", NULL, &o.warm_up},
        {"--sandbox-keep", NULL, &o.sandbox_keep},
        SERVE_SANDBOX_FLAG_DEFS(&o.sandbox),
        PORCH_FLAG_DEFS(o.porch),
        {0},
    };
    registry_flags reg = {0};
    o.pod.registry = &reg;
    int rc = serve_with(&o, defs, &reg, argc, argv);
    registry_flags_free(&reg);
    return rc;
}
