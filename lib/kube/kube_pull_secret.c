/* kube_pull_secret: private registries' pull secret, as Porch keeps it
 * (--enable-private-registries); see kube_pod_cache.h (pull_secret).
 *
 * The dockerconfigjson the runner was given (its own mounted Secret)
 * becomes Secret `pull_secret` of type kubernetes.io/dockerconfigjson in
 * the function pods' namespace: read, and created when missing or patched
 * when its bytes differ (a patch of one key: the rest of the Secret, and
 * who else wrote it, are left alone). Pods wait for it, as for the base
 * templates: their imagePullSecrets name it. A failure is logged and the
 * pods go on (the kubelet then says why it cannot pull). */
#include "kube/kube_pod_internal.h"

#include <string.h>

#include "core/base64.h"
#include "core/json_write.h"
#include "core/log.h"

#define DOCKER_CONFIG_KEY ".dockerconfigjson"

static void secret_done(pod_cache *pc, const char *error)
{
    pc->secret_busy = 0;
    if (error)
        log_warn("pull secret %s/%s for private registries: %s (function pods name it in their "
                 "imagePullSecrets all the same)", pc->o.namespace, pc->o.pull_secret, error);
    if (pc->secret_again) {   /* the bytes changed while this round ran */
        pc->secret_again = 0;
        pull_secret_start(pc);
        return;
    }
    template_ready(NULL, pc);   /* the pods waiting go on, if the templates are held */
}

static void on_written(const kube_result *r, void *ctx)
{
    pod_cache *pc = ctx;
    pc->api_calls--;
    if (r->ok)
        log_info("pull secret %s/%s for private registries %s", pc->o.namespace, pc->o.pull_secret,
                 r->status == 201 ? "created" : "updated: its bytes differed from the given file's");
    secret_done(pc, r->ok ? NULL : r->error);
}

static void write_secret(pod_cache *pc, int create)
{
    buf body = {0}, b64 = {0}, err = {0};
    int rc = base64_encode(pc->o.pull_secret_data, pc->o.pull_secret_len, &b64);
    if (rc == 0 && create)
        rc = buf_printf(&body, "{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":");
    if (rc == 0 && create)
        rc = json_write_string(&body, pc->o.pull_secret, strlen(pc->o.pull_secret)) |
             buf_printf(&body, "},\"type\":\"kubernetes.io/dockerconfigjson\",");
    else if (rc == 0)
        rc = buf_printf(&body, "{");
    if (rc == 0)
        rc = buf_printf(&body, "\"data\":{\"" DOCKER_CONFIG_KEY "\":\"%s\"}}", b64.data ? b64.data : "");
    kube_ref ref = {"/api/v1", "secrets", pc->o.namespace, create ? NULL : pc->o.pull_secret, NULL};
    if (rc == 0 && (create ? pc->api->create(pc->api_ctx, &ref, "application/json", body.data,
                                             body.len, on_written, pc, &err)
                           : pc->api->patch(pc->api_ctx, &ref, body.data, body.len, on_written, pc,
                                            &err)) == 0)
        pc->api_calls++;
    else
        secret_done(pc, err.data ? err.data : "out of memory");
    buf_free(&body);
    buf_free(&b64);
    buf_free(&err);
}

static void on_read(const kube_result *r, void *ctx)
{
    pod_cache *pc = ctx;
    pc->api_calls--;
    if (r->not_found) {
        write_secret(pc, 1);
        return;
    }
    if (!r->ok) {
        secret_done(pc, r->error);
        return;
    }
    /* not kube_path: the key itself begins with a dot */
    const char *have = json_get_str(json_get(r->obj, "data"), DOCKER_CONFIG_KEY);
    buf bytes = {0};
    int same = have && base64_decode(have, strlen(have), &bytes) == 0 &&
               bytes.len == pc->o.pull_secret_len &&
               (!bytes.len || !memcmp(bytes.data, pc->o.pull_secret_data, bytes.len));
    buf_free(&bytes);
    if (!same) {
        write_secret(pc, 0);
        return;
    }
    log_info("pull secret %s/%s for private registries: as given", pc->o.namespace, pc->o.pull_secret);
    secret_done(pc, NULL);
}

int pod_cache_set_pull_secret(pod_cache *pc, const char *data, size_t len)
{
    if (!pc->o.pull_secret)
        return -1;
    buf copy = {0};
    if (buf_append(&copy, data, len) < 0)
        return -1;
    buf_free(&pc->secret);
    pc->secret = copy;
    pc->o.pull_secret_data = pc->secret.data ? pc->secret.data : "";
    pc->o.pull_secret_len = pc->secret.len;
    if (pc->secret_busy)
        pc->secret_again = 1;   /* compared and written once the round under way ends */
    else
        pull_secret_start(pc);
    return 0;
}

void pull_secret_start(pod_cache *pc)
{
    buf err = {0};
    kube_ref ref = {"/api/v1", "secrets", pc->o.namespace, pc->o.pull_secret, NULL};
    pc->secret_busy = 1;
    if (pc->api->get(pc->api_ctx, &ref, on_read, pc, &err) == 0)
        pc->api_calls++;
    else
        secret_done(pc, err.data ? err.data : "out of memory");
    buf_free(&err);
}
