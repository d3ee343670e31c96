/* serve_pod: the pod runtime of `runner-client serve`; see serve_pod.h. */
#include "serve/serve_pod.h"

#include <errno.h>
#include <stdio.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/duration.h"
#include "core/fdio.h"
#include "core/file_watch.h"
#include "core/json.h"
#include "core/log.h"
#include "core/numparse.h"
#include "grpc/metrics.h"
#include "kube/kube_client.h"
#include "kube/kube_http.h"
#include "kube/kube_pod_cache.h"
#include "kube/kube_templates.h"
#include "kube/kubeconfig.h"
#include "kube/pod_id.h"
#include "oci/image_ref.h"
#include "runtime/ev_pod.h"
#include "runtime/health_check.h"

#define SERVE_POD_SETTLE_NS (5LL * 1000000000)
#define SERVE_POD_AUTH_SECRET "auth-secret"   /* Porch's default */
_Static_assert(SERVE_POD_MAX_PODS == POD_MAX_PER_FUNCTION, "one cap, said twice");
#define SERVE_POD_MAX_RETRIES 10   /* each retry may wait for a pod: bounded */

struct serve_pod {
    kube_config cfg;
    kube_client *c;
    pod_cache *pc;
    loop *l;
    uint32_t max_message;
    int max_retries;
    registry_opts registry;   /* the tag listing's (a request's Tag constraint) */
    char replica[254];         /* --replica-name, $POD_NAME or the host name */
    int min_ready;             /* --min-ready-pods */
    kube_templates_opts templates;   /* the base templates the cache reads */
    buf auth;                  /* --enable-private-registries: the dockerconfigjson's bytes */
    const char *auth_path;     /* its file, watched for the kubelet's updates */
    file_watch *auth_watch;
    int auth_said_bad;         /* the file's last bad content logged, until it is good again */
    buf ca_file;               /* --enable-private-registries-tls: the CA file's path */
};

#define SERVE_POD_TLS_PATH "/var/tmp/tls-secret/"   /* Porch's default */
#define SERVE_POD_AUTH_MAX (1u << 20)   /* a Secret's own limit */

/* The private registries' CA, as Porch finds it: ca.crt in dir, else
 * ca.pem; read to check it is a regular file of PEM certificates within
 * the limit (the lookups read it again, by path). */
static int find_ca(serve_pod *p, const char *dir, buf *err)
{
    static const char *const names[] = {"ca.crt", "ca.pem"};
    char why[2][FDIO_WHY_MAX];
    for (int i = 0; i < 2; i++) {
        buf path = {0}, pem = {0};
        buf_printf(&path, "%s%s%s", dir, dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/", names[i]);
        int rc = path.data ? file_read_at(AT_FDCWD, path.data, 0, SERVE_POD_AUTH_MAX, &pem, why[i]) : -1;
        if (!path.data)
            snprintf(why[i], sizeof why[i], "out of memory");
        int is_pem = rc == 0 && pem.data && strstr(pem.data, "-----BEGIN CERTIFICATE-----");
        buf_free(&pem);
        if (rc == 0 && !is_pem) {
            buf_printf(err, "--tls-secret-path %s (--enable-private-registries-tls): %s holds no PEM "
                       "certificate (-----BEGIN CERTIFICATE-----)", dir, names[i]);
            buf_free(&path);
            return -1;
        }
        if (rc == 0) {
            p->ca_file = path;
            return 0;
        }
        buf_free(&path);
        if (errno != ENOENT)   /* there, but unreadable: say so, not "not found" */
            return buf_fail(err, "--tls-secret-path %s (--enable-private-registries-tls): %s %s",
                            dir, names[i], why[i]);
    }
    /* Porch's words */
    return buf_fail(err, "--tls-secret-path %s (--enable-private-registries-tls): ca.crt not found: "
                    "%s, and ca.pem also not found: %s", dir, why[0], why[1]);
}


/* The private registries' dockerconfigjson, read whole into out and
 * checked: a Docker config with an "auths" object (Porch reads its auths). */
static int read_auth(buf *out, const char *path, buf *err)
{
    char why[FDIO_WHY_MAX];
    if (file_read_at(AT_FDCWD, path, 0, SERVE_POD_AUTH_MAX, out, why) < 0)
        return buf_fail(err, "--registry-auth-secret-path %s (--enable-private-registries): %s", path,
                        why);
    buf perr = {0};
    json *v = json_parse(out->data, out->len, &perr);
    const json *auths = json_get(v, "auths");
    if (!v || !auths || auths->type != JSON_OBJECT)
        buf_printf(err, "--registry-auth-secret-path %s (--enable-private-registries): not a "
                   "dockerconfigjson (a JSON object with \"auths\"): %s", path,
                   perr.data ? perr.data : "no \"auths\" object");
    json_free(v);
    buf_free(&perr);
    return err->len ? -1 : 0;
}

/* The mounted dockerconfigjson changed (the kubelet updates a Secret's
 * volume in place, its lookups already read the file each time): the pull
 * Secret in the namespace follows. A file that turned unreadable or bad
 * keeps the last good bytes, said once. */
static void auth_changed(void *ctx)
{
    serve_pod *p = ctx;
    buf now = {0}, err = {0};
    if (read_auth(&now, p->auth_path, &err) < 0) {
        if (!p->auth_said_bad)
            log_warn("%s; the pull Secret keeps the last good one", err.data ? err.data : "out of memory");
        p->auth_said_bad = 1;
    } else if (now.len != p->auth.len || memcmp(now.data, p->auth.data, now.len)) {
        p->auth_said_bad = 0;
        log_info("%s changed: the pull Secret is updated", p->auth_path);
        buf old = p->auth;
        p->auth = now;
        now = old;   /* freed below */
        if (pod_cache_set_pull_secret(p->pc, p->auth.data, p->auth.len) < 0)
            log_warn("%s changed: out of memory; the pull Secret keeps the last bytes", p->auth_path);
    } else {
        p->auth_said_bad = 0;
    }
    buf_free(&now);
    buf_free(&err);
}

static void serve_pod_metrics(buf *out, void *ctx)
{
    serve_pod *p = ctx;
    pod_cache_metrics(p->pc, out);
}

/* In Porch's own words. */
int serve_pod_require(const serve_pod_flags *f, buf *err)
{
    if (f->wrapper && *f->wrapper)
        return 0;
    return buf_fail(err, "environment variable WRAPPER_SERVER_IMAGE must be set to use pod "
                    "function evaluator runtime (Porch's words; --wrapper-server-image is the "
                    "same: the init container's image), or run without pods with "
                    "--disable-runtimes=pod");
}

int serve_pod_check(const serve_pod_flags *f, buf *err)
{
    int64_t ns;
    if (f->dial && strcmp(f->dial, "service") && strcmp(f->dial, "pod"))
        return buf_fail(err, "invalid value \"%s\" for --dial: want service or pod", f->dial);
    if (f->ns && !dns1123_label_valid(f->ns))
        return buf_fail(err, "invalid value \"%s\" for %s: want a DNS-1123 label", f->ns,
                        f->ns_flag ? f->ns_flag : "--namespace");
    if (f->ready_timeout && (duration_parse(f->ready_timeout, &ns) < 0 || ns <= 0))
        return buf_fail(err, "invalid value \"%s\" for %s: want a duration such as 60s",
                        f->ready_timeout, f->ready_flag ? f->ready_flag : "--ready-timeout");
    unsigned long long n;
    if (f->max_pods && (parse_uint(f->max_pods, POD_MAX_PER_FUNCTION, &n) < 0 || n < 1))
        return buf_fail(err, "invalid value \"%s\" for --max-parallel-pods-per-function: want a "
                        "whole number 1-%d", f->max_pods, POD_MAX_PER_FUNCTION);
    if (f->waitlist && (parse_uint(f->waitlist, 1000000, &n) < 0 || n < 1))
        return buf_fail(err, "invalid value \"%s\" for --max-waitlist-length: want a whole number "
                        "1-1000000", f->waitlist);
    if (f->max_retries && parse_uint(f->max_retries, SERVE_POD_MAX_RETRIES, &n) < 0)
        return buf_fail(err, "invalid value \"%s\" for --max-grpc-retries: want a whole number "
                        "0-%d", f->max_retries, SERVE_POD_MAX_RETRIES);
    if (f->pod_ttl && (duration_parse(f->pod_ttl, &ns) < 0 || ns < 0))
        return buf_fail(err, "invalid value \"%s\" for --pod-ttl: want a duration such as 30m "
                        "(0: never)", f->pod_ttl);
    if (f->scan_interval && (duration_parse(f->scan_interval, &ns) < 0 || ns <= 0))
        return buf_fail(err, "invalid value \"%s\" for --scan-interval: want a duration such as 1m",
                        f->scan_interval);
    if (f->wrapper && *f->wrapper && image_ref_check(f->wrapper, err) < 0)
        return -1;
    if (f->min_ready && parse_uint(f->min_ready, POD_MAX_PER_FUNCTION, &n) < 0)
        return buf_fail(err, "invalid value \"%s\" for --min-ready-pods: want a whole number 0-%d",
                        f->min_ready, POD_MAX_PER_FUNCTION);
    if (f->replica && *f->replica && pod_owner_name_check(f->replica, err) < 0)
        return -1;
    if (f->template_wait && (duration_parse(f->template_wait, &ns) < 0 || ns < 0))
        return buf_fail(err, "invalid value \"%s\" for --template-wait-timeout: want a duration "
                        "such as 2m (0: do not wait)", f->template_wait);
    const char *const names[][2] = {{f->pod_template, "--base-pod-template-name"},
                                    {f->service_template, "--base-service-template-name"}};
    for (size_t i = 0; i < 2; i++)
        if (names[i][0] && !dns1123_subdomain_valid(names[i][0]))
            return buf_fail(err, "invalid value \"%s\" for %s: want a DNS-1123 subdomain (a "
                            "Kubernetes object name)", names[i][0], names[i][1]);
    if (f->private_registries > 0 && f->auth_secret_name && !dns1123_subdomain_valid(f->auth_secret_name))
        return buf_fail(err, "invalid value \"%s\" for --registry-auth-secret-name: want a DNS-1123 "
                        "subdomain (a Kubernetes object name)", f->auth_secret_name);
    if (f->private_registries > 0 && f->registry && f->registry->docker_config)
        return buf_fail(err, "--docker-config and --enable-private-registries both give the "
                        "registry credentials: give one (the latter reads "
                        "--registry-auth-secret-path)");
    if (f->lease && (duration_parse(f->lease, &ns) < 0 || ns < 3000000000LL || ns > 3600000000000LL))
        return buf_fail(err, "invalid value \"%s\" for --lease-duration: want a duration from 3s "
                        "to 1h, such as 15s", f->lease);
    return 0;
}

/* This replica's name: --replica-name, else $POD_NAME (the Deployment's
 * downward API), else the host name; checked by pod_cache_new. */
static int replica_name(const serve_pod_flags *f, char *out, size_t cap, buf *err)
{
    const char *name = f->replica && *f->replica ? f->replica : getenv("POD_NAME");
    char host[256] = "";
    if (!name || !*name) {
        if (gethostname(host, sizeof host - 1) < 0)
            return buf_fail(err, "cannot read the host name for this replica's name (give "
                            "--replica-name): %s", strerror(errno));
        name = host;
    }
    if (strlen(name) >= cap)
        return buf_fail(err, "the replica name \"%.64s...\" is longer than %zu characters (give "
                        "--replica-name)", name, cap - 1);
    memcpy(out, name, strlen(name) + 1);
    return 0;
}

serve_pod *serve_pod_open(loop *l, const serve_pod_flags *f, uint32_t max_message, buf *err)
{
    serve_pod *p = calloc(1, sizeof *p);
    if (!p) {
        buf_printf(err, "out of memory");
        return NULL;
    }
    p->l = l;
    p->max_message = max_message;
    int64_t ready_ns = POD_READY_TIMEOUT_NS;
    int64_t ttl_ns = POD_TTL_NS, scan_ns = POD_SCAN_NS;
    if (f->ready_timeout)   /* all checked by serve_pod_check */
        duration_parse(f->ready_timeout, &ready_ns);
    if (f->pod_ttl)
        duration_parse(f->pod_ttl, &ttl_ns);
    if (f->scan_interval)
        duration_parse(f->scan_interval, &scan_ns);
    unsigned long long max_pods = POD_DEFAULT_MAX_PODS, waitlist = POD_DEFAULT_WAITLIST;
    if (f->max_pods)
        parse_uint(f->max_pods, POD_MAX_PER_FUNCTION, &max_pods);
    if (f->waitlist)
        parse_uint(f->waitlist, 1000000, &waitlist);
    unsigned long long retries = EV_POD_DEFAULT_RETRIES;
    if (f->max_retries)
        parse_uint(f->max_retries, SERVE_POD_MAX_RETRIES, &retries);
    p->max_retries = (int)retries;
    unsigned long long min_ready = 0;
    if (f->min_ready)
        parse_uint(f->min_ready, POD_MAX_PER_FUNCTION, &min_ready);
    p->min_ready = (int)min_ready;
    int64_t lease_ns = 0;
    if (f->lease)
        duration_parse(f->lease, &lease_ns);
    if (replica_name(f, p->replica, sizeof p->replica, err) < 0) {
        serve_pod_close(p);
        return NULL;
    }
    kube_config_opts o = {f->kubeconfig, f->context, f->ns};
    pod_cache_opts po = {.namespace = f->ns, .wrapper_image = f->wrapper,
                         .dial = f->dial && !strcmp(f->dial, "pod") ? POD_DIAL_POD : POD_DIAL_SERVICE,
                         .max_request_body_size = max_message, .ready_timeout_ns = ready_ns,
                         .keep_watching = 1, .health = &health_check_hook,
                         .ttl_ns = ttl_ns, .scan_ns = scan_ns,
                         .ttl_for = ttl_ns > 0 ? f->ttl_for : NULL, .config_ctx = f->ttl_ctx,
                         .max_pods = (int)max_pods, .waitlist = (int)waitlist,
                         .limits_for = f->limits_for, .overrides_for = f->overrides_for,
                         .owner = p->replica,
                         .lease_ns = lease_ns};
    int64_t wait_ns = 0;
    if (f->template_wait)
        duration_parse(f->template_wait, &wait_ns);
    p->templates = (kube_templates_opts){.namespace = f->ns ? f->ns : POD_DEFAULT_NAMESPACE,
                                         .pod_name = f->pod_template,
                                         .service_name = f->service_template,
                                         .wrapper_image = f->wrapper,
                                         .skip_creation = f->skip_templates > 0, .wait_ns = wait_ns};
    po.templates = &p->templates;
    if (f->registry)
        po.registry = p->registry = registry_flags_opts(f->registry, 0);
    if (serve_pod_require(f, err) < 0) {   /* first, as Porch checks it */
        serve_pod_close(p);
        return NULL;
    }
    if (f->private_registries > 0) {
        const char *path = f->auth_secret_path ? f->auth_secret_path : SERVE_POD_AUTH_PATH;
        if (read_auth(&p->auth, path, err) < 0) {
            serve_pod_close(p);
            return NULL;
        }
        po.registry.docker_config = p->registry.docker_config = path;   /* the lookups' credentials */
        if (f->private_registries_tls > 0) {
            if (find_ca(p, f->tls_secret_path ? f->tls_secret_path : SERVE_POD_TLS_PATH, err) < 0) {
                serve_pod_close(p);
                return NULL;
            }
            po.registry.ca_file = p->registry.ca_file = p->ca_file.data;
        }
        po.pull_secret = f->auth_secret_name ? f->auth_secret_name : SERVE_POD_AUTH_SECRET;
        po.pull_secret_data = p->auth.data;
        po.pull_secret_len = p->auth.len;
        p->auth_path = path;
    }
    buf why = {0};
    if (kube_config_load(&o, &p->cfg, &why) < 0 || kube_config_exec_credential(&p->cfg, &why) < 0) {
        buf_printf(err, "the pod runtime needs a Kubernetes cluster: %s; give --kubeconfig, or run "
                   "without pods with --disable-runtimes=pod", why.data ? why.data : "out of memory");
        buf_free(&why);
        serve_pod_close(p);
        return NULL;
    }
    if (!(p->c = kube_client_new(l, &p->cfg, err)) || !(p->pc = pod_cache_new(l, p->c, &po, err)) ||
        (p->auth_path && !(p->auth_watch = file_watch_start(l, p->auth_path, auth_changed, p, err)))) {
        serve_pod_close(p);
        return NULL;
    }
    metrics_section(serve_pod_metrics, p);   /* krm_pod_runtime_* on /metrics */
    return p;
}

evaluator *serve_pod_evaluator(serve_pod *p)
{
    /* the caller's deadline (grpc-timeout) bounds each call; the pod wait
     * has --ready-timeout */
    ev_pod_opts eo = {.max_message = p->max_message, .max_retries = p->max_retries,
                      .tags_multi = kube_http_multi(kube_client_http(p->c)),
                      .tags_registry = &p->registry};
    return ev_pod_new(p->l, p->pc, &eo);
}

static void on_warm(const pod_answer *a, void *ctx)
{
    (void)ctx;
    if (a->error)
        log_warn("warm-up of %s's pod failed (the first call will try again): %s", a->image, a->error);
    else
        log_info("warm-up: pod %s %s for %s", a->pod, a->created ? "created" : "adopted", a->image);
}

void serve_pod_warm(serve_pod *p, const char *image)
{
    log_info("warm-up: starting the pod for %s", image);
    if (!pod_cache_get(p->pc, image, on_warm, NULL))
        log_warn("warm-up of %s: out of memory", image);
}

int serve_pod_min_ready(const serve_pod *p, int annotated)
{
    return annotated >= 0 ? annotated : p->min_ready;
}

void serve_pod_keep_warm(serve_pod *p, pod_warm *images, int n)
{
    for (int i = 0; i < n; i++)
        images[i].min = serve_pod_min_ready(p, images[i].min);
    if (pod_cache_set_warm(p->pc, images, n) < 0)
        log_warn("warm pods: out of memory; the images kept warm are unchanged");
}

int serve_pod_http_get(void *ctx, const char *path, const char *query, http1_response *r)
{
    serve_pod *p = ctx;
    if (strcmp(path, "/debug/pods"))
        return 0;
    int text = !strcmp(query, "format=text");
    if (!text && *query && strcmp(query, "format=json")) {
        r->status = 400;
        buf_printf(&r->body, "/debug/pods takes ?format=json (the default) or ?format=text\n");
    } else if (!p) {
        r->status = 404;
        buf_printf(&r->body, "/debug/pods: the pod runtime is off (--disable-runtimes)\n");
    } else if (pod_cache_view(p->pc, text, &r->body) < 0) {
        r->status = 500;
        buf_reset(&r->body);
        buf_printf(&r->body, "out of memory\n");
    } else if (!text) {
        r->content_type = "application/json";
    }
    return 1;
}

kube_client *serve_pod_client(serve_pod *p)
{
    return p->c;
}

void serve_pod_close(serve_pod *p)
{
    if (!p)
        return;
    metrics_section(NULL, NULL);
    file_watch_stop(p->auth_watch);
    if (p->pc)   /* the server has drained: finish the cache's last API calls (a Delete) */
        pod_cache_settle(p->pc, SERVE_POD_SETTLE_NS);
    pod_cache_free(p->pc);
    kube_client_free(p->c);
    kube_config_free(&p->cfg);
    buf_free(&p->auth);
    buf_free(&p->ca_file);
    free(p);
}
