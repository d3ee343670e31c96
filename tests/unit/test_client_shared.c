/* Unit tests for the client side that the pod runtime uses against a real
 * in-process server (rpc_server with the health service, on a loopback
 * port): runtime/health_check (SERVING, NOT_SERVING, nothing listening)
 * and grpc_client's shared connections (gc_call_start: many streams on one
 * connection, the server accepting one; gc_call_cancel; gc_usable and the
 * transport flag once the server sends GOAWAY). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/loop.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"
#include "grpc/metrics.h"
#include "grpc/rpc_server.h"
#include "runtime/health_check.h"
#include "runtime/services.h"
#include "log_capture.h"

static const rpc_method *const methods[] = {&health_check_method, NULL};

typedef struct fixture {
    loop *l;
    server *s;
    char addr[32];
} fixture;

/* The server's log ("Listening on"): shown only when a test fails before
 * its stop(). */
static void start(fixture *f, int64_t idle_timeout_ns)
{
    log_capture_start();
    f->l = loop_new();
    cr_assert_not_null(f->l);
    rpc_server_config cfg = {.max_message = 1 << 20, .max_streams = 100,
                             .idle_timeout_ns = idle_timeout_ns,
                             .shutdown_grace_ns = 1000000000LL, .methods = methods};
    buf why = {0};
    cr_assert_eq(rpc_server_config_fill(&cfg, &why), 0, "%s", why.data);
    f->s = rpc_server_new(f->l, &cfg);
    cr_assert_not_null(f->s);
    cr_assert_eq(rpc_server_listen(f->s, &why), 0, "%s", why.data);
    snprintf(f->addr, sizeof f->addr, "127.0.0.1:%d", rpc_server_port(f->s));
    buf_free(&why);
}

static void stop(fixture *f)
{
    rpc_server_free(f->s);
    loop_free(f->l);
    log_capture_end();
}

/* Runs the loop until *flag is set or 5 s passed. */
static void stop_loop(loop *l, void *ctx)
{
    (void)ctx;
    loop_stop(l);
}

static void run_until(loop *l, const int *flag)
{
    int64_t until = loop_now_ns() + 5000000000LL;
    while (!*flag && loop_now_ns() < until) {
        loop_timer *t = loop_timer_add(l, 10000000, stop_loop, NULL);
        loop_run(l);
        loop_timer_cancel(l, t);
    }
}

static gc_conn *client(fixture *f)
{
    buf err = {0};
    gc_conn *c = gc_connect(f->l, f->addr, 1000000000LL, 1 << 20, &err);
    cr_assert_not_null(c, "%s", err.data);
    buf_free(&err);
    return c;
}

/* Runs the loop for ns: whatever was under way has had its time. */
static void spin(loop *l, int64_t ns)
{
    loop_timer *t = loop_timer_add(l, ns, stop_loop, NULL);
    cr_assert_not_null(t);
    loop_run(l);
}

/* The value of an unlabelled counter in this process's /metrics text. */
static double counter(const char *name)
{
    buf out = {0};
    metrics_render(&out, 0);
    char key[128];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *at = out.data ? strstr(out.data, key) : NULL;
    cr_assert_not_null(at, "%s not in /metrics", name);
    double v = strtod(at + strlen(key), NULL);
    buf_free(&out);
    return v;
}

typedef struct heard {
    int done, serving;
    char why[300];
} heard;

static void on_health(int serving, const char *why, void *ctx)
{
    heard *h = ctx;
    h->done++;
    h->serving = serving;
    snprintf(h->why, sizeof h->why, "%s", why);
}

Test(health_check, serving_then_not_serving)
{
    fixture f;
    start(&f, 0);
    heard h = {0};
    cr_assert_not_null(health_check_start(f.l, f.addr, 1000000000LL, on_health, &h));
    run_until(f.l, &h.done);
    cr_assert_eq(h.done, 1);
    cr_assert_eq(h.serving, 1, "%s", h.why);
    cr_assert_str_eq(h.why, "health SERVING");

    health_set_not_serving("the function cannot be run");
    h = (heard){0};
    cr_assert_not_null(health_check_start(f.l, f.addr, 1000000000LL, on_health, &h));
    run_until(f.l, &h.done);
    health_set_not_serving(NULL);
    cr_assert_eq(h.done, 1);
    cr_assert_eq(h.serving, 0);
    cr_assert_str_eq(h.why, "health NOT_SERVING");
    stop(&f);
}

Test(health_check, nothing_listening)
{
    fixture f;
    start(&f, 0);
    char addr[32];
    snprintf(addr, sizeof addr, "%s", f.addr);
    rpc_server_free(f.s);   /* the port is closed now */
    f.s = NULL;
    heard h = {0};
    cr_assert_not_null(health_check_start(f.l, addr, 1000000000LL, on_health, &h));
    run_until(f.l, &h.done);
    cr_assert_eq(h.done, 1);
    cr_assert_eq(h.serving, 0);
    cr_assert(strstr(h.why, "failed to connect"), "%s", h.why);
    cr_assert_null(health_check_start(f.l, "not-an-ip:1", 1000000000LL, on_health, &h));
    stop(&f);
}

Test(health_check, cancelled_check_never_answers)
{
    fixture f;
    start(&f, 0);
    heard h = {0};
    health_check *c = health_check_start(f.l, f.addr, 1000000000LL, on_health, &h);
    cr_assert_not_null(c);
    health_check_cancel(c);
    spin(f.l, 200000000);
    cr_assert_eq(h.done, 0);
    stop(&f);
}

/* ---- one connection, many calls ------------------------------------------ */

typedef struct ended {
    int calls, ok, transport, status;
} ended;

static void on_done(const gc_result *r, void *ctx)
{
    ended *e = ctx;
    e->calls++;
    e->ok += r->status == GRPC_OK;
    e->transport += r->transport;
    e->status = r->status;
}

#define CHECK "/grpc.health.v1.Health/Check"

Test(shared_conn, concurrent_streams_share_one_accepted_connection)
{
    fixture f;
    start(&f, 0);
    double before = counter("krm_connections_accepted_total");
    gc_conn *c = client(&f);
    ended e = {0};
    for (int i = 0; i < 8; i++)
        cr_assert_not_null(gc_call_start(c, CHECK, "", 0, 1000000000LL, on_done, &e));
    cr_assert_eq(e.calls, 0, "done ran inside gc_call_start");
    cr_assert_eq(gc_pending(c), 8);
    int all = 0;
    while (e.calls < 8 && !all) {
        run_until(f.l, &all);
        all = e.calls == 8;
    }
    cr_assert_eq(e.ok, 8);
    /* and successive calls on it */
    for (int i = 0; i < 3; i++) {
        int before_calls = e.calls;
        cr_assert_not_null(gc_call_start(c, CHECK, "", 0, 1000000000LL, on_done, &e));
        int one = 0;
        while (!one) {
            run_until(f.l, &one);
            one = e.calls > before_calls;
        }
    }
    cr_assert_eq(e.ok, 11);
    cr_assert(gc_usable(c));
    cr_assert_eq(counter("krm_connections_accepted_total") - before, 1);
    gc_close(c);
    stop(&f);
}

Test(shared_conn, cancel_one_call_keeps_the_others)
{
    fixture f;
    start(&f, 0);
    gc_conn *c = client(&f);
    ended gone = {0}, kept = {0};
    gc_stream *s = gc_call_start(c, CHECK, "", 0, 1000000000LL, on_done, &gone);
    cr_assert_not_null(gc_call_start(c, CHECK, "", 0, 1000000000LL, on_done, &kept));
    gc_call_cancel(s);
    run_until(f.l, &kept.calls);
    cr_assert_eq(kept.ok, 1);
    spin(f.l, 200000000);
    cr_assert_eq(gone.calls, 0, "a cancelled call's done ran");
    cr_assert(gc_usable(c));
    cr_assert_eq(gc_pending(c), 0, "the cancelled stream was not let go");
    gc_close(c);
    stop(&f);
}

Test(shared_conn, goaway_makes_it_unusable)
{
    fixture f;
    start(&f, 100000000LL);   /* the server closes connections idle 100 ms */
    gc_conn *c = client(&f);
    ended e = {0};
    cr_assert_not_null(gc_call_start(c, CHECK, "", 0, 1000000000LL, on_done, &e));
    run_until(f.l, &e.calls);
    cr_assert_eq(e.ok, 1);
    spin(f.l, 400000000);
    cr_assert_not(gc_usable(c), "still usable after the server's GOAWAY and close");
    cr_assert_null(gc_call_start(c, CHECK, "", 0, 1000000000LL, on_done, &e));
    gc_close(c);
    stop(&f);
}

Test(shared_conn, calls_ended_by_a_lost_connection_say_transport)
{
    fixture f;
    start(&f, 0);
    gc_conn *c = client(&f);
    ended e = {0};
    cr_assert_not_null(gc_call_start(c, CHECK, "", 0, 1000000000LL, on_done, &e));
    run_until(f.l, &e.calls);
    cr_assert_eq(e.transport, 0, "an answered call is not a transport failure");
    /* the server goes away with the connection open; a call in flight then */
    rpc_server_free(f.s);
    f.s = NULL;
    ended lost = {0};
    if (gc_call_start(c, CHECK, "", 0, 1000000000LL, on_done, &lost)) {
        run_until(f.l, &lost.calls);
        cr_assert_eq(lost.calls, 1);
        cr_assert_eq(lost.status, GRPC_UNAVAILABLE);
        cr_assert_eq(lost.transport, 1);
    }
    cr_assert_not(gc_usable(c));
    gc_close(c);
    stop(&f);
}
