/* Unit tests for pod_status_recheck: what one GET of a pod that failed a
 * call decides (kept, gone, evicted), on pod objects as the API returns
 * them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "kube/pod_status.h"

static pod_recheck recheck(const char *text, int not_found, const char **why)
{
    buf err = {0};
    json *pod = text ? json_parse(text, strlen(text), &err) : NULL;
    cr_assert(!text || pod, "%s", err.data);
    pod_recheck r = pod_status_recheck(pod, not_found, why);
    static char copy[64];   /* why is borrowed from pod */
    snprintf(copy, sizeof copy, "%s", *why ? *why : "(null)");
    *why = copy;
    json_free(pod);
    buf_free(&err);
    return r;
}

Test(pod_recheck, running_is_kept)
{
    const char *why;
    cr_assert_eq(recheck("{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Running\"}}", 0, &why),
                 POD_RECHECK_KEEP);
}

Test(pod_recheck, not_found_is_gone)
{
    const char *why;
    cr_assert_eq(recheck(NULL, 1, &why), POD_RECHECK_GONE);
}

Test(pod_recheck, an_api_error_keeps_it)
{
    const char *why;
    cr_assert_eq(recheck(NULL, 0, &why), POD_RECHECK_KEEP);
}

Test(pod_recheck, being_deleted_is_evicted_even_while_running)
{
    const char *why;
    cr_assert_eq(recheck("{\"metadata\":{\"name\":\"p\",\"deletionTimestamp\":\"2026-01-01T00:00:00Z\"},"
                         "\"status\":{\"phase\":\"Running\"}}", 0, &why), POD_RECHECK_EVICT);
    cr_assert_str_eq(why, "being deleted");
}

Test(pod_recheck, not_running_is_evicted_with_its_phase)
{
    const char *why;
    cr_assert_eq(recheck("{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Failed\"}}", 0, &why),
                 POD_RECHECK_EVICT);
    cr_assert_str_eq(why, "Failed");
    cr_assert_eq(recheck("{\"metadata\":{\"name\":\"p\"},\"status\":{}}", 0, &why), POD_RECHECK_EVICT);
    cr_assert_str_eq(why, "");
}
