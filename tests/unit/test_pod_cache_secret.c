/* Unit tests for the pull Secret kept as its mounted file changes
 * (pod_cache_set_pull_secret), through the pod cache and pod_script: new
 * bytes are read against the Secret and patched only when they differ, and
 * bytes that come while a round is under way are taken up when it ends
 * (one more round, not one per change). */
#include <criterion/criterion.h>
#include <string.h>

#include "core/base64.h"
#include "pod_script.h"

static pod_cache *with_secret(pod_script *s, const char *bytes)
{
    pod_cache_opts o;
    pod_script_init(s, &o);
    o.pull_secret = "auth-secret";
    o.pull_secret_data = bytes;
    o.pull_secret_len = strlen(bytes);
    return pod_script_cache(s, &o);
}

/* The Secret as the API server answers a GET: holding bytes. */
static void answer_get(pod_script *s, int i, const char *bytes)
{
    buf b64 = {0}, body = {0};
    cr_assert_eq(base64_encode(bytes, strlen(bytes), &b64), 0);
    buf_printf(&body, "{\"data\":{\".dockerconfigjson\":\"%s\"}}", b64.data ? b64.data : "");
    pod_script_answer(s, i, 200, body.data);
    buf_free(&b64);
    buf_free(&body);
}

static int gets(const pod_script *s, int *last)
{
    return pod_script_count(s, "get", "secrets", "auth-secret", last);
}

Test(pod_cache_secret, new_bytes_are_patched_only_when_they_differ)
{
    pod_script s;
    pod_cache *pc = with_secret(&s, "{\"auths\":{}}");
    pod_script_pump(&s);
    int get = -1;
    cr_assert_eq(gets(&s, &get), 1, "read at start");
    answer_get(&s, get, "{\"auths\":{}}");
    pod_script_pump(&s);
    cr_assert_eq(pod_script_count(&s, "patch", "secrets", NULL, NULL), 0, "the same bytes");

    const char *rotated = "{\"auths\":{\"r.example\":{\"auth\":\"YTpi\"}}}";
    cr_assert_eq(pod_cache_set_pull_secret(pc, rotated, strlen(rotated)), 0);
    pod_script_pump(&s);
    cr_assert_eq(gets(&s, &get), 2, "read again");
    answer_get(&s, get, "{\"auths\":{}}");
    pod_script_pump(&s);
    int patch = -1;
    cr_assert_eq(pod_script_count(&s, "patch", "secrets", "auth-secret", &patch), 1);
    buf b64 = {0};
    cr_assert_eq(base64_encode(rotated, strlen(rotated), &b64), 0);
    cr_assert(strstr(s.reqs[patch].body, b64.data), "%s", s.reqs[patch].body);
    buf_free(&b64);

    cr_assert_eq(pod_cache_set_pull_secret(pc, rotated, strlen(rotated)), 0);
    pod_script_pump(&s);
    cr_assert_eq(gets(&s, &get), 3);
    answer_get(&s, get, rotated);
    pod_script_pump(&s);
    cr_assert_eq(pod_script_count(&s, "patch", "secrets", NULL, NULL), 1, "already as given");
    pod_script_end(&s, pc);
}

Test(pod_cache_secret, changes_during_a_round_make_one_more_round)
{
    pod_script s;
    pod_cache *pc = with_secret(&s, "{\"auths\":{}}");
    pod_script_pump(&s);
    int get = -1;
    cr_assert_eq(gets(&s, &get), 1);
    const char *b = "{\"auths\":{\"b\":{}}}", *c = "{\"auths\":{\"c\":{}}}";
    cr_assert_eq(pod_cache_set_pull_secret(pc, b, strlen(b)), 0);
    cr_assert_eq(pod_cache_set_pull_secret(pc, c, strlen(c)), 0);
    pod_script_pump(&s);
    cr_assert_eq(gets(&s, NULL), 1, "no second read while the first is under way");
    answer_get(&s, get, c);   /* the Secret already holds the newest bytes */
    pod_script_pump(&s);
    cr_assert_eq(pod_script_count(&s, "patch", "secrets", NULL, NULL), 0);
    cr_assert_eq(gets(&s, &get), 2, "one more round for the bytes that came meanwhile");
    answer_get(&s, get, c);
    pod_script_pump(&s);
    cr_assert_eq(gets(&s, NULL), 2, "and no more");
    pod_script_end(&s, pc);
}

Test(pod_cache_secret, a_cache_without_a_pull_secret_refuses_bytes)
{
    pod_script s;
    pod_cache_opts o;
    pod_script_init(&s, &o);
    pod_cache *pc = pod_script_cache(&s, &o);
    cr_assert_eq(pod_cache_set_pull_secret(pc, "{}", 2), -1);
    pod_script_end(&s, pc);
}
