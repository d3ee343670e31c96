/* Unit tests for replicas sharing a namespace, through the pod cache
 * itself (pod_script answers its API calls): this replica ("a") writes its
 * own Lease and renews it; its scans never touch a pod of a replica whose
 * Lease is live, nor an unowned one; a pod of a replica whose Lease expired
 * (or that never had one, past a grace) is claimed with a patch bound to the
 * listed resourceVersion; a pod listed as this replica's but not held is
 * deleted once idle for its time to live; while its own Lease is not
 * current it deletes and claims nothing; an expired replica that owns no
 * pod has its Lease deleted. The replicas' Leases are judged by the wall
 * clock (as the API server's renewTime is written), this replica's own
 * Lease by the script's clock. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "kube/pod_owner.h"
#include "kube/pod_template.h"
#include "pod_script.h"

#define IMAGE "example.com/fn:v1"
#define SECOND 1000000000LL
#define HOUR 3600

static char leases[2048], pods[8192];

static pod_cache *replica(pod_script *s, int64_t lease_ns)
{
    pod_cache_opts o;
    pod_script_init(s, &o);
    o.owner = "a";
    o.lease_ns = lease_ns;
    o.ttl_ns = 10 * SECOND;
    o.scan_ns = 20000000;   /* a scan every 20 ms of the loop's time */
    leases[0] = pods[0] = '\0';
    s->leases = leases;
    s->pods = pods;
    return pod_script_cache(s, &o);
}

/* One more Lease in the listing: holder's, renewed ago_s seconds ago. */
static void add_lease(const char *holder, long ago_s, int duration_s)
{
    char renewed[40];
    pod_script_rfc3339(renewed, ago_s);
    size_t n = strlen(leases);
    snprintf(leases + n, sizeof leases - n, "%s{\"metadata\":{\"name\":\"fn-runner-%s\"},"
             "\"spec\":{\"holderIdentity\":\"%s\",\"leaseDurationSeconds\":%d,\"renewTime\":\"%s\"}}",
             n ? "," : "[", holder, holder, duration_s, renewed);
}

/* One more function pod in the listing: owner's ("" for none), made
 * created_s seconds ago, its last call idle_s seconds ago. */
static void add_pod(const char *name, const char *owner, long created_s, long idle_s)
{
    char created[40], last[40], annotations[300] = "";
    pod_script_rfc3339(created, created_s);
    pod_script_rfc3339(last, idle_s);
    last[19] = 'Z';
    last[20] = '\0';
    if (*owner)
        snprintf(annotations, sizeof annotations, "\"" POD_OWNER_ANNOTATION "\":\"%s\",", owner);
    size_t n = strlen(pods);
    snprintf(pods + n, sizeof pods - n, "%s{\"metadata\":{\"name\":\"%s\",\"resourceVersion\":\"rv-%s\","
             "\"creationTimestamp\":\"%.19sZ\",\"labels\":{\"fn.kpt.dev/image\":\"id-%s\"},"
             "\"annotations\":{%s\"" POD_LAST_CALL_ANNOTATION "\":\"%s\"}},"
             "\"spec\":{\"containers\":[{\"name\":\"function\",\"image\":\"" IMAGE "\"}]},"
             "\"status\":{\"phase\":\"Running\",\"podIP\":\"127.0.0.1\"}}",
             n ? "," : "[", name, name, created, name, annotations, last);
}

static void close_lists(void)
{
    strcat(leases[0] ? leases : strcpy(leases, "["), "]");
    strcat(pods[0] ? pods : strcpy(pods, "["), "]");
}

static int count(const pod_script *s, const char *verb, const char *resource, const char *name)
{
    return pod_script_count(s, verb, resource, name, NULL);
}

/* Runs the loop (answering as a quiet cluster) until n more scans have
 * listed the pods and been judged. */
static void scans(pod_script *s, int n)
{
    int want = count(s, "list", "pods", NULL) + n;
    for (int i = 0; i < 1000 && count(s, "list", "pods", NULL) < want; i++)
        pod_script_pump(s);
    cr_assert_geq(count(s, "list", "pods", NULL), want, "the scans ran");
    pod_script_pump(s);   /* the last listing judged */
}

Test(pod_cache_owner, a_live_replicas_pods_and_unowned_pods_are_never_touched)
{
    pod_script s;
    pod_cache *pc = replica(&s, 0);
    add_lease("b", 1, 15);
    add_pod("b-1", "b", HOUR, HOUR);   /* idle for an hour: past any time to live */
    add_pod("x-1", "", HOUR, HOUR);    /* made by no replica (by hand, or Porch) */
    close_lists();
    scans(&s, 2);
    s.now += HOUR * SECOND;
    scans(&s, 2);
    cr_assert_eq(count(&s, "delete", "pods", NULL), 0);
    cr_assert_eq(count(&s, "delete", "services", NULL), 0);
    cr_assert_eq(count(&s, "patch", "pods", NULL), 0, "nothing claimed");
    cr_assert_eq(count(&s, "delete", "leases", NULL), 0, "a live replica's Lease is its own");
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, an_expired_replicas_pod_is_claimed_only_as_it_was_listed)
{
    pod_script s;
    pod_cache *pc = replica(&s, 0);
    add_lease("b", HOUR, 15);          /* renewed an hour ago, for 15 s */
    add_pod("b-1", "b", HOUR, HOUR);
    close_lists();
    scans(&s, 2);
    int last = -1;
    cr_assert_geq(pod_script_count(&s, "patch", "pods", "b-1", &last), 1, "claimed");
    const char *body = s.reqs[last].body;
    cr_assert(strstr(body, "\"resourceVersion\":\"rv-b-1\""), "bound to the listed version: %s", body);
    cr_assert(strstr(body, "\"" POD_OWNER_ANNOTATION "\":\"a\""), "now a's: %s", body);
    cr_assert_eq(count(&s, "delete", "pods", NULL), 0, "claimed, not deleted: a call may adopt it");
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, a_pod_whose_owner_never_had_a_lease_waits_out_a_grace_first)
{
    pod_script s;
    pod_cache *pc = replica(&s, 0);
    add_pod("c-old", "c", HOUR, HOUR);   /* no Lease of c at all */
    add_pod("c-new", "c", 1, 1);         /* c may not have written its Lease yet */
    close_lists();
    scans(&s, 2);
    cr_assert_geq(count(&s, "patch", "pods", "c-old"), 1);
    cr_assert_eq(count(&s, "patch", "pods", "c-new"), 0, "a young pod's owner may be starting");
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, this_replicas_untabled_pod_is_deleted_once_idle_for_its_time_to_live)
{
    pod_script s;
    pod_cache *pc = replica(&s, 0);
    add_pod("a-old", "a", HOUR, HOUR);   /* claimed earlier, or an earlier process's */
    add_pod("a-busy", "a", HOUR, 2);     /* called 2 s ago (time to live 10 s) */
    close_lists();
    scans(&s, 2);
    cr_assert_geq(count(&s, "delete", "pods", "a-old"), 1);
    cr_assert_geq(count(&s, "delete", "services", "id-a-old"), 1, "with its Service");
    cr_assert_eq(count(&s, "delete", "pods", "a-busy"), 0);
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, while_its_own_lease_is_not_current_it_deletes_and_claims_nothing)
{
    pod_script s;
    pod_cache *pc = replica(&s, 0);
    s.hold_lease_writes = 1;   /* the API server does not answer its Lease's create */
    add_lease("b", HOUR, 15);
    add_pod("a-old", "a", HOUR, HOUR);
    add_pod("b-1", "b", HOUR, HOUR);
    close_lists();
    scans(&s, 2);
    int create = -1;
    cr_assert_eq(pod_script_count(&s, "create", "leases", NULL, &create), 1);
    cr_assert(strstr(s.reqs[create].body, "\"holderIdentity\":\"a\""), "%s", s.reqs[create].body);
    cr_assert_eq(count(&s, "delete", "pods", NULL), 0, "its pods may be another's by now");
    cr_assert_eq(count(&s, "patch", "pods", NULL), 0);
    pod_script_answer(&s, create, 201, "{}");   /* written: held for its duration */
    scans(&s, 2);
    cr_assert_geq(count(&s, "delete", "pods", "a-old"), 1);
    cr_assert_geq(count(&s, "patch", "pods", "b-1"), 1);
    pod_script_end(&s, pc);
}

Test(pod_cache_owner, its_lease_is_renewed_and_stops_holding_when_renewals_fail)
{
    pod_script s;
    pod_cache *pc = replica(&s, 3 * SECOND);   /* renewed every second (its third) */
    add_pod("a-old", "a", HOUR, HOUR);
    close_lists();
    scans(&s, 2);
    cr_assert_eq(count(&s, "create", "leases", NULL), 1);
    cr_assert_geq(count(&s, "delete", "pods", "a-old"), 1, "held: its own pods are its own");
    /* the next renewal, on the loop's own timer */
    s.hold_lease_writes = 1;
    int patch = -1;
    for (int i = 0; i < 400 && pod_script_count(&s, "patch", "leases", NULL, &patch) == 0; i++)
        pod_script_pump(&s);
    cr_assert_geq(patch, 0, "renewed within 2 s");
    cr_assert_str_eq(s.reqs[patch].name, "fn-runner-a");
    cr_assert(strstr(s.reqs[patch].body, "\"renewTime\":"), "%s", s.reqs[patch].body);
    /* that renewal unanswered past the Lease's duration: no longer held */
    s.now += 4 * SECOND;
    int deletes = count(&s, "delete", "pods", NULL);
    scans(&s, 2);
    cr_assert_eq(count(&s, "delete", "pods", NULL), deletes, "nothing deleted without its Lease");
    /* answered late (held until its send plus 3 s: past already); the
     * next renewal, answered, holds it again */
    s.hold_lease_writes = 0;
    pod_script_answer(&s, patch, 200, "{}");
    scans(&s, 2);
    cr_assert_eq(count(&s, "delete", "pods", NULL), deletes, "a renewal sent 4 s ago holds no more");
    for (int i = 0; i < 400 && count(&s, "delete", "pods", NULL) == deletes; i++)
        pod_script_pump(&s);
    cr_assert_gt(count(&s, "delete", "pods", NULL), deletes, "held again once renewed");
    cr_assert_geq(count(&s, "patch", "leases", NULL), 2);
    /* at stop the Lease is left to expire (a restart of the same name takes it over) */
    pod_cache_free(pc);
    cr_assert_eq(count(&s, "delete", "leases", NULL), 0);
    pod_script_fini(&s);
}

Test(pod_cache_owner, an_expired_replica_that_owns_no_pod_loses_its_lease)
{
    pod_script s;
    pod_cache *pc = replica(&s, 0);
    add_lease("b", HOUR, 15);
    add_lease("c", HOUR, 15);
    add_lease("d", 1, 15);
    add_pod("c-1", "c", 1, 1);   /* c still owns a pod (claimed from it next) */
    close_lists();
    scans(&s, 2);
    cr_assert_geq(count(&s, "delete", "leases", "fn-runner-b"), 1);
    cr_assert_eq(count(&s, "delete", "leases", "fn-runner-c"), 0, "it still owns c-1");
    cr_assert_eq(count(&s, "delete", "leases", "fn-runner-d"), 0, "live");
    cr_assert_eq(count(&s, "delete", "leases", "fn-runner-a"), 0, "never its own");
    pod_script_end(&s, pc);
}
