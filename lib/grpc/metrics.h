/* metrics: the process's counters, rendered in Prometheus' text format for
 * `GET /metrics` on the server port.
 *
 * Names follow go-grpc-prometheus (grpc_server_started_total,
 * grpc_server_handled_total, grpc_server_handling_seconds), which Porch's
 * dashboards already know, plus our own krm_* series for the functions:
 * exit codes and signals, live child processes, calls in flight, bytes
 * moved and spare memory. The loop is single-threaded, so plain integers
 * suffice. */
#ifndef KRM_METRICS_H
#define KRM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "grpc/rpc.h"

/* Plain event counters (krm_*_total), each counted where it happens. */
typedef enum metrics_counter {
    METRIC_CONNECTIONS_ACCEPTED, /* connections accepted (HTTP/2 and HTTP/1.1 alike) */
    METRIC_ACCEPT_PAUSES,        /* accept() ran out of descriptors or memory: paused */
    METRIC_STREAMS_REFUSED,      /* new streams refused: the connection's slots are taken */
    METRIC_REQUESTS_OVER_BUDGET, /* requests refused: too many bytes of unfinished requests */
    METRIC_SEND_STALLS,          /* streams reset: the client took no response bytes */
    METRIC_CALLS_QUEUED,         /* calls that waited for a function slot */
    METRIC_CALLS_REFUSED_BUSY,   /* calls refused: every function slot and queue place taken */
    METRIC_PRESPAWN_HITS,        /* calls served by a pre-started function (--prespawn) */
    METRIC_PRESPAWN_MISSES,      /* calls that found none waiting and started their own */
    METRIC_HEADERS_REFUSED,      /* requests refused for the size of their metadata */
    METRIC_QUEUE_DEADLINES,      /* calls whose deadline passed while they waited for a slot */
    METRIC_COUNTERS
} metrics_counter;

void metrics_count(metrics_counter which);

/* A gauge read when /metrics is rendered. Whoever owns the figure registers
 * it (rpc_server: spare memory; fn_server: function processes, calls
 * waiting), so this file depends on none of them. labels: "" or e.g.
 * `kind="call"`; one name's series are registered one after the other.
 * The strings must outlive the process; registering a name and labels again
 * replaces the reader. At most 16. */
typedef size_t metrics_gauge_fn(void);
void metrics_gauge(const char *name, const char *labels, const char *help,
                   metrics_gauge_fn *read);

void metrics_call_started(const rpc_method *m);
/* code: the final gRPC status (CANCELLED when the client went away). */
void metrics_call_handled(const rpc_method *m, int code, int64_t duration_ns);
/* A function's wait status, as waitpid gave it. */
void metrics_function_exited(int wait_status);
/* A process a function left behind was killed (lib/runtime/orphans.c). */
void metrics_orphan_killed(void);
void metrics_bytes_received(size_t n);
void metrics_bytes_sent(size_t n);

/* Series rendered by a layer above this one (the pod runtime's figures per
 * image), appended after the rest at every render. One section; NULL
 * removes it. */
typedef void metrics_section_fn(buf *out, void *ctx);
void metrics_section(metrics_section_fn *fn, void *ctx);

/* Appends every series; in_flight is the server's count of unary calls. */
void metrics_render(buf *out, size_t in_flight);

#endif
