/* file_watch: a mounted file's directory watched with inotify; see file_watch.h. */
#include "core/file_watch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

/* What the kubelet's atomic writer and a plain rewrite do in a directory. */
#define WATCH_EVENTS (IN_CLOSE_WRITE | IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_DELETE | \
                      IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF)

struct file_watch {
    loop *l;
    int fd;                    /* the inotify instance */
    int watching;              /* fd on the loop (until a read fails) */
    file_watch_fn *fn;
    void *ctx;
    loop_timer settle;         /* the owner told when it fires */
};

static void settled(loop *l, void *ctx)
{
    (void)l;
    file_watch *w = ctx;
    w->fn(w->ctx);
}

static void on_events(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)events;
    file_watch *w = ctx;
    /* Which names changed does not matter (the owner reads the file): the
     * queue is drained and the burst's end awaited. A read is bounded by
     * the buffer; a queue longer than that takes more turns of the loop. */
    _Alignas(struct inotify_event) char drain[4096];
    ssize_t n = read(fd, drain, sizeof drain);
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
        loop_unwatch(l, fd);   /* a broken instance: stop, but still have the file read */
        w->watching = 0;
    }
    loop_timer_arm(l, &w->settle, FILE_WATCH_SETTLE_NS);
}

file_watch *file_watch_start(loop *l, const char *path, file_watch_fn *fn, void *ctx, buf *err)
{
    const char *slash = strrchr(path, '/');
    buf dir = {0};
    if (slash == path)
        buf_append_str(&dir, "/");
    else if (slash)
        buf_append(&dir, path, (size_t)(slash - path));
    else
        buf_append_str(&dir, ".");
    file_watch *w = calloc(1, sizeof *w);
    if (!w || !dir.data) {
        buf_printf(err, "out of memory");
        free(w);
        buf_free(&dir);
        return NULL;
    }
    *w = (file_watch){.l = l, .fn = fn, .ctx = ctx};
    loop_timer_init(&w->settle, settled, w);
    w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (w->fd < 0 || inotify_add_watch(w->fd, dir.data, WATCH_EVENTS) < 0 ||
        loop_watch(l, w->fd, LOOP_READ, on_events, w) < 0) {
        buf_printf(err, "watching %s for changes: %s", dir.data, strerror(errno));
        if (w->fd >= 0)
            close(w->fd);
        free(w);
        buf_free(&dir);
        return NULL;
    }
    w->watching = 1;
    buf_free(&dir);
    return w;
}

void file_watch_stop(file_watch *w)
{
    if (!w)
        return;
    loop_timer_disarm(w->l, &w->settle);
    if (w->watching)
        loop_unwatch(w->l, w->fd);
    close(w->fd);
    free(w);
}
