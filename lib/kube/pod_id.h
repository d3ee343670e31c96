/* pod_id: the name a function pod is known by (Porch's "podId"), and the
 * Kubernetes name checks it relies on.
 *
 * Why: Porch's function runner labels each function pod
 * `fn.kpt.dev/image: <podId>`, names its Service `<podId>` and creates the pod
 * with `generateName: <podId>-`. The cache manager recognises pods (also the
 * ones a Porch function runner created, when it adopts them at startup) by
 * that label, so our podId must be byte-identical to Porch's whenever Porch's
 * is usable.
 *
 * Porch's rule (func/internal/podmanager.go podID):
 *     <last repository path segment, '_' -> '-'>-<tag or digest, '.' removed>-<postfix>-<hex[:8]>
 * where the tag is "latest" for an untagged reference, a digest reference
 * (`img@sha256:...`) contributes its whole digest ("sha256:<64 hex>") as the
 * tag, postfix is 1, 2, ... (pods of that image) and hex is the image's
 * manifest digest in hex. Example: ghcr.io/kptdev/krm-functions-catalog/
 * set-namespace:v0.4.1, postfix 1, digest sha256:0123abcd... ->
 * set-namespace-v041-1-0123abcd.
 *
 * The label value and the Service name must be a DNS-1035 label (lowercase
 * [a-z0-9-], starts with a letter, ends with a letter or digit, at most 63
 * characters). Porch's output is not one for long names or tags, uppercase
 * or '_' in tags, names starting with a digit, and every digest reference,
 * and Porch then fails to create the Service. pod_id_make keeps Porch's
 * output when it is valid and otherwise repairs it:
 *   1. a digest reference uses the first 8 hex of its own digest as the tag
 *      part (instead of "sha256:<64 hex>");
 *   2. the head `<name>-<tag>` is lowercased and every character outside
 *      [a-z0-9-] becomes '-';
 *   3. a head that does not start with a letter gets the prefix "fn-";
 *   4. the head is cut so that head + `-<postfix>-<8 hex>` fits in 63
 *      characters, and '-' left at its end are dropped.
 * The `-<postfix>-<8 hex>` suffix is never cut, so two images share a podId
 * only when their manifest digests share 8 hex digits (Porch's own limit). */
#ifndef KRM_POD_ID_H
#define KRM_POD_ID_H

#include <stddef.h>

#include "core/buf.h"

#define POD_ID_MAX 63   /* a DNS-1035 label */

/* Porch's podId exactly as Porch computes it (possibly not a valid label),
 * appended to out. image: a reference (`[registry/]path[:tag][@digest]`);
 * digest: the image's manifest digest, "sha256:<hex>" or bare hex (at least
 * 8 lowercase hex digits). Returns 0, or -1 with a reason appended to err. */
int pod_id_porch(const char *image, const char *digest, unsigned long postfix, buf *out,
                 buf *err);

/* The podId to use: Porch's when it is a valid DNS-1035 label, else the
 * repaired one (rules above). out gets a NUL-terminated label. Returns 0, or
 * -1 with a reason appended to err (bad reference or digest, out of memory). */
int pod_id_make(const char *image, const char *digest, unsigned long postfix,
                char out[POD_ID_MAX + 1], buf *err);

/* The digest part of a digest reference ("sha256:..." after '@'), or NULL. */
const char *pod_id_image_digest(const char *image);

/* Kubernetes name rules (apimachinery validation). 1 when valid. */
int dns1035_label_valid(const char *s);     /* Service names, podId */
int dns1123_label_valid(const char *s);     /* namespaces */
int dns1123_subdomain_valid(const char *s); /* pod names */

#endif
