/* bench-tcpproxy: the least any proxy between a client and a function pod
 * adds, for the runner's figures.
 *
 * Why: `runner-client serve` sits between Porch and the pods, so every call
 * crosses one more process and one more loopback connection than a call
 * sent to the pod directly. Part of what serve adds is its work (HTTP/2 both
 * ways, protobuf, routing); part is the hop itself: two more socket copies,
 * and one more process to wake up and schedule on each request and each
 * answer. This program is the hop with no work at all: one process, one
 * epoll loop (as serve), each accepted connection joined to a new connection
 * to its target, bytes copied both ways as they come. Calls to the pods
 * through it against calls through serve separate the two.
 *
 *   bench-tcpproxy --listen PORT --to HOST:PORT [--listen PORT --to HOST:PORT]...
 *
 * Runs until SIGTERM or SIGINT. Up to PROXY_ROUTES routes and PROXY_PAIRS
 * connections in flight; each direction holds at most PROXY_BUF bytes (a
 * full buffer stops reading that side until the other drains it). Exit
 * status 0 after a signal, 1 on a set-up error, 2 on bad usage. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROXY_ROUTES 8
#define PROXY_PAIRS 256
#define PROXY_BUF (256 * 1024)

typedef struct route {
    int listen_fd;
    struct sockaddr_in to;
} route;

typedef struct side {   /* one socket and the bytes read from it, not yet written to the peer */
    int fd;
    char *data;
    size_t len, off;
    int eof;
} side;

typedef struct pair {
    side s[2];   /* 0: the client's connection, 1: the target's */
    int used;
} pair;

static pair pairs[PROXY_PAIRS];
static volatile sig_atomic_t stopping;

static void on_signal(int sig) { (void)sig; stopping = 1; }

static int parse_addr(const char *text, struct sockaddr_in *out)
{
    char host[64];
    const char *colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof host)
        return -1;
    memcpy(host, text, (size_t)(colon - text));
    host[colon - text] = '\0';
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 1 || port > 65535)
        return -1;
    *out = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    return inet_pton(AF_INET, host, &out->sin_addr) == 1 ? 0 : -1;
}

static int listen_on(long port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 64) < 0) {
        fprintf(stderr, "bench-tcpproxy: listening on 127.0.0.1:%ld: %s\n", port, strerror(errno));
        return -1;
    }
    return fd;
}

static void pair_close(pair *p)
{
    for (int i = 0; i < 2; i++) {
        if (p->s[i].fd >= 0)
            close(p->s[i].fd);
        free(p->s[i].data);
    }
    p->used = 0;
}

/* What the loop should watch on side i: reading while its buffer has room,
 * writing while the other side's buffer has bytes for it. */
static int watch(int ep, pair *p, int i, int op)
{
    side *me = &p->s[i], *other = &p->s[1 - i];
    struct epoll_event ev = {.data.u64 = (uint64_t)(p - pairs) << 1 | (uint64_t)i};
    if (!me->eof && me->len < PROXY_BUF)
        ev.events |= EPOLLIN;
    if (other->len > other->off)
        ev.events |= EPOLLOUT;
    return epoll_ctl(ep, op, me->fd, &ev);
}

static void accept_one(int ep, const route *r)
{
    int c = accept4(r->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
    if (c < 0)
        return;
    pair *p = NULL;
    for (size_t i = 0; i < PROXY_PAIRS && !p; i++)
        if (!pairs[i].used)
            p = &pairs[i];
    int t = p ? socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
    /* the connect blocks: set-up only, never on a call's path (clients keep
     * their connection for every call measured) */
    if (t < 0 || connect(t, (const struct sockaddr *)&r->to, sizeof r->to) < 0) {
        fprintf(stderr, "bench-tcpproxy: %s\n", p ? strerror(errno) : "too many connections");
        close(c);
        if (t >= 0)
            close(t);
        return;
    }
    fcntl(t, F_SETFL, fcntl(t, F_GETFL) | O_NONBLOCK);
    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(t, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *p = (pair){.s = {{.fd = c, .data = malloc(PROXY_BUF)}, {.fd = t, .data = malloc(PROXY_BUF)}},
                .used = 1};
    if (!p->s[0].data || !p->s[1].data || watch(ep, p, 0, EPOLL_CTL_ADD) < 0 ||
        watch(ep, p, 1, EPOLL_CTL_ADD) < 0)
        pair_close(p);
}

/* Reads what side i has and writes what its peer wants; -1 when the pair is done. */
static int pump(int ep, pair *p, int i)
{
    side *me = &p->s[i], *other = &p->s[1 - i];
    while (!me->eof && me->len < PROXY_BUF) {
        ssize_t n = read(me->fd, me->data + me->len, PROXY_BUF - me->len);
        if (n > 0)
            me->len += (size_t)n;
        else if (n == 0)
            me->eof = 1;
        else if (errno == EAGAIN)
            break;
        else if (errno != EINTR)
            return -1;
    }
    for (int d = 0; d < 2; d++) {   /* each side's bytes to the other */
        side *from = &p->s[d], *to = &p->s[1 - d];
        while (from->len > from->off) {
            ssize_t n = write(to->fd, from->data + from->off, from->len - from->off);
            if (n > 0)
                from->off += (size_t)n;
            else if (n < 0 && errno == EAGAIN)
                break;
            else if (n < 0 && errno != EINTR)
                return -1;
        }
        if (from->off == from->len)
            from->off = from->len = 0;
        if (from->eof && !from->len)
            shutdown(to->fd, SHUT_WR);
    }
    if (me->eof && other->eof && !me->len && !other->len)
        return -1;
    return watch(ep, p, 0, EPOLL_CTL_MOD) < 0 || watch(ep, p, 1, EPOLL_CTL_MOD) < 0 ? -1 : 0;
}

int main(int argc, char **argv)
{
    route routes[PROXY_ROUTES];
    size_t n = 0;
    int ok = argc >= 5 && (argc - 1) % 4 == 0 && (argc - 1) / 4 <= PROXY_ROUTES;
    for (int i = 1; ok && i < argc; i += 4) {
        char *end;
        long port = strtol(argv[i + 1], &end, 10);
        ok = !strcmp(argv[i], "--listen") && !*end && port >= 1 && port <= 65535 &&
             !strcmp(argv[i + 2], "--to") && parse_addr(argv[i + 3], &routes[n].to) == 0;
        if (ok && (routes[n++].listen_fd = listen_on(port)) < 0)
            return 1;
    }
    if (!ok) {
        fprintf(stderr, "usage: bench-tcpproxy --listen PORT --to IPV4:PORT [--listen PORT --to "
                        "IPV4:PORT]... (at most %d)\n", PROXY_ROUTES);
        return 2;
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    signal(SIGPIPE, SIG_IGN);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    for (size_t i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX - i};
        if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, routes[i].listen_fd, &ev) < 0) {
            fprintf(stderr, "bench-tcpproxy: epoll: %s\n", strerror(errno));
            return 1;
        }
    }
    for (size_t i = 0; i < PROXY_PAIRS; i++)
        pairs[i].s[0].fd = pairs[i].s[1].fd = -1;
    struct epoll_event evs[64];
    while (!stopping) {
        int k = epoll_wait(ep, evs, 64, -1);
        for (int j = 0; j < k; j++) {
            uint64_t tag = evs[j].data.u64;
            if (tag > UINT64_MAX - PROXY_ROUTES) {
                accept_one(ep, &routes[UINT64_MAX - tag]);
                continue;
            }
            pair *p = &pairs[tag >> 1];
            if (p->used && pump(ep, p, (int)(tag & 1)) < 0) {
                pair_close(p);
                p->s[0].fd = p->s[1].fd = -1;
            }
        }
    }
    return 0;
}
