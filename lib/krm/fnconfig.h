/* fnconfig: Porch's FunctionConfig objects (config.porch.kpt.dev/v1alpha1,
 * kind FunctionConfig) read from files, and the lookups the function runner
 * makes with them.
 *
 * Porch keeps FunctionConfigs in the cluster; the runner reads the same
 * objects from YAML files (--function-config, a file or a directory), so a
 * configuration can be applied to either without change. Loading is strict
 * the way Kubernetes' strict decoding is: a FunctionConfig with an unknown
 * field, a wrong type or a missing required field is an error naming the
 * file, the document and the field path. Documents of any other kind are
 * skipped, so a directory may mix FunctionConfigs with other objects.
 *
 * Matching follows Porch's FunctionConfigStore: the binary executor is chosen
 * by short image name (spec.image), repository prefix (spec.prefixes) and
 * exact tag; pod parameters by short image name == metadata.name. */
#ifndef KRM_FNCONFIG_H
#define KRM_FNCONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/semver.h"
#include "core/strset.h"

/* Largest file read; bigger files are refused (configs are small). */
#define FNCONFIG_MAX_FILE_SIZE (4u << 20)

/* A function's own sandbox settings (serve's exec runtime), from its
 * annotations, named after serve's flags: fn.kpt.dev/sandbox-network
 * ("true" or "false"), fn.kpt.dev/sandbox-memory and sandbox-file-size
 * (a Kubernetes quantity in whole MiB: "512Mi", "2Gi"), sandbox-cpu
 * (seconds), sandbox-processes, sandbox-open-files (whole numbers), each
 * within the bounds of its flag. 0 (network: -1): the flag's. */
typedef struct fnconfig_sandbox {
    int network;             /* 1 allowed, 0 not, -1 as the runner says */
    uint64_t memory_mib, cpu_seconds, processes, file_size_mib, open_files;
} fnconfig_sandbox;

#define FNCONFIG_SANDBOX_UNSET {.network = -1}

/* One FunctionConfig. Strings are NULL when absent; lists have n == 0. */
typedef struct fnconfig_entry {
    char *file;       /* where it was read, as given (for messages) */
    int doc;          /* 1-based document number in that file */
    char *name;       /* metadata.name, never NULL */
    char *namespace;  /* metadata.namespace, NULL when absent */
    char *image;      /* spec.image: the short name, e.g. "set-namespace" */
    char **prefixes;  /* spec.prefixes as written; "" = the default prefix */
    size_t n_prefixes;
    struct {
        int present;
        char **tags;       /* at least one */
        size_t n_tags;
        char *path;        /* as Porch runs it: absolute, see fnconfig_load */
        char *written;     /* as written, for messages */
        char *beneath;     /* cleaned and relative to functions_dir; NULL when the
                            * path is absolute or climbs above it ("../x") */
    } binary;
    struct {
        int present;
        char **tags;
        size_t n_tags;
        int64_t ttl_ns;            /* timeToLive; 0 = the runner's default */
        int max_parallel;          /* maxParallelExecutions; 0 = default */
        int queue_len;             /* preferredMaxQueueLength; 0 = default */
        int has_template_overrides;
        char *service_account;     /* templateOverrides.serviceAccountName */
        char *overrides;           /* templateOverrides as JSON (yaml_json), for the pod
                                      runtime's merge; NULL when absent */
        int min_ready;             /* metadata.annotations fn.kpt.dev/min-ready-pods
                                      (FNCONFIG_MAX_MIN_READY at most); -1: absent */
    } pod;
    struct {
        int present;
        char **tags;       /* at least one */
        size_t n_tags;
        char *id;          /* NULL when absent */
    } go;
    fnconfig_sandbox sandbox;   /* metadata.annotations fn.kpt.dev/sandbox-* */
} fnconfig_entry;

#define FNCONFIG_MIN_READY_ANNOTATION "fn.kpt.dev/min-ready-pods"
#define FNCONFIG_MAX_MIN_READY 64   /* the pod runtime's pods per function at most */

/* Reads one of the annotations the runner takes from a FunctionConfig
 * (Porch's CRD schema accepts any annotation), key and value as the object
 * has them, into e: fn.kpt.dev/min-ready-pods and the sandbox's
 * (fnconfig_sandbox). Both sources of FunctionConfigs (files, the API) call
 * it for each annotation. Returns 1 when the key is ours and its value
 * good, 0 when the key is not ours (nothing done), -1 with what is wanted
 * appended to why ("want ..., not \"x\"") when it is ours and bad: the
 * object is refused. */
int fnconfig_annotation(fnconfig_entry *e, const char *key, const char *value, buf *why);

typedef struct fnconfig {
    fnconfig_entry *entries;
    size_t n;
    /* private: every entry's metadata.name and spec.image, so that each
     * document's duplicate check is O(1), not a walk of all before it
     * (20,000 FunctionConfigs took 2 s to load, two thirds of it in strcmp) */
    strset names, images;
} fnconfig;

/* Loads a file (multi-document YAML) or a directory (its *.yaml and *.yml
 * regular files, symlinks followed, names starting with '.' skipped, sorted
 * by name, not recursive). A relative binaryExecutor.path is joined to
 * functions_dir (Porch's --functions; NULL or "" = the current directory)
 * and made absolute against the current directory, then cleaned ("." and
 * ".." removed) as Go's filepath.Abs does; an absolute path is kept as it is.
 * Loading reads no binary: the exec runtime checks them with
 * fnconfig_check_binaries, where a path that leads outside functions_dir is
 * refused (absolute ones included).
 * Two FunctionConfigs with the same metadata.name or the same spec.image are
 * an error naming both.
 * Returns 0 with *out filled (release with fnconfig_free), or -1 with the
 * reason appended to err and *out empty. */
int fnconfig_load(const char *path, const char *functions_dir, fnconfig *out, buf *err);

/* The same for several paths (--function-config repeated), in order;
 * duplicates are checked across all of them. */
int fnconfig_load_many(const char *const *paths, size_t n, const char *functions_dir,
                       fnconfig *out, buf *err);

/* Parses `len` bytes of YAML as if read from `file` and appends its
 * FunctionConfigs to *cfg (duplicates checked against what *cfg holds).
 * Returns 0, or -1 with the reason appended to err and *cfg as it was. */
int fnconfig_parse(const char *file, const char *data, size_t len, const char *functions_dir,
                   fnconfig *cfg, buf *err);

/* The entry whose binary executor serves `image`, or NULL. The image is
 * split at the last ':' after the last '/' into name and tag (no tag means
 * "latest"); a digest reference (containing '@') never matches. The entry
 * must have spec.image == the last path segment of the name, a prefix that
 * the repository part accepts (see fnconfig.c: prefix_accepts; "" stands for
 * default_prefix, no prefixes accept everything) and the tag among
 * binaryExecutor.tags. tag_out, when not NULL, gets the matched tag (owned by
 * the entry). The image is taken as it is: resolve it first with
 * fnconfig_resolve_image, as Porch does. */
const fnconfig_entry *fnconfig_match_binary(const fnconfig *c, const char *image,
                                            const char *default_prefix, const char **tag_out);

/* A request with a Tag, as Porch's executable evaluator serves it
 * (FindBestSemverMatch): name is the image without tag or digest (resolved
 * as above), and the entry is the one fnconfig_match_binary would pick for
 * name:T, where T is the highest of its binaryExecutor.tags that satisfies
 * want; only tags starting with "v" count (Porch's keys are split at ":v").
 * tag_out gets T. NULL when no tag satisfies want. */
const fnconfig_entry *fnconfig_match_binary_version(const fnconfig *c, const char *name,
                                                    const char *default_prefix,
                                                    const semver_constraint *want,
                                                    const char **tag_out);

/* The entry whose metadata.name is the short name of `image` (last path
 * segment, without tag or digest) and which has a podExecutor, or NULL.
 * Its pod.ttl_ns, pod.max_parallel and pod.queue_len are 0 when the runner's
 * defaults apply. */
const fnconfig_entry *fnconfig_pod_params(const fnconfig *c, const char *image);

/* Appends `image` to out, with default_prefix in front when the image has no
 * '/' (a '/' is put between them when the prefix does not end in one; an
 * empty or NULL prefix adds nothing). Returns 0, or -1 on ENOMEM. */
int fnconfig_resolve_image(const char *default_prefix, const char *image, buf *out);

void fnconfig_free(fnconfig *c);

/* ---- running binaries beneath --functions ----------------------------------
 * A binaryExecutor.path must name a file beneath the --functions directory:
 * not an absolute path, no ".." above the directory, and no symlink on the
 * way that leads out of it (a symlink is followed only when its target is
 * relative and stays inside; openat2's RESOLVE_BENEATH decides, as the
 * kernel resolves the path, so a link swapped later is caught too). */

/* Opens functions_dir (NULL or "" = the current directory) as the base of
 * fnconfig_open_binary: an O_PATH directory descriptor. -1 with err set. */
int fnconfig_open_functions_dir(const char *functions_dir, buf *err);

/* Opens e's binary beneath functions_fd: an O_PATH descriptor of the very
 * file, to execute through /proc/self/fd (close-on-exec unless inheritable:
 * a #! script's interpreter opens the script by that name after the exec).
 * Returns -1 with the reason appended to why, naming the path as written,
 * e.g. `"../x" resolves outside --functions DIR`; functions_dir names the
 * directory in it. */
int fnconfig_open_binary(int functions_fd, const char *functions_dir, const fnconfig_entry *e,
                         int inheritable, buf *why);

/* For every entry with a binaryExecutor: fnconfig_open_binary, and the
 * file is a regular file with an execute bit. Returns 0, or -1 with
 * "<file>: document <n> (FunctionConfig "<name>"): spec.binaryExecutor.path:
 * <reason>" appended to err. */
int fnconfig_check_binaries(const fnconfig *c, int functions_fd, const char *functions_dir, buf *err);

#endif
