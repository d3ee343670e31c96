/* metrics: counters and their Prometheus text rendering; see metrics.h. */
#include "grpc/metrics.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "grpc/grpc_status.h"

#define METRICS_METHODS 16      /* distinct methods; more are folded into the last */
#define METRICS_CODES 17        /* gRPC status codes 0..16 */
#define METRICS_EXITS 256       /* exit statuses 0..255 */
#define METRICS_SIGNALS 65

static const double bucket_le[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
#define METRICS_BUCKETS (sizeof bucket_le / sizeof bucket_le[0])

typedef struct method_stats {
    const rpc_method *m;
    uint64_t started;
    uint64_t handled[METRICS_CODES];
    uint64_t buckets[METRICS_BUCKETS];   /* cumulative at render time, not here */
    uint64_t count;
    double seconds_sum;
} method_stats;

static struct {
    method_stats methods[METRICS_METHODS];
    size_t n_methods;
    uint64_t exits[METRICS_EXITS];
    uint64_t signals[METRICS_SIGNALS];
    uint64_t orphans_killed;
    uint64_t bytes_in, bytes_out;
    uint64_t counters[METRIC_COUNTERS];
} stats;

static const struct {
    const char *name, *help;
} counter_info[METRIC_COUNTERS] = {
    [METRIC_CONNECTIONS_ACCEPTED] = {"krm_connections_accepted_total",
                                     "Connections accepted (gRPC and HTTP/1.1 alike): a client "
                                     "that keeps its connection adds one, however many calls."},
    [METRIC_ACCEPT_PAUSES] = {"krm_accept_pauses_total",
                              "Times accepting paused: out of file descriptors or memory."},
    [METRIC_STREAMS_REFUSED] = {"krm_streams_refused_total",
                                "Streams refused (REFUSED_STREAM): the connection's call slots "
                                "were taken, cancelled calls included until their function is reaped."},
    [METRIC_REQUESTS_OVER_BUDGET] = {"krm_requests_over_budget_total",
                                     "Requests refused (RESOURCE_EXHAUSTED): unfinished requests "
                                     "already held the connection's or the server's byte budget."},
    [METRIC_SEND_STALLS] = {"krm_send_stalls_total",
                            "Streams reset: the response could not be sent for the stall limit or "
                            "past the call's deadline (the client did not read it)."},
    [METRIC_CALLS_QUEUED] = {"krm_function_calls_queued_total",
                             "Calls that waited for a function slot (--max-concurrent-functions)."},
    [METRIC_CALLS_REFUSED_BUSY] = {"krm_function_calls_refused_total",
                                   "Calls refused (RESOURCE_EXHAUSTED): every function slot and "
                                   "wait-queue place was taken."},
    [METRIC_PRESPAWN_HITS] = {"krm_prespawn_hits_total",
                              "Calls given a function process started before they came (--prespawn)."},
    [METRIC_PRESPAWN_MISSES] = {"krm_prespawn_misses_total",
                                "Calls that found no pre-started function waiting (none yet, or "
                                "prespawning turned off) and started their own."},
    [METRIC_HEADERS_REFUSED] = {"krm_request_headers_refused_total",
                                "Requests refused for their metadata: a header list over 1 MiB "
                                "(RESOURCE_EXHAUSTED); a header block in more CONTINUATION "
                                "frames than 16 MiB takes, or one nghttp2 cannot decode (a "
                                "header over 64 KiB) (GOAWAY, the connection closed)."},
    [METRIC_QUEUE_DEADLINES] = {"krm_function_queue_deadlines_total",
                                "Calls whose deadline passed while they waited for a function "
                                "slot (--max-concurrent-functions): their function never started."},
};

void metrics_count(metrics_counter which)
{
    if (which < METRIC_COUNTERS)
        stats.counters[which]++;
}

static method_stats *stats_for(const rpc_method *m)
{
    for (size_t i = 0; i < stats.n_methods; i++)
        if (stats.methods[i].m == m)
            return &stats.methods[i];
    if (stats.n_methods == METRICS_METHODS)
        return &stats.methods[METRICS_METHODS - 1];
    stats.methods[stats.n_methods].m = m;
    return &stats.methods[stats.n_methods++];
}

void metrics_call_started(const rpc_method *m)
{
    stats_for(m)->started++;
}

void metrics_call_handled(const rpc_method *m, int code, int64_t duration_ns)
{
    method_stats *s = stats_for(m);
    s->handled[code >= 0 && code < METRICS_CODES ? code : GRPC_UNKNOWN]++;
    double seconds = (double)duration_ns / 1e9;
    size_t b = 0;
    while (b < METRICS_BUCKETS && seconds > bucket_le[b])
        b++;
    if (b < METRICS_BUCKETS)
        s->buckets[b]++;
    s->count++;
    s->seconds_sum += seconds;
}

void metrics_function_exited(int wait_status)
{
    if (WIFEXITED(wait_status))
        stats.exits[WEXITSTATUS(wait_status) & 0xff]++;
    else if (WIFSIGNALED(wait_status) && WTERMSIG(wait_status) < METRICS_SIGNALS)
        stats.signals[WTERMSIG(wait_status)]++;
}

void metrics_orphan_killed(void) { stats.orphans_killed++; }

void metrics_bytes_received(size_t n) { stats.bytes_in += n; }
void metrics_bytes_sent(size_t n) { stats.bytes_out += n; }

static void render_help(buf *out, const char *name, const char *type, const char *help)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static struct {
    metrics_section_fn *fn;
    void *ctx;
} section;

void metrics_section(metrics_section_fn *fn, void *ctx)
{
    section.fn = fn;
    section.ctx = ctx;
}

#define METRICS_GAUGES 16

static struct {
    const char *name, *labels, *help;
    metrics_gauge_fn *read;
} gauges[METRICS_GAUGES];

void metrics_gauge(const char *name, const char *labels, const char *help,
                   metrics_gauge_fn *read)
{
    for (int i = 0; i < METRICS_GAUGES; i++)
        if (!gauges[i].name || (!strcmp(gauges[i].name, name) && !strcmp(gauges[i].labels, labels))) {
            gauges[i].name = name;
            gauges[i].labels = labels;
            gauges[i].help = help;
            gauges[i].read = read;
            return;
        }
}

static void render_gauges(buf *out)
{
    for (int i = 0; i < METRICS_GAUGES && gauges[i].name; i++) {
        if (!i || strcmp(gauges[i - 1].name, gauges[i].name))
            render_help(out, gauges[i].name, "gauge", gauges[i].help);
        buf_printf(out, "%s%s%s%s %zu\n", gauges[i].name, *gauges[i].labels ? "{" : "",
                   gauges[i].labels, *gauges[i].labels ? "}" : "", gauges[i].read());
    }
}

/* go-grpc-prometheus's grpc_type label. */
static const char *grpc_type(const rpc_method *m)
{
    if (m->client_streaming)
        return m->server_streaming ? "bidi_stream" : "client_stream";
    return m->server_streaming ? "server_stream" : "unary";
}

static void render_calls(buf *out)
{
    render_help(out, "grpc_server_started_total", "counter", "RPCs started on the server.");
    for (size_t i = 0; i < stats.n_methods; i++) {
        const method_stats *s = &stats.methods[i];
        buf_printf(out, "grpc_server_started_total{grpc_type=\"%s\",grpc_service=\"%s\","
                   "grpc_method=\"%s\"} %llu\n", grpc_type(s->m),
                   s->m->service, s->m->name, (unsigned long long)s->started);
    }
    render_help(out, "grpc_server_handled_total", "counter",
                "RPCs completed on the server, by status code.");
    for (size_t i = 0; i < stats.n_methods; i++)
        for (int code = 0; code < METRICS_CODES; code++) {
            const method_stats *s = &stats.methods[i];
            if (!s->handled[code])
                continue;
            buf_printf(out, "grpc_server_handled_total{grpc_type=\"%s\",grpc_service=\"%s\","
                       "grpc_method=\"%s\",grpc_code=\"%s\"} %llu\n",
                       grpc_type(s->m), s->m->service,
                       s->m->name, grpc_code_go_name(code), (unsigned long long)s->handled[code]);
        }
}

static void render_latency(buf *out)
{
    render_help(out, "grpc_server_handling_seconds", "histogram",
                "Time from the request's headers to the end of the RPC.");
    for (size_t i = 0; i < stats.n_methods; i++) {
        const method_stats *s = &stats.methods[i];
        char labels[256];
        snprintf(labels, sizeof labels, "grpc_type=\"%s\",grpc_service=\"%s\",grpc_method=\"%s\"",
                 grpc_type(s->m), s->m->service, s->m->name);
        uint64_t cumulative = 0;
        for (size_t b = 0; b < METRICS_BUCKETS; b++) {
            cumulative += s->buckets[b];
            buf_printf(out, "grpc_server_handling_seconds_bucket{%s,le=\"%g\"} %llu\n", labels,
                       bucket_le[b], (unsigned long long)cumulative);
        }
        buf_printf(out, "grpc_server_handling_seconds_bucket{%s,le=\"+Inf\"} %llu\n", labels,
                   (unsigned long long)s->count);
        buf_printf(out, "grpc_server_handling_seconds_sum{%s} %.6f\n", labels, s->seconds_sum);
        buf_printf(out, "grpc_server_handling_seconds_count{%s} %llu\n", labels,
                   (unsigned long long)s->count);
    }
}

static void render_functions(buf *out)
{
    render_help(out, "krm_function_exits_total", "counter",
                "Function processes that ended, by exit code or signal.");
    for (int i = 0; i < METRICS_EXITS; i++)
        if (stats.exits[i])
            buf_printf(out, "krm_function_exits_total{code=\"%d\",signal=\"\"} %llu\n", i,
                       (unsigned long long)stats.exits[i]);
    for (int i = 0; i < METRICS_SIGNALS; i++)
        if (stats.signals[i])
            buf_printf(out, "krm_function_exits_total{code=\"\",signal=\"%d\"} %llu\n", i,
                       (unsigned long long)stats.signals[i]);
    render_help(out, "krm_orphans_killed_total", "counter",
                "Processes functions left behind, re-parented to the server and killed.");
    buf_printf(out, "krm_orphans_killed_total %llu\n", (unsigned long long)stats.orphans_killed);
}

void metrics_render(buf *out, size_t in_flight)
{
    render_calls(out);
    render_latency(out);
    render_help(out, "krm_calls_in_flight", "gauge", "Unary RPCs being handled.");
    buf_printf(out, "krm_calls_in_flight %zu\n", in_flight);
    render_functions(out);
    render_help(out, "krm_received_bytes_total", "counter", "Bytes read from client sockets.");
    buf_printf(out, "krm_received_bytes_total %llu\n", (unsigned long long)stats.bytes_in);
    render_help(out, "krm_sent_bytes_total", "counter", "Bytes written to client sockets.");
    buf_printf(out, "krm_sent_bytes_total %llu\n", (unsigned long long)stats.bytes_out);
    render_gauges(out);
    for (int i = 0; i < METRIC_COUNTERS; i++) {
        render_help(out, counter_info[i].name, "counter", counter_info[i].help);
        buf_printf(out, "%s %llu\n", counter_info[i].name, (unsigned long long)stats.counters[i]);
    }
    if (section.fn)
        section.fn(out, section.ctx);
}
