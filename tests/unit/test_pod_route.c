/* Unit tests for pod_route: Porch's choice of pod for a call (least
 * loaded, ties round-robin) and its scale-up rule (no pod, or the best
 * pod's load at the waitlist length while below the cap), driven as the
 * pod cache drives it: calls arriving, queueing, finishing. */
#include <criterion/criterion.h>

#include "kube/pod_route.h"

#define MAXP 8

/* A function's pods as the cache would hold them. */
typedef struct fn_sim {
    pod_route_view pods[MAXP];
    int n;
    unsigned turn;
    int cap, waitlist;
    int created;
} fn_sim;

/* One call arrives: the pod it joins (a new one is appended, as its load). */
static int arrive(fn_sim *f)
{
    int i = pod_route_pick(f->pods, f->n, f->cap, f->waitlist, &f->turn);
    if (i == POD_ROUTE_NEW) {
        cr_assert_lt(f->n, MAXP);
        i = f->n++;
        f->pods[i] = (pod_route_view){0};
        f->created++;
    }
    cr_assert(i >= 0 && i < f->n);
    f->pods[i].load++;
    return i;
}

Test(pod_route, concurrent_first_calls_with_cap_1_share_one_pod)
{
    fn_sim f = {.cap = 1, .waitlist = 2};
    for (int k = 0; k < 8; k++)
        cr_assert_eq(arrive(&f), 0);
    cr_assert_eq(f.created, 1);
    cr_assert_eq(f.pods[0].load, 8);
}

Test(pod_route, cap_2_waitlist_1_starts_a_second_pod_and_uses_both)
{
    fn_sim f = {.cap = 2, .waitlist = 1};
    int per_pod[2] = {0};
    for (int k = 0; k < 8; k++)
        per_pod[arrive(&f)]++;
    cr_assert_eq(f.created, 2);
    cr_assert_eq(per_pod[0], 4);
    cr_assert_eq(per_pod[1], 4);
}

Test(pod_route, a_second_pod_only_once_the_first_reaches_the_waitlist)
{
    fn_sim f = {.cap = 3, .waitlist = 2};
    cr_assert_eq(arrive(&f), 0);          /* no pod: a new one */
    cr_assert_eq(arrive(&f), 0);          /* load 1 < 2: joins it */
    cr_assert_eq(arrive(&f), 1);          /* load 2 reached: a second pod */
    cr_assert_eq(f.created, 2);
    cr_assert_eq(arrive(&f), 1);          /* least loaded: the new one */
    cr_assert_eq(arrive(&f), 2);          /* both at 2: a third */
    cr_assert_eq(f.created, 3);
    for (int k = 0; k < 6; k++)
        arrive(&f);                       /* cap reached: spread, never a fourth */
    cr_assert_eq(f.created, 3);
    cr_assert_eq(f.pods[0].load + f.pods[1].load + f.pods[2].load, 11);
    for (int i = 0; i < 3; i++)
        cr_assert(f.pods[i].load >= 3 && f.pods[i].load <= 4, "pod %d: %d", i, f.pods[i].load);
}

Test(pod_route, least_loaded_wins_over_the_turn)
{
    pod_route_view pods[3] = {{.load = 3}, {.load = 1}, {.load = 2}};
    unsigned turn = 2;
    cr_assert_eq(pod_route_pick(pods, 3, 3, 5, &turn), 1);
    cr_assert_eq(turn, 2);
}

Test(pod_route, ties_go_round_robin)
{
    pod_route_view pods[3] = {{.load = 1}, {.load = 1}, {.load = 1}};
    unsigned turn = 0;
    int seen[3] = {0};
    for (int k = 0; k < 9; k++)
        seen[pod_route_pick(pods, 3, 3, 5, &turn)]++;
    cr_assert(seen[0] == 3 && seen[1] == 3 && seen[2] == 3, "%d %d %d", seen[0], seen[1], seen[2]);
}

Test(pod_route, calls_finishing_bring_the_load_back_to_one_pod)
{
    fn_sim f = {.cap = 2, .waitlist = 1};
    arrive(&f);
    arrive(&f);
    cr_assert_eq(f.created, 2);
    f.pods[0].load = f.pods[1].load = 0;  /* both idle */
    int a = arrive(&f);
    f.pods[a].load = 0;                   /* answered before the next one */
    int b = arrive(&f);
    cr_assert_eq(f.created, 2, "an idle pod is reused, none started");
    cr_assert_neq(a, b, "idle pods take turns");
}

Test(pod_route, a_failing_pod_takes_no_call_while_another_can)
{
    pod_route_view pods[2] = {{.load = 0, .failed = 1}, {.load = 5}};
    unsigned turn = 0;
    cr_assert_eq(pod_route_pick(pods, 2, 2, 1, &turn), 1);
    /* alone, below the cap: a new pod instead */
    cr_assert_eq(pod_route_pick(pods, 1, 2, 1, &turn), POD_ROUTE_NEW);
    /* alone at the cap: the call waits for its verdict (and is handed on or told why) */
    cr_assert_eq(pod_route_pick(pods, 1, 1, 1, &turn), 0);
}

Test(pod_route, limits_below_one_count_as_one)
{
    pod_route_view pods[1] = {{.load = 0}};
    unsigned turn = 0;
    cr_assert_eq(pod_route_pick(NULL, 0, 0, 0, &turn), POD_ROUTE_NEW);
    cr_assert_eq(pod_route_pick(pods, 1, 0, 0, &turn), 0, "cap 0 is 1: never a second pod");
    pods[0].load = 1;
    cr_assert_eq(pod_route_pick(pods, 1, 2, 0, &turn), POD_ROUTE_NEW, "waitlist 0 is 1");
}

Test(pod_route, postfix_is_the_smallest_free_number)
{
    unsigned used[] = {1, 3, 2, 5};
    cr_assert_eq(pod_route_postfix(NULL, 0), 1);
    cr_assert_eq(pod_route_postfix(used, 1), 2);
    cr_assert_eq(pod_route_postfix(used, 2), 2);
    cr_assert_eq(pod_route_postfix(used, 4), 4);
}
