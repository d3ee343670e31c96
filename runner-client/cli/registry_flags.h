/* registry_flags: the registry flags of every command that looks an image
 * up in its registry (image, eval --kube, pod create, serve), parsed by one
 * parser so that they all take them alike:
 *
 *   --docker-config FILE       credentials (Docker config.json)
 *   --insecure-registry H      http:// to registry H; repeatable, or a comma list
 *   --platform OS/ARCH         the index entry to follow (default linux/amd64)
 *
 * They are taken out of argv before the command's own flags_parse, which
 * keeps one value per flag and so cannot collect a repeated flag. */
#ifndef KRM_RC_REGISTRY_FLAGS_H
#define KRM_RC_REGISTRY_FLAGS_H

#include <stddef.h>

#include "core/buf.h"
#include "oci/registry.h"

#define REGISTRY_FLAGS_MAX_INSECURE 32

typedef struct registry_flags {
    const char *docker_config, *platform;
    const char *insecure[REGISTRY_FLAGS_MAX_INSECURE];
    size_t n_insecure;
    char *copies[REGISTRY_FLAGS_MAX_INSECURE];   /* the strings insecure[] points into */
    size_t n_copies;
} registry_flags;

#define REGISTRY_FLAGS_HELP \
    "  --docker-config FILE         registry credentials (default $DOCKER_CONFIG/config.json\n" \
    "                               or ~/.docker/config.json)\n" \
    "  --insecure-registry H        speak http:// to registry H (repeatable, or a comma list);\n" \
    "                               localhost, 127.0.0.1 and [::1] always are\n" \
    "  --platform OS/ARCH           the image index entry to follow (default linux/amd64)\n"

/* Moves the registry flags of argv[0..argc) into f and the other arguments,
 * in order, into rest (argc + 1 slots). Returns how many went to rest, or
 * -1 with why in err (a flag without its value, a flag given twice, too
 * many registries, an invalid platform). */
int registry_flags_take(registry_flags *f, int argc, char **argv, char **rest, buf *err);

/* The lookup options (strings point into f, which must outlive them). */
registry_opts registry_flags_opts(const registry_flags *f, long timeout_ms);

void registry_flags_free(registry_flags *f);

#endif
