/* registry: an image's digest and entrypoint from its registry (v2 API), as
 * Porch's function runner finds them before creating a function pod.
 *
 * GET the manifest (every manifest media type accepted); for an index or
 * manifest list take the linux/amd64 entry (Porch's go-containerregistry
 * default; an entry without platform counts as linux/amd64) and GET that
 * manifest; GET the config blob; verify the sha256 of every document
 * fetched. The entrypoint is config.Entrypoint when non-empty, else
 * config.Cmd: Porch's rule, which drops Cmd when Entrypoint is set.
 *
 * Results are cached in memory for the life of the process, keyed by the
 * image string and platform, as Porch caches them (never invalidated: a tag
 * moved in the registry is seen by the next process). Failures are not
 * cached. Safe to call from several threads. */
#ifndef KRM_REGISTRY_H
#define KRM_REGISTRY_H

#include <stddef.h>

#include "core/buf.h"

typedef struct registry_opts {
    const char *docker_config;       /* config.json path; NULL: $DOCKER_CONFIG or ~/.docker */
    const char *const *insecure;     /* hosts spoken to over http:// ("host" or "host:port") */
    size_t n_insecure;
    const char *platform;            /* NULL: "linux/amd64" */
    long timeout_ms;                 /* per request; 0: 30 s */
} registry_opts;

typedef struct registry_result {
    char *digest;            /* "sha256:…" of the platform image manifest (Porch's podID source) */
    char *index_digest;      /* the index's digest when the reference named one, else NULL */
    int from_index;          /* the reference resolved to an index / manifest list */
    char *media_type;        /* of the platform manifest */
    char *config_digest;
    char **entrypoint;       /* NULL-terminated: Entrypoint if non-empty, else Cmd */
    size_t n_entrypoint;
    char **config_entrypoint;/* the config's raw arrays (empty when absent) */
    size_t n_config_entrypoint;
    char **config_cmd;
    size_t n_config_cmd;
} registry_result;

/* Looks `image` up. Returns 0 and a result to free with
 * registry_result_free, or -1 with a message for the user in err (image not
 * found, access denied and with which credentials, no entry for the
 * platform, neither Entrypoint nor Cmd, registry unreachable, digest
 * mismatch, invalid reference). */
int registry_lookup(const char *image, const registry_opts *opts, registry_result *out, buf *err);
void registry_result_free(registry_result *r);

/* HTTP requests made by this process, and lookups answered from the cache
 * (for tests and --debug output). */
size_t registry_requests_made(void);
size_t registry_cache_hits(void);

#endif
