/* Unit tests for the pod cache's end and its ready timeout (pod_script
 * answers its API calls): freed with API calls in flight (a pod's check,
 * an evicted pod's Delete), the cache cancels them, so that no answer
 * reaches a freed pod and nothing stays allocated; a pod that never turns
 * Ready fails its calls at the timeout and leaves nothing behind (ASan's
 * leak check: `make BUILD=build/asan SAN=1 build/asan/tests/unit`). */
#include <criterion/criterion.h>
#include <string.h>

#include "pod_script.h"

#define IMAGE "example.com/fn:v1"

Test(pod_cache_free, calls_in_flight_are_cancelled)
{
    pod_script s;
    pod_cache_opts o;
    pod_script_init(&s, &o);
    o.max_pods = 2;
    pod_cache *pc = pod_script_cache(&s, &o);
    script_answers got = {0};
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-1");
    pod_cache_call_begin(pc, IMAGE, "fn-1");
    pod_cache_call_begin(pc, IMAGE, "fn-1");   /* the waitlist: the next call starts fn-2 */
    pod_script_start_pod(&s, pc, IMAGE, &got, "fn-2");
    s.hold_deletes = 1;
    /* fn-1 evicted: its Delete in flight, fn-1 out of the table */
    cr_assert(pod_cache_retry(pc, IMAGE, "fn-1", "UNAVAILABLE", pod_script_answered, &got));
    pod_script_pump(&s);
    int check = -1;
    cr_assert_eq(pod_script_count(&s, "get", "pods", "fn-1", &check), 1);
    pod_script_answer(&s, check, 200, "{\"metadata\":{\"name\":\"fn-1\"},\"status\":{\"phase\":"
                      "\"Failed\"}}");
    pod_script_pump(&s);
    cr_assert_eq(pod_script_count(&s, "delete", "pods", "fn-1", NULL), 1);
    /* fn-2 checked: its GET in flight, fn-2 in the table */
    cr_assert(pod_cache_retry(pc, IMAGE, "fn-2", "UNAVAILABLE", pod_script_answered, &got));
    pod_script_pump(&s);
    cr_assert_eq(pod_script_count(&s, "get", "pods", "fn-2", NULL), 1);
    cr_assert_eq(pod_script_unanswered(&s), 2, "fn-1's Delete and fn-2's GET in flight");
    cr_assert_eq(pod_cache_busy(pc), 2);
    pod_cache_free(pc);
    cr_assert_eq(pod_script_unanswered(&s), 0, "the cache's free cancels its calls in flight");
    pod_script_fini(&s);
}

Test(pod_cache_free, a_pod_never_ready_fails_its_calls_at_the_timeout)
{
    pod_script s;
    pod_cache_opts o;
    pod_script_init(&s, &o);
    o.ready_timeout_ns = 20 * 1000000LL;   /* the loop's clock: real time */
    pod_cache *pc = pod_script_cache(&s, &o);
    script_answers got = {0};
    for (int i = 0; i < 2; i++)
        cr_assert(pod_cache_get(pc, IMAGE, pod_script_answered, &got));
    for (int i = 0; i < 100 && got.n < 2; i++)
        pod_script_pump(&s);
    cr_assert_eq(got.n, 2);
    for (int i = 0; i < 2; i++)
        cr_assert(strstr(got.error[i], "not ready after"), "%s", got.error[i]);
    pod_script_pump(&s);
    cr_assert_eq(pod_script_unanswered(&s), 0);
    cr_assert_eq(pod_cache_busy(pc), 0);
    pod_script_end(&s, pc);
}
