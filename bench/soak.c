/* bench-soak: the long-run check behind `make soak` (scripts/soak.sh).
 *
 * Why: a server meant to run as PID 1 for days must neither leak memory,
 * file descriptors nor processes, and must keep answering every kind of
 * call the same way after the hundred-thousandth one. The short
 * integration tests cannot show slow leaks; this program makes many calls
 * of every kind against one server and watches the server process from
 * the outside (/proc), so nothing in the server is instrumented.
 *
 *   bench-soak --addr HOST:PORT --pid PID --max-request N
 *              [--calls N] [--concurrency N] [--timeout DUR]
 *              [--warmup-percent N] [--rss-slack-kib N] [--samples N]
 *
 * The server must run scripts/soak.sh's function (bench/soakfn/soakfn.c)
 * with --max-request-body-size N. Calls go over ONE HTTP/2 connection
 * (lib/grpc/grpc_client on lib/core/loop, single-threaded), --concurrency in flight,
 * each next call started from the previous one's done callback. Call i
 * has a kind fixed by i, interleaved over every 100 calls:
 *   good      85%  the list is echoed: OK, resource_list byte for byte the
 *                  request's (2 KiB lists; every tenth one 48 KiB)
 *   fail       8%  the function exits 1: INTERNAL with Porch's message
 *   timeout    2%  the function sleeps past --timeout: DEADLINE_EXCEEDED;
 *                  in every other hundred calls only the server knows the
 *                  deadline (grpc-timeout sent, no local deadline: the
 *                  server's own expiry answers), in the others the client
 *                  also holds it and usually resets the stream first (the
 *                  server's cancellation path)
 *   oversize   5%  the request is over --max-request: RESOURCE_EXHAUSTED
 *                  "grpc: received message larger than max (N vs. M)"
 * Any other status or message is counted as unexpected.
 *
 * The server's VmRSS is sampled --samples times over the run, each time at
 * a checkpoint: no new call is started until every call in flight has
 * ended, then, CHECKPOINT_NS later, VmRSS is read and the calls resume.
 * Samples taken under load would measure how many buffers happen to be in
 * flight (the spread under load is printed too, for information); at a
 * checkpoint the server holds only what it keeps. After the first
 * --warmup-percent of the calls the checkpoints' spread (max - min) must
 * stay within --rss-slack-kib. When the calls are done and the connection is
 * closed, the server must have no child process left and as many open
 * descriptors as before the connection (each waited for up to 5 s).
 *
 * Defaults: 100000 calls, 16 in flight, 200 ms timeout, 10% warm-up,
 * 256 KiB slack, 100 samples. A watchdog stops the soak (a violation) when
 * no call ends for 60 s while some are in flight.
 *
 * Output: progress on stderr, a summary on stdout. Exit status 0 when
 * nothing was violated, 1 when something was, 2 on bad usage or setup. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/duration.h"
#include "core/numparse.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"
#include "grpc/grpc_timeout.h"
#include "evaluator.pb-c.h"

#define EVAL_PATH "/evaluator.FunctionEvaluator/EvaluateFunction"
#define MAX_RESPONSE (64u << 20)
#define SETTLE_NS 5000000000LL   /* how long children and fds may take to go */
#define OTHER_TIMEOUT_NS 60000000000LL   /* deadline of the calls not meant to time out */
#define CHECKPOINT_NS 50000000LL   /* quiet time before a checkpoint's VmRSS reading */
#define WATCHDOG_NS 10000000000LL  /* a call must end at least this often ... */
#define WATCHDOG_TICKS 6           /* ... or after this many ticks the soak is stuck */

enum kind { K_GOOD, K_FAIL, K_TIMEOUT, K_OVERSIZE, N_KINDS };
static const char *const kind_name[N_KINDS] = {"good", "fail", "timeout", "oversize"};

#define N_CODES 17   /* gRPC status codes 0..16 */

typedef struct opts {
    const char *addr;
    long pid;
    unsigned long long calls, concurrency, max_request, warmup_percent, rss_slack_kib, samples;
    int64_t timeout_ns;
} opts;

typedef struct request {   /* one packed EvaluateFunctionRequest */
    uint8_t *data;
    size_t len;
    buf list;              /* its resource_list (what a good call must get back) */
} request;

typedef struct soak soak;

typedef struct slot {      /* one call in flight */
    soak *s;
    unsigned long long index;
    enum kind kind;
} slot;

struct soak {
    opts o;
    loop *l;
    gc_conn *conn;
    request good_small, good_large, fail, timeout, oversize;
    char fail_message[256];
    char oversize_message[128];
    unsigned long long issued, done, unexpected, conn_lost;
    unsigned long long by_kind[N_KINDS][N_CODES];
    unsigned long long deadline_local;   /* timeouts ended by our own deadline */
    unsigned long long deadline_server_only;   /* timeouts sent without a local deadline */
    const char *timeout_header[2];    /* "grpc-timeout", its value */
    char timeout_text[16];
    unsigned long long watch_done;
    int watch_ticks, stuck;
    slot *slots;
    slot **idle;                  /* slots waiting for the checkpoint to pass */
    unsigned long long n_idle, n_slots;
    unsigned long long pause_at;  /* no call is started past this index ... */
    unsigned long long interval;  /* ... until the checkpoint moves it on by this */
    long rss_first, rss_last, rss_min, rss_max, rss_warm_min, rss_warm_max;
    long load_min, load_max;      /* VmRSS read under load (progress lines) */
    unsigned long long rss_samples, rss_warm_samples;
    int64_t t0;
    unsigned long long next_progress;
};

/* ---- command line ---------------------------------------------------------- */

static int usage(const char *why)
{
    fprintf(stderr,
            "bench-soak: %s\n"
            "usage: bench-soak --addr HOST:PORT --pid PID --max-request N [--calls N]\n"
            "                  [--concurrency N] [--timeout DUR] [--warmup-percent N]\n"
            "                  [--rss-slack-kib N] [--samples N]\n",
            why);
    return -1;
}

static int set_option(opts *o, const char *name, const char *value)
{
    unsigned long long *count = !strcmp(name, "--calls")            ? &o->calls
                              : !strcmp(name, "--concurrency")      ? &o->concurrency
                              : !strcmp(name, "--max-request")      ? &o->max_request
                              : !strcmp(name, "--warmup-percent")   ? &o->warmup_percent
                              : !strcmp(name, "--rss-slack-kib")    ? &o->rss_slack_kib
                              : !strcmp(name, "--samples")          ? &o->samples
                                                                    : NULL;
    if (count)
        return parse_uint(value, 1ULL << 40, count);
    if (!strcmp(name, "--addr")) {
        o->addr = value;
        return 0;
    }
    if (!strcmp(name, "--timeout"))
        return duration_parse(value, &o->timeout_ns) < 0 || o->timeout_ns <= 0 ? -1 : 0;
    if (!strcmp(name, "--pid")) {
        unsigned long long pid;
        if (parse_uint(value, 1ULL << 31, &pid) < 0 || pid == 0)
            return -1;
        o->pid = (long)pid;
        return 0;
    }
    return -1;
}

static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){.calls = 100000, .concurrency = 16, .warmup_percent = 10, .rss_slack_kib = 256,
                .samples = 100, .timeout_ns = 200000000LL};
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 >= argc) {
            fprintf(stderr, "bench-soak: %s needs a value\n", argv[i]);
            return -1;
        }
        if (set_option(o, argv[i], argv[i + 1]) < 0) {
            fprintf(stderr, "bench-soak: bad option %s %s\n", argv[i], argv[i + 1]);
            return -1;
        }
    }
    if (!o->addr || !o->pid || !o->max_request)
        return usage("--addr, --pid and --max-request are required");
    if (o->calls < 100 || o->concurrency == 0 || o->samples == 0 || o->warmup_percent >= 100)
        return usage("--calls must be at least 100, --concurrency and --samples at least 1, "
                     "--warmup-percent below 100");
    if (o->max_request < 64 * 1024)
        return usage("--max-request must be at least 65536 (the good calls send 48 KiB)");
    return 0;
}

/* ---- the requests ------------------------------------------------------------ */

/* A ResourceList of about `size` bytes (ConfigMaps of ~1 KiB), starting with
 * `marker` (a YAML comment line, or ""). */
static int make_list(buf *out, const char *marker, size_t size)
{
    if (buf_printf(out, "%sapiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n",
                   marker) < 0)
        return -1;
    for (size_t i = 0; out->len < size; i++) {
        if (buf_printf(out,
                       "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: soak-%06zu\n"
                       "    namespace: soak\n  data:\n    payload: ",
                       i) < 0 ||
            buf_reserve(out, 1024) < 0)
            return -1;
        for (size_t j = 0; j < 900; j++)
            out->data[out->len++] = "abcdefghijklmnopqrstuvwxyz0123456789"[(i + j) % 36];
        out->data[out->len++] = '\n';
        out->data[out->len] = '\0';
    }
    return 0;
}

static int make_request(request *r, const char *image, const char *marker, size_t size)
{
    if (make_list(&r->list, marker, size) < 0)
        return -1;
    Evaluator__EvaluateFunctionRequest req = EVALUATOR__EVALUATE_FUNCTION_REQUEST__INIT;
    req.resource_list.data = (uint8_t *)r->list.data;
    req.resource_list.len = r->list.len;
    req.image = (char *)image;
    r->len = evaluator__evaluate_function_request__get_packed_size(&req);
    r->data = malloc(r->len);
    if (!r->data)
        return -1;
    evaluator__evaluate_function_request__pack(&req, r->data);
    return 0;
}

static void free_request(request *r)
{
    free(r->data);
    buf_free(&r->list);
}

static int make_requests(soak *s)
{
    size_t over = (size_t)s->o.max_request + s->o.max_request / 2;
    if (make_request(&s->good_small, "soak/good", "", 2048) < 0 ||
        make_request(&s->good_large, "soak/good", "", 48 * 1024) < 0 ||
        make_request(&s->fail, "soak/fail", "#soak:fail\n", 2048) < 0 ||
        make_request(&s->timeout, "soak/timeout", "#soak:sleep\n", 2048) < 0 ||
        make_request(&s->oversize, "soak/oversize", "", over) < 0)
        return -1;
    /* Porch's message for a function that exits non-zero with an empty stdout */
    snprintf(s->fail_message, sizeof s->fail_message,
             "failed to parse the output of function \"soak/fail\" with stderr "
             "'soak: asked to fail\n': failed to parse input bytes: expected exactly one "
             "object, got 0");
    snprintf(s->oversize_message, sizeof s->oversize_message,
             "grpc: received message larger than max (%zu vs. %llu)", s->oversize.len,
             s->o.max_request);
    return 0;
}

/* The kind of call i: 5 oversize, 8 fail, 2 timeout and 85 good in every
 * 100, spread by a permutation of 0..99 so kinds interleave. */
static enum kind kind_of(unsigned long long i)
{
    unsigned r = (unsigned)((i % 100) * 37 % 100);
    return r < 5 ? K_OVERSIZE : r < 13 ? K_FAIL : r < 15 ? K_TIMEOUT : K_GOOD;
}

static const request *request_of(const soak *s, unsigned long long i, enum kind k)
{
    switch (k) {
    case K_FAIL:
        return &s->fail;
    case K_TIMEOUT:
        return &s->timeout;
    case K_OVERSIZE:
        return &s->oversize;
    default:
        return i % 10 == 0 ? &s->good_large : &s->good_small;
    }
}

/* ---- the server, from /proc ---------------------------------------------------- */

/* VmRSS of the server in KiB, or -1. */
static long server_rss_kib(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (fclose(f) != 0)
        return -1;
    return kib;
}

/* Entries of a /proc directory (minus . and ..), or -1. */
static long count_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long n = 0;
    errno = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    int e_read = errno;
    if (closedir(d) < 0 || e_read)
        return -1;
    return n;
}

static long server_fds(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd", pid);
    return count_dir(path);
}

/* Direct children of the server (every thread's children file), or -1. */
static long server_children(long pid)
{
    char path[96];
    snprintf(path, sizeof path, "/proc/%ld/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    long n = 0;
    struct dirent *e;
    while (n >= 0 && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/proc/%ld/task/%.20s/children", pid, e->d_name);
        FILE *f = fopen(path, "re");
        if (!f) {
            n = -1;
            break;
        }
        long child;
        while (fscanf(f, "%ld", &child) == 1)
            n++;
        if (fclose(f) != 0)
            n = -1;
    }
    if (closedir(d) < 0)
        return -1;
    return n;
}

static void sleep_ms(long ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) < 0 && errno == EINTR)
        ;
}

/* Polls fn(pid) until it is at most `want` or SETTLE_NS passed; the last value. */
static long settle(long (*fn)(long), long pid, long want)
{
    int64_t end = loop_now_ns() + SETTLE_NS;
    long v;
    while ((v = fn(pid)) > want && loop_now_ns() < end)
        sleep_ms(20);
    return v;
}

static void sample_rss(soak *s)
{
    long kib = server_rss_kib(s->o.pid);
    if (kib < 0)
        return;   /* the server is gone: the calls will say so */
    if (!s->rss_samples++)
        s->rss_first = s->rss_min = s->rss_max = kib;
    s->rss_last = kib;
    s->rss_min = kib < s->rss_min ? kib : s->rss_min;
    s->rss_max = kib > s->rss_max ? kib : s->rss_max;
    if (s->done * 100 < s->o.calls * s->o.warmup_percent)
        return;
    if (!s->rss_warm_samples++)
        s->rss_warm_min = s->rss_warm_max = kib;
    s->rss_warm_min = kib < s->rss_warm_min ? kib : s->rss_warm_min;
    s->rss_warm_max = kib > s->rss_warm_max ? kib : s->rss_warm_max;
}

/* ---- calls ---------------------------------------------------------------------- */

/* NULL when the result is what a call of kind k must get, else why not. */
static const char *judge(const soak *s, enum kind k, const request *req, const gc_result *res)
{
    switch (k) {
    case K_GOOD: {
        if (res->status != GRPC_OK)
            return "expected OK";
        Evaluator__EvaluateFunctionResponse *resp =
            evaluator__evaluate_function_response__unpack(NULL, res->response_len, res->response);
        if (!resp)
            return "the response is not an EvaluateFunctionResponse";
        int same = resp->resource_list.len == req->list.len &&
                   !memcmp(resp->resource_list.data, req->list.data, req->list.len);
        evaluator__evaluate_function_response__free_unpacked(resp, NULL);
        return same ? NULL : "the response's resource_list differs from the request's";
    }
    case K_FAIL:
        if (res->status != GRPC_INTERNAL)
            return "expected INTERNAL";
        return strcmp(res->message, s->fail_message) ? "expected Porch's message" : NULL;
    case K_TIMEOUT:
        return res->status == GRPC_DEADLINE_EXCEEDED ? NULL : "expected DEADLINE_EXCEEDED";
    case K_OVERSIZE:
        if (res->status != GRPC_RESOURCE_EXHAUSTED)
            return "expected RESOURCE_EXHAUSTED";
        return strcmp(res->message, s->oversize_message) ? "expected the size message" : NULL;
    default:
        return "unknown kind";
    }
}

static void call_done(const gc_result *res, void *ctx);
static void start_call(slot *sl);

/* The calls are quiet: read VmRSS and let the idle slots go on. */
static void checkpoint(loop *l, void *ctx)
{
    (void)l;
    soak *s = ctx;
    sample_rss(s);
    s->pause_at += s->interval;
    while (s->n_idle && s->issued < s->o.calls && s->issued < s->pause_at)
        start_call(s->idle[--s->n_idle]);
}

static void start_call(slot *sl)
{
    soak *s = sl->s;
    sl->index = s->issued++;
    sl->kind = kind_of(sl->index);
    const request *req = request_of(s, sl->index, sl->kind);
    /* the others get a deadline far from any they could race, so that a
     * stuck call ends the soak as an unexpected status instead of hanging */
    int64_t timeout = sl->kind == K_TIMEOUT ? s->o.timeout_ns : OTHER_TIMEOUT_NS;
    int server_only = sl->kind == K_TIMEOUT && (sl->index / 100) % 2;
    if (server_only) {   /* grpc-timeout by hand; the watchdog covers a hang */
        gc_set_metadata(s->conn, NULL, s->timeout_header, 1);
        timeout = 0;
        s->deadline_server_only++;
    }
    int rc = gc_call(s->conn, EVAL_PATH, req->data, req->len, timeout, call_done, sl);
    if (server_only)
        gc_set_metadata(s->conn, NULL, NULL, 0);
    if (rc == 0)
        return;
    gc_result fail = {.status = GRPC_UNAVAILABLE, .message = "gc_call could not start the call"};
    call_done(&fail, sl);
}

static void progress(soak *s)
{
    double secs = (double)(loop_now_ns() - s->t0) / 1e9;
    long kib = server_rss_kib(s->o.pid);
    if (kib >= 0 && (!s->load_min || kib < s->load_min))
        s->load_min = kib;
    if (kib > s->load_max)
        s->load_max = kib;
    fprintf(stderr, "bench-soak: %llu/%llu calls, %.0f s, %.0f calls/s, VmRSS %ld KiB "
            "(under load), last checkpoint %ld KiB, %llu unexpected\n",
            s->done, s->o.calls, secs, secs > 0 ? (double)s->done / secs : 0.0, kib,
            s->rss_samples ? s->rss_last : -1, s->unexpected);
}

static void call_done(const gc_result *res, void *ctx)
{
    slot *sl = ctx;
    soak *s = sl->s;
    s->done++;
    int code = res->status >= 0 && res->status < N_CODES ? res->status : GRPC_UNKNOWN;
    s->by_kind[sl->kind][code]++;
    if (sl->kind == K_TIMEOUT && code == GRPC_DEADLINE_EXCEEDED &&
        !strcmp(res->message, "context deadline exceeded"))
        s->deadline_local++;
    const char *why = judge(s, sl->kind, request_of(s, sl->index, sl->kind), res);
    if (why && s->unexpected++ < 10)
        fprintf(stderr, "bench-soak: call %llu (%s): %s, got %s: %.300s\n", sl->index,
                kind_name[sl->kind], why, grpc_code_name(res->status), res->message);
    if (s->done >= s->next_progress) {
        progress(s);
        s->next_progress += s->o.calls / 10;
    }
    if (res->status == GRPC_UNAVAILABLE && s->issued < s->o.calls) {
        /* the connection is gone: the rest cannot be made */
        s->conn_lost = s->o.calls - s->issued;
        s->done += s->conn_lost;
        s->issued = s->o.calls;
    }
    if (s->done == s->o.calls) {
        if (!s->conn_lost)
            sample_rss(s);   /* the last checkpoint: every call has ended */
        loop_stop(s->l);
    } else if (s->issued < s->o.calls && s->issued < s->pause_at) {
        start_call(sl);
    } else {
        s->idle[s->n_idle++] = sl;
        if (s->done == s->issued && s->issued < s->o.calls &&
            !loop_timer_add(s->l, CHECKPOINT_NS, checkpoint, s)) {
            fprintf(stderr, "bench-soak: cannot add a timer\n");
            loop_stop(s->l);
        }
    }
}

/* No call ended for WATCHDOG_TICKS ticks while some were in flight: stop. */
static void watchdog(loop *l, void *ctx)
{
    soak *s = ctx;
    if (s->done != s->watch_done || s->done == s->issued)
        s->watch_ticks = 0;
    else if (++s->watch_ticks >= WATCHDOG_TICKS) {
        fprintf(stderr, "bench-soak: no call ended in %d s; %llu in flight\n",
                (int)(WATCHDOG_NS / 1000000000 * WATCHDOG_TICKS), s->issued - s->done);
        s->stuck = 1;
        loop_stop(l);
        return;
    }
    s->watch_done = s->done;
    if (!loop_timer_add(l, WATCHDOG_NS, watchdog, s)) {
        fprintf(stderr, "bench-soak: cannot add a timer\n");
        s->stuck = 1;
        loop_stop(l);
    }
}

/* ---- main ------------------------------------------------------------------------- */

static void print_summary(const soak *s, double secs)
{
    printf("soak: %llu calls at %llu concurrent streams in %.1f s (%.0f calls/s)\n", s->done,
           s->o.concurrency, secs, secs > 0 ? (double)s->done / secs : 0.0);
    for (int k = 0; k < N_KINDS; k++) {
        unsigned long long total = 0;
        for (int c = 0; c < N_CODES; c++)
            total += s->by_kind[k][c];
        printf("  %-9s %7llu:", kind_name[k], total);
        for (int c = 0; c < N_CODES; c++)
            if (s->by_kind[k][c])
                printf(" %s %llu", grpc_code_name(c), s->by_kind[k][c]);
        if (k == K_TIMEOUT)
            printf(" (%llu sent with the deadline known to the server only; %llu ended by "
                   "the client's own deadline first)",
                   s->deadline_server_only, s->deadline_local);
        printf("\n");
    }
    printf("  unexpected statuses or messages: %llu", s->unexpected);
    if (s->conn_lost)
        printf(" (and %llu calls never made: the connection was lost)", s->conn_lost);
    printf("\n");
    printf("  VmRSS at %llu checkpoints (no call in flight): before any call %ld KiB, "
           "min %ld, max %ld;\n"
           "    after the first %llu%% of the calls (%llu checkpoints): min %ld, max %ld, "
           "spread %ld KiB (limit %llu)\n"
           "  VmRSS under load (progress lines): min %ld, max %ld KiB\n",
           s->rss_samples, s->rss_first, s->rss_min, s->rss_max, s->o.warmup_percent,
           s->rss_warm_samples, s->rss_warm_min, s->rss_warm_max,
           s->rss_warm_max - s->rss_warm_min, s->o.rss_slack_kib, s->load_min, s->load_max);
}

static int connect_soak(soak *s)
{
    buf err = {0};
    s->l = loop_new();
    if (s->l)
        s->conn = gc_connect(s->l, s->o.addr, 5000000000LL, MAX_RESPONSE, &err);
    if (!s->conn)
        fprintf(stderr, "bench-soak: %s\n", err.data ? err.data : "out of memory");
    buf_free(&err);
    return s->conn ? 0 : -1;
}

static int run(soak *s)
{
    s->n_slots = s->o.concurrency < s->o.calls ? s->o.concurrency : s->o.calls;
    s->slots = calloc(s->n_slots, sizeof *s->slots);
    s->idle = calloc(s->n_slots, sizeof *s->idle);
    if (!s->slots || !s->idle)
        return -1;
    s->interval = s->o.calls / s->o.samples ? s->o.calls / s->o.samples : 1;
    s->pause_at = s->interval;
    s->t0 = loop_now_ns();
    s->next_progress = s->o.calls / 10;
    for (unsigned long long i = 0; i < s->n_slots; i++) {
        s->slots[i].s = s;
        s->idle[s->n_idle++] = &s->slots[i];
    }
    grpc_timeout_format(s->o.timeout_ns, s->timeout_text);
    s->timeout_header[0] = "grpc-timeout";
    s->timeout_header[1] = s->timeout_text;
    if (!loop_timer_add(s->l, WATCHDOG_NS, watchdog, s))
        return -1;
    checkpoint(s->l, s);   /* the first sample: before any call */
    int rc = s->done == s->o.calls ? 0 : loop_run(s->l);
    return rc;
}

int main(int argc, char **argv)
{
    soak s = {0};
    if (parse_args(argc, argv, &s.o) < 0)
        return 2;
    if (make_requests(&s) < 0) {
        fprintf(stderr, "bench-soak: out of memory\n");
        return 2;
    }
    long fds_before = server_fds(s.o.pid);
    if (fds_before < 0 || server_rss_kib(s.o.pid) < 0) {
        fprintf(stderr, "bench-soak: cannot read /proc/%ld: %s\n", s.o.pid, strerror(errno));
        return 2;
    }
    if (connect_soak(&s) < 0)
        return 2;
    int rc = run(&s);
    double secs = (double)(loop_now_ns() - s.t0) / 1e9;
    gc_close(s.conn);
    loop_free(s.l);
    if (rc < 0) {
        fprintf(stderr, "bench-soak: the event loop failed\n");
        return 2;
    }
    print_summary(&s, secs);

    int bad = 0;
    if (s.stuck) {
        printf("VIOLATION: the soak stopped after %llu of %llu calls: no call ended for %d s\n",
               s.done, s.o.calls, (int)(WATCHDOG_NS / 1000000000 * WATCHDOG_TICKS));
        bad = 1;
    }
    if (s.unexpected || s.conn_lost) {
        printf("VIOLATION: %llu calls ended unexpectedly\n", s.unexpected + s.conn_lost);
        bad = 1;
    }
    if (!s.rss_warm_samples) {
        printf("VIOLATION: no VmRSS sample after the warm-up\n");
        bad = 1;
    } else if (s.rss_warm_max - s.rss_warm_min > (long)s.o.rss_slack_kib) {
        printf("VIOLATION: VmRSS grew by %ld KiB after the warm-up (limit %llu)\n",
               s.rss_warm_max - s.rss_warm_min, s.o.rss_slack_kib);
        bad = 1;
    }
    long children = settle(server_children, s.o.pid, 0);
    long fds_after = settle(server_fds, s.o.pid, fds_before);
    long rss_end = server_rss_kib(s.o.pid);
    printf("  at the end: %ld child processes, %ld open fds (%ld before connecting), "
           "VmRSS %ld KiB\n",
           children, fds_after, fds_before, rss_end);
    if (children != 0) {
        printf("VIOLATION: %ld child processes left under the server\n", children);
        bad = 1;
    }
    if (fds_after < 0 || fds_after > fds_before) {
        printf("VIOLATION: the server has %ld open fds, %ld before the soak\n", fds_after,
               fds_before);
        bad = 1;
    }
    printf("soak: %s\n", bad ? "FAILED" : "passed");
    free_request(&s.good_small);
    free_request(&s.good_large);
    free_request(&s.fail);
    free_request(&s.timeout);
    free_request(&s.oversize);
    free(s.slots);
    free(s.idle);
    return bad;
}
