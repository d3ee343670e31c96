/* registry_tags: a repository's tags, GET /v2/<repository>/tags/list and
 * its next pages (the Link header), on the event loop, as kpt's regclient
 * lister lists them to resolve a function's tag constraint.
 *
 * Pages are handed over one at a time and not kept, so a listing holds one
 * page (asked for 1,000 tags; at most 4 MiB from a registry that sends more)
 * however long the list. Bounded: at most REGISTRY_TAGS_MAX tags over at
 * most REGISTRY_TAGS_PAGES pages; a repository with more is an error, not a
 * list cut short (the highest match could be in the part left out). A next
 * page must stay in the repository (a relative /v2/<repository>/tags/list
 * link): its credentials are the repository's. */
#ifndef KRM_REGISTRY_TAGS_H
#define KRM_REGISTRY_TAGS_H

#include <stddef.h>

#include "core/buf.h"
#include "oci/registry.h"

#define REGISTRY_TAGS_MAX 100000
#define REGISTRY_TAGS_PAGES 1000

typedef struct registry_tags_op registry_tags_op;

/* One page's tags, valid during the call: copy what you keep. */
typedef void registry_tags_page_fn(char *const *tags, size_t n, void *ctx);
/* The listing ended: rc 0 after n tags in all went to page, or -1 with the
 * user's message in err. The op is freed after this returns. */
typedef void registry_tags_fn(int rc, size_t n, const char *err, void *ctx);

/* Lists the tags of image's repository (its tag or digest, if any, does not
 * matter) on m's loop; opts must outlive the op. page runs for each page,
 * then done, later from the loop, exactly once unless cancelled. NULL with why in err when it cannot
 * start (an invalid reference, a bad Docker config). */
registry_tags_op *registry_tags_start(http_multi *m, const char *image, const registry_opts *opts,
                                      registry_tags_page_fn *page, registry_tags_fn *done, void *ctx,
                                      buf *err);
/* Abandons a listing: done is not called. Not from inside done. */
void registry_tags_cancel(registry_tags_op *op);

#endif
