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
 * cached.
 *
 * The lookup runs on the event loop (registry_lookup_start: libcurl's multi
 * interface through lib/http/http_multi, no thread, no blocking call), as
 * the function runner needs while it serves; registry_lookup is the same
 * lookup on a private loop, for the command line (`runner-client image`). */
#ifndef KRM_REGISTRY_H
#define KRM_REGISTRY_H

#include <stddef.h>

#include "core/buf.h"
#include "oci/registry_opts.h"

/* lib/http/http_multi.h; declared here so that code which only reads
 * registry_result (lib/kube/pod_*, in the static build) needs no curl.h */
typedef struct http_multi http_multi;

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

typedef struct registry_op registry_op;
/* The lookup ended: rc 0 and res (the callee's now: registry_result_free
 * it, or move it), or -1 with the user's message in err. The op is freed
 * after this returns. */
typedef void registry_done_fn(int rc, registry_result *res, const char *err, void *ctx);

/* Starts the same lookup on m's loop; opts must outlive it. done runs
 * later from the loop (a cache hit on the next turn), exactly once unless
 * cancelled, never inside this call. NULL with why in err when it cannot
 * start (invalid reference or platform, bad Docker config). */
registry_op *registry_lookup_start(http_multi *m, const char *image, const registry_opts *opts,
                                   registry_done_fn *done, void *ctx, buf *err);
/* Abandons a lookup: done is not called. Not from inside done. */
void registry_lookup_cancel(registry_op *op);
void registry_result_free(registry_result *r);

/* HTTP requests made by this process, and lookups answered from the cache
 * (for tests and --debug output). */
size_t registry_requests_made(void);
size_t registry_cache_hits(void);

#endif
