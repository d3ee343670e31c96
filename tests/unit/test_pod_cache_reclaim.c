/* Unit tests for idle reclaim through the pod cache itself (pod_script
 * answers its API calls and holds its clock): each pod's time to live
 * counts from its own last call, a pod with a call running is never
 * reclaimed, and an image's warm minimum is exempt. */
#include <criterion/criterion.h>
#include <string.h>

#include "pod_script.h"

#define IMAGE "example.com/fn:v1"
#define SECOND 1000000000LL
#define TTL (10 * SECOND)

static pod_cache *cache(pod_script *s)
{
    pod_cache_opts o;
    pod_script_init(s, &o);
    o.max_pods = 2;
    o.waitlist = 1;
    o.ttl_ns = TTL;
    o.scan_ns = 1000000;   /* every ms of the loop's time; idle time is the script's */
    return pod_script_cache(s, &o);
}

/* fn-1 and fn-2 serving (fn-1 had a call running when fn-2 was started),
 * neither with a call now; both last used at the script's present. */
static void two_pods(pod_script *s, pod_cache *pc, script_answers *got)
{
    pod_script_start_pod(s, pc, IMAGE, got, "fn-1");
    pod_cache_call_begin(pc, IMAGE, "fn-1");
    pod_script_start_pod(s, pc, IMAGE, got, "fn-2");
    pod_cache_call_end(pc, IMAGE, "fn-1");
}

static int deleted(const pod_script *s, const char *name)
{
    return pod_script_count(s, "delete", "pods", name, NULL);
}

Test(pod_cache_reclaim, each_pod_counts_its_own_idle_time)
{
    pod_script s;
    script_answers got = {0};
    pod_cache *pc = cache(&s);
    two_pods(&s, pc, &got);
    s.now += 6 * SECOND;
    pod_cache_call_begin(pc, IMAGE, "fn-1");
    pod_cache_call_end(pc, IMAGE, "fn-1");   /* fn-1 used at 6 s */
    pod_script_pump(&s);
    cr_assert_eq(deleted(&s, NULL), 0, "nothing idle for its time to live yet");
    s.now += 5 * SECOND;                     /* fn-2 idle 11 s, fn-1 5 s */
    pod_script_pump(&s);
    cr_assert_eq(deleted(&s, "fn-2"), 1, "fn-2: idle past its time to live");
    cr_assert_eq(pod_script_count(&s, "delete", "services", NULL, NULL), 1, "with its Service");
    cr_assert_eq(deleted(&s, "fn-1"), 0, "fn-1's time to live was extended by its call");
    s.now += 5 * SECOND;                     /* fn-1 idle 10 s */
    pod_script_pump(&s);
    cr_assert_eq(deleted(&s, "fn-1"), 1);
    pod_script_end(&s, pc);
}

Test(pod_cache_reclaim, a_pod_with_a_call_running_is_kept)
{
    pod_script s;
    script_answers got = {0};
    pod_cache *pc = cache(&s);
    two_pods(&s, pc, &got);
    pod_cache_call_begin(pc, IMAGE, "fn-1");   /* a call of an hour */
    s.now += 3600 * SECOND;
    pod_script_pump(&s);
    cr_assert_eq(deleted(&s, "fn-1"), 0);
    cr_assert_eq(deleted(&s, "fn-2"), 1);
    pod_cache_call_end(pc, IMAGE, "fn-1");
    s.now += TTL - 1;
    pod_script_pump(&s);
    cr_assert_eq(deleted(&s, "fn-1"), 0, "idle from its call's end");
    s.now += 1;
    pod_script_pump(&s);
    cr_assert_eq(deleted(&s, "fn-1"), 1);
    pod_script_end(&s, pc);
}

Test(pod_cache_reclaim, the_warm_minimum_is_exempt)
{
    pod_script s;
    script_answers got = {0};
    pod_cache *pc = cache(&s);
    two_pods(&s, pc, &got);
    pod_warm warm = {IMAGE, 1};
    cr_assert_eq(pod_cache_set_warm(pc, &warm, 1), 0);
    s.now += 3600 * SECOND;
    pod_script_pump(&s);
    cr_assert_eq(deleted(&s, NULL), 1, "one of the two idle pods reclaimed, the warm one kept");
    s.now += 3600 * SECOND;
    pod_script_pump(&s);
    cr_assert_eq(deleted(&s, NULL), 1, "the warm minimum stays through its time to live");
    cr_assert_eq(pod_script_count(&s, "create", "pods", NULL, NULL), 2, "and is not re-made");
    pod_script_end(&s, pc);
}
