/* registry_flags: --docker-config, --insecure-registry, --platform for every
 * command that looks images up; see registry_flags.h. */
#include "cli/registry_flags.h"

#include <stdlib.h>
#include <string.h>

#include "oci/oci_manifest.h"

/* Splits a --insecure-registry value on commas into f->insecure. */
static int add_insecure(registry_flags *f, const char *value, buf *err)
{
    char *copy = strdup(value), *save = NULL;
    if (!copy)
        return buf_fail(err, "out of memory");
    if (f->n_copies >= REGISTRY_FLAGS_MAX_INSECURE) {
        free(copy);
        return buf_fail(err, "too many --insecure-registry values (at most %d)",
                        REGISTRY_FLAGS_MAX_INSECURE);
    }
    f->copies[f->n_copies++] = copy;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (f->n_insecure >= REGISTRY_FLAGS_MAX_INSECURE)
            return buf_fail(err, "too many --insecure-registry values (at most %d)",
                            REGISTRY_FLAGS_MAX_INSECURE);
        f->insecure[f->n_insecure++] = tok;
    }
    return 0;
}

/* "--name value" or "--name=value" at argv[*i]: the value (advancing *i
 * past it), NULL when arg is another flag; *missing when it has none. */
static const char *value_of(const char *name, int argc, char **argv, int *i, int *missing)
{
    size_t n = strlen(name);
    const char *a = argv[*i];
    if (strncmp(a, name, n))
        return NULL;
    if (a[n] == '=')
        return a + n + 1;
    if (a[n])
        return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

int registry_flags_take(registry_flags *f, int argc, char **argv, char **rest, buf *err)
{
    static const char *const single[] = {"--docker-config", "--platform"};
    int n = 0;
    for (int i = 0; i < argc; i++) {
        int missing = 0;
        const char *v = value_of("--insecure-registry", argc, argv, &i, &missing);
        if (v) {
            if (add_insecure(f, v, err) < 0)
                return -1;
            continue;
        }
        const char **slot = NULL;
        const char *name = NULL;
        for (size_t k = 0; !v && !missing && k < sizeof single / sizeof *single; k++) {
            v = value_of(single[k], argc, argv, &i, &missing);
            name = single[k];
            slot = k == 0 ? &f->docker_config : &f->platform;
        }
        if (missing)
            return buf_fail(err, "flag %s needs a value", argv[i]);
        if (!v) {
            rest[n++] = argv[i];
            continue;
        }
        if (*slot)
            return buf_fail(err, "flag %s given twice", name);
        *slot = v;
    }
    rest[n] = NULL;
    oci_platform p;
    if (f->platform && oci_platform_parse(f->platform, &p, err) < 0)
        return -1;
    return n;
}

registry_opts registry_flags_opts(const registry_flags *f, long timeout_ms)
{
    return (registry_opts){.docker_config = f->docker_config, .insecure = f->insecure,
                           .n_insecure = f->n_insecure, .platform = f->platform,
                           .timeout_ms = timeout_ms};
}

void registry_flags_free(registry_flags *f)
{
    for (size_t i = 0; i < f->n_copies; i++)
        free(f->copies[i]);
    f->n_copies = f->n_insecure = 0;
}
