/* Unit tests for the pod cache's routing through the cache itself (no
 * cluster: pod_script answers its API calls): least loaded pod, round-robin
 * ties, scale-up only at the waitlist and below the cap, one pod for
 * concurrent first calls, and a pod that fails to come up handing its
 * waiting calls to the image's other pods or failing them with its reason. */
#include <criterion/criterion.h>
#include <string.h>

#include "pod_script.h"

#define IMAGE "example.com/fn:v1"

static pod_cache *cache(pod_script *s, int max_pods, int waitlist)
{
    pod_cache_opts o;
    pod_script_init(s, &o);
    o.max_pods = max_pods;
    o.waitlist = waitlist;
    return pod_script_cache(s, &o);
}

/* One call to the cache, answered (the pod it got, "" on an error). */
static const char *call(pod_script *s, pod_cache *pc, script_answers *got)
{
    int before = got->n;
    cr_assert(pod_cache_get(pc, IMAGE, pod_script_answered, got));
    pod_script_pump(s);
    cr_assert_eq(got->n, before + 1, "the call was not answered");
    return got->pod[before];
}

/* n calls at once; the pods created for them. */
static int concurrent_calls(pod_script *s, pod_cache *pc, script_answers *got, int n)
{
    for (int i = 0; i < n; i++)
        cr_assert(pod_cache_get(pc, IMAGE, pod_script_answered, got));
    pod_script_pump(s);
    return pod_script_count(s, "create", "pods", NULL, NULL);
}

Test(pod_cache_route, concurrent_first_calls_start_one_pod)
{
    pod_script s;
    pod_cache *pc = cache(&s, 4, 8);
    script_answers got = {0};
    cr_assert_eq(concurrent_calls(&s, pc, &got, 8), 1,
                 "8 concurrent first calls, waitlist 8: one pod");
    cr_assert_eq(s.n_lookups, 1, "the image is looked up once");
    cr_assert_eq(got.n, 0);
    pod_script_ready(&s, "fn-1", "127.0.0.1");
    pod_script_pump(&s);
    pod_script_expect(&got, 0, 8, "fn-1");
    pod_script_end(&s, pc);
}

Test(pod_cache_route, the_cap_holds_however_many_calls_wait)
{
    pod_script s;
    pod_cache *pc = cache(&s, 1, 1);
    script_answers got = {0};
    cr_assert_eq(concurrent_calls(&s, pc, &got, 8), 1, "cap 1: one pod");
    pod_script_end(&s, pc);
}

Test(pod_cache_route, scale_up_at_the_waitlist_below_the_cap)
{
    pod_script s;
    pod_cache *pc = cache(&s, 2, 2);
    script_answers got = {0};
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-1");
    pod_cache_call_begin(pc, IMAGE, "fn-1");   /* load 1: below the waitlist */
    cr_assert_str_eq(call(&s, pc, &got), "fn-1");
    cr_assert_eq(pod_script_count(&s, "create", "pods", NULL, NULL), 1,
                 "load 1 < waitlist 2: no new pod");
    pod_cache_call_begin(pc, IMAGE, "fn-1");   /* load 2: the waitlist */
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-2");
    pod_cache_call_begin(pc, IMAGE, "fn-2");
    pod_cache_call_begin(pc, IMAGE, "fn-2");   /* both at 2, at the cap */
    cr_assert_eq(concurrent_calls(&s, pc, &got, 1), 2, "at the cap: no third pod");
    cr_assert_eq(got.n, 4, "a call beyond the waitlist at the cap still goes to a pod");
    pod_script_end(&s, pc);
}

Test(pod_cache_route, least_loaded_then_round_robin)
{
    pod_script s;
    pod_cache *pc = cache(&s, 2, 1);
    script_answers got = {0};
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-1");
    pod_cache_call_begin(pc, IMAGE, "fn-1");
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-2");
    pod_cache_call_begin(pc, IMAGE, "fn-1");   /* fn-1: 2, fn-2: 0 */
    cr_assert_str_eq(call(&s, pc, &got), "fn-2");
    pod_cache_call_begin(pc, IMAGE, "fn-2");   /* fn-2: 1 */
    cr_assert_str_eq(call(&s, pc, &got), "fn-2");
    pod_cache_call_begin(pc, IMAGE, "fn-2");   /* 2 and 2: turns */
    const char *first = call(&s, pc, &got);
    const char *second = call(&s, pc, &got);
    const char *third = call(&s, pc, &got);
    cr_assert_str_neq(first, second, "equal loads take turns");
    cr_assert_str_neq(second, third);
    cr_assert_eq(pod_script_count(&s, "create", "pods", NULL, NULL), 2);
    pod_script_end(&s, pc);
}

Test(pod_cache_route, a_pod_that_fails_to_start_hands_its_calls_to_another)
{
    pod_script s;
    pod_cache *pc = cache(&s, 2, 1);
    script_answers got = {0};
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-1");
    pod_cache_call_begin(pc, IMAGE, "fn-1");   /* load 1: the next call starts fn-2 */
    s.create_error = "pods \"fn-2\" is forbidden: exceeded quota";
    cr_assert_eq(concurrent_calls(&s, pc, &got, 1), 2, "a second pod was asked for");
    pod_script_expect(&got, 1, 1, "fn-1");   /* its waiting call went to the serving pod */
    pod_script_end(&s, pc);
}

Test(pod_cache_route, a_pod_that_fails_to_start_alone_fails_its_calls_with_its_reason)
{
    pod_script s;
    pod_cache *pc = cache(&s, 2, 1);
    script_answers got = {0};
    s.create_error = "pods is forbidden: exceeded quota";
    concurrent_calls(&s, pc, &got, 3);
    cr_assert_eq(got.n, 3);
    for (int i = 0; i < 3; i++) {
        cr_assert_str_eq(got.pod[i], "");
        cr_assert(strstr(got.error[i], "exceeded quota"), "%s", got.error[i]);
    }
    pod_script_end(&s, pc);
}

Test(pod_cache_route, a_pod_failing_while_its_log_is_read_takes_no_call)
{
    pod_script s;
    pod_cache *pc = cache(&s, 2, 1);
    script_answers got = {0};
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-1");
    pod_cache_call_begin(pc, IMAGE, "fn-1");   /* load 1: the next call starts fn-2 */
    cr_assert_eq(concurrent_calls(&s, pc, &got, 1), 2);
    pod_script_status(&s, "fn-2", "{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":"
                      "\"function\",\"restartCount\":2,\"state\":{\"waiting\":{\"reason\":"
                      "\"CrashLoopBackOff\",\"message\":\"back-off\"}},\"lastState\":{\"terminated\":"
                      "{\"exitCode\":3,\"reason\":\"Error\"}}}]}");
    pod_script_pump(&s);
    int log = -1;
    cr_assert_eq(pod_script_count(&s, "text", "pods", "fn-2/log", &log), 1, "its log is read");
    cr_assert_eq(got.n, 1, "its waiting call waits for the log");
    /* meanwhile a new call: not to the failing fn-2, and no third pod */
    cr_assert_str_eq(call(&s, pc, &got), "fn-1");
    cr_assert_eq(pod_script_count(&s, "create", "pods", NULL, NULL), 2);
    pod_script_answer(&s, log, 200, "panic: bad config\n");
    pod_script_pump(&s);
    cr_assert_eq(got.n, 3);
    cr_assert_str_eq(got.pod[2], "fn-1", "fn-2's waiting call went to fn-1: %s", got.error[2]);
    cr_assert_eq(pod_script_count(&s, "delete", "pods", "fn-2", NULL), 1, "failed fast: deleted");
    pod_script_end(&s, pc);
}
