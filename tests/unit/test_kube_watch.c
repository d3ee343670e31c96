/* Unit tests for lib/kube's watch decoding (lines split across chunks,
 * bounded line length, event parsing), the reconnect backoff, the JSON path
 * accessor and the error texts users see. No network. */
#include <criterion/criterion.h>
#include <string.h>

#include "kube/kube_client.h"
#include "kube/kube_watch.h"

typedef struct seen {
    char lines[8][128];
    int n;
} seen;

static int collect(const char *line, size_t len, void *ctx)
{
    seen *s = ctx;
    cr_assert_lt(s->n, 8);
    cr_assert_lt(len, 128);
    memcpy(s->lines[s->n], line, len);
    s->lines[s->n++][len] = '\0';
    return 0;
}

Test(kube_watch, lines_across_chunks)
{
    kube_lines l = {0};
    seen s = {0};
    const char *chunks[] = {"{\"a\":", "1}\n{\"b\"", ":2}\r\n\n", "{\"c\":3}\n{\"d\""};
    for (int i = 0; i < 4; i++)
        cr_assert_eq(kube_lines_feed(&l, chunks[i], strlen(chunks[i]), collect, &s), 0);
    cr_assert_eq(s.n, 3);
    cr_assert_str_eq(s.lines[0], "{\"a\":1}");
    cr_assert_str_eq(s.lines[1], "{\"b\":2}");   /* \r dropped, empty line skipped */
    cr_assert_str_eq(s.lines[2], "{\"c\":3}");
    cr_assert_eq(l.partial.len, 4);               /* the unfinished line waits */
    kube_lines_free(&l);
}

static int stop_at_second(const char *line, size_t len, void *ctx)
{
    (void)line;
    (void)len;
    return ++*(int *)ctx == 2 ? -7 : 0;
}

Test(kube_watch, line_limit_and_callback_stop)
{
    kube_lines l = {.max = 8};
    seen s = {0};
    cr_assert_eq(kube_lines_feed(&l, "12345678\n", 9, collect, &s), 0);   /* exactly max */
    cr_assert_eq(kube_lines_feed(&l, "12345", 5, collect, &s), 0);
    cr_assert_eq(kube_lines_feed(&l, "6789", 4, collect, &s), -1);        /* 9 bytes, no newline yet */
    kube_lines_free(&l);
    kube_lines m = {0};
    int count = 0;
    cr_assert_eq(kube_lines_feed(&m, "a\nb\nc\n", 6, stop_at_second, &count), -7);
    cr_assert_eq(count, 2);
    kube_lines_free(&m);
}

Test(kube_watch, event_parse)
{
    kube_event ev;
    buf err = {0};
    const char *added = "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"metadata\":"
                        "{\"name\":\"p\",\"resourceVersion\":\"42\"}}}";
    cr_assert_eq(kube_event_parse(added, strlen(added), &ev, &err), 0, "%s", err.data);
    cr_assert_eq(ev.type, KUBE_ADDED);
    cr_assert_str_eq(ev.resource_version, "42");
    cr_assert_str_eq(kube_path_str(ev.object, "metadata.name"), "p");
    kube_event_free(&ev);

    const char *bm = "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"metadata\":{\"resourceVersion\":\"77\"}}}";
    cr_assert_eq(kube_event_parse(bm, strlen(bm), &ev, &err), 0);
    cr_assert_eq(ev.type, KUBE_BOOKMARK);
    cr_assert_str_eq(ev.resource_version, "77");
    kube_event_free(&ev);

    const char *gone = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"status\":\"Failure\","
                       "\"message\":\"too old resource version: 1 (5)\",\"reason\":\"Expired\",\"code\":410}}";
    cr_assert_eq(kube_event_parse(gone, strlen(gone), &ev, &err), 0);
    cr_assert_eq(ev.type, KUBE_ERROR);
    cr_assert_eq(ev.code, 410);
    cr_assert_null(ev.resource_version);
    kube_event_free(&ev);

    struct { const char *line, *want; } bad[] = {
        {"{\"type\":\"ADDED\"", "watch event is not JSON (offset 15: "},
        {"{\"object\":{}}", "watch event has no type"},
        {"{\"type\":\"RENAMED\",\"object\":{}}", "watch event has an unknown type RENAMED"},
        {"{\"type\":\"DELETED\",\"object\":[]}", "watch event DELETED has no object"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        buf_reset(&err);
        cr_assert_eq(kube_event_parse(bad[i].line, strlen(bad[i].line), &ev, &err), -1);
        cr_assert(!strncmp(err.data, bad[i].want, strlen(bad[i].want)), "%s: %s", bad[i].line, err.data);
        cr_assert_null(ev.doc);
    }
    buf_free(&err);
}

Test(kube_watch, backoff_doubles_and_caps)
{
    cr_assert_eq(kube_watch_backoff_ns(0), 250000000LL);
    cr_assert_eq(kube_watch_backoff_ns(1), 500000000LL);
    cr_assert_eq(kube_watch_backoff_ns(6), 16000000000LL);
    cr_assert_eq(kube_watch_backoff_ns(7), 30000000000LL);
    cr_assert_eq(kube_watch_backoff_ns(4000000000u), 30000000000LL);
}

static kube_config cfg(void)
{
    kube_config c = {.server = "https://10.0.0.1:6443", .source = "kubeconfig /k, context \"lab\", user \"dev\"",
                     .auth_kind = "bearer token"};
    return c;
}

static char *text(const char *verb, kube_ref ref, long status, int curl, const char *curl_err,
                  const char *body)
{
    kube_config c = cfg();
    buf why = {0}, out = {0};
    json *j = body ? json_parse(body, strlen(body), &why) : NULL;
    kube_error_text(&c, verb, &ref, status, curl, curl_err, j, &out);
    json_free(j);
    buf_free(&why);
    return buf_steal(&out, NULL);
}

Test(kube_client, error_texts)
{
    kube_ref pods = {"/api/v1", "pods", "fns", NULL, NULL};
    char *t = text("list", pods, 0, 7, "Failed to connect to 10.0.0.1 port 6443: Connection refused", NULL);
    cr_assert_str_eq(t, "cannot reach the Kubernetes API server https://10.0.0.1:6443: Failed to connect to "
                     "10.0.0.1 port 6443: Connection refused (from kubeconfig /k, context \"lab\", user \"dev\")");
    free(t);
    t = text("list", pods, 0, 60, "SSL certificate problem: unable to get local issuer certificate", NULL);
    cr_assert_str_eq(t, "TLS with the Kubernetes API server https://10.0.0.1:6443 failed: SSL certificate "
                     "problem: unable to get local issuer certificate (verified against the system CAs; "
                     "check the cluster's certificate-authority and the server name in kubeconfig /k, "
                     "context \"lab\", user \"dev\")");
    free(t);
    t = text("list", pods, 401, 0, NULL, "{\"kind\":\"Status\",\"message\":\"Unauthorized\",\"code\":401}");
    cr_assert_str_eq(t, "the Kubernetes API server https://10.0.0.1:6443 refused our credentials (401 "
                     "Unauthorized): tried bearer token from kubeconfig /k, context \"lab\", user \"dev\"; "
                     "the token or certificate is wrong, expired or unknown to this cluster");
    free(t);
    t = text("create", pods, 403, 0, NULL,
             "{\"kind\":\"Status\",\"message\":\"pods is forbidden: User \\\"dev\\\" cannot create resource "
             "\\\"pods\\\" in API group \\\"\\\" in the namespace \\\"fns\\\"\",\"reason\":\"Forbidden\"}");
    cr_assert_str_eq(t, "forbidden: the API server refused to create pods in namespace \"fns\" (kubeconfig /k, "
                     "context \"lab\", user \"dev\"): pods is forbidden: User \"dev\" cannot create resource "
                     "\"pods\" in API group \"\" in the namespace \"fns\"; missing RBAC rule: a Role with apiGroups "
                     "[\"\"], resources [\"pods\"], verbs [\"create\"], bound to this user by a RoleBinding "
                     "in that namespace");
    free(t);
    /* a subresource (pods/log), a named group (discovery.k8s.io), a cluster-scoped list */
    kube_ref log = {"/api/v1", "pods", "fns", "p1/log", NULL};
    t = text("get", log, 403, 0, NULL, "{\"kind\":\"Status\",\"reason\":\"Forbidden\"}");
    cr_assert_str_eq(t, "forbidden: the API server refused to get pods/log \"p1\" in namespace \"fns\" "
                     "(kubeconfig /k, context \"lab\", user \"dev\"): 403 Forbidden; missing RBAC rule: a Role "
                     "with apiGroups [\"\"], resources [\"pods/log\"], verbs [\"get\"], bound to this user by "
                     "a RoleBinding in that namespace");
    free(t);
    kube_ref slices = {"/apis/discovery.k8s.io/v1beta1", "endpointslices", NULL, NULL, NULL};
    t = text("list", slices, 403, 0, NULL, NULL);
    cr_assert(strstr(t, "refused to list endpointslices (kubeconfig"), "%s", t);
    cr_assert(strstr(t, "a ClusterRole with apiGroups [\"discovery.k8s.io\"], resources "
                     "[\"endpointslices\"], verbs [\"list\"], bound to this user by a ClusterRoleBinding"), "%s", t);
    free(t);
    t = text("create", pods, 404, 0, NULL,
             "{\"kind\":\"Status\",\"message\":\"namespaces \\\"fns\\\" not found\",\"reason\":\"NotFound\","
             "\"details\":{\"name\":\"fns\",\"kind\":\"namespaces\"},\"code\":404}");
    cr_assert_str_eq(t, "namespace \"fns\" does not exist on https://10.0.0.1:6443 (namespaces \"fns\" not found)");
    free(t);
    kube_ref one = {"/api/v1", "pods", "fns", "p1", NULL};
    t = text("get", one, 404, 0, NULL, "{\"kind\":\"Status\",\"message\":\"pods \\\"p1\\\" not found\","
             "\"details\":{\"name\":\"p1\",\"kind\":\"pods\"}}");
    cr_assert_str_eq(t, "pods \"p1\" in namespace \"fns\" not found (pods \"p1\" not found)");
    free(t);
    t = text("create", one, 409, 0, NULL, "{\"kind\":\"Status\",\"message\":\"pods \\\"p1\\\" already exists\","
             "\"reason\":\"AlreadyExists\"}");
    cr_assert_str_eq(t, "create pods \"p1\" in namespace \"fns\": the API server answered 409 AlreadyExists: "
                     "pods \"p1\" already exists");
    free(t);
}

Test(kube_client, path_accessor)
{
    buf err = {0};
    const char *s = "{\"metadata\":{\"name\":\"n\",\"labels\":{\"a\":\"b\"}},\"status\":{\"phase\":\"Running\"}}";
    json *j = json_parse(s, strlen(s), &err);
    cr_assert_not_null(j);
    cr_assert_str_eq(kube_path_str(j, "metadata.name"), "n");
    cr_assert_str_eq(kube_path_str(j, "status.phase"), "Running");
    cr_assert_null(kube_path_str(j, "metadata.labels"));     /* not a string */
    cr_assert_null(kube_path(j, "metadata.nope.deeper"));
    cr_assert_eq(kube_path(j, ""), j);
    json_free(j);
    buf_free(&err);
}

Test(kube_client, ref_dup_owns_its_strings)
{
    char ns[] = "fns", name[] = "p1";
    kube_ref from = {"/api/v1", "pods", ns, name, NULL}, copy;
    cr_assert_eq(kube_ref_dup(&from, &copy), 0);
    ns[0] = name[0] = 'X';   /* the caller's strings change or go: the copy keeps its own */
    buf path = {0};
    cr_assert_eq(kube_ref_path(&copy, &path), 0);
    cr_assert_str_eq(path.data, "/api/v1/namespaces/fns/pods/p1");
    cr_assert_null(copy.query);   /* NULL stays NULL */
    buf_free(&path);
    kube_ref_free(&copy);
    cr_assert_null(copy.api);
}
