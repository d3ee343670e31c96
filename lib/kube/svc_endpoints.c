/* svc_endpoints: a Service's endpoints from EndpointSlices or Endpoints;
 * see svc_endpoints.h. */
#include "kube/svc_endpoints.h"

#include <string.h>

#define SLICES_GROUP "discovery.k8s.io"

const kube_ref svc_endpoints_discovery_ref = {"/apis", SLICES_GROUP, NULL, NULL, NULL};

svc_endpoints_api svc_endpoints_pick(const json *group)
{
    const json *versions = json_get(group, "versions");
    int beta = 0;
    for (size_t i = 0; versions && versions->type == JSON_ARRAY && i < versions->len; i++) {
        const char *v = json_get_str(versions->items[i], "version");
        if (v && !strcmp(v, "v1"))
            return SVC_EP_SLICES_V1;
        if (v && !strcmp(v, "v1beta1"))
            beta = 1;
    }
    return beta ? SVC_EP_SLICES_V1BETA1 : SVC_EP_ENDPOINTS;
}

int svc_endpoints_ref(svc_endpoints_api api, const char *ns, const char *svc, kube_ref *ref,
                      buf *query)
{
    if (api == SVC_EP_SLICES_V1 || api == SVC_EP_SLICES_V1BETA1) {
        buf_printf(query, "labelSelector=kubernetes.io%%2Fservice-name%%3D%s", svc);
        if (!query->data)
            return -1;
        *ref = (kube_ref){api == SVC_EP_SLICES_V1 ? "/apis/" SLICES_GROUP "/v1"
                                                  : "/apis/" SLICES_GROUP "/v1beta1",
                          "endpointslices", ns, NULL, query->data};
        return 0;
    }
    *ref = (kube_ref){"/api/v1", "endpoints", ns, svc, NULL};
    return 0;
}

static int str_in(const json *arr, const char *s)
{
    for (size_t i = 0; arr && arr->type == JSON_ARRAY && i < arr->len; i++) {
        const char *a = json_str(arr->items[i]);
        if (a && !strcmp(a, s))
            return 1;
    }
    return 0;
}

static int slices_list(const json *list, const char *ip)
{
    const json *items = json_get(list, "items");
    for (size_t i = 0; items && items->type == JSON_ARRAY && i < items->len; i++) {
        const json *eps = json_get(items->items[i], "endpoints");
        for (size_t j = 0; eps && eps->type == JSON_ARRAY && j < eps->len; j++) {
            const json *ready = kube_path(eps->items[j], "conditions.ready");
            if (str_in(json_get(eps->items[j], "addresses"), ip) &&
                (!ready || ready->type == JSON_NULL || ready->type == JSON_TRUE))
                return 1;
        }
    }
    return 0;
}

/* Endpoints: ready addresses are in subsets[].addresses (the others in
 * notReadyAddresses). */
static int endpoints_list(const json *ep, const char *ip)
{
    const json *subsets = json_get(ep, "subsets");
    for (size_t i = 0; subsets && subsets->type == JSON_ARRAY && i < subsets->len; i++) {
        const json *addrs = json_get(subsets->items[i], "addresses");
        for (size_t j = 0; addrs && addrs->type == JSON_ARRAY && j < addrs->len; j++) {
            const char *a = json_get_str(addrs->items[j], "ip");
            if (a && !strcmp(a, ip))
                return 1;
        }
    }
    return 0;
}

int svc_endpoints_list_ip(svc_endpoints_api api, const json *answer, const char *ip)
{
    if (!answer || !ip)
        return 0;
    return api == SVC_EP_ENDPOINTS ? endpoints_list(answer, ip) : slices_list(answer, ip);
}

const char *svc_endpoints_api_name(svc_endpoints_api api)
{
    switch (api) {
    case SVC_EP_SLICES_V1: return "EndpointSlices (" SLICES_GROUP "/v1)";
    case SVC_EP_SLICES_V1BETA1: return "EndpointSlices (" SLICES_GROUP "/v1beta1)";
    case SVC_EP_ENDPOINTS: return "Endpoints";
    case SVC_EP_UNKNOWN: break;
    }
    return "endpoints";
}
