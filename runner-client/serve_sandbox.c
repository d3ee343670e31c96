/* serve_sandbox: serve's sandbox flags and start; see serve_sandbox.h. */
#include "serve_sandbox.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/numparse.h"
#include "grpc/metrics.h"
#include "oci/docker_config.h"
#include "term_text.h"

/* The account token every pod has, where Kubernetes mounts it. */
#define SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io"

static int parse_limit(const char *flag, const char *text, unsigned long long min,
                       unsigned long long max, uint64_t *out)
{
    unsigned long long v;
    if (!text)
        return 0;
    if (parse_uint(text, max, &v) < 0 || v < min) {
        term_printf(stderr, "runner-client serve: invalid value \"%s\" for %s: want a whole "
                    "number %llu-%llu\n", text, flag, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

static int parse_flags(const serve_sandbox_flags *f, sandbox_config *cfg)
{
    const char *mode = f->mode ? f->mode : "auto";
    if (!strcmp(mode, "auto"))
        cfg->mode = SANDBOX_AUTO;
    else if (!strcmp(mode, "strict"))
        cfg->mode = SANDBOX_STRICT;
    else if (!strcmp(mode, "off"))
        cfg->mode = SANDBOX_OFF;
    else {
        term_printf(stderr, "runner-client serve: invalid value \"%s\" for --sandbox: want auto, "
                    "strict or off\n", mode);
        return -1;
    }
    sandbox_limits *lim = &cfg->limits;
    const unsigned long long mib_max = 1ULL << 30;   /* 1 PiB: no overflow in bytes */
    if (parse_limit("--sandbox-memory", f->memory, 1, mib_max, &lim->memory_mib) < 0 ||
        parse_limit("--sandbox-cpu", f->cpu, 1, 1ULL << 40, &lim->cpu_seconds) < 0 ||
        parse_limit("--sandbox-processes", f->processes, 300, 4194303, &lim->processes) < 0 ||
        parse_limit("--sandbox-file-size", f->file_size, 1, mib_max, &lim->file_size_mib) < 0 ||
        parse_limit("--sandbox-open-files", f->open_files, 16, 1ULL << 20, &lim->open_files) < 0)
        return -1;
    cfg->read_paths = f->read;
    cfg->write_paths = f->write;
    cfg->env_names = f->env;
    return 0;
}

/* Each secret the functions could read: warned of in auto, refused in strict. */
static int check_secrets(const sandbox *sb, sandbox_mode mode, const serve_sandbox_secrets *s)
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
                term_printf(stderr, "runner-client serve: --sandbox strict: %s\n", why.data);
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
 * tells of the sandbox, as the start-up log line does. The labels are
 * kept for the process's life (metrics holds the pointer). */
static char info_labels[160];

static size_t sandbox_info_value(void)
{
    return 1;
}

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
}

sandbox *serve_sandbox_start(const serve_sandbox_flags *f, const char *functions_dir,
                             const serve_sandbox_secrets *secrets)
{
    sandbox_config cfg = {.limits = SANDBOX_DEFAULT_LIMITS, .functions_dir = functions_dir};
    if (parse_flags(f, &cfg) < 0)
        return NULL;
    buf why = {0};
    sandbox *sb = sandbox_start(&cfg, &why);
    if (!sb) {
        term_printf(stderr, "runner-client serve: %s\n", why.data ? why.data : "out of memory");
        buf_free(&why);
        return NULL;
    }
    serve_sandbox_secrets s = *secrets;
    if (!s.service_account)
        s.service_account = SERVICE_ACCOUNT_DIR;
    if (check_secrets(sb, cfg.mode, &s) < 0) {
        sandbox_free(sb);
        return NULL;
    }
    publish_layers(sb, cfg.mode);
    return sb;
}
