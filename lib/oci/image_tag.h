/* image_tag: a request's Tag applied to its image, as kpt's
 * ResolveFunctionImage applies a Kptfile function's `tag`.
 *
 * An exact version ("v1.2.3") or a word that is no constraint ("latest")
 * replaces the image's tag (and drops its digest); a semver constraint
 * ("^1.2", "~1.2.0", ">=1 <2") means "the highest of the repository's tags
 * that satisfies it", which needs the tags listed first. */
#ifndef KRM_IMAGE_TAG_H
#define KRM_IMAGE_TAG_H

#include <stddef.h>

#include "core/buf.h"

/* Returns 1 with out = image:tag, for an exact version or a literal tag;
 * 0 with out = the image without tag or digest, when tag is a constraint
 * to resolve against the repository's tags; -1 with the reason in err, in
 * kpt's words (an image that is no reference, a literal that is no tag). */
int image_tag_apply(const char *image, const char *tag, buf *out, buf *err);

/* How many bytes of image name the repository, before ":tag" or "@digest". */
size_t image_tag_name_len(const char *image);

#endif
