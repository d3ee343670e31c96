/* Unit tests for lib/core/fd_pass: messages with 0, 1 and FD_PASS_MAX
 * descriptors over a real SOCK_SEQPACKET socketpair arrive whole and
 * close-on-exec; a message the receiver does not allow (more descriptors
 * than it asked for, more than the kernel could hand over, a payload
 * longer than its room) is an error that names it, with every descriptor
 * that came closed (counted in /proc/self/fd before and after). */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/fd_pass.h"
#include "fd_count.h"

static int sv[2];

static void make_pair(void)
{
    cr_assert_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0, "%s",
                 strerror(errno));
}

static void close_pair(void)
{
    close(sv[0]);
    close(sv[1]);
}

TestSuite(fd_pass, .init = make_pair, .fini = close_pair);

/* n pipes: ends[2 * i] the read end of pipe i, ends[2 * i + 1] its write end. */
static void make_pipes(int *ends, size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(pipe2(ends + 2 * i, O_CLOEXEC), 0, "%s", strerror(errno));
}

static void close_fds(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

/* The descriptor received is the pipe's write end: what goes in comes out
 * of the read end we kept. */
static void assert_writes_to(int received, int read_end, const char *text)
{
    cr_assert(fcntl(received, F_GETFD) & FD_CLOEXEC, "received without close-on-exec");
    cr_assert_eq(write(received, text, strlen(text)), (ssize_t)strlen(text));
    char got[32] = {0};
    cr_assert_eq(read(read_end, got, sizeof got - 1), (ssize_t)strlen(text));
    cr_assert_str_eq(got, text);
}

/* Sends the write ends of n new pipes with "hello" and receives them with
 * room for max; the read ends stay in reads. Returns fd_pass_recv's. */
static int pass_pipes(size_t n, size_t max, int *reads, int *received, size_t *n_received,
                      size_t *got, buf *err)
{
    int ends[2 * FD_PASS_MAX], writes[FD_PASS_MAX];
    make_pipes(ends, n);
    for (size_t i = 0; i < n; i++) {
        reads[i] = ends[2 * i];
        writes[i] = ends[2 * i + 1];
    }
    cr_assert_eq(fd_pass_send(sv[0], "hello", 5, writes, n, 0), 0, "%s", strerror(errno));
    close_fds(writes, n);   /* ours: those that arrive are the receiver's copies */
    char data[16];
    return fd_pass_recv(sv[1], data, sizeof data, got, received, max, n_received, 0, err);
}

Test(fd_pass, a_message_without_descriptors)
{
    cr_assert_eq(fd_pass_send(sv[0], "hello", 5, NULL, 0, 0), 0);
    char data[16] = {0};
    size_t got, n_fds = 99;
    buf err = {0};
    cr_assert_eq(fd_pass_recv(sv[1], data, sizeof data, &got, NULL, 0, &n_fds, 0, &err), 0);
    cr_assert_eq(got, 5);
    cr_assert_str_eq(data, "hello");
    cr_assert_eq(n_fds, 0);
    cr_assert_null(err.data);
}

Test(fd_pass, one_descriptor)
{
    int reads[1], received[4];
    size_t n_received, got;
    buf err = {0};
    cr_assert_eq(pass_pipes(1, 4, reads, received, &n_received, &got, &err), 0, "%s", err.data);
    cr_assert_eq(got, 5);
    cr_assert_eq(n_received, 1);
    assert_writes_to(received[0], reads[0], "one");
    close_fds(received, 1);
    close_fds(reads, 1);
}

Test(fd_pass, the_most_descriptors)
{
    int reads[FD_PASS_MAX], received[FD_PASS_MAX];
    size_t n_received, got;
    buf err = {0};
    cr_assert_eq(pass_pipes(FD_PASS_MAX, FD_PASS_MAX, reads, received, &n_received, &got, &err),
                 0, "%s", err.data);
    cr_assert_eq(n_received, FD_PASS_MAX);
    for (size_t i = 0; i < FD_PASS_MAX; i++)   /* each in the order sent */
        assert_writes_to(received[i], reads[i], "in order");
    close_fds(received, FD_PASS_MAX);
    close_fds(reads, FD_PASS_MAX);
}

Test(fd_pass, more_descriptors_than_asked_are_refused_and_closed)
{
    int reads[3], received[2] = {-1, -1};
    size_t n_received = 99, got;
    buf err = {0};
    int before = fd_count_open();
    cr_assert_eq(pass_pipes(3, 2, reads, received, &n_received, &got, &err), -1);
    cr_assert_eq(errno, EMSGSIZE);
    cr_assert_eq(n_received, 0);
    cr_assert_str_eq(err.data, "a message with 3 descriptors, at most 2 expected (all closed)");
    cr_assert_eq(fd_count_open(), before + 3, "only the 3 read ends we kept are new");
    for (size_t i = 0; i < 3; i++) {   /* no write end left anywhere: each pipe reads EOF */
        char c;
        cr_assert_eq(read(reads[i], &c, 1), 0);
    }
    close_fds(reads, 3);
    buf_free(&err);
}

/* More than FD_PASS_MAX: the kernel cuts them (MSG_CTRUNC) and closes
 * those it did not hand over; we close those it did. */
Test(fd_pass, more_than_the_most_are_refused_and_closed)
{
    enum { N = FD_PASS_MAX + 4 };
    int ends[2 * N], writes[N];
    make_pipes(ends, N);
    for (size_t i = 0; i < N; i++)
        writes[i] = ends[2 * i + 1];
    union {
        char buf[CMSG_SPACE(N * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = "hello", .iov_len = 5};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                        .msg_controllen = sizeof control.buf};
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(N * sizeof(int));
    memcpy(CMSG_DATA(c), writes, sizeof writes);
    cr_assert_eq(sendmsg(sv[0], &mh, 0), 5, "%s", strerror(errno));
    close_fds(writes, N);
    int before = fd_count_open();
    char data[16];
    int received[FD_PASS_MAX];
    size_t got, n_received = 99;
    buf err = {0};
    cr_assert_eq(fd_pass_recv(sv[1], data, sizeof data, &got, received, FD_PASS_MAX, &n_received,
                              0, &err),
                 -1);
    cr_assert_eq(errno, EMSGSIZE);
    cr_assert_eq(n_received, 0);
    cr_assert_not_null(strstr(err.data, "more than 8 descriptors"), "%s", err.data);
    cr_assert_eq(fd_count_open(), before);
    for (size_t i = 0; i < N; i++) {
        char ch;
        cr_assert_eq(read(ends[2 * i], &ch, 1), 0, "pipe %zu still has a writer", i);
        close(ends[2 * i]);
    }
    buf_free(&err);
}

Test(fd_pass, a_payload_longer_than_the_room_is_refused)
{
    int ends[2];
    make_pipes(ends, 1);
    char long_text[64];
    memset(long_text, 'x', sizeof long_text);
    cr_assert_eq(fd_pass_send(sv[0], long_text, sizeof long_text, ends + 1, 1, 0), 0);
    close(ends[1]);
    int before = fd_count_open();
    char data[10];
    int received[1];
    size_t got, n_received = 99;
    buf err = {0};
    cr_assert_eq(fd_pass_recv(sv[1], data, sizeof data, &got, received, 1, &n_received, 0, &err),
                 -1);
    cr_assert_eq(errno, EMSGSIZE);
    cr_assert_eq(got, sizeof data, "the part that came is said");
    cr_assert_eq(n_received, 0);
    cr_assert_str_eq(err.data, "a message longer than the 10 bytes expected (its descriptors "
                               "closed)");
    cr_assert_eq(fd_count_open(), before);
    char ch;
    cr_assert_eq(read(ends[0], &ch, 1), 0, "the descriptor that came with it is closed");
    close(ends[0]);
    buf_free(&err);
}

Test(fd_pass, the_peer_closing_is_a_message_of_nothing)
{
    close(sv[0]);
    sv[0] = -1;
    char data[8];
    size_t got = 99, n_fds = 99;
    buf err = {0};
    cr_assert_eq(fd_pass_recv(sv[1], data, sizeof data, &got, NULL, 0, &n_fds, 0, &err), 0);
    cr_assert_eq(got, 0);
    cr_assert_eq(n_fds, 0);
}

Test(fd_pass, over_the_most_is_not_sent)
{
    int fds[FD_PASS_MAX + 1];
    for (size_t i = 0; i < FD_PASS_MAX + 1; i++)
        fds[i] = 0;
    cr_assert_eq(fd_pass_send(sv[0], "x", 1, fds, FD_PASS_MAX + 1, 0), -1);
    cr_assert_eq(errno, EINVAL);
    char data[8];
    size_t got, n_fds;
    buf err = {0};
    cr_assert_eq(fd_pass_recv(sv[1], data, sizeof data, &got, NULL, 0, &n_fds, MSG_DONTWAIT, &err),
                 -1);
    cr_assert_eq(errno, EAGAIN, "nothing was sent");
    buf_free(&err);
}
