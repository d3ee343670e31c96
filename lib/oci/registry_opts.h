/* registry_opts: how a registry is spoken to (credentials, plain-HTTP
 * hosts, platform, timeout): the lookup's (registry.h) and each request's
 * (registry_http.h), apart so that neither header needs the other. */
#ifndef KRM_REGISTRY_OPTS_H
#define KRM_REGISTRY_OPTS_H

#include <stddef.h>

typedef struct registry_opts {
    const char *docker_config;       /* config.json path; NULL: $DOCKER_CONFIG or ~/.docker */
    const char *const *insecure;     /* hosts spoken to over http:// ("host" or "host:port") */
    size_t n_insecure;
    const char *platform;            /* NULL: "linux/amd64" */
    long timeout_ms;                 /* per request; 0: 30 s */
    const char *ca_file;             /* PEM CAs trusted for https:// registries beside the
                                        system's (serve's --enable-private-registries-tls);
                                        NULL: the system's only */
} registry_opts;

#endif
