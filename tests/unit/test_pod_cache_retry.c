/* Unit tests for what the pod cache decides after a call failed on a pod
 * with UNAVAILABLE (pod_cache_retry), through the cache itself with
 * pod_script answering its API calls: one GET per pod however many calls
 * it failed; gone, not Running or being deleted: evicted (and deleted
 * unless gone), the calls routed to another pod; an API error: kept. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "pod_script.h"

#define IMAGE "example.com/fn:v1"

/* fn-1 serving; cap max_pods, waitlist 2 (the two failed calls fit one
 * new pod). */
static pod_cache *serving(pod_script *s, int max_pods, script_answers *got)
{
    pod_cache_opts o;
    pod_script_init(s, &o);
    o.max_pods = max_pods;
    o.waitlist = 2;
    pod_cache *pc = pod_script_cache(s, &o);
    pod_script_start_pod(s, pc, IMAGE, got, "fn-1");
    return pc;
}

/* Two calls failed on fn-1 and fn-1's check answered with status, body. */
static void two_failed_calls(pod_script *s, pod_cache *pc, script_answers *got, long status,
                             const char *body)
{
    cr_assert(pod_cache_retry(pc, IMAGE, "fn-1", "UNAVAILABLE", pod_script_answered, got));
    cr_assert(pod_cache_retry(pc, IMAGE, "fn-1", "connection reset", pod_script_answered, got));
    pod_script_pump(s);
    int check = -1;
    cr_assert_eq(pod_script_count(s, "get", "pods", "fn-1", &check), 1, "one GET for both calls");
    cr_assert_eq(got->n, 1, "the calls wait for the check");
    pod_script_answer(s, check, status, body);
    pod_script_pump(s);
}

static int in_view(pod_cache *pc, const char *name)
{
    buf out = {0};
    cr_assert_eq(pod_cache_view(pc, 0, &out), 0);
    char quoted[80];
    snprintf(quoted, sizeof quoted, "\"%s\"", name);
    int found = out.data && strstr(out.data, quoted) != NULL;
    buf_free(&out);
    return found;
}

/* fn-1 left the cache (deleted: n_deletes 1); the calls went to fn-2. */
static void evicted(pod_script *s, script_answers *got, pod_cache *pc, int n_deletes)
{
    cr_assert(!in_view(pc, "fn-1"), "fn-1 left the cache");
    cr_assert_eq(pod_script_count(s, "delete", "pods", "fn-1", NULL), n_deletes);
    cr_assert_eq(pod_script_count(s, "create", "pods", NULL, NULL), 2, "a new pod for the calls");
    pod_script_ready(s, "fn-2", "127.0.0.2");
    pod_script_pump(s);
    pod_script_expect(got, 1, 2, "fn-2");
}

Test(pod_cache_retry, a_pod_gone_is_evicted_without_a_delete)
{
    pod_script s;
    script_answers got = {0};
    pod_cache *pc = serving(&s, 2, &got);
    two_failed_calls(&s, pc, &got, 404, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
    evicted(&s, &got, pc, 0);
    pod_script_end(&s, pc);
}

Test(pod_cache_retry, a_pod_being_deleted_is_evicted_and_deleted)
{
    pod_script s;
    script_answers got = {0};
    pod_cache *pc = serving(&s, 2, &got);
    two_failed_calls(&s, pc, &got, 200, "{\"metadata\":{\"name\":\"fn-1\",\"deletionTimestamp\":"
                     "\"2026-01-01T00:00:00Z\"},\"status\":{\"phase\":\"Running\"}}");
    evicted(&s, &got, pc, 1);
    pod_script_end(&s, pc);
}

Test(pod_cache_retry, a_pod_not_running_is_evicted_and_deleted)
{
    pod_script s;
    script_answers got = {0};
    pod_cache *pc = serving(&s, 1, &got);   /* cap 1: its replacement */
    two_failed_calls(&s, pc, &got, 200, "{\"metadata\":{\"name\":\"fn-1\"},\"status\":{\"phase\":"
                     "\"Failed\"}}");
    evicted(&s, &got, pc, 1);
    pod_script_end(&s, pc);
}

Test(pod_cache_retry, an_api_error_keeps_the_pod)
{
    pod_script s;
    script_answers got = {0};
    pod_cache *pc = serving(&s, 1, &got);
    two_failed_calls(&s, pc, &got, 500, NULL);
    cr_assert(in_view(pc, "fn-1"), "an API error proves nothing: kept");
    cr_assert_eq(pod_script_count(&s, "delete", "pods", NULL, NULL), 0);
    cr_assert_eq(pod_script_count(&s, "create", "pods", NULL, NULL), 1);
    pod_script_expect(&got, 1, 2, "fn-1");   /* cap 1, the only pod: back to it */
    pod_script_end(&s, pc);
}

Test(pod_cache_retry, a_running_pod_is_kept_and_the_calls_go_to_another)
{
    pod_script s;
    script_answers got = {0};
    pod_cache *pc = serving(&s, 2, &got);
    two_failed_calls(&s, pc, &got, 200, "{\"metadata\":{\"name\":\"fn-1\"},\"status\":{\"phase\":"
                     "\"Running\"}}");
    cr_assert(in_view(pc, "fn-1"));
    cr_assert_eq(pod_script_count(&s, "delete", "pods", NULL, NULL), 0);
    cr_assert_eq(pod_script_count(&s, "create", "pods", NULL, NULL), 2,
                 "below the cap: the failed calls avoid fn-1 and start another pod");
    pod_script_ready(&s, "fn-2", "127.0.0.2");
    pod_script_pump(&s);
    pod_script_expect(&got, 1, 2, "fn-2");
    pod_script_end(&s, pc);
}
