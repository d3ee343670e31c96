/* Unit tests for pod_status: pod objects as the API server writes them
 * (shapes taken from the lab's pods: pulling, crashing, init failures,
 * ready), read into wait / ready / fail fast, and the one-line description. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "kube/pod_status.h"

static json *doc;

static pod_status read_pod(const char *text)
{
    buf err = {0};
    doc = json_parse(text, strlen(text), &err);
    cr_assert(doc, "bad JSON in the test: %s", err.data);
    buf_free(&err);
    pod_status st;
    pod_status_read(doc, &st);
    return st;
}

static char *describe(const pod_status *st)
{
    static char out[512];
    buf b = {0};
    pod_status_describe(doc, st, &b);
    snprintf(out, sizeof out, "%s", b.data ? b.data : "");
    buf_free(&b);
    return out;
}

static void done(void) { json_free(doc); doc = NULL; }

TestSuite(pod_status, .fini = done);

Test(pod_status, ready_needs_running_ready_and_ip)
{
    pod_status st = read_pod("{\"metadata\":{\"name\":\"p\"},\"status\":{\"phase\":\"Running\","
                             "\"podIP\":\"127.77.0.5\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_READY);
    cr_assert_str_eq(st.ip, "127.77.0.5");
    cr_assert_str_eq(describe(&st), "Ready at 127.77.0.5");
}

Test(pod_status, running_not_ready_waits)
{
    pod_status st = read_pod("{\"status\":{\"phase\":\"Running\",\"podIP\":\"1.2.3.4\","
                             "\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],"
                             "\"containerStatuses\":[{\"name\":\"function\",\"restartCount\":0,"
                             "\"state\":{\"running\":{}}}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_WAIT);
    cr_assert_str_eq(describe(&st), "Running, not Ready");
}

Test(pod_status, container_creating_waits_with_reason)
{
    pod_status st = read_pod("{\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"function\","
                             "\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"ContainerCreating\"}}}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_WAIT);
    cr_assert_str_eq(describe(&st), "Pending, container \"function\": ContainerCreating");
}

Test(pod_status, pod_initializing_is_not_a_reason)
{
    pod_status st = read_pod("{\"status\":{\"phase\":\"Pending\",\"containerStatuses\":[{\"name\":\"function\","
                             "\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"PodInitializing\"}}}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_WAIT);
    cr_assert_null(st.reason);
}

Test(pod_status, image_pull_fails_fast)
{
    const char *reasons[] = {"ErrImagePull", "ImagePullBackOff", "InvalidImageName",
                             "CreateContainerConfigError", "CrashLoopBackOff"};
    for (size_t i = 0; i < sizeof reasons / sizeof *reasons; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":"
                 "\"copy-wrapper-server\",\"restartCount\":0,\"state\":{\"waiting\":{\"reason\":\"%s\","
                 "\"message\":\"m\"}}}]}}", reasons[i]);
        pod_status st = read_pod(text);
        cr_assert_eq(st.verdict, POD_VERDICT_FAIL, "%s", reasons[i]);
        cr_assert_str_eq(st.reason, reasons[i]);
        cr_assert(st.init);
        cr_assert_str_eq(st.container, "copy-wrapper-server");
        done();
    }
}

Test(pod_status, crash_loop_names_last_exit)
{
    pod_status st = read_pod("{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"function\","
                             "\"restartCount\":2,\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\","
                             "\"message\":\"back-off 10s\"}},\"lastState\":{\"terminated\":{\"exitCode\":3,"
                             "\"reason\":\"Error\"}}}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_FAIL);
    cr_assert(st.previous);
    cr_assert_str_eq(describe(&st),
                     "container \"function\": CrashLoopBackOff: back-off 10s (last exit code 3, Error)");
}

Test(pod_status, function_container_exit_fails_even_with_zero)
{
    pod_status st = read_pod("{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"function\","
                             "\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_FAIL);
    cr_assert_not(st.previous);
    cr_assert_eq(st.exit_code, 0);
}

Test(pod_status, restarted_function_container_fails)
{
    pod_status st = read_pod("{\"status\":{\"phase\":\"Running\",\"containerStatuses\":[{\"name\":\"function\","
                             "\"restartCount\":1,\"state\":{\"running\":{}},\"lastState\":{\"terminated\":"
                             "{\"exitCode\":2,\"reason\":\"Error\"}}}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_FAIL);
    cr_assert(st.previous);
}

Test(pod_status, init_container_done_is_fine_failed_is_not)
{
    pod_status st = read_pod("{\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i\","
                             "\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_WAIT);
    done();
    st = read_pod("{\"status\":{\"phase\":\"Pending\",\"initContainerStatuses\":[{\"name\":\"i\","
                  "\"restartCount\":0,\"state\":{\"terminated\":{\"exitCode\":128,\"reason\":\"StartError\","
                  "\"message\":\"exec: cp: not found\"}}}]}}");
    cr_assert_eq(st.verdict, POD_VERDICT_FAIL);
    cr_assert_str_eq(describe(&st),
                     "init container \"i\": StartError: exec: cp: not found (exit code 128)");
}

Test(pod_status, phase_failed_and_terminating)
{
    pod_status st = read_pod("{\"status\":{\"phase\":\"Failed\",\"reason\":\"Evicted\",\"message\":\"low memory\"}}");
    cr_assert_eq(st.verdict, POD_VERDICT_FAIL);
    cr_assert_str_eq(describe(&st), "pod: Evicted: low memory");
    done();
    st = read_pod("{\"metadata\":{\"deletionTimestamp\":\"2024-01-01T00:00:00Z\"},\"status\":{\"phase\":\"Running\"}}");
    cr_assert_eq(st.verdict, POD_VERDICT_TERMINATING);
}

Test(pod_status, empty_object_waits)
{
    pod_status st = read_pod("{}");
    cr_assert_eq(st.verdict, POD_VERDICT_WAIT);
    cr_assert_str_eq(pod_verdict_name(st.verdict), "wait");
}
