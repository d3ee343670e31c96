/* svc_endpoints: which endpoints API a cluster offers, and whether an
 * answer of each kind lists a pod's IP as ready. */
#include <criterion/criterion.h>
#include <string.h>

#include "kube/svc_endpoints.h"

static json *parse(const char *text)
{
    buf why = {0};
    json *j = json_parse(text, strlen(text), &why);
    cr_assert(j, "%s", why.data);
    buf_free(&why);
    return j;
}

static svc_endpoints_api pick(const char *group)
{
    json *j = parse(group);
    svc_endpoints_api a = svc_endpoints_pick(j);
    json_free(j);
    return a;
}

Test(svc_endpoints, pick_by_what_the_server_offers)
{
    /* 1.20: v1beta1 only */
    cr_assert_eq(pick("{\"kind\":\"APIGroup\",\"name\":\"discovery.k8s.io\",\"versions\":[{\"groupVersion\":"
                      "\"discovery.k8s.io/v1beta1\",\"version\":\"v1beta1\"}]}"), SVC_EP_SLICES_V1BETA1);
    /* 1.21-1.24: both, whatever the order */
    cr_assert_eq(pick("{\"versions\":[{\"version\":\"v1beta1\"},{\"version\":\"v1\"}]}"), SVC_EP_SLICES_V1);
    cr_assert_eq(pick("{\"versions\":[{\"version\":\"v1\"}]}"), SVC_EP_SLICES_V1);
    /* an unknown version only, or no group (404: NULL) */
    cr_assert_eq(pick("{\"versions\":[{\"version\":\"v2alpha1\"}]}"), SVC_EP_ENDPOINTS);
    cr_assert_eq(svc_endpoints_pick(NULL), SVC_EP_ENDPOINTS);
}

Test(svc_endpoints, refs)
{
    kube_ref r;
    buf q = {0};
    cr_assert_eq(svc_endpoints_ref(SVC_EP_SLICES_V1BETA1, "fns", "svc-1", &r, &q), 0);
    cr_assert_str_eq(r.api, "/apis/discovery.k8s.io/v1beta1");
    cr_assert_str_eq(r.resource, "endpointslices");
    cr_assert_str_eq(r.namespace, "fns");
    cr_assert_null(r.name);
    cr_assert_str_eq(r.query, "labelSelector=kubernetes.io%2Fservice-name%3Dsvc-1");
    buf_free(&q);
    cr_assert_eq(svc_endpoints_ref(SVC_EP_SLICES_V1, "fns", "svc-1", &r, &q), 0);
    cr_assert_str_eq(r.api, "/apis/discovery.k8s.io/v1");
    buf_free(&q);
    cr_assert_eq(svc_endpoints_ref(SVC_EP_ENDPOINTS, "fns", "svc-1", &r, &q), 0);
    cr_assert_str_eq(r.api, "/api/v1");
    cr_assert_str_eq(r.resource, "endpoints");
    cr_assert_str_eq(r.name, "svc-1");
    cr_assert_null(r.query);
    buf_free(&q);
}

static int lists(svc_endpoints_api api, const char *answer, const char *ip)
{
    json *j = parse(answer);
    int r = svc_endpoints_list_ip(api, j, ip);
    json_free(j);
    return r;
}

Test(svc_endpoints, slices)
{
    /* what the lab's 1.20 answers once the pod is Ready */
    const char *ready = "{\"kind\":\"EndpointSliceList\",\"items\":[{\"addressType\":\"IPv4\",\"endpoints\":["
                        "{\"addresses\":[\"127.79.0.9\"],\"conditions\":{\"ready\":true}}]}]}";
    cr_assert(lists(SVC_EP_SLICES_V1BETA1, ready, "127.79.0.9"));
    cr_assert_not(lists(SVC_EP_SLICES_V1BETA1, ready, "127.79.0.1"));
    /* listed but not ready; ready unknown (absent or null) counts as ready */
    cr_assert_not(lists(SVC_EP_SLICES_V1, "{\"items\":[{\"endpoints\":[{\"addresses\":[\"10.0.0.1\"],"
                        "\"conditions\":{\"ready\":false}}]}]}", "10.0.0.1"));
    cr_assert(lists(SVC_EP_SLICES_V1, "{\"items\":[{\"endpoints\":[{\"addresses\":[\"10.0.0.1\"]}]}]}", "10.0.0.1"));
    cr_assert(lists(SVC_EP_SLICES_V1, "{\"items\":[{\"endpoints\":[{\"addresses\":[\"10.0.0.1\"],"
                    "\"conditions\":{\"ready\":null}}]}]}", "10.0.0.1"));
    /* the second slice, the second address */
    cr_assert(lists(SVC_EP_SLICES_V1, "{\"items\":[{\"endpoints\":null},{\"endpoints\":[{\"addresses\":"
                    "[\"10.0.0.2\",\"10.0.0.3\"]}]}]}", "10.0.0.3"));
    /* no slice yet; a slice with no endpoints */
    cr_assert_not(lists(SVC_EP_SLICES_V1, "{\"items\":[]}", "10.0.0.1"));
    cr_assert_not(lists(SVC_EP_SLICES_V1, "{\"items\":[{\"endpoints\":null}]}", "10.0.0.1"));
}

Test(svc_endpoints, endpoints)
{
    cr_assert(lists(SVC_EP_ENDPOINTS, "{\"subsets\":[{\"addresses\":[{\"ip\":\"10.0.0.1\"}]}]}", "10.0.0.1"));
    /* not ready yet */
    cr_assert_not(lists(SVC_EP_ENDPOINTS, "{\"subsets\":[{\"notReadyAddresses\":[{\"ip\":\"10.0.0.1\"}]}]}",
                        "10.0.0.1"));
    /* what the lab leaves: none */
    cr_assert_not(lists(SVC_EP_ENDPOINTS, "{\"kind\":\"Endpoints\"}", "10.0.0.1"));
    cr_assert_not(svc_endpoints_list_ip(SVC_EP_ENDPOINTS, NULL, "10.0.0.1"));
}
