/* porch_flags: Porch's flags refused until served; see porch_flags.h. */
#include "serve/porch_flags.h"

int porch_flags_check(const porch_flags *p, buf *err)
{
    static const char old_release[] =
        "is a flag of Porch releases before the FunctionConfig CRD and is not read here: ";
    if (p->config && *p->config)   /* "": none, as in Porch */
        return buf_fail(err, "--config %s%s", old_release,
                        "give the exec runtime's functions as FunctionConfig objects "
                        "(spec.binaryExecutor) with --function-config");
    if (p->pod_cache_config && *p->pod_cache_config)
        return buf_fail(err, "--pod-cache-config %s%s", old_release,
                        "give each function's pod TTL as spec.podExecutor.timeToLive of a "
                        "FunctionConfig with --function-config");
    if (p->function_pod_template && *p->function_pod_template)
        return buf_fail(err, "--function-pod-template %s%s", old_release,
                        "function pods are made from the PodTemplate --base-pod-template-name (default base-pod-template) in the pod namespace, as porch-server makes them");
    if (p->private_registries_tls > 0 && p->private_registries <= 0) {
        buf_append_str(err, "--enable-private-registries-tls needs "
                       "--enable-private-registries (Porch ignores it without): give both, "
                       "or neither");
        return -1;
    }
    return 0;
}
