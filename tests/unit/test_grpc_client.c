/* Unit tests for lib/grpc/grpc_client: a call whose first write finds the
 * connection reset ends (UNAVAILABLE, done called once) inside gc_call, as
 * grpc_client.h says, so a caller that runs the loop afterwards must look
 * first. gc_unary once did not, and `runner-client health` then waited for
 * ever on a loop with nothing armed (found by tests/e2e polling a starting
 * pod through the lab's relay, about one poll in twenty). */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/loop.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"

typedef struct ended {
    int calls;
    int status;
} ended;

static void on_done(const gc_result *r, void *ctx)
{
    ended *e = ctx;
    e->calls++;
    e->status = r->status;
}

/* A listener on 127.0.0.1; *port gets its port. */
static int listener(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(fd, 4), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A client connection whose server side has reset it (SO_LINGER 0) before
 * any call; *lfd gets the listener to close at the end. */
static gc_conn *reset_connection(loop *l, int *lfd)
{
    int port;
    *lfd = listener(&port);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
    buf err = {0};
    gc_conn *c = gc_connect(l, addr, 5000000000LL, 1 << 20, &err);
    cr_assert_not_null(c, "%s", err.data ? err.data : "");
    buf_free(&err);
    int sfd = accept(*lfd, NULL, NULL);
    cr_assert_geq(sfd, 0);
    struct linger lg = {.l_onoff = 1, .l_linger = 0};
    cr_assert_eq(setsockopt(sfd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg), 0);
    close(sfd);
    usleep(50000);   /* the RST reaches the client's socket */
    return c;
}

Test(grpc_client, call_on_a_reset_connection_ends_inside_gc_call)
{
    loop *l = loop_new();
    cr_assert_not_null(l);
    int lfd;
    gc_conn *c = reset_connection(l, &lfd);

    ended e = {0};
    int rc = gc_call(c, "/grpc.health.v1.Health/Check", "", 0, 1000000000LL, on_done, &e);
    if (rc == 0) {
        cr_assert_eq(e.calls, 1, "the call did not end inside gc_call");
        cr_assert_eq(e.status, GRPC_UNAVAILABLE);
        cr_assert_eq(gc_pending(c), 0);
    } else {
        cr_assert_eq(e.calls, 0, "done called although gc_call returned -1");
    }
    gc_close(c);
    cr_assert_eq(e.calls, rc == 0 ? 1 : 0, "done called twice");
    loop_free(l);
    close(lfd);
}

static void stop_loop(loop *l, void *ctx)
{
    (void)ctx;
    loop_stop(l);
}

/* gc_call_start, unlike gc_call, never ends the call inside: on the same
 * reset connection the end comes from the loop (or the call does not start). */
Test(grpc_client, call_start_on_a_reset_connection_ends_from_the_loop)
{
    loop *l = loop_new();
    cr_assert_not_null(l);
    int lfd;
    gc_conn *c = reset_connection(l, &lfd);

    ended e = {0};
    gc_stream *s = gc_call_start(c, "/grpc.health.v1.Health/Check", "", 0, 1000000000LL, on_done, &e);
    cr_assert_eq(e.calls, 0, "the call ended inside gc_call_start");
    if (s) {
        loop_timer_add(l, 200000000, stop_loop, NULL);   /* the end comes on the first turn */
        loop_run(l);
        cr_assert_eq(e.calls, 1);
        cr_assert_eq(e.status, GRPC_UNAVAILABLE);
    }
    gc_close(c);
    loop_free(l);
    close(lfd);
}
