/* kube_pod_metrics: the pod runtime's figures per image, for /metrics; see
 * kube_pod_cache.h.
 *
 * Label cardinality is bounded: images are operator-configured in practice,
 * but a caller names any image it likes, so the first POD_METRICS_IMAGES
 * images seen get their own series and every later one counts under
 * image="other". Label values are escaped as Prometheus' text format wants. */
#include "kube/kube_pod_internal.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


image_stats *stats_for(pod_cache *pc, const char *image)
{
    for (int i = 0; i < pc->n_stats; i++)
        if (!strcmp(pc->stats[i].image, image))
            return &pc->stats[i];
    if (pc->n_stats == POD_METRICS_IMAGES)
        return &pc->other;
    image_stats *s = &pc->stats[pc->n_stats];
    if (!(s->image = strdup(image)))
        return &pc->other;
    pc->n_stats++;
    return s;
}

void stats_free(pod_cache *pc)
{
    for (int i = 0; i < pc->n_stats; i++)
        free(pc->stats[i].image);
    pc->n_stats = 0;
}

/* The buckets' upper bounds (seconds): a warm call is milliseconds, one
 * that waits for a cold pod seconds, the ready timeout a minute. */
static const double bounds[POD_METRICS_BUCKETS] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                   0.1, 0.25, 0.5, 1, 5, 60};
static const char *const severity_names[POD_SEVERITY_COUNT] = {"none", "info", "warning", "error",
                                                               "unknown"};

static void observe(histogram *h, int64_t ns)
{
    double s = (double)(ns > 0 ? ns : 0) / 1e9;
    int i = 0;
    while (i < POD_METRICS_BUCKETS && s > bounds[i])
        i++;
    if (i < POD_METRICS_BUCKETS)
        h->le[i]++;
    h->count++;
    h->sum += s;
}

void pod_cache_count_call(pod_cache *pc, const char *image, const pod_call_figures *f)
{
    if (f->code < 0 || f->code >= POD_METRICS_CODES || f->severity < 0 ||
        f->severity >= POD_SEVERITY_COUNT)
        return;
    image_stats *s = stats_for(pc, image);
    s->calls[f->code]++;
    s->code_names[f->code] = f->code_name;
    s->severity[f->severity]++;
    observe(&s->duration, f->duration_ns);
    if (f->wait_ns >= 0)
        observe(&s->wait, f->wait_ns);
}

/* ---- rendering ---------------------------------------------------------- */

static void help(buf *out, const char *name, const char *type, const char *text)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, text, name, type);
}

/* `name{image="..."` (the caller closes the braces): the value escaped as
 * the text format wants (backslash, double quote, newline). */
static void series(buf *out, const char *name, const image_stats *s)
{
    buf_printf(out, "%s{image=\"", name);
    for (const char *c = s->image ? s->image : "other"; *c; c++) {
        if (*c == '\\' || *c == '"')
            buf_printf(out, "\\%c", *c);
        else if (*c == '\n')
            buf_append_str(out, "\\n");
        else
            buf_append(out, c, 1);
    }
    buf_append_str(out, "\"");
}

typedef struct stats_list {
    image_stats *s[POD_METRICS_IMAGES + 1];
    int n;
} stats_list;

static void each_stats(pod_cache *pc, stats_list *l)
{
    l->n = 0;
    for (int i = 0; i < pc->n_stats; i++)
        l->s[l->n++] = &pc->stats[i];
    l->s[l->n++] = &pc->other;
}

static void histograms(buf *out, const stats_list *l, const char *name, const char *text,
                       size_t offset)
{
    char bucket[96], sum[96], count[96];
    snprintf(bucket, sizeof bucket, "%s_bucket", name);
    snprintf(sum, sizeof sum, "%s_sum", name);
    snprintf(count, sizeof count, "%s_count", name);
    help(out, name, "histogram", text);
    for (int i = 0; i < l->n; i++) {
        const histogram *h = (const histogram *)((const char *)l->s[i] + offset);
        uint64_t below = 0;
        for (int b = 0; b < POD_METRICS_BUCKETS; b++) {
            below += h->le[b];
            series(out, bucket, l->s[i]);
            buf_printf(out, ",le=\"%g\"} %llu\n", bounds[b], (unsigned long long)below);
        }
        series(out, bucket, l->s[i]);
        buf_printf(out, ",le=\"+Inf\"} %llu\n", (unsigned long long)h->count);
        series(out, sum, l->s[i]);
        buf_printf(out, "} %.6f\n", h->sum);
        series(out, count, l->s[i]);
        buf_printf(out, "} %llu\n", (unsigned long long)h->count);
    }
}

static void counter(buf *out, const stats_list *l, const char *name, const char *text,
                    size_t offset)
{
    help(out, name, "counter", text);
    for (int i = 0; i < l->n; i++) {
        series(out, name, l->s[i]);
        buf_printf(out, "} %llu\n", (unsigned long long)*(const uint64_t *)((const char *)l->s[i] + offset));
    }
}

void pod_cache_metrics(pod_cache *pc, buf *out)
{
    static const pod_state held[] = {POD_REQUESTED, POD_CREATING, POD_WAITING_READY, POD_SERVING,
                                     POD_FAILED};
    for (fn_entry *f = pc->fns; f; f = f->next)   /* every image held has its row */
        stats_for(pc, f->image);
    stats_list l;
    each_stats(pc, &l);
    help(out, "krm_pod_runtime_pods", "gauge", "Function pods the runner holds, by image and state.");
    for (int i = 0; i < l.n; i++)
        for (size_t k = 0; k < sizeof held / sizeof *held; k++) {
            int n = 0;
            for (fn_entry *f = pc->fns; f; f = f->next)
                if (stats_for(pc, f->image) == l.s[i])
                    for (pod *p = f->pods; p; p = p->next)
                        n += p->state == held[k];
            series(out, "krm_pod_runtime_pods", l.s[i]);
            buf_printf(out, ",state=\"%s\"} %d\n", pod_state_name(held[k]), n);
        }
    help(out, "krm_pod_runtime_calls_total", "counter",
         "Calls through function pods that ended, by image and gRPC code.");
    for (int i = 0; i < l.n; i++)
        for (int code = 0; code < POD_METRICS_CODES; code++)
            if (l.s[i]->calls[code]) {
                series(out, "krm_pod_runtime_calls_total", l.s[i]);
                buf_printf(out, ",code=\"%s\"} %llu\n", l.s[i]->code_names[code],
                           (unsigned long long)l.s[i]->calls[code]);
            }
    counter(out, &l, "krm_pod_runtime_pods_created_total", "Function pods created, by image.",
            offsetof(image_stats, created));
    counter(out, &l, "krm_pod_runtime_pods_adopted_total",
            "Function pods found by their label and taken over, by image.", offsetof(image_stats, adopted));
    counter(out, &l, "krm_pod_runtime_pods_reclaimed_total",
            "Idle function pods deleted after their time to live, by image.",
            offsetof(image_stats, reclaimed));
    counter(out, &l, "krm_pod_runtime_retries_total",
            "Calls sent again after a pod ended them without an answer, by image.",
            offsetof(image_stats, retries));
    counter(out, &l, "krm_pod_runtime_evictions_total",
            "Pods dropped after the check that follows a failed call (gone, not Running, "
            "being deleted), by image.", offsetof(image_stats, evictions));
    histograms(out, &l, "krm_pod_runtime_call_duration_seconds",
               "Calls through function pods, from their arrival to their end (waits and retries "
               "included), by image.", offsetof(image_stats, duration));
    histograms(out, &l, "krm_pod_runtime_queue_wait_seconds",
               "Time calls waited for a pod of their image to take them (a cold start, a pod "
               "coming up), by image.", offsetof(image_stats, wait));
    help(out, "krm_pod_runtime_calls_by_severity_total", "counter",
         "Calls through function pods by the worst severity among their results (none: no "
         "result; unknown: the call failed, or its ResourceList was not read), by image.");
    for (int i = 0; i < l.n; i++)
        for (int k = 0; k < POD_SEVERITY_COUNT; k++)
            if (l.s[i]->severity[k]) {
                series(out, "krm_pod_runtime_calls_by_severity_total", l.s[i]);
                buf_printf(out, ",severity=\"%s\"} %llu\n", severity_names[k],
                           (unsigned long long)l.s[i]->severity[k]);
            }
    help(out, "krm_pod_runtime_pod_start_seconds", "summary",
         "From a pod's request (lookup, create or adopt) to its first serving, by image.");
    for (int i = 0; i < l.n; i++) {
        series(out, "krm_pod_runtime_pod_start_seconds_sum", l.s[i]);
        buf_printf(out, "} %.3f\n", (double)l.s[i]->start_ns_sum / 1e9);
        series(out, "krm_pod_runtime_pod_start_seconds_count", l.s[i]);
        buf_printf(out, "} %llu\n", (unsigned long long)l.s[i]->started);
    }
    if (pc->o.owner) {   /* replicas sharing the namespace */
        uint64_t renewed, failed;
        kube_lease_counts(pc->own.lease, &renewed, &failed);
        help(out, "krm_pod_runtime_lease_held", "gauge",
             "1 while this replica's Lease was renewed within its duration (its pods are its own).");
        buf_printf(out, "krm_pod_runtime_lease_held %d\n", kube_lease_held(pc->own.lease));
        help(out, "krm_pod_runtime_lease_renewals_total", "counter", "Writes of this replica's Lease.");
        buf_printf(out, "krm_pod_runtime_lease_renewals_total %llu\n", (unsigned long long)renewed);
        help(out, "krm_pod_runtime_lease_failures_total", "counter",
             "Writes of this replica's Lease the API server refused or did not answer.");
        buf_printf(out, "krm_pod_runtime_lease_failures_total %llu\n", (unsigned long long)failed);
        help(out, "krm_pod_runtime_pods_claimed_total", "counter",
             "Pods of replicas whose Lease expired made this replica's.");
        buf_printf(out, "krm_pod_runtime_pods_claimed_total %llu\n",
                   (unsigned long long)pc->own.claimed);
        help(out, "krm_pod_runtime_pods_collected_total", "counter",
             "This replica's pods it did not hold (claimed, or an earlier process's) deleted idle.");
        buf_printf(out, "krm_pod_runtime_pods_collected_total %llu\n",
                   (unsigned long long)pc->own.collected);
    }
}
