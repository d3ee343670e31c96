/* sandbox: the exec runtime's functions isolated like a pod, at the cost of
 * a process (runner-client serve; the wrapper server runs in a pod already).
 *
 * Layers, each detected at start (sandbox_start) and applied in the
 * function's child between clone and exec (fn_job_set_child_setup):
 *   namespaces    new user, mount, PID, IPC and network namespaces: no
 *                 network interface, a private /tmp (tmpfs), the function
 *                 PID 1 of its own tree (when it exits every process it
 *                 left is killed with it)
 *   proc          a /proc of the function's own PID namespace, whose
 *                 pid_max bounds its processes (--sandbox-processes)
 *   rlimits       memory (RLIMIT_DATA), CPU seconds, file size, open files;
 *                 no core files
 *   no_new_privs  no set-user-ID gain across exec
 *   landlock      the files it may see (sandbox_landlock.h)
 *   seccomp       the system calls it may not make (sandbox_seccomp.h)
 * With any layer, a function's environment keeps only a few of our
 * variables (sandbox_config.env_names): ours may hold credentials.
 * `auto` uses each layer that works here and logs once which; `strict`
 * refuses to start without all of them, naming the setting that would
 * allow the missing one; `off` runs functions as plain children. */
#ifndef KRM_SANDBOX_H
#define KRM_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/spawn.h"

typedef enum sandbox_mode { SANDBOX_OFF, SANDBOX_AUTO, SANDBOX_STRICT } sandbox_mode;

enum sandbox_layer {
    SANDBOX_NAMESPACES = 1 << 0,
    SANDBOX_PROC = 1 << 1,
    SANDBOX_RLIMITS = 1 << 2,
    SANDBOX_NO_NEW_PRIVS = 1 << 3,
    SANDBOX_LANDLOCK = 1 << 4,
    SANDBOX_SECCOMP = 1 << 5,
    SANDBOX_ALL = (1 << 6) - 1,
};

typedef struct sandbox_limits {
    uint64_t memory_mib;     /* RLIMIT_DATA; also the private /tmp's size */
    uint64_t cpu_seconds;    /* RLIMIT_CPU: SIGXCPU at this, SIGKILL a second later */
    uint64_t processes;      /* pid_max of its PID namespace, less one (300 at least) */
    uint64_t file_size_mib;  /* RLIMIT_FSIZE */
    uint64_t open_files;     /* RLIMIT_NOFILE */
} sandbox_limits;

#define SANDBOX_DEFAULT_LIMITS {.memory_mib = 1024, .cpu_seconds = 300, .processes = 1024, \
                                .file_size_mib = 1024, .open_files = 1024}

typedef struct sandbox_config {
    sandbox_mode mode;
    sandbox_limits limits;
    /* Read-only roots added to the system's (comma-separated; NULL: none). */
    const char *read_paths;
    /* Directories functions may also write (comma-separated; NULL: none):
     * kept visible through the private /tmp when beneath it. */
    const char *write_paths;
    /* Names of our environment variables functions also get (comma-
     * separated; NULL: none). They always get PATH, LANG, LANGUAGE, LC_*,
     * TZ and TERM, and TMPDIR and HOME set to their writable directory. */
    const char *env_names;
    /* Where the functions' binaries are (serve's --functions), also
     * readable: a function may run its siblings or read its data there. */
    const char *functions_dir;
    int allow_network;
} sandbox_config;

typedef struct sandbox sandbox;

/* Checks what cfg asks before anything is detected or opened: the
 * --sandbox-read and --sandbox-write lists, each entry an absolute path,
 * no more than the sandbox has room for. 0, or -1 with why naming the
 * flag. sandbox_start checks the same (and that each path is there). */
int sandbox_config_check(const sandbox_config *cfg, buf *why);

/* Detects the layers, prepares them and logs which are used. NULL with why
 * when strict lacks one (why names it and what would allow it), or on
 * ENOMEM. With mode off: a sandbox using no layer (its setup is NULL). */
sandbox *sandbox_start(const sandbox_config *cfg, buf *why);

/* What fn_job_set_child_setup takes; NULL when no layer is used. */
const spawn_child_setup *sandbox_child_setup(const sandbox *sb);

/* A function's own settings (its FunctionConfig's annotations): the
 * network allowed or not, and limits, each 0 for sb's own. */
typedef struct sandbox_override {
    int allow_network;   /* -1: as sb */
    sandbox_limits limits;
} sandbox_override;

#define SANDBOX_MAX_VARIANTS 256   /* distinct settings kept */

/* The child setup (fn_job_spec.child_setup) of a function run with o:
 * sb's own when o changes nothing, or a variant of sb made the first time
 * these settings are asked and kept with sb (same layers, paths and
 * environment). NULL with why when more than SANDBOX_MAX_VARIANTS distinct
 * settings were asked, or on ENOMEM; with no layer used, NULL and nothing
 * said (functions run as plain children). */
const spawn_child_setup *sandbox_setup_for(sandbox *sb, const sandbox_override *o, buf *why);

/* The sandbox a child setup from sandbox_setup_for or sandbox_child_setup
 * belongs to (NULL for any other). */
const sandbox *sandbox_of_setup(const sandbox *sb, const spawn_child_setup *setup);

/* The settings that make setup (from sandbox_setup_for or
 * sandbox_child_setup of sb) from sb, into *o: what sandbox_setup_for of
 * a copy of sb (another process's) takes to make the same. 0, or -1 when
 * setup is not sb's. */
int sandbox_override_of(const sandbox *sb, const spawn_child_setup *setup, sandbox_override *o);

/* The layers in use (enum sandbox_layer bits). */
unsigned sandbox_layers(const sandbox *sb);

/* "namespaces, proc, rlimits, ..." or "none", for logs and /metrics. */
void sandbox_describe(unsigned layers, buf *out);

/* Each layer in order: its bit and name ("namespaces"); 0 and NULL past
 * the last. */
unsigned sandbox_layer_at(size_t i, const char **name);

/* The sandbox as JSON, for GET /debug/sandbox: {"mode": "auto", "layers":
 * {"namespaces": true, ...}, "unavailable": "why, as logged at start",
 * "network": "shared" | "per call" | "the runner's", "limits": {...},
 * "distinct_own_settings": N (functions' annotations asked for N
 * variants so far)}. -1 when out of memory. */
int sandbox_view(const sandbox *sb, buf *out);

/* Whether path (a credential or the runner's configuration: what) can be
 * read by a sandboxed function. 0: it cannot, or the filesystem is not
 * sandboxed (then nothing is said); -1: it can, with why (a warning in
 * auto, a refusal in strict: the caller decides). */
int sandbox_check_hidden(const sandbox *sb, const char *path, const char *what, buf *why);

/* The limit that ended a failed function, as "function exceeded its CPU
 * limit of 300 s (--sandbox-cpu)", into out: told by the signal the kernel
 * sends at a limit (SIGXCPU, SIGXFSZ; as PID 1 of its namespace a function
 * ignores those, and is killed at the hard CPU limit: SIGKILL after cpu_ns
 * of CPU time at least the limit), or by the function's stderr (err,
 * err_len bytes) naming the error a limit gives (out of memory, too many
 * open files, file too large), which is the function's to report. Returns
 * 1, or 0 when no limit did (out untouched). */
int sandbox_explain_exit(const sandbox *sb, int wait_status, int64_t cpu_ns, const char *err,
                         size_t err_len, buf *out);

/* ---- for a sandbox kept per function (sandbox_host.h) ------------------- */

/* In the host, a process made with sb's setup's clone_flags after joining
 * its join_ns: the id maps, the mounts (/ private, the tmpfs /tmp and what
 * is bound back into it) and the namespace's /proc with its pid_max, as a
 * call's child makes them. System calls only. 0, or an errno with *step. */
int sandbox_host_mounts(const sandbox *sb, const char **step);

/* The options of the private /tmp's tmpfs (its size and mode): a host
 * mounts a new one after each call. */
const char *sandbox_tmpfs_options(const sandbox *sb);

/* Mounts a function's private /tmp at `at`, a tmpfs with options (a
 * call's at set-up, a kept host's after each call: the same flags). 0, or
 * -1 with errno. */
int sandbox_tmpfs_mount(const char *at, const char *options);

/* In the spawner: the Landlock ruleset of sb's calls run on a host, made
 * at set-up and after each reset (its /tmp is new): the held roots, the
 * host's /proc (proc_fd, O_PATH; -1 without the proc layer) and /tmp
 * (tmp_fd), and binary. Its descriptor, -1 without
 * Landlock, or -errno with *step. */
int sandbox_host_ruleset(const sandbox *sb, const char *binary, int tmp_fd, int proc_fd,
                         const char **step);

/* In a call's child on a host, with the host's namespaces joined: what a
 * fresh sandbox's child adds after its namespaces (no_new_privs, Landlock
 * restricted by ruleset (a domain of the call's own), the rlimits, the
 * seccomp filter). 0, or an errno with *step. */
int sandbox_confine_call(const sandbox *sb, int ruleset, const char **step);

void sandbox_free(sandbox *sb);

#endif
