/* cluster_configs: serve's FunctionConfigs read from the cluster, as
 * Porch's function runner reads them: the FunctionConfig objects
 * (config.porch.kpt.dev/v1alpha1) of the pod namespace, listed and watched
 * on the loop (kube_watch: a broken watch resumes with backoff, a 410 Gone
 * lists again and the list replaces the whole set, so deletes missed while
 * disconnected take effect).
 *
 * Each add, change or delete rebuilds the set from every object held and
 * hands it to the owner whole (apply), so a call sees the old set or the
 * new one. An object that cannot be applied (a spec the strict reader
 * refuses, a binary not beneath --functions, a second object for the same
 * image) is left out, and the others still apply.
 *
 * What Porch's reconciler writes, written back the same way: its finalizer
 * (CLUSTER_CONFIGS_FINALIZER) added to each object served, and removed once
 * the object is being deleted (deletionTimestamp) and dropped from the set;
 * status.functionRunnerObservedGeneration (the generation applied) and
 * status.error (why not, or empty), with a merge PATCH of the status
 * subresource. Writes are made only when what the object holds differs from
 * what serve wants, and a write the server refused is not repeated for the
 * same resourceVersion: the watch's echo of a write asks for nothing more.
 *
 * Bounds: CLUSTER_CONFIGS_MAX objects (more are logged and ignored),
 * CLUSTER_CONFIG_MAX_BYTES per object as JSON (a larger one is held as an
 * error), CLUSTER_CONFIGS_MAX_TOTAL for them all (what a --function-config
 * file may hold; the objects past it, by name, are held as errors),
 * CLUSTER_CONFIGS_STATUS_MAX bytes of status.error (longer text is cut,
 * saying so); watch lines and answers have the API client's limits.
 * Rebuilds run on the loop: the total bounds each (measured: 4 MiB of
 * objects, under 200 ms), and changes arriving faster than four times a
 * rebuild's duration are gathered into the next, so rebuilds take at most
 * a fifth of the loop's time. Files keep their reload thread (offload.h):
 * nothing bounds them to this (a directory of 20,000 FunctionConfigs takes
 * seconds to read), where the cluster's objects are held to 4 MiB. */
#ifndef KRM_RC_CLUSTER_CONFIGS_H
#define KRM_RC_CLUSTER_CONFIGS_H

#include "core/buf.h"
#include "core/loop.h"
#include "krm/fnconfig.h"
#include "kube/kube_client.h"

#define CLUSTER_CONFIGS_FINALIZER "config.porch.kpt.dev/functionconfig-function-runner"
#define CLUSTER_CONFIGS_MAX 1000
#define CLUSTER_CONFIG_MAX_BYTES (64u << 10)
#define CLUSTER_CONFIGS_MAX_TOTAL FNCONFIG_MAX_FILE_SIZE   /* all objects, as JSON */
#define CLUSTER_CONFIGS_STATUS_MAX 1024

typedef struct cluster_configs cluster_configs;

/* The new set: the owner takes cfg (fnconfig_free it) and functions_fd
 * (--functions opened for the binaries, or -1), and drops what it held. */
typedef void cluster_configs_apply_fn(fnconfig *cfg, int functions_fd, void *ctx);

typedef struct cluster_configs_opts {
    const char *namespace;       /* the pod namespace */
    const char *functions_dir;   /* --functions (binaryExecutor paths lead beneath it) */
    int exec_enabled;            /* binaries are checked only when the exec runtime runs */
    cluster_configs_apply_fn *apply;
    void *ctx;
} cluster_configs_opts;

/* Starts listing and watching; c must outlive it. NULL with why in err. */
cluster_configs *cluster_configs_start(kube_client *c, const cluster_configs_opts *o, buf *err);
/* Stops the watch; writes in flight finish on the loop and then free it
 * (or are left at exit with the loop). */
void cluster_configs_stop(cluster_configs *cc);

#endif
