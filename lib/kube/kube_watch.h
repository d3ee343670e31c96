/* kube_watch: a Kubernetes watch (list, then watch from the list's
 * resourceVersion), decoded line by line as the events stream.
 *
 * The API server sends one JSON object per line: {"type": "ADDED" |
 * "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR", "object": {...}}. Lines are
 * bounded (KUBE_WATCH_MAX_LINE): a longer one ends the stream, which is then
 * reopened. The watch asks for bookmarks (allowWatchBookmarks), so the
 * resourceVersion it resumes from stays fresh; when the stream ends it is
 * reopened from the last resourceVersion seen: at once when the server ended
 * it cleanly after it lived a healthy while (5 s; its timeoutSeconds, quiet
 * or not), else after a backoff doubling from 250 ms to 30 s, reset only by
 * a stream that lived that healthy while (a server that ends each watch
 * after an event is not asked again at once, events or not). The client ends a
 * request itself 30 s after the server should have (a connection that died
 * silently). A 410 Gone (an ERROR event or the status) means that version
 * is too old: the watch lists again (logged) and tells the caller through
 * on_list (relisted = 1), so it can rebuild its view. */
#ifndef KRM_KUBE_WATCH_H
#define KRM_KUBE_WATCH_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/json.h"
#include "kube/kube_client.h"

#define KUBE_WATCH_MAX_LINE (4u << 20)

typedef enum kube_event_type {
    KUBE_ADDED,
    KUBE_MODIFIED,
    KUBE_DELETED,
    KUBE_BOOKMARK,
    KUBE_ERROR,
} kube_event_type;

/* ---- decoding (no network) ---- */

/* Splits a byte stream into lines across chunks. */
typedef struct kube_lines {
    buf partial;
    size_t max;
} kube_lines;

typedef int kube_line_fn(const char *line, size_t len, void *ctx);

/* Feeds a chunk; fn gets each complete line (without '\n', "\r" dropped,
 * empty lines skipped). Returns 0, -1 when a line exceeds max (or out of
 * memory), or what fn returned when it was negative. */
int kube_lines_feed(kube_lines *l, const char *data, size_t len, kube_line_fn *fn, void *ctx);
void kube_lines_free(kube_lines *l);

typedef struct kube_event {
    kube_event_type type;
    json *doc;               /* the whole line, parsed (owned) */
    const json *object;      /* doc's "object" */
    const char *resource_version;  /* object's metadata.resourceVersion, or NULL */
    long code;               /* ERROR: the Status's code (410 for Gone) */
} kube_event;

/* Parses one watch line. 0, or -1 with why in err. */
int kube_event_parse(const char *line, size_t len, kube_event *ev, buf *err);
void kube_event_free(kube_event *ev);
const char *kube_event_type_name(kube_event_type t);

/* ---- watching ---- */

typedef struct kube_watch kube_watch;

typedef struct kube_watch_fns {
    /* The list (its "items"), at the start and after each relist. */
    void (*on_list)(const json *list, int relisted, void *ctx);
    /* Each ADDED / MODIFIED / DELETED (bookmarks are handled inside). */
    void (*on_event)(kube_event_type type, const json *object, void *ctx);
    /* A failure; fatal = 1 when the watch stopped: the first list, or a
     * watch request, failed with an error the user must fix, such as 401,
     * 403 (an RBAC Role that allows list but not watch) or 404. */
    void (*on_error)(const char *message, int fatal, void *ctx);
} kube_watch_fns;

kube_watch *kube_watch_start(kube_client *c, const kube_ref *ref, const kube_watch_fns *fns,
                             void *ctx, buf *err);
/* Stops the watch (not from inside its callbacks' on_event). With a list in
 * flight it is freed when that list returns, so free the client only after
 * the loop has run it out (or accept the small leak at exit). */
void kube_watch_stop(kube_watch *w);

/* The backoff before reconnect attempt n (0, 1, ...): 250 ms doubling,
 * capped at 30 s (exposed for tests). */
int64_t kube_watch_backoff_ns(unsigned attempt);

#endif
