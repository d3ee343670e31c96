/* kube_pod_template: which template the cache's pods are made from, and
 * pods of an older template version retired; see kube_pod_cache.h
 * (pod_cache_opts.templates).
 *
 * Porch stamps each pod with its PodTemplate's resourceVersion and does
 * not reuse a pod of another version: it is deleted and a new one made.
 * Here a new version marks the older pods stale at once: routing gives
 * them no new call (a new pod is started for the next one), and each is
 * deleted as soon as it has no call running or waiting, its Service kept
 * for the new pod of the same podId. */
#include "kube/kube_pod_internal.h"

#include <string.h>

#include "core/log.h"
#include "kube/kube_templates.h"
#include "kube/pod_from_template.h"
#include "kube/pod_template.h"

const char *template_version(const pod_cache *pc)
{
    const char *v = pc->templates ? kube_templates_version(pc->templates) : NULL;
    return v ? v : POD_DEFAULT_TEMPLATE_VERSION;
}

int template_render(pod *p, int which, buf *body, const char **content_type, buf *err)
{
    const pod_cache *pc = p->pc;
    const registry_result *meta = &p->fn->meta;
    pod_template_opts t = {
        .pod_id = p->pod_id, .namespace = pc->o.namespace, .image = p->image,
        .wrapper_image = pc->o.wrapper_image, .entrypoint = (const char *const *)meta->entrypoint,
        .n_entrypoint = meta->n_entrypoint, .max_request_body_size = pc->o.max_request_body_size,
        .template_version = template_version(pc), .probe = POD_PROBE_EXEC,
        .escape_dollar = 1, .owner = pc->o.owner, .pull_secret = pc->o.pull_secret,
        .overrides = pc->o.overrides_for ? pc->o.overrides_for(p->image, pc->o.config_ctx) : NULL,
    };
    const kube_templates *kt = pc->templates;
    const json *tmpl = !kt ? NULL : which == POD_TEMPLATE_POD ? kube_templates_pod(kt)
                                                               : kube_templates_service(kt);
    if (tmpl) {
        *content_type = "application/json";
        buf why = {0};
        int rc = which == POD_TEMPLATE_POD ? pod_from_template(tmpl, &t, body, &why)
                                           : service_from_template(tmpl, &t, body, &why);
        if (rc < 0)
            buf_printf(err, "cannot make the function %s for %s from the base template: %s",
                       which == POD_TEMPLATE_POD ? "pod" : "Service", p->image,
                       why.data ? why.data : "out of memory");
        buf_free(&why);
        return rc;
    }
    buf why = {0};
    *content_type = "application/yaml";
    int rc = pod_template_render(&t, which, body, &why);
    if (rc < 0)
        buf_printf(err, "cannot render the function pod for %s: %s", p->image,
                   why.data ? why.data : "out of memory");
    buf_free(&why);
    return rc;
}

void template_retire_if_done(pod *p)
{
    if (!p->stale || p->state != POD_SERVING || p->calls || p->waiters || p->parked || !p->name)
        return;
    log_info("pod %s for %s: made from template version %s, now %s: deleting it (its Service stays "
             "for the new pod)", p->name, p->image, p->version ? p->version : "?",
             template_version(p->pc));
    pod_set(p, POD_EV_DRAIN);
    p->delete_service = 0;
    pod_delete(p);
    pod_leave(p, "its template changed");
}

void template_changed(const char *version, void *ctx)
{
    pod_cache *pc = ctx;
    for (fn_entry *f = pc->fns, *next_fn; f; f = next_fn) {
        next_fn = f->next;   /* f goes with its last pod */
        for (pod *p = f->pods, *next; p; p = next) {
            next = p->next;
            if (!p->version || !strcmp(p->version, version) || p->state == POD_FAILED)
                continue;
            p->stale = 1;
            template_retire_if_done(p);
        }
    }
}

void template_ready(const char *error, void *ctx)
{
    pod_cache *pc = ctx;
    if (error)
        log_warn("%s", error);
    else if (pc->secret_busy || (pc->templates && kube_templates_state(pc->templates) != 1))
        return;   /* the other one's end takes them on */
    for (fn_entry *f = pc->fns, *next_fn; f; f = next_fn) {
        next_fn = f->next;
        for (pod *p = f->pods, *next; p; p = next) {
            next = p->next;
            if (!p->awaits_templates)
                continue;
            p->awaits_templates = 0;
            if (error)
                pod_fail(p, error, 0);
            else
                fn_create(p);
        }
    }
}
