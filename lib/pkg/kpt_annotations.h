/* kpt_annotations: sets kpt's reader annotations on one KRM object as it
 * is copied into a ResourceList: the file it came from
 * (internal.config.kubernetes.io/path) and its position among the file's
 * objects (internal.config.kubernetes.io/index), each also in its legacy
 * config.kubernetes.io/ form.
 *
 * Why: a function sees only its ResourceList, and kpt/Porch map the
 * function's output back to files through these annotations. Setting them
 * exactly as kyaml's kio readers do lets a function be exercised here as it
 * will be run there.
 *
 * Rules, as kyaml applies them: existing values of the reader's keys are
 * replaced in place, new keys are appended in sorted order, other
 * annotations are kept; a missing or null metadata or annotations is
 * created. Without a path (stdin) only the index is set. Like kyaml's
 * CopyLegacyAnnotations, a path or id annotation present in only one of its
 * two forms is copied to the other. Values are written single-quoted, so
 * '0' stays a string. */
#ifndef KRM_RC_KPT_ANNOTATIONS_H
#define KRM_RC_KPT_ANNOTATIONS_H

#include <stddef.h>

#include "pkg/event_list.h"
#include "pkg/rl_writer.h"

/* The reader's keys (pkg_item reads them back from a function's output). */
#define KPT_PATH_KEY "internal.config.kubernetes.io/path"
#define KPT_INDEX_KEY "internal.config.kubernetes.io/index"
#define KPT_LEGACY_PATH_KEY "config.kubernetes.io/path"
#define KPT_LEGACY_INDEX_KEY "config.kubernetes.io/index"

/* `index` for an object that has none and gets none (render moving a
 * function's new object into its package: it follows the file's numbered
 * ones, as it would have). */
#define KPT_NO_INDEX ((size_t)-1)

/* Emits into w the object (a mapping) whose events are [root, end) of
 * list, with the reader annotations for `rel_path` (NULL: none) and
 * `index` (KPT_NO_INDEX: none). Returns 0, or -1 with a message located at w's current
 * document (metadata or annotations that are not mappings). */
int kpt_annotations_emit_object(rl_writer *w, event_list *list, size_t root, size_t end,
                                const char *rel_path, size_t index);

#endif
