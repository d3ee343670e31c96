/* Unit tests for pod_owner: which pods a replica sharing its namespace may
 * touch, from the replicas' Leases, the pods' owner annotations and the
 * time (nephio#1069: two runners deleting each other's pods). */
#include <criterion/criterion.h>

#include "kube/pod_owner.h"

#define S 1000000LL   /* µs */
#define NOW (1800000000LL * S)

static const lease_view leases[] = {
    {"runner-a", NOW - 5 * S, 15},    /* renewed 5 s ago: live */
    {"runner-b", NOW - 40 * S, 15},   /* 40 s ago, 15 s lease: expired beyond the margin */
    {"runner-c", NOW - 18 * S, 15},   /* 3 s past its expiry: within the margin, still live */
    {"runner-d", -1, 15},             /* never renewed */
};

static pod_owner_facts facts(const char *me)
{
    return (pod_owner_facts){.me = me, .leases = leases, .n_leases = 4, .leases_known = 1,
                             .now_us = NOW, .margin_us = 5 * S, .grace_us = 30 * S};
}

Test(pod_owner, own_pods_are_mine_whatever_the_leases)
{
    pod_owner_facts f = facts("runner-a");
    cr_assert_eq(pod_owner_judge(&f, "runner-a", NOW - 3600 * S), POD_OWNER_MINE);
    f.leases_known = 0;
    cr_assert_eq(pod_owner_judge(&f, "runner-a", -1), POD_OWNER_MINE);
}

Test(pod_owner, a_live_replicas_pods_are_left_alone)
{
    pod_owner_facts f = facts("runner-b");
    cr_assert_eq(pod_owner_judge(&f, "runner-a", NOW - 3600 * S), POD_OWNER_LIVE);
    /* a Lease just past its duration: the margin covers clocks that differ */
    cr_assert_eq(pod_owner_judge(&f, "runner-c", NOW - 3600 * S), POD_OWNER_LIVE);
}

Test(pod_owner, an_expired_replicas_pods_may_be_claimed)
{
    pod_owner_facts f = facts("runner-a");
    cr_assert_eq(pod_owner_judge(&f, "runner-b", NOW - 60 * S), POD_OWNER_EXPIRED);
    f.now_us += 3 * S;   /* runner-c: past renew + duration + margin */
    cr_assert_eq(pod_owner_judge(&f, "runner-c", NOW - 60 * S), POD_OWNER_EXPIRED);
}

Test(pod_owner, an_owner_without_a_lease_is_gone_only_for_old_pods)
{
    pod_owner_facts f = facts("runner-a");
    /* a replica that has not created its Lease yet, or whose Lease is gone */
    cr_assert_eq(pod_owner_judge(&f, "runner-new", NOW - 2 * S), POD_OWNER_LIVE);
    cr_assert_eq(pod_owner_judge(&f, "runner-new", -1), POD_OWNER_LIVE);
    cr_assert_eq(pod_owner_judge(&f, "runner-gone", NOW - 31 * S), POD_OWNER_EXPIRED);
    cr_assert_eq(pod_owner_judge(&f, "runner-d", NOW - 31 * S), POD_OWNER_EXPIRED);
    cr_assert_eq(pod_owner_judge(&f, "runner-d", NOW - 1 * S), POD_OWNER_LIVE);
}

Test(pod_owner, before_the_leases_are_listed_every_other_owner_is_live)
{
    pod_owner_facts f = facts("runner-a");
    f.leases_known = 0;
    cr_assert_eq(pod_owner_judge(&f, "runner-b", NOW - 3600 * S), POD_OWNER_LIVE);
    cr_assert_eq(pod_owner_judge(&f, "runner-gone", NOW - 3600 * S), POD_OWNER_LIVE);
}

Test(pod_owner, unowned_pods_are_none)
{
    pod_owner_facts f = facts("runner-a");
    cr_assert_eq(pod_owner_judge(&f, NULL, NOW - 3600 * S), POD_OWNER_NONE);
    cr_assert_eq(pod_owner_judge(&f, "", NOW - 3600 * S), POD_OWNER_NONE);
}

Test(pod_owner, a_lease_far_in_the_future_saturates)
{
    lease_view huge[] = {{"runner-x", INT64_MAX - 1, INT64_MAX / 2}};
    pod_owner_facts f = facts("runner-a");
    f.leases = huge;
    f.n_leases = 1;
    f.margin_us = INT64_MAX;
    cr_assert_eq(pod_owner_judge(&f, "runner-x", NOW), POD_OWNER_LIVE);
}

Test(pod_owner, a_service_stays_while_another_pod_selects_it)
{
    pod_owner_pod pods[] = {
        {"fn-1-abc", "fn-1", "runner-a", 0},
        {"fn-1-def", "fn-1", "runner-b", 0},
        {"fn-2-ghi", "fn-2", "runner-a", 0},
        {"fn-3-jkl", "fn-3", "runner-b", 1},
    };
    cr_assert(pod_owner_service_in_use(pods, 4, "fn-1", "fn-1-abc"));
    cr_assert_not(pod_owner_service_in_use(pods, 4, "fn-2", "fn-2-ghi"));
    cr_assert_not(pod_owner_service_in_use(pods, 4, "fn-3", NULL));   /* only a terminating one */
    cr_assert(pod_owner_service_in_use(pods, 4, "fn-2", NULL));
}

Test(pod_owner, kubernetes_times_read_and_written)
{
    cr_assert_eq(rfc3339_us("2027-01-15T08:00:00Z"), 1800000000LL * S);
    cr_assert_eq(rfc3339_us("2027-01-15T08:00:00.123456Z"), 1800000000LL * S + 123456);
    cr_assert_eq(rfc3339_us("2027-01-15T08:00:00.5Z"), 1800000000LL * S + 500000);
    cr_assert_eq(rfc3339_us("2027-01-15T08:00:00+02:00"), -1);
    cr_assert_eq(rfc3339_us("yesterday"), -1);
    cr_assert_eq(rfc3339_us(NULL), -1);
    char out[RFC3339_MICRO_MAX];
    rfc3339_micro(1800000000LL * S + 42, out);
    cr_assert_str_eq(out, "2027-01-15T08:00:00.000042Z");
    cr_assert_eq(rfc3339_us(out), 1800000000LL * S + 42);
}
