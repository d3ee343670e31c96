/* file_watch: tells, on the loop, that a file may have changed, the way
 * Kubernetes changes a mounted Secret or ConfigMap.
 *
 * The kubelet never writes a mounted file in place: it writes a new
 * timestamped directory beside it and renames the `..data` link onto it,
 * so the file's own inode never changes and a watch on the file would see
 * nothing. The watch is on the file's directory (inotify: a link renamed
 * in, a file written and closed, created, deleted or moved away), and the
 * owner is told once per burst of events, FILE_WATCH_SETTLE_NS after the
 * last: it then reads the file and decides whether it changed (an event is
 * a hint, never the content). No polling; no blocking call on the loop. */
#ifndef KRM_CORE_FILE_WATCH_H
#define KRM_CORE_FILE_WATCH_H

#include "core/buf.h"
#include "core/loop.h"

#define FILE_WATCH_SETTLE_NS (100LL * 1000000)   /* an update's several events: one call */

typedef struct file_watch file_watch;
typedef void file_watch_fn(void *ctx);

/* Watches the directory holding path (path outlives the watch). NULL with
 * err set (errno's text) when inotify refuses. */
file_watch *file_watch_start(loop *l, const char *path, file_watch_fn *fn, void *ctx, buf *err);
void file_watch_stop(file_watch *w);

#endif
