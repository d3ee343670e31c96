/* pkg_item: one item of a function's output seen as an entry of a package
 * file: which file it goes to, at which position, and the object as it is
 * to be written there.
 *
 * Why: kpt maps a function's output back to files through the reader
 * annotations rl_input set (kpt_annotations.h); what a function adds
 * without them goes to a file kpt names after the object. Those
 * annotations, and the other internal ones kpt uses on the way
 * (internal.config.kubernetes.io/..., the legacy config.k8s.io/id), are
 * bookkeeping: they must never reach a user's file or an unwrapped output.
 *
 * Rules, as kpt (kyaml's kio writers) applies them:
 *  - path: internal.config.kubernetes.io/path, else the legacy
 *    config.kubernetes.io/path; without either, "[NAMESPACE/]KIND_NAME.yaml"
 *    with KIND lower-cased (kioutil.CreatePathAnnotationValue). The path
 *    is cleaned ("./a.yaml" is "a.yaml"); an absolute one, or one that
 *    leaves the package through "..", is refused.
 *  - index: internal.config.kubernetes.io/index, else the legacy one; a
 *    decimal number. Without one the item follows the file's numbered ones
 *    in output order.
 *  - written: the object without the bookkeeping annotations; when that
 *    leaves `annotations` empty it goes too, and then `metadata` if it held
 *    nothing else (the reader created them). */
#ifndef KRM_RC_PKG_ITEM_H
#define KRM_RC_PKG_ITEM_H

#include <stddef.h>

#include "core/buf.h"
#include "pkg/event_list.h"
#include "pkg/rl_writer.h"

typedef struct pkg_item {
    size_t root, end;  /* the object's events [root, end) in its event_list */
    char *path;        /* cleaned, relative to the package; owned */
    unsigned long index;
    int has_index;
    size_t position;   /* among the output's items, 0-based */
} pkg_item;

/* Fills *it for the object (a mapping) at [root, end) of list, the
 * position-th item. Returns 0, or -1 with a one-line reason in err naming
 * the item ("items[3] (ConfigMap/x): path \"../a.yaml\" leaves the package"). */
int pkg_item_locate(const event_list *list, size_t root, size_t end, size_t position,
                    pkg_item *it, buf *err);
void pkg_item_free(pkg_item *it);

/* Emits the object at [root, end) of list as one document without the
 * bookkeeping annotations. The events are handed to the emitter (each item
 * can be emitted once). Returns 0 or -1 (w's err set). */
int pkg_item_emit(rl_writer *w, event_list *list, size_t root, size_t end);

/* The annotation key (len bytes) is kpt bookkeeping. */
int pkg_item_is_bookkeeping(const char *key, size_t len);

#endif
