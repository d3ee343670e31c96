/* kube_lease: this replica's Lease, created and renewed on the loop; see kube_lease.h. */
#include "kube/kube_lease.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "kube/pod_owner.h"

#define LEASE_RETRY_NS (1000LL * 1000000)   /* after a refused write */

struct kube_lease {
    loop *l;
    const pod_api *api;
    void *api_ctx;
    const char *ns, *holder;
    char name[300];
    int64_t duration_ns;
    int exists;                /* created (or found): renew by patch */
    int said_failing;          /* a failure logged until the next success */
    int64_t held_until_ns;     /* api's now_ns until which it was last written */
    int64_t sent_ns;           /* the write in flight's start */
    loop_timer next;           /* the next write, */
    loop_defer now;            /* or the next write from the loop */
    uint64_t renewed, failed;
};

static void write_lease(kube_lease *l);

static void on_timer(loop *lp, void *ctx)
{
    (void)lp;
    write_lease(ctx);
}

static void again_in(kube_lease *l, int64_t ns)
{
    if (ns > 0)
        loop_timer_arm(l->l, &l->next, ns);
    else
        loop_defer_post(l->l, &l->now);
}

static void on_written(const kube_result *r, void *ctx)
{
    kube_lease *l = ctx;
    int64_t period = l->duration_ns / 3 > LEASE_RETRY_NS ? l->duration_ns / 3 : LEASE_RETRY_NS;
    if (r->ok) {
        l->exists = 1;
        l->renewed++;
        /* from when it was sent: the renewTime written is that moment's */
        l->held_until_ns = l->sent_ns > INT64_MAX - l->duration_ns ? INT64_MAX
                                                                   : l->sent_ns + l->duration_ns;
        if (l->said_failing)
            log_info("Lease %s renewed again", l->name);
        l->said_failing = 0;
        again_in(l, period);
        return;
    }
    if (r->already_exists && !l->exists) {   /* left by an earlier process of this name */
        l->exists = 1;
        again_in(l, 0);
        return;
    }
    if (r->not_found && l->exists)   /* deleted meanwhile: made again */
        l->exists = 0;
    l->failed++;
    if (!l->said_failing)
        log_warn("Lease %s (this replica's, in %s): %s; retrying (other replicas take this one's "
                 "pods once it has expired)", l->name, l->ns, r->error);
    l->said_failing = 1;
    again_in(l, LEASE_RETRY_NS);
}

static void write_lease(kube_lease *l)
{
    char now[RFC3339_MICRO_MAX], body[1024];
    rfc3339_micro(l->api->wall_us(l->api_ctx), now);
    long long secs = (l->duration_ns + 999999999) / 1000000000;
    int n;
    if (l->exists)
        n = snprintf(body, sizeof body, "{\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\""
                     ":%lld,\"renewTime\":\"%s\"}}", l->holder, secs, now);
    else
        n = snprintf(body, sizeof body, "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":"
                     "\"Lease\",\"metadata\":{\"name\":\"%s\",\"labels\":{\"" POD_LEASE_LABEL
                     "\":\"true\"}},\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":"
                     "%lld,\"acquireTime\":\"%s\",\"renewTime\":\"%s\"}}", l->name, l->holder, secs,
                     now, now);
    buf err = {0};
    kube_ref ref = {"/apis/coordination.k8s.io/v1", "leases", l->ns, l->exists ? l->name : NULL,
                    NULL};
    int rc = n < 0 || (size_t)n >= sizeof body ? -1
             : l->exists ? l->api->patch(l->api_ctx, &ref, body, (size_t)n, on_written, l, &err)
                         : l->api->create(l->api_ctx, &ref, "application/json", body, (size_t)n,
                                          on_written, l, &err);
    if (rc == 0)
        l->sent_ns = l->api->now_ns(l->api_ctx);
    else {   /* a holder that is not a DNS name is refused by pod_cache_new */
        log_warn("Lease %s: %s", l->name, err.data ? err.data : "out of memory");
        again_in(l, LEASE_RETRY_NS);
    }
    buf_free(&err);
}

kube_lease *kube_lease_start(loop *lp, const pod_api *api, void *api_ctx, const char *ns,
                             const char *holder, int64_t duration_ns)
{
    kube_lease *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->l = lp;
    l->api = api;
    l->api_ctx = api_ctx;
    l->ns = ns;
    l->holder = holder;
    l->duration_ns = duration_ns > 0 ? duration_ns : KUBE_LEASE_DURATION_NS;
    snprintf(l->name, sizeof l->name, KUBE_LEASE_PREFIX "%s", holder);
    loop_timer_init(&l->next, on_timer, l);
    loop_defer_init(&l->now, on_timer, l);
    again_in(l, 0);
    return l;
}

void kube_lease_stop(kube_lease *l)
{
    if (!l)
        return;
    loop_timer_disarm(l->l, &l->next);
    loop_defer_cancel(&l->now);
    /* a write in flight is abandoned: its answer may never come (the
     * client freed next drops its requests unanswered) */
    l->api->cancel(l->api_ctx, l);
    free(l);
}

int kube_lease_held(const kube_lease *l)
{
    return l && l->api->now_ns(l->api_ctx) < l->held_until_ns;
}

int64_t kube_lease_duration_ns(const kube_lease *l)
{
    return l->duration_ns;
}

void kube_lease_counts(const kube_lease *l, uint64_t *renewed, uint64_t *failed)
{
    *renewed = l ? l->renewed : 0;
    *failed = l ? l->failed : 0;
}
