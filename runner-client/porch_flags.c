/* porch_flags: Porch's flags refused until served; see porch_flags.h. */
#include "porch_flags.h"

#include <stddef.h>

int porch_flags_check(const porch_flags *p, buf *err)
{
    static const char old_release[] =
        "is a flag of Porch releases before the FunctionConfig CRD and is not read here: ";
    if (p->config && *p->config)   /* "": none, as in Porch */
        return buf_printf(err, "--config %s%s", old_release,
                          "give the exec runtime's functions as FunctionConfig objects "
                          "(spec.binaryExecutor) with --function-config"), -1;
    if (p->pod_cache_config && *p->pod_cache_config)
        return buf_printf(err, "--pod-cache-config %s%s", old_release,
                          "give each function's pod TTL as spec.podExecutor.timeToLive of a "
                          "FunctionConfig with --function-config"), -1;
    if (p->function_pod_template && *p->function_pod_template)
        return buf_printf(err, "--function-pod-template %s%s", old_release,
                          "the pod runtime uses Porch's built-in function pod template"), -1;
    if (p->private_registries > 0)
        return buf_append_str(err, "--enable-private-registries is not implemented yet: the "
                              "pod runtime cannot hand a pull secret to function pods; pull "
                              "from registries the nodes can reach, or run without it"), -1;
    if (p->private_registries_tls > 0)
        return buf_append_str(err, "--enable-private-registries-tls is not implemented yet: "
                              "registries are reached with the system's CA store"), -1;
    static const struct { const char *flag; size_t field; } templates[] = {
        {"--base-pod-template-name", offsetof(porch_flags, base_pod_template)},
        {"--base-service-template-name", offsetof(porch_flags, base_service_template)},
        {"--template-wait-timeout", offsetof(porch_flags, template_wait_timeout)},
    };
    for (size_t i = 0; i < sizeof templates / sizeof templates[0]; i++)
        if (*(const char *const *)((const char *)p + templates[i].field))
            return buf_printf(err, "%s is not implemented yet: base templates are not read "
                              "from the cluster; the pod runtime uses Porch's built-in pod "
                              "and Service templates", templates[i].flag), -1;
    if (p->skip_template_creation >= 0)
        return buf_append_str(err, "--skip-template-creation is not implemented yet: base "
                              "templates are not read from or created in the cluster; the pod "
                              "runtime uses Porch's built-in pod and Service templates"), -1;
    return 0;
}
