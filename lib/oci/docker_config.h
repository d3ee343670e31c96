/* docker_config: registry credentials from a Docker config.json.
 *
 * The file users already have (`docker login`, a kubernetes.io/
 * dockerconfigjson Secret's .dockerconfigjson) is the credential source, as
 * for Porch's function runner: `auths[<registry>]` holds "auth" =
 * base64("user:password") or "username"/"password". Keys may carry a scheme
 * and a path ("https://ghcr.io/v1/"); Docker Hub's key is
 * "https://index.docker.io/v1/". Credential helpers (credsStore,
 * credHelpers) are not run. */
#ifndef KRM_DOCKER_CONFIG_H
#define KRM_DOCKER_CONFIG_H

#include "core/buf.h"

typedef struct docker_cred {
    char *username;   /* NULL when the file has no entry for the registry */
    char *password;
    char *file;       /* the file read, for messages (NULL if none was found) */
} docker_cred;

/* The default file: $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
 * Returns a malloc'd path or NULL when neither variable is set. */
char *docker_config_default_path(void);

/* Looks up credentials for `registry` (as in image_ref: "docker.io",
 * "ghcr.io", "127.0.0.1:5000") in `path` (NULL: the default file). A missing
 * default file means anonymous; a missing explicit file, unreadable or
 * invalid JSON, or an undecodable "auth" is an error (-1, reason in err). */
int docker_config_lookup(const char *path, const char *registry, docker_cred *out, buf *err);
void docker_cred_free(docker_cred *c);

#endif
