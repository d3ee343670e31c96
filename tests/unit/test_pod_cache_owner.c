/* Unit tests for replicas sharing the namespace, through the pod cache
 * itself (pod_script keeps the namespace's Leases and pods and holds the
 * clocks): a live replica's pods are never touched, an expired one's are
 * claimed with their resourceVersion (of two racing replicas one wins, the
 * other gets a 409 and leaves the pod to it) and collected once idle, this
 * replica's Lease is renewed every third of its duration, and while it is
 * not current this replica deletes and claims nothing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "pod_script.h"

#include "kube/kube_lease.h"

#define IMAGE "example.com/fn:v1"
#define SECOND 1000000000LL
#define SECOND_US 1000000LL
#define MS 1000000LL
/* Every scan_ns of the loop's time (real): a test's few scans, without
 * one in every round of pod_script_pump. */
#define SCAN_NS (20 * MS)

static pod_cache *replica(pod_script *s, pod_cache_opts o, const char *name, int64_t scan_ns,
                          int64_t lease_ns)
{
    o.owner = name;
    o.ttl_ns = 5 * SECOND;
    o.scan_ns = scan_ns;
    o.lease_ns = lease_ns;
    return pod_script_cache(s, &o);
}

/* The script and replica "a" on it. */
static pod_cache *start(pod_script *s, int64_t scan_ns, int64_t lease_ns)
{
    pod_cache_opts o;
    pod_script_init(s, &o);
    return replica(s, o, "a", scan_ns, lease_ns);
}

/* Runs the loop past the next scan (or two), answering its requests. */
static void scan(pod_script *s)
{
    pod_script_wait(s, SCAN_NS + 10 * MS);
}

static int count(const pod_script *s, const char *verb, const char *resource, const char *name)
{
    return pod_script_count(s, verb, resource, name, NULL);
}

/* Replica "b", gone an hour ago: its Lease expired, its pod b-1 idle since. */
static void expired_replica(pod_script *s)
{
    int64_t hour_ago = pod_script_wall(s) - 3600 * SECOND_US;
    pod_script_lease(s, "b", hour_ago, 15);
    pod_script_add_pod(s, "b-1", "b", IMAGE, hour_ago);
}

Test(pod_cache_owner, a_live_replicas_pods_are_never_touched)
{
    pod_script s;
    pod_cache *pc = start(&s, SCAN_NS, 0);
    int64_t hour_ago = pod_script_wall(&s) - 3600 * SECOND_US;
    pod_script_lease(&s, "b", pod_script_wall(&s), 15);
    pod_script_add_pod(&s, "b-1", "b", IMAGE, hour_ago);   /* idle an hour */
    for (int i = 0; i < 2; i++) {   /* b renews; a's own Lease stays current (15 s) */
        scan(&s);
        s.now += 6 * SECOND;
        pod_script_lease(&s, "b", pod_script_wall(&s), 15);
    }
    scan(&s);
    cr_assert_geq(count(&s, "list", "pods", NULL), 3, "the scan ran");
    cr_assert_eq(count(&s, "patch", "pods", "b-1"), 0, "not claimed");
    cr_assert_eq(count(&s, "delete", "pods", "b-1"), 0, "not deleted");
    cr_assert_eq(count(&s, "delete", "services", NULL), 0);
    cr_assert_eq(count(&s, "delete", "leases", NULL), 0, "b's Lease kept");
    cr_assert_str_eq(pod_script_find_pod(&s, "b-1")->owner, "b");
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, an_expired_replicas_pod_is_claimed_with_its_version_then_collected)
{
    pod_script s;
    pod_cache *pc = start(&s, SCAN_NS, 0);
    expired_replica(&s);
    s.hold_claims = 1;
    scan(&s);
    cr_assert_eq(count(&s, "delete", "leases", NULL), 0, "b's Lease kept while b owns a pod");
    s.hold_claims = 0;
    pod_script_pump(&s);
    int claim = 0;   /* the first (a scan while it was held may have sent another: a 409) */
    while (claim < s.n_reqs &&
           (strcmp(s.reqs[claim].verb, "patch") || strcmp(s.reqs[claim].name, "b-1")))
        claim++;
    cr_assert_lt(claim, s.n_reqs, "claimed");
    cr_assert(strstr(s.reqs[claim].body, "\"resourceVersion\":\"7\""),
              "conditional on the version listed: %s", s.reqs[claim].body);
    cr_assert(strstr(s.reqs[claim].body, "\"" POD_OWNER_ANNOTATION "\":\"a\""), "%s",
              s.reqs[claim].body);
    cr_assert_eq(s.reqs[claim].status, 200);
    cr_assert_str_eq(pod_script_find_pod(&s, "b-1")->owner, "a");
    scan(&s);   /* the next scan sees b owns nothing */
    cr_assert_eq(count(&s, "delete", "pods", "b-1"), 0, "a claimed pod's idle time starts again");
    cr_assert_eq(count(&s, "delete", "leases", KUBE_LEASE_PREFIX "b"), 1,
                 "b owns no pod any more: its Lease is deleted");
    cr_assert_null(pod_script_find_lease(&s, "b"));
    s.now += 6 * SECOND;   /* past the time to live (5 s) */
    scan(&s);
    cr_assert_eq(count(&s, "delete", "pods", "b-1"), 1, "collected once idle");
    cr_assert_eq(count(&s, "delete", "services", "id-b-1"), 1, "with its Service");
    cr_assert_null(pod_script_find_pod(&s, "b-1"));
    pod_script_end(&s, pc);
}

/* Claims of b-1 sent by replica name (answered or held). */
static int claims_by(const pod_script *s, const char *name)
{
    char owner[80];
    snprintf(owner, sizeof owner, "\"" POD_OWNER_ANNOTATION "\":\"%s\"", name);
    int n = 0;
    for (int i = 0; i < s->n_reqs; i++)
        n += !strcmp(s->reqs[i].verb, "patch") && !strcmp(s->reqs[i].name, "b-1") &&
             strstr(s->reqs[i].body, owner);
    return n;
}

Test(pod_cache_owner, of_two_replicas_claiming_one_pod_one_wins_and_the_other_leaves_it)
{
    pod_script s;
    pod_cache_opts o;
    pod_script_init(&s, &o);
    pod_cache *a = replica(&s, o, "a", SCAN_NS, 0), *c = replica(&s, o, "c", SCAN_NS, 0);
    expired_replica(&s);
    s.hold_claims = 1;   /* each claims b-1 from the listing where b owns it */
    for (int i = 0; i < 50 && !(claims_by(&s, "a") && claims_by(&s, "c")); i++)
        scan(&s);
    cr_assert(claims_by(&s, "a") && claims_by(&s, "c"), "both replicas claim it");
    s.hold_claims = 0;
    pod_script_pump(&s);
    int won = 0, lost = 0, claims = count(&s, "patch", "pods", "b-1");
    for (int i = 0; i < s.n_reqs; i++)
        if (!strcmp(s.reqs[i].verb, "patch") && !strcmp(s.reqs[i].name, "b-1")) {
            won += s.reqs[i].status == 200;
            lost += s.reqs[i].status == 409;
        }
    cr_assert_eq(won, 1, "one claim wins");
    cr_assert_eq(lost, claims - 1, "the others, on the same resourceVersion, get a 409");
    char winner[64];
    snprintf(winner, sizeof winner, "%s", pod_script_find_pod(&s, "b-1")->owner);
    cr_assert(!strcmp(winner, "a") || !strcmp(winner, "c"), "owner %s", winner);
    s.now += 6 * SECOND;   /* idle past its time to live; both Leases current */
    scan(&s);
    scan(&s);
    cr_assert_eq(count(&s, "delete", "pods", "b-1"), 1, "deleted once, by the winner %s", winner);
    cr_assert_eq(count(&s, "patch", "pods", "b-1"), claims, "the loser did not try again");
    pod_cache_free(a);
    pod_script_end(&s, c);
}

Test(pod_cache_owner, our_lease_is_renewed_every_third_of_its_duration)
{
    pod_script s;
    pod_cache *pc = start(&s, 60 * SECOND, 3 * SECOND);
    pod_script_pump(&s);
    cr_assert_eq(count(&s, "create", "leases", NULL), 1, "created at start");
    script_lease *l = pod_script_find_lease(&s, "a");
    cr_assert(l);
    cr_assert_str_eq(l->name, KUBE_LEASE_PREFIX "a");
    cr_assert_eq(l->duration_s, 3);
    cr_assert_eq(l->renew_us, pod_script_wall(&s));
    s.now += SECOND;
    pod_script_wait(&s, 700 * MS);
    cr_assert_eq(count(&s, "patch", "leases", NULL), 0, "not before a third of its duration");
    pod_script_wait(&s, 500 * MS);
    cr_assert_eq(count(&s, "patch", "leases", KUBE_LEASE_PREFIX "a"), 1, "renewed at 1 s");
    cr_assert_eq(pod_script_find_lease(&s, "a")->renew_us, pod_script_wall(&s),
                 "with the time it was renewed");
    cr_assert_eq(count(&s, "create", "leases", NULL), 1);
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, while_our_lease_is_not_renewed_nothing_is_deleted_or_claimed)
{
    pod_script s;
    pod_cache *pc = start(&s, 300 * MS, 3 * SECOND);
    pod_script_pump(&s);
    cr_assert(pod_script_find_lease(&s, "a"));
    s.lease_status = 500;       /* the API server refuses its renewals */
    s.now += 4 * SECOND;        /* past its 3 s */
    pod_script_wait(&s, 1200 * MS);
    int renewal = -1;
    cr_assert_eq(pod_script_count(&s, "patch", "leases", NULL, &renewal), 1,
                 "renewal tried at 1 s");
    cr_assert_eq(s.reqs[renewal].status, 500);
    expired_replica(&s);
    pod_script_add_pod(&s, "a-1", "a", IMAGE, pod_script_wall(&s) - 3600 * SECOND_US);
    pod_script_wait(&s, 700 * MS);   /* two scans */
    cr_assert_eq(count(&s, "patch", "pods", NULL), 0, "b's pod not claimed");
    cr_assert_eq(count(&s, "delete", "pods", NULL), 0, "a's own idle pod not deleted");
    cr_assert_eq(count(&s, "delete", "leases", NULL), 0);
    s.lease_status = 0;          /* the API server answers again */
    pod_script_wait(&s, 1200 * MS);
    cr_assert_geq(count(&s, "patch", "leases", NULL), 2, "renewed again after a second");
    cr_assert_eq(count(&s, "patch", "pods", "b-1"), 1, "then b's pod is claimed");
    cr_assert_eq(count(&s, "delete", "pods", "a-1"), 1, "and a's own idle pod collected");
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, on_stop_our_lease_is_left_to_expire)
{
    pod_script s;
    pod_cache *pc = start(&s, SCAN_NS, 0);
    scan(&s);
    cr_assert(pod_script_find_lease(&s, "a"));
    pod_cache_free(pc);
    pod_script_pump(&s);
    cr_assert_eq(count(&s, "delete", "leases", NULL), 0,
                 "not deleted: its pods stay this replica's until it expires (a restart of "
                 "the same name keeps them)");
    cr_assert(pod_script_find_lease(&s, "a"));
    cr_assert_eq(pod_script_unanswered(&s), 0);
    pod_script_fini(&s);
}

/* Stopped with its Lease's write and its scan's listing in flight (the
 * API server slow), the cache leaves nothing behind: both are cancelled,
 * not left to an answer that may never come (kube_client_free drops its
 * requests unanswered), which leaked the Lease and the scan. */
Test(pod_cache_owner, on_stop_requests_in_flight_are_cancelled)
{
    pod_script s;
    pod_cache *pc = start(&s, SCAN_NS, 0);
    s.hold_leases = 1;
    scan(&s);
    cr_assert_eq(count(&s, "create", "leases", NULL), 1);
    cr_assert_eq(count(&s, "list", "leases", NULL), 1, "the scan waits for the Leases' listing");
    cr_assert_eq(pod_script_unanswered(&s), 2);
    pod_cache_free(pc);
    cr_assert_eq(pod_script_unanswered(&s), 0, "both cancelled");
    pod_script_fini(&s);
}

/* The call tests' scans: the first lists the Leases (before it, every
 * other replica counts as live), the next comes after the call's claim. */
#define CALL_SCAN_NS (200 * MS)

static void first_scan(pod_script *s)
{
    pod_script_wait(s, CALL_SCAN_NS + 50 * MS);
}

/* b-1: a Ready pod for IMAGE under its podId, as this cache would make it
 * (a call may adopt it), owned by b, whose Lease was written at renew_us. */
static script_pod *ready_pod_of_b(pod_script *s, int64_t renew_us)
{
    pod_script_lease(s, "b", renew_us, 15);
    script_pod *p = pod_script_add_pod(s, "b-1", "b", IMAGE, pod_script_wall(s) - 3600 * SECOND_US);
    pod_script_pod_id(IMAGE, p->pod_id);
    p->ready = 1;
    return p;
}

Test(pod_cache_owner, a_call_never_adopts_a_live_replicas_pod)
{
    pod_script s;
    pod_cache *pc = start(&s, CALL_SCAN_NS, 0);
    ready_pod_of_b(&s, pod_script_wall(&s));
    first_scan(&s);
    script_answers got = {0};
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-1");   /* its own, under another podId */
    cr_assert_eq(count(&s, "patch", "pods", "b-1"), 0, "b-1 not claimed");
    cr_assert_eq(count(&s, "create", "pods", NULL), 1);
    cr_assert_str_eq(pod_script_find_pod(&s, "b-1")->owner, "b");
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, a_call_adopts_an_expired_replicas_pod_by_claiming_it)
{
    pod_script s;
    pod_cache *pc = start(&s, CALL_SCAN_NS, 0);
    first_scan(&s);   /* b's pod is not there yet: the scan would claim it */
    ready_pod_of_b(&s, pod_script_wall(&s) - 3600 * SECOND_US);
    script_answers got = {0};
    cr_assert(pod_cache_get(pc, IMAGE, pod_script_answered, &got));
    pod_script_pump(&s);
    int claim = -1;
    cr_assert_eq(pod_script_count(&s, "patch", "pods", "b-1", &claim), 1, "claimed");
    cr_assert(strstr(s.reqs[claim].body, "\"resourceVersion\":\"7\""), "%s", s.reqs[claim].body);
    cr_assert_eq(s.reqs[claim].status, 200);
    pod_script_expect(&got, 0, 1, "b-1");
    cr_assert_eq(count(&s, "create", "pods", NULL), 0, "none made");
    pod_script_end(&s, pc);
}

/* Between the listing and the claim, replica c claimed b-1 first: the
 * claim gets a 409, and the call goes to a pod of this replica's. c
 * started after this replica last listed the Leases, so its Lease is not
 * known yet: the pod it just claimed must count as live all the same (it
 * was claimed back, as an old pod whose owner has no Lease). */
Test(pod_cache_owner, a_call_whose_claim_loses_leaves_the_pod_to_the_winner)
{
    pod_script s;
    pod_cache *pc = start(&s, CALL_SCAN_NS, 0);
    first_scan(&s);
    script_pod *b1 = ready_pod_of_b(&s, pod_script_wall(&s) - 3600 * SECOND_US);
    s.hold_claims = 1;
    script_answers got = {0};
    cr_assert(pod_cache_get(pc, IMAGE, pod_script_answered, &got));
    pod_script_pump(&s);
    int claim = -1;
    cr_assert_eq(pod_script_count(&s, "patch", "pods", "b-1", &claim), 1);
    snprintf(b1->owner, sizeof b1->owner, "c");   /* c's claim came first */
    rfc3339_micro(pod_script_wall(&s), b1->last_call);   /* as a claim writes it */
    b1->version++;
    pod_script_lease(&s, "c", pod_script_wall(&s), 15);
    s.hold_claims = 0;
    pod_script_pump(&s);
    cr_assert_eq(s.reqs[claim].status, 409);
    cr_assert_str_eq(b1->owner, "c");
    cr_assert_eq(got.n, 0, "not answered with b-1");
    cr_assert_eq(count(&s, "create", "pods", NULL), 1, "a pod of its own made instead");
    pod_script_ready(&s, "fn-1", "127.0.0.1");
    pod_script_pump(&s);
    pod_script_expect(&got, 0, 1, "fn-1");
    cr_assert_eq(count(&s, "patch", "pods", "b-1"), 1, "b-1 left to c");
    cr_assert_eq(count(&s, "delete", "pods", "b-1"), 0);
    pod_script_end(&s, pc);
}
