/* svc_endpoints: whether a Service's endpoints list a pod, read from what
 * the cluster offers.
 *
 * Why not Endpoints alone: EndpointSlices replaced them (discovery.k8s.io
 * v1beta1 from Kubernetes 1.17, v1 from 1.21), kube-proxy reads the slices,
 * and some clusters leave Endpoints empty (the k8s lab: its loopback pod
 * addresses are refused in Endpoints but listed in slices). Waiting on
 * Endpoints there waits forever. So the API is chosen once per runner from
 * the discovery document of discovery.k8s.io: v1 when offered, else
 * v1beta1; a server without the group (before 1.17) gets Endpoints.
 *
 * Pure (JSON in, answers out): the pod cache does the calls. */
#ifndef KRM_KUBE_SVC_ENDPOINTS_H
#define KRM_KUBE_SVC_ENDPOINTS_H

#include "core/buf.h"
#include "core/json.h"
#include "kube/kube_client.h"

typedef enum svc_endpoints_api {
    SVC_EP_UNKNOWN,           /* not asked yet */
    SVC_EP_SLICES_V1,         /* discovery.k8s.io/v1 EndpointSlices */
    SVC_EP_SLICES_V1BETA1,    /* discovery.k8s.io/v1beta1 EndpointSlices */
    SVC_EP_ENDPOINTS,         /* core v1 Endpoints */
} svc_endpoints_api;

/* What to GET to learn the API: the group's discovery document. */
extern const kube_ref svc_endpoints_discovery_ref;

/* The API to read, from the discovery answer: group is the APIGroup object
 * (NULL when the server answered 404: no such group). */
svc_endpoints_api svc_endpoints_pick(const json *group);

/* The call that reads svc's endpoints in ns: a list of slices labelled
 * kubernetes.io/service-name=svc, or a get of the Endpoints named svc.
 * Strings of *ref point into query or the arguments. -1: out of memory. */
int svc_endpoints_ref(svc_endpoints_api api, const char *ns, const char *svc, kube_ref *ref,
                      buf *query);

/* 1 when the answer (an EndpointSliceList or an Endpoints object) lists ip
 * as a ready endpoint (a slice endpoint without the ready condition counts
 * as ready, as the API documents it), else 0. */
int svc_endpoints_list_ip(svc_endpoints_api api, const json *answer, const char *ip);

/* "EndpointSlices (discovery.k8s.io/v1beta1)", "Endpoints": for logs. */
const char *svc_endpoints_api_name(svc_endpoints_api api);

#endif
