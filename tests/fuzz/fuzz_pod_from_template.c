/* Fuzzes pod_from_template and service_from_template with base templates
 * and templateOverrides anyone who may edit them in the namespace writes
 * (the API server passes any JSON its schema lets through, and a
 * FunctionConfig file's overrides are the operator's): the input is split
 * at its first NUL into a template and overrides. Each build either fails
 * with a reason or writes JSON that parses again, holding the function's
 * image label and, for the Pod, the wrapper image in the first init
 * container. */
#include <string.h>

#include "core/json.h"
#include "fuzz_common.h"
#include "kube/pod_from_template.h"

static void check_pod(const char *text, size_t len)
{
    buf err = {0};
    json *pod = json_parse(text, len, &err);
    FUZZ_CHECK(pod != NULL);
    const json *meta = json_get(pod, "metadata"), *spec = json_get(pod, "spec");
    FUZZ_CHECK(!strcmp(json_get_str(json_get(meta, "labels"), "fn.kpt.dev/image"), "fn-v1-1-0123abcd"));
    const json *inits = json_get(spec, "initContainers");
    FUZZ_CHECK(inits && inits->type == JSON_ARRAY && inits->len > 0);
    /* overrides may replace much, never the wrapper image */
    FUZZ_CHECK(!strcmp(json_get_str(inits->items[0], "image"), "w:1"));
    json_free(pod);
    buf_free(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t tlen = nul ? (size_t)(nul - text) : size;
    buf err = {0}, out = {0}, ov = {0};
    json *tmpl = json_parse(text, tlen, &err);
    if (!tmpl)
        return buf_free(&err), 0;
    if (nul)
        buf_append(&ov, nul + 1, size - tlen - 1);
    static const char *const entry[] = {"/fn", "$(X) $$"};
    pod_template_opts o = {
        .pod_id = "fn-v1-1-0123abcd", .namespace = "ns", .image = "example.com/fn:v1",
        .wrapper_image = "w:1", .entrypoint = entry, .n_entrypoint = 2,
        .max_request_body_size = 6291456, .template_version = "1", .escape_dollar = 1,
        .owner = "me", .pull_secret = "auth", .overrides = nul && ov.data && !memchr(ov.data, 0, ov.len)
                                                             ? ov.data : NULL,
    };
    buf_reset(&err);
    if (pod_from_template(tmpl, &o, &out, &err) == 0)
        check_pod(out.data, out.len);
    else
        FUZZ_CHECK(err.len > 0);
    buf_reset(&out);
    buf_reset(&err);
    if (service_from_template(tmpl, &o, &out, &err) == 0) {
        json *svc = json_parse(out.data, out.len, &err);
        FUZZ_CHECK(svc != NULL);
        FUZZ_CHECK(!strcmp(json_get_str(json_get(json_get(svc, "spec"), "selector"), "fn.kpt.dev/image"),
                           "fn-v1-1-0123abcd"));
        json_free(svc);
    } else {
        FUZZ_CHECK(err.len > 0);
    }
    json_free(tmpl);
    buf_free(&err);
    buf_free(&out);
    buf_free(&ov);
    return 0;
}
