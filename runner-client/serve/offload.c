/* offload: work on a thread of its own, its end told to the loop through an
 * eventfd; see offload.h. */
#include "serve/offload.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define OFFLOAD_STACK (8u << 20)   /* the main thread's usual RLIMIT_STACK */

struct offload {
    loop *loop;
    pthread_t thread;
    int fd;                  /* eventfd: 1 once work has returned */
    offload_work_fn *work;
    offload_done_fn *done;
    void *ctx;
};

static void *offload_run(void *arg)
{
    offload *o = arg;
    o->work(o->ctx);
    uint64_t one = 1;
    while (write(o->fd, &one, sizeof one) < 0 && errno == EINTR)
        ;   /* an eventfd takes 1 unless it holds 2^64-2 already */
    return NULL;
}

static void offload_on_ready(loop *l, int fd, uint32_t events, void *arg)
{
    (void)events;
    offload *o = arg;
    uint64_t n;
    if (read(fd, &n, sizeof n) < 0 && errno == EAGAIN)
        return;   /* not yet: a spurious wakeup */
    pthread_join(o->thread, NULL);
    loop_unwatch(l, fd);
    close(fd);
    o->done(o, o->ctx);
    free(o);
}

offload *offload_start(loop *l, offload_work_fn *work, offload_done_fn *done, void *ctx,
                       buf *err)
{
    offload *o = calloc(1, sizeof *o);
    if (!o) {
        buf_append_str(err, "out of memory");
        return NULL;
    }
    *o = (offload){.loop = l, .work = work, .done = done, .ctx = ctx};
    o->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (o->fd < 0) {
        buf_printf(err, "eventfd: %s", strerror(errno));
        free(o);
        return NULL;
    }
    if (loop_watch(l, o->fd, LOOP_READ, offload_on_ready, o) < 0) {
        buf_append_str(err, "cannot watch an eventfd");
        close(o->fd);
        free(o);
        return NULL;
    }
    /* The thread starts with the mask it is created with: all blocked. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_attr_t attr;
    int rc = pthread_attr_init(&attr);
    if (!rc && !(rc = pthread_attr_setstacksize(&attr, OFFLOAD_STACK))) {
        pthread_sigmask(SIG_SETMASK, &all, &old);
        rc = pthread_create(&o->thread, &attr, offload_run, o);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    pthread_attr_destroy(&attr);
    if (rc) {
        buf_printf(err, "pthread_create: %s", strerror(rc));
        loop_unwatch(l, o->fd);
        close(o->fd);
        free(o);
        return NULL;
    }
    return o;
}

int offload_abandon(offload *o, int64_t wait_ns)
{
    struct pollfd p = {.fd = o->fd, .events = POLLIN};
    int64_t ms = wait_ns / 1000000;
    int ready;
    while ((ready = poll(&p, 1, ms > INT32_MAX ? INT32_MAX : (int)ms)) < 0 && errno == EINTR)
        ;
    loop_unwatch(o->loop, o->fd);
    if (ready <= 0) {
        /* o and its eventfd stay the thread's until the process ends */
        pthread_detach(o->thread);
        return -1;
    }
    pthread_join(o->thread, NULL);
    close(o->fd);
    free(o);
    return 0;
}
