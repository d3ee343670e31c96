/* http_multi: libcurl's multi interface on our loop; see http_multi.h. */
#include "http/http_multi.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/epoll.h>

struct http_multi {
    loop *l;
    CURLM *multi;
    loop_timer timer;   /* curl's timeout, when it is not 0 */
    loop_defer now;     /* curl's timeout of 0 */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }
void http_global_init(void) { pthread_once(&curl_once, curl_init_once); }

loop *http_multi_loop(const http_multi *m) { return m->l; }

/* Finishes what curl says is done; only ever after socket_action returned. */
static void check_done(http_multi *m)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        http_xfer *x = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&x);
        CURLcode code = msg->data.result;
        /* msg is not used after the removal */
        curl_multi_remove_handle(m->multi, x->easy);
        x->_added = 0;
        x->done(x, code);
    }
}

static void on_fd(loop *l, int fd, uint32_t events, void *ctx)
{
    (void)l;
    http_multi *m = ctx;
    int flags = 0;
    if (events & (EPOLLIN | EPOLLHUP))
        flags |= CURL_CSELECT_IN;
    if (events & EPOLLOUT)
        flags |= CURL_CSELECT_OUT;
    if (events & EPOLLERR)
        flags |= CURL_CSELECT_ERR;
    int running;
    curl_multi_socket_action(m->multi, fd, flags, &running);
    check_done(m);
}

static int socket_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e;
    (void)socketp;
    http_multi *m = userp;
    if (what == CURL_POLL_REMOVE) {
        loop_unwatch(m->l, s);
        return 0;
    }
    uint32_t ev = (what & CURL_POLL_IN ? LOOP_READ : 0) | (what & CURL_POLL_OUT ? LOOP_WRITE : 0);
    return loop_watch(m->l, s, ev, on_fd, m) < 0 ? -1 : 0;
}

static void on_timer(loop *l, void *ctx)
{
    (void)l;
    http_multi *m = ctx;
    int running;
    curl_multi_socket_action(m->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(m);
}

/* curl's one timer: each call replaces it; -1 removes it, 0 is "as soon
 * as you can" (a deferred call, not a timer). libcurl must not be called
 * from here, so the work happens in on_timer. */
static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    http_multi *m = userp;
    loop_timer_disarm(m->l, &m->timer);
    loop_defer_cancel(&m->now);
    if (timeout_ms == 0)
        loop_defer_post(m->l, &m->now);
    else if (timeout_ms > 0)
        loop_timer_arm(m->l, &m->timer, timeout_ms > INT64_MAX / 1000000
                                            ? INT64_MAX : (int64_t)timeout_ms * 1000000);
    return 0;
}

http_multi *http_multi_new(loop *l, buf *err)
{
    http_global_init();
    http_multi *m = calloc(1, sizeof *m);
    if (!m) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    m->l = l;
    loop_timer_init(&m->timer, on_timer, m);
    loop_defer_init(&m->now, on_timer, m);
    if (!(m->multi = curl_multi_init())) {
        free(m);
        buf_printf(err, "curl_multi_init failed");
        return NULL;
    }
    if (curl_multi_setopt(m->multi, CURLMOPT_SOCKETFUNCTION, socket_cb) != CURLM_OK ||
        curl_multi_setopt(m->multi, CURLMOPT_SOCKETDATA, m) != CURLM_OK ||
        curl_multi_setopt(m->multi, CURLMOPT_TIMERFUNCTION, timer_cb) != CURLM_OK ||
        curl_multi_setopt(m->multi, CURLMOPT_TIMERDATA, m) != CURLM_OK) {
        curl_multi_cleanup(m->multi);
        free(m);
        buf_printf(err, "curl_multi_setopt refused the loop callbacks");
        return NULL;
    }
    return m;
}

void http_multi_free(http_multi *m)
{
    if (!m)
        return;
    curl_multi_cleanup(m->multi);   /* may still call socket_cb: m is alive */
    loop_timer_disarm(m->l, &m->timer);
    loop_defer_cancel(&m->now);
    free(m);
}

int http_multi_add(http_multi *m, http_xfer *x, buf *err)
{
    if (curl_easy_setopt(x->easy, CURLOPT_PRIVATE, x) != CURLE_OK)
        return buf_fail(err, "curl_easy_setopt(CURLOPT_PRIVATE) failed");
    CURLMcode mc = curl_multi_add_handle(m->multi, x->easy);
    if (mc != CURLM_OK)
        return buf_fail(err, "curl_multi_add_handle: %s", curl_multi_strerror(mc));
    x->_added = 1;
    return 0;
}

void http_multi_remove(http_multi *m, http_xfer *x)
{
    if (x && x->_added) {
        curl_multi_remove_handle(m->multi, x->easy);
        x->_added = 0;
    }
}
