/* porch_flags: Porch's function-runner and pod-evaluator flags that
 * `serve` takes by their names but whose features it does not have (yet),
 * or that belong to Porch releases before the FunctionConfig CRD.
 *
 * Why a module of refusals: a Porch Deployment's args must not start a
 * runner that silently does something else. A flag that would change what
 * Porch does is refused at start, naming it and what to do instead; one
 * that, as given, changes nothing in Porch either (--enable-private-
 * registries=false, the secret paths that only it reads) is taken. */
#ifndef KRM_RC_PORCH_FLAGS_H
#define KRM_RC_PORCH_FLAGS_H

#include "core/buf.h"
#include "cli/flags.h"

typedef struct porch_flags {
    /* Porch before the FunctionConfig CRD */
    const char *config, *pod_cache_config, *function_pod_template;
    /* private registries: their secrets are read only with the switch on */
    int private_registries, private_registries_tls;   /* -1: not given */
    const char *auth_secret_path, *auth_secret_name, *tls_secret_path;
    /* porch-server's pod evaluator: base templates from the cluster (served:
     * serve hands them to its pod runtime) */
    const char *base_pod_template, *base_service_template, *template_wait_timeout;
    int skip_template_creation;                        /* -1: not given */
} porch_flags;

/* Everything "not given". */
#define PORCH_FLAGS_INIT {.private_registries = -1, .private_registries_tls = -1, \
                          .skip_template_creation = -1}

/* The flag_def entries for p, as a braced list to put in a flag table. */
#define PORCH_FLAG_DEFS(p) \
    {"--config", &(p).config}, {"--pod-cache-config", &(p).pod_cache_config}, \
    {"--function-pod-template", &(p).function_pod_template}, \
    {"--enable-private-registries", NULL, &(p).private_registries}, \
    {"--enable-private-registries-tls", NULL, &(p).private_registries_tls}, \
    {"--registry-auth-secret-path", &(p).auth_secret_path}, \
    {"--registry-auth-secret-name", &(p).auth_secret_name}, \
    {"--tls-secret-path", &(p).tls_secret_path}, \
    {"--base-pod-template-name", &(p).base_pod_template}, \
    {"--base-service-template-name", &(p).base_service_template}, \
    {"--template-wait-timeout", &(p).template_wait_timeout}, \
    {"--skip-template-creation", NULL, &(p).skip_template_creation}

#define PORCH_FLAGS_HELP \
    "  Porch's flags not served yet, refused when they would change what runs:\n" \
    "  --config F, --pod-cache-config F, --function-pod-template CM (Porch before\n" \
    "  the FunctionConfig CRD); --enable-private-registries[-tls]: see the pod\n" \
    "  runtime's flags\n"

/* 0, or -1 with the first refused flag and why in err. */
int porch_flags_check(const porch_flags *p, buf *err);

#endif
