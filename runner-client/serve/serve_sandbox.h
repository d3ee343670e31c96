/* serve_sandbox: `runner-client serve`'s sandbox flags, and the sandbox its
 * exec runtime's functions run in (lib/runtime/sandbox). At start it also
 * checks that the credentials and configuration the runner holds (the
 * service-account directory, the docker config, the kubeconfig, the
 * FunctionConfigs) are out of the functions' sight: a warning in auto, a
 * refusal in strict. */
#ifndef KRM_RC_SERVE_SANDBOX_H
#define KRM_RC_SERVE_SANDBOX_H

#include "grpc/http1.h"
#include "krm/fnconfig.h"
#include "runtime/sandbox.h"

typedef struct serve_sandbox_flags {
    const char *mode, *memory, *cpu, *processes, *file_size, *open_files, *read, *write, *env;
} serve_sandbox_flags;

#define SERVE_SANDBOX_FLAGS_HELP \
    "  --sandbox auto|strict|off    isolate exec functions: auto uses every layer this\n" \
    "                               system allows and logs which; strict refuses to start\n" \
    "                               without all; off runs them as plain children (default auto)\n" \
    "  --sandbox-memory MIB         a function's data memory and private /tmp (default 1024)\n" \
    "  --sandbox-cpu SECONDS        a function's CPU time (default 300)\n" \
    "  --sandbox-processes N        a function's processes, at least 300 (default 1024)\n" \
    "  --sandbox-file-size MIB      largest file a function writes (default 1024)\n" \
    "  --sandbox-open-files N       a function's open files (default 1024)\n" \
    "  --sandbox-read LIST          comma-separated absolute paths functions may read, added\n" \
    "                               to /usr /bin /sbin /lib* /etc /opt /proc /sys /dev and\n" \
    "                               --functions\n" \
    "  --sandbox-write LIST         comma-separated absolute directories functions may also\n" \
    "                               write (and read)\n" \
    "  --sandbox-env LIST           comma-separated names of the runner's environment\n" \
    "                               variables functions also get (they always get PATH,\n" \
    "                               LANG, LANGUAGE, LC_*, TZ, TERM; TMPDIR and HOME are\n" \
    "                               their temporary directory)\n"

/* What is checked to be hidden from functions (NULL entries skipped). */
typedef struct serve_sandbox_secrets {
    const char *function_config, *docker_config, *kubeconfig, *service_account;
    const char *registry_auth;   /* --enable-private-registries' dockerconfigjson, or NULL */
} serve_sandbox_secrets;

/* The child setup of a function with its FunctionConfig's sandbox
 * settings (fnconfig_sandbox, from its annotations): sandbox_setup_for,
 * its failure logged. NULL: none (no layer used) or it failed. */
const spawn_child_setup *serve_sandbox_setup_for(sandbox *sb, const fnconfig_sandbox *fs);

/* Parses and checks the flags into *cfg, before the command does anything
 * else (nothing is detected or opened): 0, or -1 after printing the usage
 * error. command, "serve" or "eval", names the command in messages.
 * serve checks them also when the exec runtime is off: a bad flag is never
 * taken silently. */
int serve_sandbox_parse(const char *command, const serve_sandbox_flags *f,
                        const char *functions_dir, sandbox_config *cfg);

/* Starts the sandbox cfg describes. NULL after printing why (strict
 * lacking a layer or seeing a secret, a --sandbox-read path missing).
 * For serve it also forks the spawner (runtime/sandbox_spawner), before
 * the server opens its sockets; eval spawns its one function itself. */
sandbox *serve_sandbox_start(const char *command, const sandbox_config *cfg,
                             const serve_sandbox_secrets *secrets);

/* GET /debug/sandbox (rpc_server_config.http_get's contract): the
 * sandbox's view as JSON (sandbox_view); sb NULL when the exec runtime is
 * off. 0 for any other path. */
int serve_sandbox_http_get(const sandbox *sb, const char *path, const char *query,
                           http1_response *r);

/* Whether any of the flags was given. */
int serve_sandbox_flags_given(const serve_sandbox_flags *f);

/* The flags as flag_def entries (flags.h), for a command's table. */
#define SERVE_SANDBOX_FLAG_DEFS(f) \
    {"--sandbox", &(f)->mode}, {"--sandbox-memory", &(f)->memory}, \
    {"--sandbox-cpu", &(f)->cpu}, {"--sandbox-processes", &(f)->processes}, \
    {"--sandbox-file-size", &(f)->file_size}, {"--sandbox-open-files", &(f)->open_files}, \
    {"--sandbox-read", &(f)->read}, {"--sandbox-write", &(f)->write}, {"--sandbox-env", &(f)->env}

#endif
