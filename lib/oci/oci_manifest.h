/* oci_manifest: reading the JSON documents of an image pull: which kind a
 * manifest is (image manifest or index / manifest list, OCI or Docker
 * schema 2), which index entry is the wanted platform, the config
 * descriptor, and the config's Entrypoint and Cmd.
 *
 * Kept apart from the HTTP code so the choices (platform matching, media
 * type fallbacks) are unit-tested on plain JSON. Pointers returned in
 * oci_descriptor borrow from the json tree. */
#ifndef KRM_OCI_MANIFEST_H
#define KRM_OCI_MANIFEST_H

#include <stddef.h>

#include "core/buf.h"
#include "core/json.h"

#define OCI_MT_INDEX "application/vnd.oci.image.index.v1+json"
#define OCI_MT_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define DOCKER_MT_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define DOCKER_MT_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define DOCKER_MT_SCHEMA1 "application/vnd.docker.distribution.manifest.v1+json"
#define DOCKER_MT_SCHEMA1_SIGNED "application/vnd.docker.distribution.manifest.v1+prettyjws"

/* The Accept header for manifests, go-containerregistry's list and order. */
#define OCI_MANIFEST_ACCEPT                                                        \
    DOCKER_MT_SCHEMA1 "," DOCKER_MT_SCHEMA1_SIGNED "," DOCKER_MT_MANIFEST ","     \
    OCI_MT_MANIFEST "," DOCKER_MT_LIST "," OCI_MT_INDEX

/* The JSON values a registry's document may hold (manifest, index, config,
 * token answer, error body), for json_parse_max: the tree costs about 80
 * bytes a value, and an image with 1,000 layers has a few thousand. */
#define REGISTRY_JSON_MAX_VALUES 200000

typedef enum oci_kind { OCI_KIND_UNKNOWN, OCI_KIND_MANIFEST, OCI_KIND_INDEX, OCI_KIND_SCHEMA1 } oci_kind;

typedef struct oci_platform {
    char os[32];
    char arch[32];
    char variant[32];   /* "" matches any */
} oci_platform;

typedef struct oci_descriptor {
    const char *media_type;   /* may be NULL */
    const char *digest;
    long long size;           /* -1 when absent */
} oci_descriptor;

/* "linux/arm64" or "linux/arm/v7". Returns 0 or -1 with a reason. */
int oci_platform_parse(const char *s, oci_platform *out, buf *err);
void oci_platform_format(const oci_platform *p, char out[100]);

/* Whether d is "sha256:" and 64 lowercase hex digits (the only algorithm
 * accepted: digests end up in URLs and must be verifiable). */
int oci_digest_valid(const char *d);

/* The kind from the response's Content-Type (parameters ignored), else from
 * the document's mediaType, else from its shape. */
oci_kind oci_kind_of(const char *content_type, const json *doc);

/* The entry of index for platform `want` (an entry without a platform
 * counts as linux/amd64). Returns 0, or -1 with "no linux/amd64 entry in
 * the index (platforms: ...)" or a malformed-index reason in err. */
int oci_index_select(const json *index, const oci_platform *want, oci_descriptor *out, buf *err);

/* The config descriptor of an image manifest. Returns 0 or -1 with a reason. */
int oci_manifest_config(const json *manifest, oci_descriptor *out, buf *err);

/* A string array of the config's "config" object (key "Entrypoint" or
 * "Cmd"): *out is a malloc'd NULL-terminated copy (empty when absent or
 * null). Returns 0 or -1 with a reason. */
int oci_config_strings(const json *config, const char *key, char ***out, size_t *n, buf *err);

void oci_strings_free(char **v);

#endif
