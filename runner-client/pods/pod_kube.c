/* pod_kube: `runner-client pod list` and `pod delete`, the function pods on
 * a cluster (those carrying Porch's fn.kpt.dev/image label), through
 * lib/kube's client. Each command runs the event loop until its requests
 * are answered, as the runner will when it serves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/loop.h"
#include "kube/kube_client.h"
#include "kube/kubeconfig.h"
#include "kube/pod_id.h"
#include "kube/pod_owner.h"
#include "kube/pod_template.h"
#include "commands.h"
#include "cli/flags.h"
#include "core/term_text.h"

#define FN_LABEL_SELECTOR "labelSelector=fn.kpt.dev%2Fimage"
/* Not written by Porch: set by our runner after each call (absent: "-"). */

/* One command's run: the loop, the client, what is left to do. */
typedef struct kube_run {
    loop *l;
    kube_config cfg;
    kube_client *c;
    const char *ns;
    int pending;   /* calls in flight */
    int rc;        /* exit status */
    size_t n_deleted, n_failed;   /* delete: outcomes so far */
    buf failed;    /* delete: the names of the pods not deleted, ", "-separated */
} kube_run;

/* One pod's delete in flight: its name as we asked for it (the answer's
 * name is the server's word). */
typedef struct deletion {
    kube_run *r;
    char *name;
} deletion;

static int kube_usage(const char *sub, const char *msg)
{
    term_printf(stderr, "runner-client pod %s: %s\n", sub, msg);
    return 2;
}

/* Loads the configuration, runs the exec plugin, makes the loop and client. */
static int run_open(kube_run *r, const char *sub, const char *kubeconfig, const char *context,
                    const char *ns)
{
    buf err = {0};
    kube_config_opts o = {kubeconfig, context, ns};
    if (kube_config_load(&o, &r->cfg, &err) < 0 || kube_config_exec_credential(&r->cfg, &err) < 0 ||
        !(r->l = loop_new()) || !(r->c = kube_client_new(r->l, &r->cfg, &err))) {
        term_printf(stderr, "runner-client pod %s: %s\n", sub, err.data ? err.data : "out of memory");
        buf_free(&err);
        return -1;
    }
    r->ns = ns ? ns : POD_DEFAULT_NAMESPACE;
    return 0;
}

static void run_close(kube_run *r)
{
    kube_client_free(r->c);
    if (r->l)
        loop_free(r->l);
    kube_config_free(&r->cfg);
}

static void call_ended(kube_run *r)
{
    if (--r->pending == 0)
        loop_stop(r->l);
}

static void fail(kube_run *r, const char *sub, const char *msg)
{
    term_printf(stderr, "runner-client pod %s: %s\n", sub, msg);
    r->rc = 1;
}

/* "3d4h", "5m10s", "42s": kubectl's short ages. */
static void age_text(long long s, char *out, size_t cap)
{
    if (s < 0)
        s = 0;
    if (s < 120)
        snprintf(out, cap, "%llds", s);
    else if (s < 3600)
        snprintf(out, cap, "%lldm%llds", s / 60, s % 60);
    else if (s < 86400)
        snprintf(out, cap, "%lldh%lldm", s / 3600, s % 3600 / 60);
    else
        snprintf(out, cap, "%lldd%lldh", s / 86400, s % 86400 / 3600);
}

/* Seconds since an RFC 3339 UTC time ("2024-01-02T03:04:05Z"), or -1. */
static long long since(const char *t)
{
    struct tm tm = {0};
    const char *end = t ? strptime(t, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!end)
        return -1;
    time_t then = timegm(&tm);
    return (long long)(time(NULL) - then);
}

static const json *function_container(const json *pod)
{
    const json *cs = kube_path(pod, "spec.containers");
    for (size_t i = 0; cs && cs->type == JSON_ARRAY && i < cs->len; i++) {
        const char *name = json_get_str(cs->items[i], "name");
        if (name && !strcmp(name, "function"))
            return cs->items[i];
    }
    return cs && cs->type == JSON_ARRAY && cs->len ? cs->items[0] : NULL;
}

/* What kubectl's STATUS column would say, in short: Terminating, a
 * container's waiting or terminated reason, Ready, NotReady, or the phase. */
static const char *pod_state_text(const json *pod)
{
    if (kube_path(pod, "metadata.deletionTimestamp"))
        return "Terminating";
    const char *lists[] = {"status.initContainerStatuses", "status.containerStatuses"};
    for (int l = 0; l < 2; l++) {
        const json *cs = kube_path(pod, lists[l]);
        for (size_t i = 0; cs && cs->type == JSON_ARRAY && i < cs->len; i++) {
            const char *w = kube_path_str(cs->items[i], "state.waiting.reason");
            const char *t = kube_path_str(cs->items[i], "state.terminated.reason");
            if (w && strcmp(w, "PodInitializing"))
                return w;
            if (l == 1 && t)
                return t;
        }
    }
    const char *phase = kube_path_str(pod, "status.phase");
    if (phase && !strcmp(phase, "Running")) {
        const json *conds = kube_path(pod, "status.conditions");
        for (size_t i = 0; conds && conds->type == JSON_ARRAY && i < conds->len; i++) {
            const char *type = json_get_str(conds->items[i], "type");
            const char *st = json_get_str(conds->items[i], "status");
            if (type && st && !strcmp(type, "Ready"))
                return strcmp(st, "True") ? "NotReady" : "Ready";
        }
    }
    return phase ? phase : "Unknown";
}

/* NAME, STATE, AGE, IDLE, OWNER (the `serve` replica that made or adopted
 * it, fn.kpt.dev/owner), IMAGE: every cell comes from the cluster, so
 * every cell is escaped (term_row). */
static const int list_widths[] = {50, 18, 8, 8, 20, 0};

static void print_pod(const json *pod)
{
    const char *name = kube_path_str(pod, "metadata.name");
    const char *image = json_get_str(function_container(pod), "image");
    const json *ann = kube_path(pod, "metadata.annotations");
    const char *last = json_get_str(ann, POD_LAST_CALL_ANNOTATION);
    char age[32] = "-", idle[32] = "-";
    long long s = since(kube_path_str(pod, "metadata.creationTimestamp"));
    if (s >= 0)
        age_text(s, age, sizeof age);
    if ((s = since(last)) >= 0)
        age_text(s, idle, sizeof idle);
    const char *owner = json_get_str(ann, POD_OWNER_ANNOTATION);
    const char *row[] = {name ? name : "?", pod_state_text(pod), age, idle,
                         owner && *owner ? owner : "-", image ? image : "?"};
    term_row(stdout, row, list_widths, 6);
}

/* ------------------------------------------------------------------------ */
/* list                                                                      */

static void on_namespace(const kube_result *res, void *ctx)
{
    kube_run *r = ctx;
    if (res->not_found)
        term_line(stderr, "runner-client pod list: namespace \"%s\" does not exist on %s\n", r->ns,
                r->cfg.server), r->rc = 1;
    else if (!res->ok)
        fail(r, "list", res->error);
    else
        term_line(stderr, "no function pods in namespace \"%s\"\n", r->ns);
    call_ended(r);
}

static void on_list(const kube_result *res, void *ctx)
{
    kube_run *r = ctx;
    const json *items = json_get(res->obj, "items");
    if (!res->ok) {
        fail(r, "list", res->error);
    } else if (!items || items->type != JSON_ARRAY || items->len == 0) {
        /* Listing a namespace that does not exist answers an empty list:
         * ask for the namespace, so a typo is not reported as "no pods". */
        buf err = {0};
        kube_ref ns = {"/api/v1", "namespaces", NULL, r->ns, NULL};
        if (kube_get(r->c, &ns, on_namespace, r, &err) == 0)
            r->pending++;
        else
            fail(r, "list", err.data ? err.data : "out of memory");
        buf_free(&err);
    } else {
        static const char *const head[] = {"NAME", "STATE", "AGE", "IDLE", "OWNER", "IMAGE"};
        term_row(stdout, head, list_widths, 6);
        for (size_t i = 0; i < items->len; i++)
            print_pod(items->items[i]);
    }
    call_ended(r);
}

/* ------------------------------------------------------------------------ */
/* delete                                                                    */

/* Each pod's outcome is printed as it comes (deleted on stdout, the reason
 * on stderr) and counted, so a bulk delete that fails part-way says which
 * pods are gone and which are not. */
static void delete_failed(kube_run *r, const char *name, const char *why)
{
    fail(r, "delete", why);
    r->n_failed++;
    if (r->failed.len)
        buf_append_str(&r->failed, ", ");
    buf_append_str(&r->failed, name);
}

static void on_deleted(const kube_result *res, void *ctx)
{
    deletion *d = ctx;
    kube_run *r = d->r;
    if (res->ok) {
        const char *row[] = {"deleted pod", d->name};
        term_row(stdout, row, NULL, 2);
        r->n_deleted++;
    } else {
        delete_failed(r, d->name, res->error);
    }
    free(d->name);
    free(d);
    call_ended(r);
}

static void delete_one(kube_run *r, const char *name)
{
    buf err = {0};
    kube_ref ref = {"/api/v1", "pods", r->ns, name, NULL};
    deletion *d = calloc(1, sizeof *d);
    int started = 0;
    if (d && (d->name = strdup(name))) {
        d->r = r;
        started = kube_delete(r->c, &ref, on_deleted, d, &err) == 0;
    }
    if (started) {
        r->pending++;
    } else {
        delete_failed(r, name, err.data ? err.data : "out of memory");
        if (d)
            free(d->name);
        free(d);
    }
    buf_free(&err);
}

static void on_list_for_delete(const kube_result *res, void *ctx)
{
    kube_run *r = ctx;
    const json *items = json_get(res->obj, "items");
    if (!res->ok)
        fail(r, "delete", res->error);
    else if (!items || items->type != JSON_ARRAY || items->len == 0)
        term_line(stderr, "no function pods in namespace \"%s\"\n", r->ns);
    for (size_t i = 0; res->ok && items && items->type == JSON_ARRAY && i < items->len; i++) {
        const char *name = kube_path_str(items->items[i], "metadata.name");
        if (name)
            delete_one(r, name);
    }
    call_ended(r);
}

/* ------------------------------------------------------------------------ */
/* Commands                                                                  */

static const char list_usage[] =
    "Usage: runner-client pod list [--kubeconfig F] [--context C] [--namespace NS]\n"
    "       runner-client pod delete NAME|--all [--kubeconfig F] [--context C] [--namespace NS]\n"
    "\n"
    "list shows the function pods (label fn.kpt.dev/image) of the namespace: state\n"
    "(Ready, a container's waiting reason, Terminating...), age, idle time (since\n"
    "the last call the runner recorded; - when none) and the function image.\n"
    "delete deletes one function pod, or all of them. The namespace defaults to\n"
    POD_DEFAULT_NAMESPACE " (Porch's --pod-namespace). The cluster is found as kubectl\n"
    "finds it: --kubeconfig, $KUBECONFIG, ~/.kube/config, or in-cluster.\n"
    "Exit status: 0, 1 failure, 2 bad usage.\n";

static int run_loop(kube_run *r)
{
    if (r->pending && loop_run(r->l) < 0) {
        term_line(stderr, "runner-client pod: the event loop failed\n");
        return 1;
    }
    return r->rc;
}

int cmd_pod_kube(const char *sub, int argc, char **argv)
{
    const char *kubeconfig = NULL, *context = NULL, *ns = NULL, *all = NULL;
    const char *pos[2] = {0};
    flag_def defs[] = {{"--kubeconfig", &kubeconfig}, {"--context", &context},
                       {"--namespace", &ns}, {0}};
    int n_pos = 0, help = 0, is_delete = !strcmp(sub, "delete");
    buf err = {0};
    /* --all is bare; take it out before the flag parser sees it */
    char **args = calloc((size_t)argc + 1, sizeof *args);
    int n_args = 0;
    for (int i = 0; args && i < argc; i++) {
        if (!strcmp(argv[i], "--all"))
            all = argv[i];
        else
            args[n_args++] = argv[i];
    }
    if (!args) {
        term_line(stderr, "runner-client: out of memory\n");
        return 1;
    }
    int bad = flags_parse(n_args, args, defs, pos, 2, &n_pos, &help, &err) < 0;
    free(args);
    if (bad) {
        int rc = kube_usage(sub, err.data ? err.data : "out of memory");
        buf_free(&err);
        return rc;
    }
    if (help) {
        fputs(list_usage, stdout);
        return 0;
    }
    if (!is_delete && (n_pos || all))
        return kube_usage(sub, "takes no arguments (see --help)");
    if (is_delete && (n_pos > 1 || (n_pos == 1) == (all != NULL)))
        return kube_usage(sub, "give one pod NAME or --all");
    if (is_delete && n_pos && !dns1123_subdomain_valid(pos[0]))
        return kube_usage(sub, "NAME is not a valid pod name");
    if (ns && !dns1123_label_valid(ns))
        return kube_usage(sub, "invalid --namespace (a DNS-1123 label)");
    kube_run r = {0};
    if (run_open(&r, sub, kubeconfig, context, ns) < 0) {
        run_close(&r);
        return 1;
    }
    kube_ref pods = {"/api/v1", "pods", r.ns, NULL, FN_LABEL_SELECTOR};
    int started;
    if (is_delete && n_pos) {
        delete_one(&r, pos[0]);
        started = r.pending;
    } else {
        started = kube_list(r.c, &pods, is_delete ? on_list_for_delete : on_list, &r, &err) == 0;
        r.pending += started;
        if (!started)
            fail(&r, sub, err.data ? err.data : "out of memory");
    }
    int rc = started ? run_loop(&r) : 1;
    if (is_delete && all && r.n_failed)
        term_line(stderr, "runner-client pod delete: deleted %zu of %zu function pods in namespace "
                    "\"%s\"; not deleted: %s\n", r.n_deleted, r.n_deleted + r.n_failed, r.ns,
                    r.failed.data ? r.failed.data : "?");
    else if (is_delete && all && r.n_deleted)
        term_line(stderr, "deleted %zu function pods in namespace \"%s\"\n", r.n_deleted, r.ns);
    buf_free(&err);
    buf_free(&r.failed);
    run_close(&r);
    return rc;
}
