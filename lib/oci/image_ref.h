/* image_ref: container image references, parsed with Docker's conventions.
 *
 * "busybox" means docker.io/library/busybox:latest; the first component is
 * a registry only when it looks like a host (has a '.' or a ':', or is
 * "localhost"); Docker Hub's API is served by registry-1.docker.io. Names
 * and tags are checked against the OCI distribution grammar so that a typo
 * is reported here, with what is wrong, rather than as a registry 404. */
#ifndef KRM_IMAGE_REF_H
#define KRM_IMAGE_REF_H

#include "core/buf.h"

#define IMAGE_REF_DOCKER_HUB "docker.io"
#define IMAGE_REF_DOCKER_HUB_API "registry-1.docker.io"

typedef struct image_ref {
    char *registry;    /* "docker.io", "ghcr.io", "127.0.0.1:5000", "[::1]:5000" */
    char *api_host;    /* host[:port] the v2 API is on ("registry-1.docker.io" for Docker Hub) */
    char *repository;  /* "library/busybox", "kptdev/krm-functions-catalog/set-labels" */
    char *tag;         /* "latest" when neither tag nor digest is given; NULL when only a digest is */
    char *digest;      /* "sha256:<64 hex>" or NULL */
} image_ref;

/* Parses s[0..n). Returns 0, or -1 with a reason naming the reference in
 * err (nothing to free then). A NUL byte inside is refused, naming its
 * offset: text that came with a length (YAML, protobuf) and holds a NUL
 * would name another image as a C string ("example.com/fn:v1\0..." is not
 * "example.com/fn:v1"), so every caller that has a length passes it. */
int image_ref_parse_n(const char *s, size_t n, image_ref *out, buf *err);
/* image_ref_parse_n(s, strlen(s)), for strings that cannot hold a NUL
 * (command-line arguments). */
int image_ref_parse(const char *s, image_ref *out, buf *err);
void image_ref_free(image_ref *r);

/* Whether s is a valid reference, by the same rules as image_ref_parse (the
 * one check every command applies to an image it is given). Returns 0, or
 * -1 with the reason appended to err, e.g. `invalid image reference "Bad
 * Image!": repository name "Bad Image!" must be lowercase`. */
int image_ref_check_n(const char *s, size_t n, buf *err);
int image_ref_check(const char *s, buf *err);

/* What to ask the registry's manifests endpoint for: the digest when there
 * is one (it pins the content), else the tag. */
const char *image_ref_reference(const image_ref *r);

/* Whether r names Docker Hub. */
int image_ref_is_docker_hub(const image_ref *r);

#endif
