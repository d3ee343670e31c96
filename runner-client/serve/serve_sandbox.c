/* serve_sandbox: serve's sandbox flags and start; see serve_sandbox.h. */
#include "serve/serve_sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/numparse.h"
#include "grpc/metrics.h"
#include "oci/docker_config.h"
#include "runtime/sandbox_host.h"
#include "runtime/sandbox_spawner.h"
#include "core/term_text.h"

/* The account token every pod has, where Kubernetes mounts it. */
#define SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io"

static int parse_limit(const char *command, const char *flag, const char *text, unsigned long long min,
                       unsigned long long max, uint64_t *out)
{
    unsigned long long v;
    if (!text)
        return 0;
    if (parse_uint(text, max, &v) < 0 || v < min) {
        term_line(stderr, "runner-client %s: invalid value \"%s\" for %s: want a whole "
                    "number %llu-%llu\n", command, text, flag, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

int serve_sandbox_parse(const char *command, const serve_sandbox_flags *f,
                        const char *functions_dir, sandbox_config *cfg)
{
    *cfg = (sandbox_config){.limits = SANDBOX_DEFAULT_LIMITS, .functions_dir = functions_dir};
    const char *mode = f->mode ? f->mode : "auto";
    if (!strcmp(mode, "auto"))
        cfg->mode = SANDBOX_AUTO;
    else if (!strcmp(mode, "strict"))
        cfg->mode = SANDBOX_STRICT;
    else if (!strcmp(mode, "off"))
        cfg->mode = SANDBOX_OFF;
    else {
        term_line(stderr, "runner-client %s: invalid value \"%s\" for --sandbox: want auto, "
                    "strict or off\n", command, mode);
        return -1;
    }
    sandbox_limits *lim = &cfg->limits;
    const unsigned long long mib_max = 1ULL << 30;   /* 1 PiB: no overflow in bytes */
    if (parse_limit(command, "--sandbox-memory", f->memory, 1, mib_max, &lim->memory_mib) < 0 ||
        parse_limit(command, "--sandbox-cpu", f->cpu, 1, 1ULL << 40, &lim->cpu_seconds) < 0 ||
        parse_limit(command, "--sandbox-processes", f->processes, 300, 4194303, &lim->processes) < 0 ||
        parse_limit(command, "--sandbox-file-size", f->file_size, 1, mib_max, &lim->file_size_mib) < 0 ||
        parse_limit(command, "--sandbox-open-files", f->open_files, 16, 1ULL << 20, &lim->open_files) < 0)
        return -1;
    cfg->read_paths = f->read;
    cfg->write_paths = f->write;
    cfg->env_names = f->env;
    buf why = {0};
    if (sandbox_config_check(cfg, &why) < 0) {
        term_line(stderr, "runner-client %s: %s\n", command, why.data ? why.data : "out of memory");
        buf_free(&why);
        return -1;
    }
    return 0;
}

/* Each secret the functions could read: warned of in auto, refused in strict. */
static int check_secrets(const char *command, const sandbox *sb, sandbox_mode mode,
                         const serve_sandbox_secrets *s)
{
    char *docker = s->docker_config ? NULL : docker_config_default_path();
    const struct {
        const char *path, *what;
    } secrets[] = {
        {s->function_config, "the runner's configuration"},
        {s->docker_config ? s->docker_config : docker, "the registry credentials"},
        {s->kubeconfig, "the kubeconfig"},
        {s->service_account, "the service-account directory"},
        {s->registry_auth, "the private registries' credentials"},
    };
    int rc = 0;
    for (size_t i = 0; i < sizeof secrets / sizeof *secrets && !rc; i++) {
        buf why = {0};
        if (sandbox_check_hidden(sb, secrets[i].path, secrets[i].what, &why) < 0) {
            if (mode == SANDBOX_STRICT) {
                term_line(stderr, "runner-client %s: --sandbox strict: %s\n", command, why.data);
                rc = -1;
            } else {
                log_warn("%s", why.data);
            }
        }
        buf_free(&why);
    }
    free(docker);
    return rc;
}

/* krm_sandbox_info{mode="auto",layers="namespaces,..."} 1: what /metrics
 * tells of the sandbox, as the start-up log line does; and one gauge per
 * layer, krm_sandbox_layer{layer="seccomp"} 1 or 0, for alerts. The labels
 * are kept for the process's life (metrics holds the pointer). */
static char info_labels[160];
static char layer_labels[6][32];
static unsigned layers_used;

static size_t sandbox_info_value(void)
{
    return 1;
}

/* A gauge's reader takes no argument: one per layer, by its index. */
#define LAYER_READER(i) \
    static size_t layer_used_##i(void) \
    { \
        const char *name; \
        return (layers_used & sandbox_layer_at(i, &name)) != 0; \
    }
LAYER_READER(0)
LAYER_READER(1)
LAYER_READER(2)
LAYER_READER(3)
LAYER_READER(4)
LAYER_READER(5)
static metrics_gauge_fn *const layer_readers[6] = {layer_used_0, layer_used_1, layer_used_2,
                                                   layer_used_3, layer_used_4, layer_used_5};

static void publish_layers(const sandbox *sb, sandbox_mode mode)
{
    static const char *const modes[] = {"off", "auto", "strict"};
    buf layers = {0};
    sandbox_describe(sandbox_layers(sb), &layers);
    snprintf(info_labels, sizeof info_labels, "mode=\"%s\",layers=\"%s\"", modes[mode],
             layers.data ? layers.data : "?");
    buf_free(&layers);
    metrics_gauge("krm_sandbox_info", info_labels,
                  "1; its labels are the exec functions' sandbox mode (--sandbox) and the "
                  "layers in use.", sandbox_info_value);
    layers_used = sandbox_layers(sb);
    const char *name;
    for (size_t i = 0; i < 6 && sandbox_layer_at(i, &name); i++) {
        snprintf(layer_labels[i], sizeof layer_labels[i], "layer=\"%s\"", name);
        metrics_gauge("krm_sandbox_layer", layer_labels[i],
                      "1 when the exec functions' sandbox uses this layer, 0 when not "
                      "(--sandbox off, or unavailable here: see GET /debug/sandbox).",
                      layer_readers[i]);
    }
}

int serve_sandbox_flags_given(const serve_sandbox_flags *f)
{
    return f->mode || f->memory || f->cpu || f->processes || f->file_size || f->open_files ||
           f->read || f->write || f->env;
}

int serve_sandbox_http_get(const sandbox *sb, const char *path, const char *query,
                           http1_response *r)
{
    if (strcmp(path, "/debug/sandbox"))
        return 0;
    if (*query && strcmp(query, "format=json")) {
        r->status = 400;
        buf_printf(&r->body, "/debug/sandbox takes ?format=json (the default) or nothing\n");
    } else if (!sb) {
        r->status = 404;
        buf_printf(&r->body, "/debug/sandbox: the exec runtime is off (--disable-runtimes)\n");
    } else if (sandbox_view(sb, &r->body) < 0) {
        r->status = 500;
        buf_reset(&r->body);
        buf_printf(&r->body, "out of memory\n");
    } else {
        r->content_type = "application/json";
    }
    return 1;
}

const spawn_child_setup *serve_sandbox_setup_for(sandbox *sb, const fnconfig_sandbox *fs)
{
    sandbox_override o = {
        .allow_network = fs->network,
        .limits = {.memory_mib = fs->memory_mib, .cpu_seconds = fs->cpu_seconds,
                   .processes = fs->processes, .file_size_mib = fs->file_size_mib,
                   .open_files = fs->open_files},
    };
    buf why = {0};
    const spawn_child_setup *setup = sandbox_setup_for(sb, &o, &why);
    if (why.len)
        log_error("%s", why.data);
    buf_free(&why);
    return setup;
}

sandbox *serve_sandbox_start(const char *command, const sandbox_config *cfg,
                             const serve_sandbox_secrets *secrets)
{
    buf why = {0};
    sandbox *sb = sandbox_start(cfg, &why);
    if (!sb) {
        term_line(stderr, "runner-client %s: %s\n", command, why.data ? why.data : "out of memory");
        buf_free(&why);
        return NULL;
    }
    serve_sandbox_secrets s = *secrets;
    if (!s.service_account)
        s.service_account = SERVICE_ACCOUNT_DIR;
    if (check_secrets(command, sb, cfg->mode, &s) < 0) {
        sandbox_free(sb);
        return NULL;
    }
    publish_layers(sb, cfg->mode);
    if (sandbox_hosts_enabled() && !(sandbox_layers(sb) & SANDBOX_NAMESPACES)) {
        /* a host is the namespaces kept: without them there is nothing to keep
         * (said as a warning only to whoever asked for it by name) */
        if (sandbox_hosts_asked())
            log_warn("--sandbox-keep: no effect without the sandbox's namespaces (unavailable "
                     "here): each call is sandboxed as without it");
        else
            log_info("sandboxes are not kept per function here (no namespaces to keep): "
                     "each call is sandboxed afresh");
        sandbox_hosts_configure(&(sandbox_keep_config){0});
    }
    /* before the server opens its sockets: the spawner is forked with few
     * descriptors (it closes all it does not need) */
    if (!strcmp(command, "serve") && sandbox_spawner_start(sb, &why) < 0) {
        log_warn("sandbox spawner: %s; sandboxed functions are spawned on the server's loop",
                 why.data ? why.data : "out of memory");
        buf_free(&why);
    }
    return sb;
}
