/* serve_sandbox: `runner-client serve`'s sandbox flags, and the sandbox its
 * exec runtime's functions run in (lib/runtime/sandbox). At start it also
 * checks that the credentials and configuration the runner holds (the
 * service-account directory, the docker config, the kubeconfig, the
 * FunctionConfigs) are out of the functions' sight: a warning in auto, a
 * refusal in strict. */
#ifndef KRM_RC_SERVE_SANDBOX_H
#define KRM_RC_SERVE_SANDBOX_H

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

/* Parses the flags and starts the sandbox. NULL after printing why
 * (a bad flag, strict lacking a layer or seeing a secret). */
sandbox *serve_sandbox_start(const serve_sandbox_flags *f, const char *functions_dir,
                             const serve_sandbox_secrets *secrets);

#endif
