/* fd_pass: one message with descriptors over a Unix socket; see fd_pass.h. */
#include "core/fd_pass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Control room for FD_PASS_MAX descriptors, aligned as a cmsghdr. */
typedef union fd_pass_control {
    char buf[CMSG_SPACE(FD_PASS_MAX * sizeof(int))];
    struct cmsghdr align;
} fd_pass_control;

int fd_pass_send(int sock, const void *data, size_t len, const int *fds, size_t n_fds, int flags)
{
    if (n_fds > FD_PASS_MAX) {
        errno = EINVAL;
        return -1;
    }
    fd_pass_control control;
    struct iovec iov = {.iov_base = (void *)data, .iov_len = len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n_fds) {
        mh.msg_control = control.buf;
        mh.msg_controllen = CMSG_SPACE(n_fds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(n_fds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, n_fds * sizeof(int));
    }
    ssize_t sent;
    while ((sent = sendmsg(sock, &mh, flags | MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    if (sent < 0)
        return -1;
    if ((size_t)sent != len) {
        errno = EMSGSIZE;
        return -1;
    }
    return 0;
}

int fd_pass_recv(int sock, void *data, size_t room, size_t *got, int *fds, size_t max_fds,
                 size_t *n_fds, int flags, buf *err)
{
    *got = 0;
    *n_fds = 0;
    if (max_fds > FD_PASS_MAX) {
        errno = EINVAL;
        return buf_fail(err, "at most %d descriptors can be received, not %zu", FD_PASS_MAX,
                        max_fds);
    }
    /* Room for FD_PASS_MAX whatever max_fds is: descriptors past max_fds
     * arrive, are counted and closed, rather than being cut by the kernel
     * with no count to report. */
    fd_pass_control control;
    struct iovec iov = {.iov_base = data, .iov_len = room};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                        .msg_controllen = sizeof control.buf};
    ssize_t n = recvmsg(sock, &mh, flags | MSG_CMSG_CLOEXEC);
    if (n < 0) {
        int saved = errno;
        buf_fail(err, "recvmsg: %s", strerror(saved));
        errno = saved;
        return -1;
    }
    *got = (size_t)n;
    /* Every descriptor that arrived is either in fds or closed: also those
     * of a message refused below. */
    size_t arrived = 0;
    int kept[FD_PASS_MAX];
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++, arrived++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
            if (arrived < max_fds)
                kept[arrived] = fd;
            else
                close(fd);
        }
    }
    size_t n_kept = arrived < max_fds ? arrived : max_fds;
    int truncated = (mh.msg_flags & MSG_TRUNC) != 0;
    int fds_cut = (mh.msg_flags & MSG_CTRUNC) != 0;
    if (truncated || fds_cut || arrived > max_fds) {
        for (size_t i = 0; i < n_kept; i++)
            close(kept[i]);
        errno = EMSGSIZE;
        if (truncated)
            return buf_fail(err, "a message longer than the %zu bytes expected (its descriptors "
                            "closed)", room);
        if (fds_cut)
            return buf_fail(err, "a message with more than %d descriptors, which the kernel cut "
                            "short (at most %zu expected; all closed)", FD_PASS_MAX, max_fds);
        return buf_fail(err, "a message with %zu descriptors, at most %zu expected (all closed)",
                        arrived, max_fds);
    }
    if (n_kept)
        memcpy(fds, kept, n_kept * sizeof *kept);
    *n_fds = n_kept;
    return 0;
}
