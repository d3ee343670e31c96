/* bench-loadgen: the benchmarks' load generator for wrapper-server.
 *
 * Why C on our own client: a load generator in Python or Go would cost more
 * CPU per call than the server on this small machine and would measure
 * itself. This one keeps --concurrency calls in flight on ONE HTTP/2
 * connection (lib/grpc/grpc_client on the lib/core/loop event loop, single-threaded),
 * starts the next call from the previous one's done callback, and records
 * every call's latency.
 *
 *   bench-loadgen --addr 127.0.0.1:PORT [--rpc evaluate|check]
 *                 [--concurrency N] [--calls N] [--warmup N] [--image IMG]...
 *                 [--size BYTES | --input FILE] [--expect FILE] [--gap DUR]
 *                 [--timeout DUR] [--while-file FILE]
 *   bench-loadgen --size BYTES --dump FILE     write the generated list, exit
 *
 * With --rpc evaluate (the default) the request carries a ResourceList of
 * exactly --size bytes (or the bytes of --input) and the function is
 * expected to be `cat`: every response must echo the list byte for byte
 * (or be the bytes of --expect, for another function), or the call counts
 * as an error. --gap waits that long after each call before the slot
 * starts its next one (not counted in its latency): calls that come apart,
 * as a render's calls of one function do, give a pre-started function's
 * replacement (--prespawn) the time to start. --rpc check calls grpc.health.v1.Health/Check
 * and expects SERVING. --image and --addr may be given up to LOADGEN_TARGETS
 * times: the calls go to the images in turn, all to one --addr (a runner,
 * which routes them) or image i to the i-th --addr (its pod), one connection
 * per address, so a runner and the pods behind it are measured with the same
 * client. With --while-file, no call is started once FILE is
 * gone (bench/run.sh removes it when the work to be measured against is
 * done), so --calls is only an upper bound.
 *
 * Output, one line of key=value pairs on stdout for bench/run.sh:
 *   count=N errors=N elapsed_s=X median_us=X p99_us=X mean_us=X min_us=X
 *   calls_per_s=X cpu_us=X   (bench/stats.h; cpu_us: this client's CPU per call)
 * The first error's status and message go to stderr. Exit status 0 when
 * every call succeeded, 1 when some failed, 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/duration.h"
#include "core/fdio.h"
#include "core/numparse.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_status.h"
#include "evaluator.pb-c.h"
#include "health.pb-c.h"
#include "stats.h"

#define EVAL_PATH "/evaluator.FunctionEvaluator/EvaluateFunction"
#define CHECK_PATH "/grpc.health.v1.Health/Check"
#define ITEM_BYTES 1024          /* generated items are about this long */
#define MAX_MESSAGE (64u << 20)  /* largest response accepted */
#define LOADGEN_TARGETS 8        /* --image / --addr given at most this often */

enum rpc_kind { RPC_EVALUATE, RPC_CHECK };

typedef struct opts {
    const char *addrs[LOADGEN_TARGETS];
    size_t n_addrs;
    enum rpc_kind rpc;
    unsigned long long concurrency, calls, warmup, size;
    const char *input;
    const char *expect;
    const char *dump;
    const char *while_file;
    const char *images[LOADGEN_TARGETS];   /* the requests'; a runner routes by them */
    size_t n_images;
    int64_t timeout_ns;
    int64_t gap_ns;
} opts;

typedef struct run run;

typedef struct target {   /* one image and the connection its calls take */
    gc_conn *conn;        /* shared by every target when there is one --addr */
    uint8_t *req;         /* the packed request message, naming the image */
    size_t req_len;
} target;

typedef struct slot {   /* one call in flight */
    run *r;
    int64_t started_ns;
} slot;

struct run {
    loop *l;
    target targets[LOADGEN_TARGETS];
    size_t n_targets;
    const char *path;
    const uint8_t *expect;  /* the ResourceList every response must echo */
    size_t expect_len;
    enum rpc_kind rpc;
    int64_t timeout_ns;
    int64_t gap_ns;         /* pause after each call before the slot's next */
    const char *while_file; /* stop starting calls once it is gone */
    unsigned long long total, issued, done, errors;
    int64_t *lat_ns;        /* one per finished call */
    int reported_error;
};

/* ---- command line ---------------------------------------------------------- */

static int usage(const char *why)
{
    fprintf(stderr,
            "bench-loadgen: %s\n"
            "usage: bench-loadgen --addr HOST:PORT [--rpc evaluate|check] [--concurrency N]\n"
            "                     [--calls N] [--warmup N] [--size BYTES | --input FILE]\n"
            "                     [--expect FILE] [--gap DUR] [--timeout DUR] [--while-file FILE]\n"
            "                     [--image IMG (default bench/cat)]...\n"
            "       bench-loadgen --size BYTES --dump FILE\n",
            why);
    return 2;
}

static int set_count(const char *name, const char *value, unsigned long long *out)
{
    if (parse_uint(value, 1ULL << 40, out) < 0) {
        fprintf(stderr, "bench-loadgen: %s wants a non-negative integer, not \"%s\"\n", name,
                value);
        return -1;
    }
    return 0;
}

/* --addr and --image may repeat: one more entry of a bounded list. */
static int add_target_part(const char *name, const char *value, const char **list, size_t *n)
{
    if (*n == LOADGEN_TARGETS) {
        fprintf(stderr, "bench-loadgen: %s given more than %d times\n", name, LOADGEN_TARGETS);
        return -1;
    }
    list[(*n)++] = value;
    return 0;
}

static int set_option(opts *o, const char *name, const char *value)
{
    if (!strcmp(name, "--addr"))
        return add_target_part(name, value, o->addrs, &o->n_addrs);
    else if (!strcmp(name, "--input"))
        o->input = value;
    else if (!strcmp(name, "--expect"))
        o->expect = value;
    else if (!strcmp(name, "--gap"))
        return duration_parse(value, &o->gap_ns) < 0 ? -1 : 0;
    else if (!strcmp(name, "--dump"))
        o->dump = value;
    else if (!strcmp(name, "--while-file"))
        o->while_file = value;
    else if (!strcmp(name, "--image"))
        return add_target_part(name, value, o->images, &o->n_images);
    else if (!strcmp(name, "--rpc") && (!strcmp(value, "evaluate") || !strcmp(value, "check")))
        o->rpc = !strcmp(value, "check") ? RPC_CHECK : RPC_EVALUATE;
    else if (!strcmp(name, "--timeout"))
        return duration_parse(value, &o->timeout_ns) < 0 ? -1 : 0;
    else if (!strcmp(name, "--concurrency"))
        return set_count(name, value, &o->concurrency);
    else if (!strcmp(name, "--calls"))
        return set_count(name, value, &o->calls);
    else if (!strcmp(name, "--warmup"))
        return set_count(name, value, &o->warmup);
    else if (!strcmp(name, "--size"))
        return set_count(name, value, &o->size);
    else
        return -1;
    return 0;
}

static int parse_args(int argc, char **argv, opts *o)
{
    *o = (opts){.concurrency = 1, .calls = 1000, .size = 2048, .timeout_ns = 60000000000LL};
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) {
            fprintf(stderr, "bench-loadgen: %s needs a value\n", argv[i]);
            return -1;
        }
        if (set_option(o, argv[i], argv[i + 1]) < 0) {
            fprintf(stderr, "bench-loadgen: bad option %s %s\n", argv[i], argv[i + 1]);
            return -1;
        }
        i++;
    }
    if (o->concurrency == 0 || o->calls == 0)
        return usage("--concurrency and --calls must be at least 1"), -1;
    if (!o->n_addrs && !o->dump)
        return usage("--addr is required"), -1;
    if (!o->n_images)
        o->images[o->n_images++] = "bench/cat";
    if (o->n_addrs > 1 && o->n_addrs != o->n_images)
        return usage("give one --addr, or one per --image"), -1;
    return 0;
}

/* ---- the ResourceList ------------------------------------------------------ */

static const char rl_head[] = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n";
static const char item_fmt[] = "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n"
                               "    name: bench-%06zu\n    namespace: bench\n"
                               "  data:\n    payload: ";

/* One ConfigMap of exactly `len` bytes (payload padded), or -1 if too short. */
static int rl_item(buf *b, size_t index, size_t len)
{
    size_t start = b->len;
    if (buf_printf(b, item_fmt, index) < 0)
        return -1;
    size_t used = b->len - start;
    if (used + 2 > len)
        return -1;
    if (buf_reserve(b, len - used) < 0)
        return -1;
    for (size_t i = 0; i < len - used - 1; i++)
        b->data[b->len++] = "abcdefghijklmnopqrstuvwxyz0123456789"[(index + i) % 36];
    b->data[b->len++] = '\n';
    b->data[b->len] = '\0';
    return 0;
}

/* A ResourceList of exactly `size` bytes: items of about ITEM_BYTES each, the
 * last one padded to make up the size. Real packages are many small
 * resources, so the server's parser sees a realistic shape. */
static int rl_generate(size_t size, buf *out)
{
    if (buf_append_str(out, rl_head) < 0)
        return -1;
    for (size_t i = 0;; i++) {
        size_t left = size > out->len ? size - out->len : 0;
        size_t len = left >= 2 * ITEM_BYTES ? ITEM_BYTES : left;
        if (rl_item(out, i, len) < 0) {
            fprintf(stderr, "bench-loadgen: --size %zu is too small for a ResourceList\n", size);
            return -1;
        }
        if (len == left)
            return 0;
    }
}

static int write_file(const char *path, const buf *b)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "bench-loadgen: %s: %s\n", path, strerror(errno));
        return -1;
    }
    size_t off = 0;
    while (off < b->len) {
        ssize_t n = write(fd, b->data + off, b->len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        off += (size_t)n;
    }
    int e = errno;
    if (close(fd) < 0 || off < b->len) {
        fprintf(stderr, "bench-loadgen: writing %s: %s\n", path, strerror(off < b->len ? e : errno));
        return -1;
    }
    return 0;
}

/* ---- requests and responses ------------------------------------------------ */

static int build_request(target *t, enum rpc_kind rpc, const char *image, const buf *rl)
{
    if (rpc == RPC_CHECK) {
        Grpc__Health__V1__HealthCheckRequest req = GRPC__HEALTH__V1__HEALTH_CHECK_REQUEST__INIT;
        t->req_len = grpc__health__v1__health_check_request__get_packed_size(&req);
        t->req = malloc(t->req_len + 1);
        if (t->req)
            grpc__health__v1__health_check_request__pack(&req, t->req);
    } else {
        Evaluator__EvaluateFunctionRequest req = EVALUATOR__EVALUATE_FUNCTION_REQUEST__INIT;
        req.resource_list.data = (uint8_t *)rl->data;
        req.resource_list.len = rl->len;
        req.image = (char *)image;
        t->req_len = evaluator__evaluate_function_request__get_packed_size(&req);
        t->req = malloc(t->req_len);
        if (t->req)
            evaluator__evaluate_function_request__pack(&req, t->req);
    }
    return t->req ? 0 : -1;
}

static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        *v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return 0;
    }
    return -1;
}

/* Field 1 (resource_list) of an EvaluateFunctionResponse, without copying
 * it: the echo check must not cost the client a 5 MiB allocation. */
static int response_list(const uint8_t *msg, size_t len, const uint8_t **out, size_t *out_len)
{
    const uint8_t *p = msg, *end = msg + len;
    while (p < end) {
        uint64_t key, n;
        if (read_varint(&p, end, &key) < 0 || (key & 7) != 2 ||
            read_varint(&p, end, &n) < 0 || n > (uint64_t)(end - p))
            return -1;   /* both fields are length-delimited */
        if (key >> 3 == 1) {
            *out = p;
            *out_len = (size_t)n;
            return 0;
        }
        p += n;
    }
    *out = p;   /* absent: empty */
    *out_len = 0;
    return 0;
}

static const char *check_response(const run *r, const gc_result *res)
{
    if (res->status != GRPC_OK)
        return res->message;
    if (r->rpc == RPC_CHECK) {
        /* SERVING is field 1 = 1: exactly the bytes 08 01 */
        if (res->response_len == 2 && res->response[0] == 0x08 && res->response[1] == 0x01)
            return NULL;
        return "health status is not SERVING";
    }
    const uint8_t *list;
    size_t list_len;
    if (response_list(res->response, res->response_len, &list, &list_len) < 0)
        return "the response is not a valid EvaluateFunctionResponse";
    if (list_len != r->expect_len || memcmp(list, r->expect, list_len) != 0)
        return "the response's resource_list differs from the request's";
    return NULL;
}

/* ---- running calls ---------------------------------------------------------- */

static void call_done(const gc_result *res, void *ctx);
static void start_call(slot *s);

static void start_after_gap(loop *l, void *ctx)
{
    (void)l;
    start_call(ctx);
}

static void start_call(slot *s)
{
    run *r = s->r;
    const target *t = &r->targets[r->issued % r->n_targets];   /* the images in turn */
    r->issued++;
    s->started_ns = loop_now_ns();
    if (gc_call(t->conn, r->path, t->req, t->req_len, r->timeout_ns, call_done, s) == 0)
        return;
    gc_result fail = {.status = GRPC_UNAVAILABLE, .message = "gc_call could not start the call"};
    call_done(&fail, s);
}

static void call_done(const gc_result *res, void *ctx)
{
    slot *s = ctx;
    run *r = s->r;
    r->lat_ns[r->done++] = loop_now_ns() - s->started_ns;
    const char *why = check_response(r, res);
    if (why) {
        r->errors++;
        if (!r->reported_error++)
            fprintf(stderr, "bench-loadgen: first error: %s: %s\n", grpc_code_name(res->status),
                    why);
    }
    if (r->while_file && r->issued < r->total && access(r->while_file, F_OK) < 0)
        r->total = r->issued;   /* finish the calls in flight, start no more */
    if (r->done == r->total)
        loop_stop(r->l);
    else if (r->issued < r->total && res->status != GRPC_UNAVAILABLE && r->gap_ns > 0 &&
             loop_timer_add(r->l, r->gap_ns, start_after_gap, s))
        return;
    else if (r->issued < r->total && res->status != GRPC_UNAVAILABLE)
        start_call(s);
    else if (r->issued < r->total) {   /* the connection is gone: count the rest as failed */
        r->errors += r->total - r->issued;
        r->done += r->total - r->issued;
        r->issued = r->total;
        if (r->done == r->total)
            loop_stop(r->l);
    }
}

/* Run `calls` calls with up to `concurrency` in flight; latencies land in
 * r->lat_ns[0..calls). Returns elapsed nanoseconds, or -1 on a loop error. */
static int64_t run_calls(run *r, unsigned long long calls, unsigned long long concurrency)
{
    unsigned long long n_slots = concurrency < calls ? concurrency : calls;
    slot *slots = calloc(n_slots, sizeof *slots);
    if (!slots)
        return -1;
    r->total = calls;
    r->issued = r->done = r->errors = 0;
    int64_t t0 = loop_now_ns();
    for (unsigned long long i = 0; i < n_slots; i++) {
        slots[i].r = r;
        start_call(&slots[i]);
    }
    int rc = r->done == r->total ? 0 : loop_run(r->l);
    int64_t elapsed = loop_now_ns() - t0;
    free(slots);
    return rc < 0 ? -1 : elapsed;
}

/* ---- main ---------------------------------------------------------------------- */

static int load_list(const opts *o, buf *rl)
{
    if (!o->input)
        return rl_generate((size_t)o->size, rl);
    if (file_read_all(o->input, rl, 0) == 0)
        return 0;
    fprintf(stderr, "bench-loadgen: reading %s: %s\n", o->input, strerror(errno));
    return -1;
}

/* One target per --image, each with its request; one connection per --addr. */
static int connect_run(run *r, const opts *o, const buf *rl)
{
    r->l = loop_new();
    if (!r->l) {
        fprintf(stderr, "bench-loadgen: out of memory\n");
        return -1;
    }
    for (size_t i = 0; i < o->n_images; i++) {
        target *t = &r->targets[r->n_targets++];
        if (build_request(t, r->rpc, o->images[i], rl) < 0) {
            fprintf(stderr, "bench-loadgen: out of memory\n");
            return -1;
        }
        if (i > 0 && o->n_addrs == 1) {
            t->conn = r->targets[0].conn;
            continue;
        }
        buf err = {0};
        t->conn = gc_connect(r->l, o->addrs[i], 5000000000LL, MAX_MESSAGE, &err);
        if (!t->conn)
            fprintf(stderr, "bench-loadgen: %s: %s\n", o->addrs[i], err.data ? err.data : "out of memory");
        buf_free(&err);
        if (!t->conn)
            return -1;
    }
    return 0;
}

static void close_run(run *r, size_t n_addrs)
{
    for (size_t i = 0; i < r->n_targets; i++) {
        if (r->targets[i].conn && (i == 0 || n_addrs > 1))
            gc_close(r->targets[i].conn);
        free(r->targets[i].req);
    }
    loop_free(r->l);
}

static int measure(run *r, const opts *o)
{
    unsigned long long most = o->warmup > o->calls ? o->warmup : o->calls;
    r->lat_ns = malloc((size_t)most * sizeof *r->lat_ns);
    if (!r->lat_ns)
        return -1;
    if (o->warmup && run_calls(r, o->warmup, o->concurrency) < 0)
        return -1;
    if (r->errors) {
        fprintf(stderr, "bench-loadgen: %llu of %llu warm-up calls failed\n", r->errors,
                o->warmup);
        return -1;
    }
    int64_t cpu0 = bench_cpu_ns();
    int64_t elapsed = run_calls(r, o->calls, o->concurrency);
    if (elapsed < 0)
        return -1;
    bench_print_stats(r->lat_ns, (size_t)r->done, r->errors, elapsed, bench_cpu_ns() - cpu0);
    return r->errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_args(argc, argv, &o) < 0)
        return 2;
    buf rl = {0}, expect = {0};
    if (o.rpc == RPC_EVALUATE && load_list(&o, &rl) < 0)
        return 2;
    if (o.dump)
        return write_file(o.dump, &rl) < 0 ? 1 : 0;
    if (o.expect && file_read_all(o.expect, &expect, 0) < 0) {
        fprintf(stderr, "bench-loadgen: reading %s: %s\n", o.expect, strerror(errno));
        return 2;
    }
    const buf *want = o.expect ? &expect : &rl;
    run r = {.rpc = o.rpc, .timeout_ns = o.timeout_ns, .gap_ns = o.gap_ns,
             .while_file = o.while_file, .path = o.rpc == RPC_CHECK ? CHECK_PATH : EVAL_PATH,
             .expect = (const uint8_t *)want->data, .expect_len = want->len};
    int rc = connect_run(&r, &o, &rl) < 0 ? -1 : measure(&r, &o);
    close_run(&r, o.n_addrs);
    free(r.lat_ns);
    buf_free(&rl);
    buf_free(&expect);
    return rc < 0 ? 1 : rc;
}
