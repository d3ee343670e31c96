/* pod_route: Porch's choice of pod; see pod_route.h. */
#include "kube/pod_route.h"

int pod_route_pick(const pod_route_view *pods, int n, int cap, int waitlist, unsigned *turn)
{
    if (cap < 1)
        cap = 1;
    if (waitlist < 1)
        waitlist = 1;
    int min = -1;
    for (int i = 0; i < n; i++)
        if (!pods[i].failed && (min < 0 || pods[i].load < min))
            min = pods[i].load;
    if (min < 0)   /* no pod, or every one is failing */
        return n < cap || n == 0 ? POD_ROUTE_NEW : 0;
    if (min >= waitlist && n < cap)
        return POD_ROUTE_NEW;
    for (int k = 0; k < n; k++) {
        int i = (int)((*turn + (unsigned)k) % (unsigned)n);
        if (!pods[i].failed && pods[i].load == min) {
            *turn = (unsigned)(i + 1) % (unsigned)n;
            return i;
        }
    }
    return POD_ROUTE_NEW;   /* not reached: min is some pod's load */
}

unsigned pod_route_postfix(const unsigned *used, int n)
{
    for (unsigned want = 1;; want++) {
        int taken = 0;
        for (int i = 0; i < n && !taken; i++)
            taken = used[i] == want;
        if (!taken)
            return want;
    }
}
